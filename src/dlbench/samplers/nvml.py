"""NVIDIA GPU telemetry through NVML (the maintained nvidia-ml-py bindings, an optional extra).

Energy comes from NVML's total-energy counter (Volta and newer), read at start, at every
poll and at stop, so a phase's energy is the counter's difference across its window.
Where the counter is not supported, energy is the trapezoidal integral of the polled
power series instead: the series says so (method "integrated-power") and `notes()`
says how coarse it is. Where neither exists there is no energy series at all.

Utilization, memory (total and the measured process tree's own), temperature, SM clock
and throttle reasons are polled gauges. Each metric is probed once in `start()`; one
that raises an NVMLError there (typically "Not Supported") is left out for that device
and listed in `notes()`. A read that fails later is a missing point, counted in
`notes()` — never a zero, a default or a TDP guess (CodeCarbon's silent TDP fallback
is what this avoids).

pynvml is imported lazily in the constructor so that importing this module costs
nothing; tests inject a fake module with the same API (tests/fake_nvml.py).
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psutil

from dlbench.samplers.base import Series

# NVML refreshes power and the energy counter about every 100 ms: a window shorter than
# that cannot be measured reliably, and polling faster only repeats readings.
NVML_REFRESH_S = 0.1
# nvmlDeviceGetPowerUsage is an average over about the last second on recent GPUs. On an
# H200 (benchmarks/nvml_energy.py, docs/gpu-campaign.md) power integrated over 1 s windows
# right after a load change was 0.37x to 1.9x the total-energy counter's energy, and within
# 1.5% of it over 2 s windows: polled power describes windows of this length or longer.
POWER_AVERAGING_S = 2.0
INSTALL_HINT = "pip install nvidia-ml-py"
_NA = 2**64 - 1  # NVML_VALUE_NOT_AVAILABLE for unsigned long long (older bindings pass it through)


def _load(nvml: Any | None) -> tuple[Any | None, str | None]:
    """The NVML module to use, or why there is none."""
    if nvml is not None:
        return nvml, None
    try:
        import pynvml
    except ImportError as exc:
        return None, f"nvidia-ml-py is not installed ({exc})"
    return pynvml, None


def _text(value: Any) -> str:
    # Old bindings return bytes for strings; current ones decode them.
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _init_failure(nvml: Any, exc: BaseException) -> str:
    """nvmlInit's error, with what it means for the user."""
    text = str(exc) or type(exc).__name__
    if isinstance(exc, getattr(nvml, "NVMLError_LibraryNotFound", ())):
        return f"{text}: no NVIDIA driver (libnvidia-ml.so.1 could not be loaded)"
    if isinstance(exc, getattr(nvml, "NVMLError_DriverNotLoaded", ())):
        return f"{text}: the NVIDIA kernel driver is not loaded"
    return f"nvmlInit failed: {text}"


@dataclass
class _Call:
    """One NVML call polled for a device and the series it feeds (utilization feeds two)."""

    api: str
    outputs: list[tuple[str, str]]  # (series suffix, unit)
    read: Callable[[Any, Any], tuple[float, ...]]
    period_s: float | None = None


