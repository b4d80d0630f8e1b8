"""Slicing sampler series into per-phase values, against hand-computed cases."""

from __future__ import annotations

import time

import pytest

from dlbench import telemetry
from dlbench.samplers.base import Series
from dlbench.samplers.poller import Poller

S = 10**9  # ns per second


def test_windows_pair_start_and_end_markers():
    markers = [
        {"phase": "train", "repeat": 0, "edge": "start", "t": 1 * S},
        {"phase": "train", "repeat": 0, "edge": "end", "t": 3 * S},
        {"phase": "infer", "repeat": 0, "edge": "start", "t": 4 * S},
    ]  # never ended: dropped
    (w,) = telemetry.windows(markers)
    assert (w.phase, w.repeat, w.seconds) == ("train", 0, 2.0)


def test_counter_energy_is_interpolated_at_the_edges():
    energy = Series("rapl.0.package-0", "J", "counter", "counter", 0.001, [(0, 0.0), (2 * S, 100.0), (4 * S, 300.0)])
    w = telemetry.Window("train", 1, 1 * S, 3 * S)  # 50 J at t=1 s, 200 J at t=3 s
    rows, notes = telemetry.phase_measurements(
        [energy],
        [w],
        warmup_repeats=1,
        work={("train", 1): {"samples": 1000, "epochs": 2}},
        idle_power_w={"rapl.0.package-0": 10.0},
    )
    by = {r.metric: r for r in rows}
    assert by["energy:rapl.0.package-0"].value == pytest.approx(150.0)
    assert by["energy_net:rapl.0.package-0"].value == pytest.approx(150.0 - 10.0 * 2)
    assert by["energy_per_sample:rapl.0.package-0"].value == pytest.approx(0.15)
    assert by["energy_per_epoch:rapl.0.package-0"].value == pytest.approx(75.0)
    assert all(r.flag is None and not r.warmup and r.method.startswith("counter") for r in rows)
    assert notes == []


def test_short_windows_are_flagged_and_unbracketed_ones_omitted():
    power_integral = Series("gpu0.energy", "J", "counter", "integrated-power", 0.1, [(0, 0.0), (S, 250.0)])
    short = telemetry.Window("latency_b1", 0, int(0.5 * S), int(0.55 * S))
    outside = telemetry.Window("infer", 0, int(0.9 * S), int(1.5 * S))
    rows, notes = telemetry.phase_measurements([power_integral], [short, outside], 1, {})
    (row,) = rows
    assert row.value == pytest.approx(12.5) and row.warmup
    assert row.flag.startswith("unreliable: window 50.0 ms is shorter than the source's update period 100 ms")
    assert row.method == "integrated-power"
    assert notes == ["gpu0.energy: no reading brackets infer repeat 0"]


def test_gauges_are_time_weighted_over_the_readings_covering_the_window():
    # Readings are interval averages: 20% over (0,1], 80% over (1,3], 50% over (3,4].
    util = Series(
        "cpu.process_util", "%", "gauge", "polled", 0.01, [(0, 0.0), (1 * S, 20.0), (3 * S, 80.0), (4 * S, 50.0)]
    )
    w = telemetry.Window("train", 2, int(0.5 * S), int(3.5 * S))
    rows, _ = telemetry.phase_measurements([util], [w], 1, {})
    by = {r.metric: r.value for r in rows}
    # weights: 0.5 s of 20%, 2 s of 80%, 0.5 s of 50% -> (10 + 160 + 25) / 3
    assert by["cpu.process_util:mean"] == pytest.approx(195 / 3)
    assert by["cpu.process_util:max"] == 80.0


def test_idle_power_from_counters():
    s = Series("rapl.0.dram", "J", "counter", "counter", 0.001, [(0, 5.0), (2 * S, 11.0)])
    g = Series("cpu.system_util", "%", "gauge", "polled", 0.01, [(0, 1.0), (2 * S, 2.0)])
    assert telemetry.idle_power([s, g], 2.0) == {"rapl.0.dram": pytest.approx(3.0)}


class CountingSampler:
    name = "count"
    default_interval_s = 0.05

    def __init__(self, fail_after: int | None = None):
        self.fail_after = fail_after
        self.series = Series("count", "n", "gauge", "polled")

    def unavailable(self):
        return None

    def enable_hint(self):
        return ""

    def start(self, pid):
        self.pid = pid

    def poll(self, now_ns):
        if self.fail_after is not None and len(self.series.points) >= self.fail_after:
            raise OSError("sensor vanished")
        self.series.add(now_ns, len(self.series.points))

    def stop(self):
        return [self.series]

    def notes(self):
        return []


def test_poller_polls_on_its_grid_and_on_demand_and_isolates_failures():
    good, bad = CountingSampler(), CountingSampler(fail_after=2)
    poller = Poller([(good, 0.05), (bad, 0.05)])
    poller.start(pid=123)
    time.sleep(0.5)
    poller.poll_all()
    series, notes = poller.stop()
    n = len(good.series.points)
    assert 8 <= n <= 14  # ~10 timed polls + the on-demand one + the final one
    times = [t for t, _ in good.series.points]
    assert times == sorted(times)
    assert len(bad.series.points) == 2  # stopped after its failure, nothing invented
    assert any("sensor vanished" in n for n in notes["count"])


def test_inference_energy_is_per_pass_and_per_sample_over_every_pass_in_the_window():
    from dlbench.runner import _work
    from dlbench.store import Measurement

    # 40 passes of 0.0025 s at 128 000 samples/s: 320 samples a pass, 12 800 in the window.
    rows = [
        Measurement(1, False, "infer", "time", 0.0025, "s"),
        Measurement(1, False, "infer", "passes", 40.0, "count"),
        Measurement(1, False, "infer", "throughput", 128_000.0, "samples/s"),
        Measurement(2, False, "infer", "time", 0.1, "s"),  # a run from before passes were counted
        Measurement(2, False, "infer", "throughput", 3200.0, "samples/s"),
    ]
    work = _work(rows, {"batch_size": 32})
    assert work[("infer", 1)] == {"samples": 12_800, "passes": 40.0}
    assert work[("infer", 2)] == {"samples": 320, "passes": 1.0}
    energy = Series("rapl.0.package-0", "J", "counter", "counter", 0.001, [(0, 0.0), (S, 20.0)])
    w = telemetry.Window("infer", 1, 0, S // 10)  # the 0.1 s window of the 40 passes: 2 J
    rows, _ = telemetry.phase_measurements([energy], [w], 1, work)
    by = {r.metric: r.value for r in rows}
    assert by["energy:rapl.0.package-0"] == pytest.approx(2.0)
    assert by["energy_per_pass:rapl.0.package-0"] == pytest.approx(2.0 / 40)
    assert by["energy_per_sample:rapl.0.package-0"] == pytest.approx(2.0 / 12_800)
