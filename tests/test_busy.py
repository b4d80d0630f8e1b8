"""A trial measured while other processes held the CPU is flagged; a quiet one is not."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time

import psutil
import pytest

from dlbench.analysis.busy import BUSY_THRESHOLD, busy_cases, busy_trials, others_share
from dlbench.samplers.cpu import others_share as share_of_window
from dlbench.store import Store


def _row(trial, phase, value, warmup=0, metric="cpu.others_util:mean", status="ok", case="k1"):
    return {
        "trial_id": trial,
        "case_key": case,
        "phase": phase,
        "metric": metric,
        "value": value,
        "warmup": warmup,
        "status": status,
        "repeat": 1,
    }


def test_a_window_subtracts_the_workers_own_share():
    # 2 cores: system 50% busy, the worker used half a core (50% of one core = 25% of two)
    assert share_of_window(50.0, 50.0, 2) == 25.0
    assert share_of_window(100.0, 200.0, 2) == 0.0  # the worker alone fills both cores
    assert share_of_window(40.0, 100.0, 2) == 0.0  # never below zero (counters read apart)


def test_trials_are_flagged_on_the_median_of_their_measured_windows():
    rows = [_row(1, "train", v) for v in (3.0, 5.0, 40.0)]  # one spike: median 5
    rows += [_row(2, "train", v, case="k2") for v in (20.0, 25.0, 30.0)]  # median 25
    rows += [_row(2, "infer", v, case="k2") for v in (10.0, 12.0)]
    rows += [_row(3, "train", 90.0, warmup=1, case="k3"), _row(3, "train", 1.0, case="k3")]  # warm-up ignored
    rows += [_row(4, "train", 80.0, metric="cpu.steal:mean", case="k4")]
    assert others_share(rows) == {1: 5.0, 2: 25.0, 3: 1.0}
    assert busy_trials(rows) == {2: 25.0}
    assert busy_cases(rows) == {"k2": 25.0}
    assert busy_trials(rows, threshold=4.0) == {1: 5.0, 2: 25.0}


def test_windows_too_short_for_the_cpu_counters_do_not_make_a_trial_busy():
    short = "unreliable: window 11.0 ms is shorter than 10 x the source's resolution (10 ms)"
    rows = [_row(1, "train", 100.0) | {"flag": short}, _row(1, "infer", 4.0)]
    rows += [_row(2, "train", 100.0, case="k2") | {"flag": short}]  # only short windows: no share at all
    rows += [_row(3, "train", 40.0, case="k3") | {"flag": None}]
    assert others_share(rows) == {1: 4.0, 3: 40.0}
    assert busy_cases(rows) == {"k3": 40.0}


def _run(tiny_run, db, pinned_loop: bool) -> str:
    loop = None
    if pinned_loop:
        loop = subprocess.Popen(["taskset", "-c", "0", sys.executable, "-c", "while True: pass"])
        time.sleep(0.3)
    try:
        return tiny_run(db, epochs=40, repeats=3, threads=1, samplers="cpu")
    finally:
        if loop is not None:
            loop.kill()
            loop.wait()


@pytest.mark.skipif(shutil.which("taskset") is None, reason="taskset (util-linux) is not installed")
def test_a_trial_beside_a_busy_loop_on_its_core_is_flagged_and_a_quiet_one_is_not(tmp_path, tiny_run):
    # The worker inherits this process's affinity: pin the test to core 0 for the run.
    before = psutil.Process().cpu_affinity()
    psutil.Process().cpu_affinity([0])
    try:
        busy_out = _run(tiny_run, tmp_path / "busy.db", pinned_loop=True)
        load = psutil.cpu_percent(interval=1.0)  # the machine without our loop
        quiet_out = _run(tiny_run, tmp_path / "quiet.db", pinned_loop=False)
    finally:
        psutil.Process().cpu_affinity(before)
    with Store(tmp_path / "busy.db") as store:
        busy = busy_trials(store.measurements(1, latency=False))
    assert list(busy) == [1] and busy[1] >= BUSY_THRESHOLD, busy
    assert "measured on a busy machine" in busy_out and "BUSY" in busy_out
    with Store(tmp_path / "quiet.db") as store:
        share = others_share(store.measurements(1, latency=False))
    if load >= BUSY_THRESHOLD and share[1] >= BUSY_THRESHOLD:
        pytest.skip(
            f"the machine was busy without our loop ({load:.0f}% CPU): the quiet run read "
            f"{share[1]:.0f}%, a correct flag"
        )
    assert share[1] < BUSY_THRESHOLD, share
    assert "measured on a busy machine" not in quiet_out
