"""Inference timed over whole passes filling a minimum time, against a fake clock."""

from __future__ import annotations

import pytest

from dlbench.trial import phases

MS = 1_000_000  # ns per millisecond


class _Clock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


class _Trainer:
    """infer() advances the fake clock by the next duration (the last one repeats)."""

    def __init__(self, clock: _Clock, durations_ms: list[float], samples: int = 320) -> None:
        self.clock, self.durations, self.samples, self.calls = clock, list(durations_ms), samples, 0

    def infer(self, batch: int) -> int:
        d = self.durations[min(self.calls, len(self.durations) - 1)]
        self.calls += 1
        self.clock.now += int(d * MS)
        return self.samples


@pytest.fixture
def clock(monkeypatch) -> _Clock:
    c = _Clock()
    monkeypatch.setattr(phases.time, "perf_counter_ns", c)
    return c


def test_first_repeat_calibrates_on_the_fastest_pass_and_later_ones_run_that_count(clock):
    trainer = _Trainer(clock, [50.0, 2.0])  # the first pass pays a 48 ms one-off compile
    calibration: dict = {}
    samples, seconds, passes = phases._infer_passes(trainer, 32, 0.1, calibration)
    # Until 100 ms: 50 + 2 k >= 100 -> k = 25 more passes, 26 in all, 100 ms.
    assert (samples, passes) == (320, 26) and seconds == pytest.approx(0.1 / 26)
    assert calibration["infer_passes"] == 50  # ceil(100 ms / 2 ms), from the fastest pass
    samples, seconds, passes = phases._infer_passes(trainer, 32, 0.1, calibration)
    assert (passes, trainer.calls) == (50, 76) and seconds == pytest.approx(0.002)


def test_a_pass_longer_than_the_minimum_is_timed_alone_after_calibration(clock):
    trainer = _Trainer(clock, [300.0, 250.0])
    calibration: dict = {}
    _, seconds, passes = phases._infer_passes(trainer, 32, 0.1, calibration)
    assert passes == 3 and seconds == pytest.approx(0.8 / 3)  # calibration always makes three
    assert calibration["infer_passes"] == 1
    _, seconds, passes = phases._infer_passes(trainer, 32, 0.1, calibration)
    assert passes == 1 and seconds == pytest.approx(0.25) and trainer.calls == 4


def test_a_busy_moment_in_calibration_does_not_set_the_count(clock):
    # A compile, then a pass slowed by another process, then the real 8 ms pass (seen in CI:
    # with two calibration passes the count was 1 and later repeats timed one 8 ms pass).
    trainer = _Trainer(clock, [300.0, 250.0, 8.0])
    calibration: dict = {}
    phases._infer_passes(trainer, 32, 0.1, calibration)
    assert calibration["infer_passes"] == 13  # ceil(100 ms / 8 ms): later repeats fill the 0.1 s


def test_min_time_zero_times_one_pass(clock):
    trainer = _Trainer(clock, [0.4])
    calibration: dict = {}
    assert phases._infer_passes(trainer, 32, 0.0, calibration)[1:] == (pytest.approx(0.0004), 1)
    assert phases._infer_passes(trainer, 32, 0.0, calibration)[2] == 1 and trainer.calls == 2


def test_a_pass_that_takes_no_time_cannot_loop_forever(clock):
    trainer = _Trainer(clock, [0.0])
    calibration: dict = {}
    _, seconds, passes = phases._infer_passes(trainer, 32, 0.1, calibration)
    assert passes == phases.MAX_INFER_PASSES and seconds == 0.0
    assert calibration["infer_passes"] == phases.MAX_INFER_PASSES
