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


CASE = {
    "runtime": "defaults", "dataset": "digits", "device": "cpu", "epochs": 1, "init": "glorot-uniform",
    "lr": 0.01, "momentum": 0.0, "optimizer": "sgd", "precision": "float32", "seed": 0, "steps": None,
    "threads": 2, "model": "mlp", "batch_size": 32, "input_shape": 0, "layout": "native", "pipeline": "preloaded",
    "model_options": {}, "synthetic": None, "train_samples": 0, "test_samples": 0,
}  # fmt: skip
SLOW = [2.0, 2.1, 2.2, 2.3, 2.4, 2.5]  # torch: about 2x numpy's, in every block
FAST = [1.0, 1.05, 1.1, 1.15, 1.2, 1.25]


def _stored(path, busy_share: float) -> Store:
    """Six interleaved blocks of torch (slow) and numpy (fast) with the share of the CPU
    other processes took while torch trained (`busy_share`) and 3% beside numpy."""
    store = Store(path)
    run_id = store.create_run(
        name="busy", command="test", config_source="test", config_text="", experiment={}, environment={}, version="0"
    )
    for block in range(6):
        for position, (fw, times, share) in enumerate((("torch", SLOW, busy_share), ("numpy", FAST, 3.0))):
            _add_timed_trial(store, run_id, fw, block, position, times[block], share)
    return store


def _add_timed_trial(store: Store, run_id: int, fw: str, block: int, position: int, time: float, share: float) -> None:
    """One ok trial of `fw` (its case key too): a train time and the others' CPU share beside it."""
    from dlbench.store import Measurement

    tid = store.add_trial(
        run_id, case_key=fw, block=block, position=position,
        case={**CASE, "framework": fw, "variant": "eager"}, protocol={"repeats": 1, "warmup": 0},
    )  # fmt: skip
    store.start_trial(tid)
    store.add_measurements(
        tid,
        [
            Measurement(1, False, "train", "time", time, "s"),
            Measurement(1, False, "train", "cpu.others_util:mean", share, "%"),
        ],
    )
    store.finish_trial(tid, status="ok", error=None, returncode=0, wall_s=1.0, stderr="")


def test_a_time_measured_on_a_busy_machine_gets_its_ratio_but_no_verdict(tmp_path):
    from dlbench.report.model import build_report
    from dlbench.results import Results

    quiet = build_report(_stored(tmp_path / "quiet.db", 3.0), 1, hypotheses=False)
    (item,) = [i for i in quiet.answer.items if i.metric.startswith("train time")]
    assert item.best.startswith("numpy:eager is fastest") and item.others[0].endswith(": slower")
    store = _stored(tmp_path / "busy.db", 60.0)
    busy = build_report(store, 1, hypotheses=False)
    (item,) = [i for i in busy.answer.items if i.metric.startswith("train time")]
    # The first answer said "16.9x slower ... : slower" from a loaded machine: now the
    # ratio stands and the verdict waits.
    assert item.best.startswith("no framework is decided fastest here")
    assert item.others[0].startswith("torch:eager 2")  # the ratio of medians, about 2x
    assert (
        "p = 0.031 (the smallest 6 pairs can give): not decided: the machine was busy (the [BUSY] note"
        in item.others[0]
    )
    note = busy.answer.notes[0]
    assert note.startswith("[BUSY] measured on a busy machine: other processes took up to 60%")
    assert "no time comparison with such a case is decided here" in note
    frame = Results.of_store(store).compare("torch", "numpy", metric="train.time", run=1)
    assert list(frame["verdict"]) == ["undecided"]
    # Asked for anyway: the engine's verdict, and the note says what it rests on.
    judged = build_report(store, 1, hypotheses=False, busy_verdicts=True)
    (item,) = [i for i in judged.answer.items if i.metric.startswith("train time")]
    assert item.others[0].endswith(": slower [BUSY]") and "judged anyway (--busy-verdicts)" in judged.answer.notes[0]
    frame = Results.of_store(store).compare("torch", "numpy", metric="train.time", run=1, busy_verdicts=True)
    assert list(frame["verdict"]) == ["slower"]