def _gauge_calls(nvml: Any) -> list[list[_Call]]:
    """Candidate calls per metric, in order of preference (the first that probes wins)."""

    def single(
        api: str, suffix: str, unit: str, period: float | None = None, args: tuple = (), divisor: int = 1
    ) -> _Call:
        return _Call(api, [(suffix, unit)], lambda n, h: (getattr(n, api)(h, *args) / divisor,), period)

    def utilization(n: Any, h: Any) -> tuple[float, ...]:
        rates = n.nvmlDeviceGetUtilizationRates(h)
        return (rates.gpu, rates.memory)

    reasons = [
        single(api, "throttle_reasons", "bitmask")
        for api in ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons")
        if hasattr(nvml, api)
    ]
    return [
        [single("nvmlDeviceGetPowerUsage", "power", "W", NVML_REFRESH_S, divisor=1000)],  # mW -> W
        [_Call("nvmlDeviceGetUtilizationRates", [("util", "%"), ("mem_util", "%")], utilization)],
        [
            _Call(
                "nvmlDeviceGetMemoryInfo", [("memory_used", "bytes")], lambda n, h: (n.nvmlDeviceGetMemoryInfo(h).used,)
            )
        ],
        [single("nvmlDeviceGetTemperature", "temperature", "C", args=(getattr(nvml, "NVML_TEMPERATURE_GPU", 0),))],
        [single("nvmlDeviceGetClockInfo", "sm_clock", "MHz", args=(getattr(nvml, "NVML_CLOCK_SM", 1),))],
        reasons,
    ]


@dataclass
class _Device:
    """Everything collected for one GPU during one trial."""

    index: int
    handle: Any
    calls: list[_Call] = field(default_factory=list)
    series: dict[str, Series] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # fixed at start()
    attempts: dict[str, int] = field(default_factory=dict)  # per api
    failures: dict[str, tuple[int, str]] = field(default_factory=dict)  # api -> (count, last error)
    energy_mode: str | None = None  # "counter" | "integrated-power"
    energy_base_mj: int = 0
    energy_last_mj: int = 0
    energy_reset: str | None = None
    last_power: tuple[int, float] | None = None
    track_processes: bool = False
    proc_absent: int = 0
    proc_na: int = 0

    def name(self, suffix: str) -> str:
        return f"gpu{self.index}.{suffix}"

    def failed(self, api: str, exc: BaseException) -> None:
        count, _ = self.failures.get(api, (0, ""))
        self.failures[api] = (count + 1, str(exc) or type(exc).__name__)


