"""CPU utilization of the measured process and of the whole machine, and steal time (psutil).

Values are computed from cumulative CPU-time counters between two polls, so
each point is the average over the interval that ends at its timestamp
(psutil's `cpu_percent()` keeps hidden module state; explicit deltas do not).

- cpu.process_util: CPU time of the worker and its children per wall second,
  in % of one core (200% = two cores busy).
- cpu.system_util: busy share of all cores, in % (100% = every core busy).
- cpu.steal: share of time the hypervisor gave this VM's vCPUs to others, in %
  of all cores. Noisy neighbours show up here (measured: 26%, docs/design.md).
- cpu.others_util: the share of all cores that other processes (and the
  hypervisor, as steal) took while the worker ran: system_util minus the worker's
  own share, in % of all cores. A trial measured while this is high was measured on
  a busy machine (dlbench.analysis.busy flags it).
- mem.process_rss: resident memory of the worker and its children, bytes.
"""

from __future__ import annotations

import os
import time

import psutil

from dlbench.samplers.base import Series


def _busy_and_total(t) -> tuple[float, float]:
    idle = t.idle + getattr(t, "iowait", 0.0)
    total = sum(t)
    # guest time is already counted in user on Linux; psutil exposes both.
    total -= getattr(t, "guest", 0.0) + getattr(t, "guest_nice", 0.0)
    return total - idle, total


def others_share(system_pct: float, process_pct: float, cores: int) -> float:
    """% of all cores busy with something other than the worker: system busy (% of all
    cores) minus the worker's CPU (% of one core) spread over the cores; never below 0
    (the two counters are read a few microseconds apart)."""
    return max(0.0, system_pct - process_pct / cores)


class CpuSampler:
    name = "cpu"
    default_interval_s = 0.5

    def __init__(self) -> None:
        self._series: dict[str, Series] = {}
        self._notes: list[str] = []

    def unavailable(self) -> str | None:
        try:
            psutil.cpu_times()
        except (OSError, NotImplementedError) as exc:
            return f"psutil cannot read CPU times here: {exc}"
        return None

    def enable_hint(self) -> str:
        return "a platform psutil supports (Linux, macOS, Windows)"

    def start(self, pid: int) -> None:
        self._proc = psutil.Process(pid)
        self._cores = psutil.cpu_count() or 1  # cpu_times() sums over every logical CPU
        # CPU times advance in clock ticks (usually 10 ms): the resolution of
        # every utilization value, used to flag windows too short to measure.
        tick = 1.0 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 0.01
        self._series = {
            "process": Series("cpu.process_util", "%", "gauge", "polled", tick),
            "system": Series("cpu.system_util", "%", "gauge", "polled", tick),
            "steal": Series("cpu.steal", "%", "gauge", "polled", tick),
            "others": Series("cpu.others_util", "%", "gauge", "polled", tick),
            "rss": Series("mem.process_rss", "bytes", "gauge", "polled"),
        }
        self._notes = []
        if not hasattr(psutil.cpu_times(), "steal"):
            self._notes.append("cpu.steal: this platform reports no steal time")
            del self._series["steal"]
        self._last = (time.monotonic_ns(), self._process_cpu(), psutil.cpu_times())

    def _tree(self) -> list[psutil.Process]:
        try:
            return [self._proc, *self._proc.children(recursive=True)]
        except psutil.Error:
            return [self._proc]

    def _process_cpu(self) -> float | None:
        total = 0.0
        for p in self._tree():
            try:
                t = p.cpu_times()
            except psutil.Error:
                if p is self._proc:
                    return None
                continue
            total += t.user + t.system
        return total

    def _rss(self) -> float | None:
        total = 0
        for p in self._tree():
            try:
                total += p.memory_info().rss
            except psutil.Error:
                if p is self._proc:
                    return None
        return float(total)

    def poll(self, now_ns: int) -> None:
        last_ns, last_proc, last_sys = self._last
        wall = (now_ns - last_ns) / 1e9
        if wall <= 0:
            return
        proc = self._process_cpu()
        sys_times = psutil.cpu_times()
        process_pct = None
        if proc is not None and last_proc is not None:
            process_pct = 100.0 * (proc - last_proc) / wall
            self._series["process"].add(now_ns, process_pct)
        busy0, total0 = _busy_and_total(last_sys)
        busy1, total1 = _busy_and_total(sys_times)
        if total1 > total0:
            system_pct = 100.0 * (busy1 - busy0) / (total1 - total0)
            self._series["system"].add(now_ns, system_pct)
            if process_pct is not None:
                # Busy time is summed over every core (steal included: time the hypervisor gave
                # to other guests); the worker's own share of it is its % of one core / cores.
                others_pct = others_share(system_pct, process_pct, self._cores)
                self._series["others"].add(now_ns, others_pct)
            if "steal" in self._series:
                self._series["steal"].add(now_ns, 100.0 * (sys_times.steal - last_sys.steal) / (total1 - total0))
        rss = self._rss()
        if rss is not None:
            self._series["rss"].add(now_ns, rss)
        self._last = (now_ns, proc, sys_times)

    def stop(self) -> list[Series]:
        return list(self._series.values())

    def notes(self) -> list[str]:
        return list(self._notes)