def test_the_engine_withholds_the_verdict_of_a_busy_pair_and_keeps_its_numbers():
    from dlbench.analysis import stats

    judged = stats.compare_two(SLOW, FAST, paired=True)
    withheld = stats.compare_two(SLOW, FAST, paired=True, busy=True)
    assert judged.verdict == "slower" and withheld.verdict == "undecided"
    assert withheld.why is not None and withheld.why.cause == "busy machine"
    assert (withheld.ratio, withheld.ratio_ci, withheld.p_value) == (judged.ratio, judged.ratio_ci, judged.p_value)
    many = stats.compare_many({"a": SLOW, "b": FAST, "c": [x * 1.5 for x in FAST]}, paired=False, busy={"c"})
    verdicts = {(x, y): c.verdict for x, y, c in many.pairwise}
    assert verdicts[("a", "b")] == "slower"  # neither busy: judged
    assert verdicts[("a", "c")] == verdicts[("b", "c")] == "undecided"


def test_redo_busy_plans_the_busy_blocks_again_whole_and_keeps_the_busy_attempts(tmp_path):
    from dlbench.report.model import build_report
    from dlbench.service.runs import redo_busy
    from dlbench.store import Measurement

    store = _stored(tmp_path / "r.db", 3.0)
    (noisy,) = [t for t in store.trials(1) if t.block == 2 and t.case_key == "torch"]
    store.add_measurements(noisy.id, [Measurement(2, False, "train", "cpu.others_util:mean", 70.0, "%"),
                                      Measurement(3, False, "train", "cpu.others_util:mean", 65.0, "%")])  # fmt: skip
    assert "not decided: the machine was busy" in build_report(store, 1, hypotheses=False).answer.items[0].others[0]
    redone = redo_busy(store, 1)
    assert redone.blocks == (2,) and redone.trials == 2 and redone.worst == 65.0  # median of 3, 70, 65
    kept = [t for t in store.trials(1, retired=True) if t.retired]
    assert sorted(t.case_key for t in kept) == ["numpy", "torch"] and {t.block for t in kept} == {2}
    assert all(t.status == "ok" and "ran on a busy machine" in t.error for t in kept)
    pending = [t for t in store.trials(1) if t.status == "pending"]
    assert sorted((t.case_key, t.block, t.attempt) for t in pending) == [("numpy", 2, 2), ("torch", 2, 2)]
    # The retired block leaves the analysis: five quiet blocks remain, and no trial is busy.
    rows = store.measurements(1, latency=False)
    assert {r.block for r in rows} == {0, 1, 3, 4, 5} and not busy_cases(rows)
    assert redo_busy(store, 1).blocks == ()  # nothing busy left to redo


def test_redo_busy_needs_the_run_to_resume():
    from typer.testing import CliRunner

    from dlbench.cli import app

    result = CliRunner().invoke(app, ["run", "--redo-busy"])
    assert result.exit_code == 2
    assert "--redo-busy runs the busy blocks of a stored run again: give the run with --resume ID" in result.output


def test_compare_says_how_many_trials_would_decide_and_none_for_a_busy_pair():
    from dlbench.analysis import stats
    from dlbench.results import to_decide

    few = stats.compare_two(SLOW[:3], FAST[:3], paired=True)  # 3 pairs: p >= 0.25 whatever the data
    assert few.verdict == "undecided" and few.why is not None and few.why.cause == "too few"
    assert to_decide(few) == few.why.need == stats.min_pairs(0.05) == 6
    assert to_decide(stats.compare_two(SLOW, FAST, paired=True)) is None  # decided
    assert to_decide(stats.compare_two(SLOW, FAST, paired=True, busy=True)) is None  # trials alone will not
    wide = stats.compare_two([1.0, 1.3, 0.8, 1.25, 0.9, 1.2], [1.01, 0.99, 1.02, 0.98, 1.03, 0.97], paired=True)
    assert wide.why is not None and wide.why.cause == "not significant"
    assert to_decide(wide) == (wide.why.projected if wide.why.projection in ("clear", "inside") else None)