class NvmlSampler:
    """Polls NVML for every selected GPU; energy from the hardware counter where it exists."""

    name = "nvml"
    default_interval_s = NVML_REFRESH_S

    def __init__(self, nvml: Any | None = None, devices: list[int] | None = None) -> None:
        loaded, self._missing = _load(nvml)
        self._nvml: Any = loaded  # None: unavailable, checked before every use
        self._wanted = list(devices) if devices is not None else None
        self._devices: list[_Device] = []
        self._pid = 0
        self._start_notes: list[str] = []
        self._initialized = False
        self._lock = threading.Lock()  # poll() runs on the timer thread, start/stop on the main one

    # -- availability -------------------------------------------------------------------
    def unavailable(self) -> str | None:
        if self._nvml is None:
            return self._missing
        nvml = self._nvml
        try:
            nvml.nvmlInit()
        except nvml.NVMLError as exc:
            return _init_failure(nvml, exc)
        try:
            count = nvml.nvmlDeviceGetCount()
        except nvml.NVMLError as exc:
            return f"nvmlDeviceGetCount failed: {exc}"
        finally:
            self._shutdown()
        if count == 0:
            return "NVML found no NVIDIA GPU (nvmlDeviceGetCount() = 0)"
        missing = [i for i in (self._wanted or []) if not 0 <= i < count]
        if missing:
            return f"GPU index {missing} requested but NVML sees {count} device(s)"
        return None

    def enable_hint(self) -> str:
        if self._nvml is None:
            return INSTALL_HINT
        return "an NVIDIA GPU with its driver installed (libnvidia-ml.so.1, as nvidia-smi uses)"

    # -- one trial -----------------------------------------------------------------------
    def start(self, pid: int) -> None:
        if self._nvml is None:
            raise RuntimeError(f"NVML sampler unavailable: {self._missing}")
        nvml = self._nvml
        with self._lock:
            if self._initialized:  # a trial that was never stopped: balance its nvmlInit
                self._shutdown()
            try:
                nvml.nvmlInit()
                indices = self._wanted if self._wanted is not None else range(nvml.nvmlDeviceGetCount())
            except nvml.NVMLError as exc:
                raise RuntimeError(f"NVML sampler unavailable: {_init_failure(nvml, exc)}") from exc
            self._initialized = True
            self._pid, self._start_notes = pid, []
            now = time.monotonic_ns()
            family = self._family()
            self._devices = []
            for index in indices:
                try:
                    handle = nvml.nvmlDeviceGetHandleByIndex(index)
                except nvml.NVMLError as exc:
                    self._start_notes.append(
                        f"gpu{index}: no handle (nvmlDeviceGetHandleByIndex: {exc}); nothing measured on it"
                    )
                    continue
                self._devices.append(self._probe(index, handle, now, family))

    def poll(self, now_ns: int) -> None:
        with self._lock:
            if not self._initialized:
                return
            family = self._family()
            for dev in self._devices:
                self._read(dev, now_ns, family)

    def stop(self) -> list[Series]:
        self.poll(time.monotonic_ns())  # the last reading closes the final window
        with self._lock:
            if self._initialized:
                self._shutdown()
                self._initialized = False
            return [s for dev in self._devices for s in dev.series.values()]

    def notes(self) -> list[str]:
        with self._lock:
            out = list(self._start_notes)
            for dev in self._devices:
                out.extend(dev.notes)
                out.extend(self._dynamic_notes(dev))
            return out

    # -- internals -----------------------------------------------------------------------
    def _shutdown(self) -> None:
        try:
            self._nvml.nvmlShutdown()
        except self._nvml.NVMLError:
            pass  # nothing was measured through it; a failed shutdown changes no reading

    def _family(self) -> set[int]:
        """The measured pid and its descendants (a launcher may hand the GPU to a child)."""
        try:
            return {self._pid} | {c.pid for c in psutil.Process(self._pid).children(recursive=True)}
        except (psutil.Error, ValueError):
            return {self._pid}

    def _add_series(self, dev: _Device, suffix: str, unit: str, kind: str, method: str, period: float | None) -> None:
        dev.series[suffix] = Series(dev.name(suffix), unit, kind, method, period)

    def _probe(self, index: int, handle: Any, now: int, family: set[int]) -> _Device:
        """Read every metric once: what answers is kept (and recorded), what fails is noted."""
        nvml = self._nvml
        dev = _Device(index, handle)
        power_error = ""
        for candidates in _gauge_calls(nvml):
            errors = []
            for call in candidates:
                try:
                    values = call.read(nvml, dev.handle)
                except nvml.NVMLError as exc:
                    errors.append(f"{call.api}: {exc}")
                    continue
                for suffix, unit in call.outputs:
                    self._add_series(dev, suffix, unit, "gauge", "polled", call.period_s)
                dev.calls.append(call)
                self._record(dev, call, values, now)
                break
            else:
                names = (
                    ", ".join(dev.name(s) for s, _ in candidates[0].outputs)
                    if candidates
                    else dev.name("throttle_reasons")
                )
                reason = "; ".join(errors) or "no clock-reasons call in this nvidia-ml-py"
                dev.notes.append(f"{names}: not available ({reason})")
                if candidates and candidates[0].outputs[0][0] == "power":
                    power_error = reason
        self._probe_energy(dev, now, power_error)
        self._probe_processes(dev, now, family)
        return dev

    def _probe_energy(self, dev: _Device, now: int, power_error: str) -> None:
        nvml = self._nvml
        try:
            dev.energy_base_mj = dev.energy_last_mj = nvml.nvmlDeviceGetTotalEnergyConsumption(dev.handle)
        except nvml.NVMLError as exc:
            counter_error = f"nvmlDeviceGetTotalEnergyConsumption: {exc}"
        else:
            dev.energy_mode = "counter"
            dev.attempts["nvmlDeviceGetTotalEnergyConsumption"] = 1
            self._add_series(dev, "energy", "J", "counter", "counter", NVML_REFRESH_S)
            dev.series["energy"].add(now, 0.0)
            return
        if "power" in dev.series:
            dev.energy_mode = "integrated-power"
            self._add_series(dev, "energy", "J", "counter", "integrated-power", NVML_REFRESH_S)
            dev.series["energy"].add(now, 0.0)
            dev.last_power = dev.series["power"].points[-1]  # the first trapezoid starts here
            dev.notes.append(f"{dev.name('energy')}: total-energy counter not supported ({counter_error})")
        else:
            dev.notes.append(
                f"{dev.name('energy')}: not available: neither the total-energy counter "
                f"({counter_error}) nor power ({power_error}) can be read"
            )

    def _probe_processes(self, dev: _Device, now: int, family: set[int]) -> None:
        nvml = self._nvml
        try:
            procs = nvml.nvmlDeviceGetComputeRunningProcesses(dev.handle)
        except nvml.NVMLError as exc:
            dev.notes.append(
                f"{dev.name('process_memory')}: not available (nvmlDeviceGetComputeRunningProcesses: {exc})"
            )
            return
        dev.track_processes = True
        dev.attempts["nvmlDeviceGetComputeRunningProcesses"] = 1
        self._add_series(dev, "process_memory", "bytes", "gauge", "polled", None)
        self._record_processes(dev, procs, now, family)

    def _record(self, dev: _Device, call: _Call, values: tuple[float, ...], now: int) -> None:
        dev.attempts[call.api] = dev.attempts.get(call.api, 0) + 1
        for (suffix, _), value in zip(call.outputs, values):
            dev.series[suffix].add(now, value)
        if call.outputs[0][0] == "power" and dev.energy_mode == "integrated-power":
            self._integrate(dev, now, float(values[0]))

    def _integrate(self, dev: _Device, now: int, watts: float) -> None:
        # Trapezoid between successive power readings that exist; a failed reading
        # widens the interval (counted in notes) instead of inserting a value.
        if dev.last_power is not None:
            t0, w0 = dev.last_power
            energy = dev.series["energy"]
            total = energy.points[-1][1] + (w0 + watts) / 2 * (now - t0) / 1e9
            energy.add(now, total)
        dev.last_power = (now, watts)

    def _record_processes(self, dev: _Device, procs: list[Any], now: int, family: set[int]) -> None:
        mine = [p for p in procs if p.pid in family]
        if not mine:
            dev.proc_absent += 1
            return
        used = [p.usedGpuMemory for p in mine]
        if any(u is None or u >= _NA for u in used):
            dev.proc_na += 1  # a partial sum would understate the process: no point at all
            return
        dev.series["process_memory"].add(now, sum(used))

    def _read(self, dev: _Device, now: int, family: set[int]) -> None:
        nvml = self._nvml
        for call in dev.calls:
            try:
                values = call.read(nvml, dev.handle)
            except nvml.NVMLError as exc:
                dev.attempts[call.api] = dev.attempts.get(call.api, 0) + 1
                dev.failed(call.api, exc)
                continue
            self._record(dev, call, values, now)
        if dev.energy_mode == "counter" and dev.energy_reset is None:
            api = "nvmlDeviceGetTotalEnergyConsumption"
            dev.attempts[api] = dev.attempts.get(api, 0) + 1
            try:
                raw = nvml.nvmlDeviceGetTotalEnergyConsumption(dev.handle)
            except nvml.NVMLError as exc:
                dev.failed(api, exc)
            else:
                if raw < dev.energy_last_mj:
                    # The counter restarts when the driver reloads: what was used across
                    # the restart is unknown, so the series ends here rather than guess.
                    dev.energy_reset = f"counter went from {dev.energy_last_mj} to {raw} mJ"
                else:
                    dev.energy_last_mj = raw
                    dev.series["energy"].add(now, (raw - dev.energy_base_mj) / 1000.0)
        if dev.track_processes:
            api = "nvmlDeviceGetComputeRunningProcesses"
            dev.attempts[api] = dev.attempts.get(api, 0) + 1
            try:
                procs = nvml.nvmlDeviceGetComputeRunningProcesses(dev.handle)
            except nvml.NVMLError as exc:
                dev.failed(api, exc)
            else:
                self._record_processes(dev, procs, now, family)

    def _dynamic_notes(self, dev: _Device) -> list[str]:
        """Notes whose numbers grow during the trial (failed reads, the polling interval)."""
        out = []
        for api, (count, error) in dev.failures.items():
            out.append(
                f"gpu{dev.index}: {api} failed {count} of {dev.attempts.get(api, count)} "
                f"reads ({error}); those points are missing, not filled in"
            )
        if dev.energy_mode == "integrated-power":
            times = [t for t, _ in dev.series["power"].points]
            gaps = [(b - a) / 1e9 for a, b in zip(times, times[1:])]
            every = (
                f"every {statistics.median(gaps):.3g} s (median of {len(gaps)} intervals)"
                if gaps
                else f"at the sampler's interval (default {self.default_interval_s} s)"
            )
            out.append(
                f"{dev.name('energy')}: integrated from power polled {every} by the "
                "trapezoid rule; changes between polls are not seen, and NVML's power is itself an "
                f"average over about 1 s: a phase shorter than {POWER_AVERAGING_S:g} s mixes in the one before"
            )
        elif "power" in dev.series:
            out.append(
                f"{dev.name('power')}: NVML's power reading is an average over about the last second, so a "
                f"phase's mean power over less than {POWER_AVERAGING_S:g} s mixes in the one before; energy comes "
                "from the total-energy counter instead"
                if dev.energy_mode == "counter"
                else f"{dev.name('power')}: NVML's power reading is an average over about the last second: a "
                f"phase's mean power over less than {POWER_AVERAGING_S:g} s mixes in the one before"
            )
        if dev.energy_reset:
            out.append(
                f"{dev.name('energy')}: the energy counter restarted ({dev.energy_reset}); no energy points after that"
            )
        if dev.proc_absent:
            out.append(
                f"{dev.name('process_memory')}: pid {self._pid} and its children were not in "
                f"the GPU's compute-process list at {dev.proc_absent} reading(s) (no CUDA "
                "context yet, or a PID namespace hides them); no point recorded then"
            )
        if dev.proc_na:
            out.append(
                f"{dev.name('process_memory')}: NVML reported usedGpuMemory as not available "
                f"at {dev.proc_na} reading(s); no point recorded then"
            )
        return out


def describe_devices(nvml: Any | None = None) -> list[dict] | str:
    """Name, driver and total memory of every GPU NVML sees (for `dlbench env`), or the reason."""
    module, missing = _load(nvml)
    if module is None:
        return str(missing)
    try:
        module.nvmlInit()
    except module.NVMLError as exc:
        return _init_failure(module, exc)
    try:
        driver = _text(module.nvmlSystemGetDriverVersion())
        count = module.nvmlDeviceGetCount()
        if count == 0:
            return "NVML found no NVIDIA GPU (nvmlDeviceGetCount() = 0)"
        out = []
        for index in range(count):
            handle = module.nvmlDeviceGetHandleByIndex(index)
            info: dict[str, Any] = {"index": index, "driver": driver}
            try:
                info["name"] = _text(module.nvmlDeviceGetName(handle))
            except module.NVMLError as exc:
                info["name_unavailable"] = str(exc)
            try:
                info["memory_total_bytes"] = int(module.nvmlDeviceGetMemoryInfo(handle).total)
            except module.NVMLError as exc:
                info["memory_total_unavailable"] = str(exc)
            out.append(info)
        return out
    except module.NVMLError as exc:
        return f"NVML query failed: {exc}"
    finally:
        try:
            module.nvmlShutdown()
        except module.NVMLError:
            pass