def test_run_vs_run_withholds_the_verdict_of_a_busy_side_and_no_regression_comes_of_it(tmp_path):
    """`dlbench compare A B`: run B (2x slower) measured while other processes took 60% of
    the CPU, the two runs in turns block by block: the ratio and CI stand, the verdict
    waits, and the gate does not fail on a busy machine's times unless asked to."""
    from dlbench.analysis.comparisons import run_vs_run

    store = Store(tmp_path / "ab.db")
    runs = [
        store.create_run(name=n, command="test", config_source="test", config_text="", experiment={},
                         environment={}, version="0")
        for n in ("A", "B")
    ]  # fmt: skip
    for block in range(6):
        for run_id, times, share in ((runs[0], FAST, 3.0), (runs[1], SLOW, 60.0)):
            _add_timed_trial(store, run_id, "torch", block, 0, times[block], share)

    def diff(**kw):
        sides = [(store.trials(r), store.measurements(r, latency=False)) for r in runs]
        (d,) = [x for x in run_vs_run(*sides[0], *sides[1], **kw) if x.metric == "train time"]
        return d

    withheld = diff()
    assert withheld.comparison.verdict == "undecided" and withheld.comparison.busy
    assert withheld.comparison.paired and 1.9 < withheld.comparison.ratio < 2.1
    assert not withheld.regression
    judged = diff(busy_verdicts=True)
    assert judged.comparison.verdict == "slower" and judged.regression
    store.close()
    from typer.testing import CliRunner

    from dlbench.cli import app

    gate = CliRunner().invoke(app, ["compare", "1", "2", "--db", str(tmp_path / "ab.db")])
    said = " ".join(gate.output.split())
    assert gate.exit_code == 0, said
    assert "no verdict for 1 comparison(s): a side was measured on a busy machine" in said
    asked = CliRunner().invoke(app, ["compare", "1", "2", "--busy-verdicts", "--db", str(tmp_path / "ab.db")])
    assert asked.exit_code == 1, asked.output  # the regression, judged anyway


def test_unequal_load_needs_a_consistent_gap_of_three_points_over_six_blocks():
    from dlbench.analysis.busy import unequal_load

    quiet = {k: v for k, v in enumerate([3.1, 5.2, 4.0, 6.1, 2.9, 4.4])}
    beside = {k: v + 4.0 + 0.1 * k for k, v in quiet.items()}  # B: 4.0-4.5 points more in every block
    assert unequal_load(quiet, beside) == pytest.approx(4.25)
    assert unequal_load(beside, quiet) == pytest.approx(-4.25)  # the direction is kept
    # The same shares shuffled between the sides: no consistent gap.
    mixed = {k: (beside if k % 2 else quiet)[k] for k in quiet}
    other = {k: (quiet if k % 2 else beside)[k] for k in quiet}
    assert unequal_load(mixed, other) is None
    # A consistent gap under the threshold, and a large one over too few blocks: not unequal.
    assert unequal_load(quiet, {k: v + 2.0 + 0.1 * k for k, v in quiet.items()}) is None
    assert unequal_load({k: quiet[k] for k in range(5)}, {k: beside[k] for k in range(5)}) is None


def test_run_vs_run_withholds_the_verdict_of_sides_busy_unequally_beneath_the_flag(tmp_path):
    """Runs in turns of identical code whose B side ran beside a light load (8-9% of the CPU,
    under the 15% flag, against 3% beside A) and was 1.2x slower for it: the ratio stands,
    the verdict waits. The same with both sides at 3%: decided slower."""
    from dlbench.analysis.comparisons import run_vs_run

    def diff(b_share: float, path):
        store = Store(path)
        runs = [
            store.create_run(name=n, command="test", config_source="test", config_text="", experiment={},
                             environment={}, version="0")
            for n in ("A", "B")
        ]  # fmt: skip
        for block in range(6):
            for run_id, time_, share in (
                (runs[0], FAST[block], 3.0),
                (runs[1], 1.2 * FAST[block], b_share + 0.1 * block),
            ):
                _add_timed_trial(store, run_id, "torch", block, 0, time_, share)
        sides = [(store.trials(r), store.measurements(r, latency=False)) for r in runs]
        (d,) = [x for x in run_vs_run(*sides[0], *sides[1]) if x.metric == "train time"]
        store.close()
        return d

    uneven = diff(8.5, tmp_path / "uneven.db")
    assert uneven.comparison.busy and uneven.comparison.verdict == "undecided" and not uneven.regression
    assert uneven.comparison.ratio == pytest.approx(1.2)
    even = diff(3.0, tmp_path / "even.db")
    assert not even.comparison.busy and even.comparison.verdict == "slower" and even.regression
