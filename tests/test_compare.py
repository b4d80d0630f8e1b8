"""`dlbench compare A B`: identical code -> no meaningful difference; a run slowed on
purpose -> a regression and a non-zero exit status (usable as a CI gate)."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from dlbench.cli import app

runner = CliRunner()


@pytest.fixture(autouse=True)
def wide_console(monkeypatch):
    """The CLI's console at a width no table here reaches, whatever terminal (or none)
    the tests run under, so that no cell wraps and assertions read whole phrases."""
    from dlbench import cli

    monkeypatch.setattr(cli.console, "width", 400)  # the console every command prints on


def _run(db, plugin, seconds: float, trials: int = 8, threads: int = 1) -> None:
    (plugin / "dlbench_faulty" / "train_seconds").write_text(str(seconds))
    result = runner.invoke(
        app,
        [
            "run",
            "--framework",
            "faulty",
            "--model",
            "mlp",
            "--dataset",
            "synthetic",
            "--trials",
            str(trials),
            "--repeats",
            "2",
            "--warmup",
            "0",
            "--latency-batches",
            "0",
            "--samplers",
            "none",
            "--threads",
            str(threads),
            "--db",
            str(db),
        ],
    )
    assert result.exit_code == 0, result.output


def test_one_process_per_run_gives_a_ratio_and_no_verdict(tmp_path, faulty_plugin):
    db = tmp_path / "c.db"
    _run(db, faulty_plugin, 0.1, trials=1)
    _run(db, faulty_plugin, 0.15, trials=1)  # 50% slower, but each run is one process
    result = runner.invoke(app, ["compare", "1", "2", "--db", str(db)])
    assert result.exit_code == 0, result.output  # no regression is claimed from one process a side
    flat = " ".join(result.output.split())
    assert "REGRESSION" not in flat and flat.count("no verdict") >= 2, flat
    assert "no verdict for 2 comparison(s)" in flat and "dlbench extend 1 2 --blocks N` runs both in turns" in flat
    assert "decides with 4 or more blocks a run" in flat


def test_runs_taken_one_after_the_other_get_a_ratio_and_no_verdict(tmp_path, faulty_plugin):
    db = tmp_path / "c.db"
    _run(db, faulty_plugin, 0.1, trials=6)
    _run(db, faulty_plugin, 0.15, trials=6)  # 50% slower, 6 processes each, but a run apart
    result = runner.invoke(app, ["compare", "1", "2", "--db", str(db)])
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())
    assert "REGRESSION" not in flat and "the runs were taken one after the other" in flat, flat
    assert "6+6 trial medians, unpaired" in flat
    # ...but the move itself, in cases nothing recorded distinguishes, is said: the machine or unrecorded code.
    assert "2 comparison(s) moved (×" in flat and "although nothing dlbench records differs" in flat


def test_identical_runs_show_no_difference_and_a_slowdown_is_a_regression(tmp_path, faulty_plugin):
    db = tmp_path / "c.db"
    (faulty_plugin / "dlbench_faulty" / "train_seconds_2").unlink(missing_ok=True)
    _run(db, faulty_plugin, 0.1, trials=1)  # run 1
    _run(db, faulty_plugin, 0.1, trials=1)  # run 2: the same code
    # run 3: 50% slower training (the plugin reads train_seconds_2 for its 2-thread runs;
    # compare matches cases across thread counts, a machine setting)
    (faulty_plugin / "dlbench_faulty" / "train_seconds_2").write_text("0.15")
    _run(db, faulty_plugin, 0.1, trials=1, threads=2)
    # The three runs take turns, block by block: 8 processes each, paired by block.
    extended = runner.invoke(app, ["extend", "1", "2", "3", "--blocks", "7", "--db", str(db)])
    assert extended.exit_code == 0, extended.output
    same = runner.invoke(app, ["compare", "1", "2", "--band", "0.05", "--db", str(db)])
    assert same.exit_code == 0, same.output
    assert "no meaningful difference" in same.output and "REGRESSION" not in same.output
    slow = runner.invoke(app, ["compare", "1", "3", "--db", str(db)])
    assert slow.exit_code == 1, slow.output
    assert "REGRESSION" in slow.output and "2 comparisons, 2 regressions" in slow.output  # train and inference
    # What the two runs' records differ in is listed (the thread count the slowdown rode on).
    flat = " ".join(slow.output.split())
    assert "recorded differences between A and B: threads: 1 → 2" in flat, flat
    faster = runner.invoke(app, ["compare", "3", f"{db}:1", "--db", str(db)])
    assert faster.exit_code == 0 and "faster" in faster.output
    # A low quantile sees the same slowdown (8 trials: the 25th percentile rests on 2 below it)...
    low = runner.invoke(app, ["compare", "1", "3", "--quantile", "0.25", "--db", str(db)])
    assert low.exit_code == 1 and "2 comparisons, 2 regressions" in low.output, low.output
    assert "25th percentile A" in " ".join(low.output.split())
    # ...and the 10th percentile of 8 values is refused a verdict rather than guessed
    # (the reason, "needs at least 20 per side", is checked in test_stats).
    tenth = runner.invoke(app, ["compare", "1", "3", "--quantile", "0.1", "--db", str(db)])
    assert tenth.exit_code == 0 and "2 comparisons, 0 regressions" in tenth.output, tenth.output
    assert tenth.output.count("undecided") == 2


def test_compare_refuses_bad_references(tmp_path):
    result = runner.invoke(app, ["compare", "nope.db", "1", "--db", str(tmp_path / "x.db")])
    assert result.exit_code == 2 and "no such database file" in result.output
    result = runner.invoke(app, ["compare", "1", "2", "--threshold", "5", "--db", str(tmp_path / "x.db")])
    assert result.exit_code == 2 and "must lie strictly between 0 and 1" in result.output
    result = runner.invoke(app, ["compare", "1", "2", "--quantile", "0", "--db", str(tmp_path / "x.db")])
    assert result.exit_code == 2 and "--quantile 0.0 must lie strictly between 0 and 1" in result.output


def _diff(framework: str, verdict: str, ratio: float, paired: bool = False, interleaved: bool = True):
    from dataclasses import replace

    from dlbench.analysis import stats
    from dlbench.analysis.comparisons import RunDiff

    c = stats.compare_two(
        [1.0, 1.1, 0.9, 1.05, 0.95, 1.0], [1.0, 1.1, 0.9, 1.05, 0.95, 1.0], paired=paired, interleaved=interleaved
    )
    c = replace(c, verdict=verdict, ratio=ratio)
    if not interleaved:  # runs taken one after the other: the ratio's CI, no verdict
        c = replace(c, ratio_ci=(ratio * 0.97, ratio * 1.03))
    return RunDiff({"framework": framework}, "train time", c, verdict == "slower")


ENV = {
    "hostname": "box",
    "cpu_model": "Xeon",
    "logical_cores": 2,
    "python": "3.11.7",
    "dlbench_git": "abc",
    "cwd": "/a",
    "packages": {"torch": "2.13.0", "jax": "0.10.2", "jaxlib": "0.10.2", "numpy": "2.4.6"},
}


def test_drift_notes_name_what_differs_and_unchanged_cases_that_moved():
    from dlbench.report.drift import drift_notes

    # Identical environments (the working directory does not count): a move is the machine's or unrecorded.
    # Runs taken one after the other: a ratio whose CI clears the band moved, and the advice is to take turns.
    one_then_other = drift_notes(
        [_diff("jax", "undecided", 1.23, interleaved=False), _diff("torch", "undecided", 1.01, interleaved=False)],
        ENV,
        dict(ENV, cwd="/b"),
    )
    assert one_then_other[0] == "nothing dlbench records differs between A and B (machine, packages, settings, dlbench)"
    assert one_then_other[1].startswith("1 comparison(s) moved (×1.23) although nothing dlbench records differs")
    assert "add blocks to both runs in turn (`dlbench extend A B`)" in one_then_other[1]
    # Runs that took turns (a decided verdict needs that), unpaired: no advice to do what was done.
    same = drift_notes([_diff("jax", "slower", 1.23), _diff("torch", "undecided", 1.1)], ENV, dict(ENV, cwd="/b"))
    assert same[1].startswith("1 comparison(s) moved (×1.23) although nothing dlbench records differs")
    assert "A and B took turns, so" in same[1] and "dlbench extend" not in same[1]
    # Two virtual environments: the interpreter is a recorded difference.
    venvs = drift_notes([_diff("jax", "undecided", 1.0)], dict(ENV, python_executable="/a/bin/python"), ENV)
    assert venvs == ["recorded differences between A and B: python_executable: /a/bin/python → None"]
    # Runs that took turns block by block: the machine's drift fell on both; no advice to alternate.
    paired = drift_notes([_diff("jax", "slower", 1.9, paired=True)], ENV, ENV)
    assert paired[1].startswith("1 comparison(s) moved (×1.9) although nothing dlbench records differs")
    assert "A and B took turns block by block" in paired[1] and "dlbench extend" not in paired[1]
    # torch upgraded: jax is the control; its move says the machine changed too.
    upgraded = dict(ENV, packages=dict(ENV["packages"], torch="2.14.0"))
    notes = drift_notes([_diff("torch", "slower", 1.3), _diff("jax", "slower", 1.2)], ENV, upgraded)
    assert notes[0] == "recorded differences between A and B: torch: 2.13.0 → 2.14.0"
    assert notes[1].startswith(
        "1 comparison(s) of cases whose framework packages, settings, machine and dlbench are the same in both runs "
        "moved (×1.2)"
    )
    # Only the upgraded framework moved: no warning.
    assert drift_notes([_diff("torch", "slower", 1.3), _diff("jax", "undecided", 1.0)], ENV, upgraded) == notes[:1]
    # Another machine: no case is a control, and the notes say what differs.
    other = drift_notes([_diff("jax", "faster", 0.5)], ENV, dict(ENV, hostname="big", cpu_model="EPYC"))
    assert other == ["recorded differences between A and B: hostname: box → big; cpu_model: Xeon → EPYC"]


def _trial(tid: int, block: int, start: float, end: float | None = None) -> dict:
    """A stored trial row: one case, its block, and when it ran (seconds after 12:00)."""

    def at(s):
        return None if s is None else f"2026-01-01T12:{int(s) // 60:02d}:{s % 60:06.3f}+00:00"

    return {
        "id": tid,
        "case_key": "k",
        "case_json": json.dumps({"framework": "x", "variant": "v", "model": "m"}),
        "block": block,
        "status": "ok",
        "started_at": at(start),
        "finished_at": at(start + 1 if end is None else end),
    }


def _rows(trials: list[dict], values: list[float]) -> list[dict]:
    """Measurement rows as Store.measurements gives them: each with its trial's status."""
    return [
        {
            "trial_id": t["id"],
            "case_key": "k",
            "status": t["status"],
            "phase": "train",
            "metric": "time",
            "warmup": 0,
            "repeat": 0,
            "value": v,
        }
        for t, v in zip(trials, values)
    ]


def test_blocks_alternated_only_when_every_block_ran_back_to_back():
    from dlbench.analysis.comparisons import blocks_alternated

    n = 6
    # dlbench extend A B: A0 B0 | B1 A1 | A2 B2 ...: each block number's trials are together in time.
    a = [_trial(k, k, 4 * k + (0 if k % 2 == 0 else 2)) for k in range(n)]
    b = [_trial(k, k, 4 * k + (2 if k % 2 == 0 else 0)) for k in range(n)]
    assert blocks_alternated(a, b) and blocks_alternated(b, a)
    # One run, then the other: block 0 of A and block 0 of B are a whole run apart.
    later = [_trial(k, k, 100 + 2 * k) for k in range(n)]
    assert not blocks_alternated(a, later)
    # A block of B that overlaps the next block of A.
    overlapping = [dict(t) for t in b]
    overlapping[2] = _trial(2, 2, 10, 13.5)  # block 2 of B runs on into block 3 (from 12 s)
    assert not blocks_alternated(a, overlapping)
    # Unfinished trials (no finish time) and blocks only one run has do not break the turns...
    assert blocks_alternated(a + [_trial(99, n, 4 * n), _trial(100, n + 1, 4 * n + 2, None) | {"finished_at": None}], b)
    # ...but a single shared block is no pairing.
    assert not blocks_alternated(a[:1], b[:1])


def test_paired_blocks_cancel_a_drift_that_hides_a_change_from_unpaired_runs():
    """Hand-made: the machine's speed swings by ±20% from block to block and falls on
    both members of a pair. B is 1% slower (no meaningful difference) or 10% slower
    (a regression). Paired by block, the ratio of every pair is exactly 1.01 or 1.10;
    unpaired, the swing hides both."""
    from dlbench.analysis.comparisons import run_vs_run

    drift = [1.0, 1.2, 0.8, 1.15, 0.85, 1.1, 0.9, 1.05, 0.95, 1.2, 0.8, 1.0]
    n = len(drift)
    a = [_trial(k, k, 4 * k) for k in range(n)]
    b = [_trial(100 + k, k, 4 * k + 2) for k in range(n)]
    sequential = [_trial(100 + k, k, 1000 + 2 * k) for k in range(n)]
    rows_a = _rows(a, drift)
    for slowdown, paired_verdict in ((1.01, "no meaningful difference"), (1.10, "slower")):
        values_b = [slowdown * d for d in drift]
        (paired,) = run_vs_run(a, rows_a, b, _rows(b, values_b))
        assert paired.sample == f"{n} pairs of trial medians, by block"
        assert paired.comparison.paired and paired.comparison.verdict == paired_verdict
        assert paired.regression == (paired_verdict == "slower")
        lo, hi = paired.comparison.ratio_ci
        assert lo == pytest.approx(slowdown) and hi == pytest.approx(slowdown)  # every pair's ratio is the same
        (unpaired,) = run_vs_run(a, rows_a, sequential, _rows(sequential, values_b))
        assert unpaired.sample == f"{n}+{n} trial medians, unpaired" and not unpaired.comparison.paired
        assert unpaired.comparison.verdict == "undecided" and not unpaired.regression
    # A block of B whose trial failed: its partner in A is left out, and said so.
    b_failed = [dict(t, status="failed") if t["block"] == 3 else t for t in b]
    (partial,) = run_vs_run(a, rows_a, b_failed, _rows(b_failed, drift))
    assert partial.sample == f"{n - 1} pairs of trial medians, by block (1 trial(s) without a partner left out)"
    assert partial.comparison.n_a == n - 1


def test_compare_pairs_runs_extended_in_turn(tmp_path, faulty_plugin):
    a, b, c = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "c.db"
    for db in (a, b):
        (faulty_plugin / "dlbench_faulty" / "train_seconds").write_text("0.02")
        result = runner.invoke(
            app,
            [
                "run",
                "--trials",
                "1",
                "--framework",
                "faulty",
                "--model",
                "mlp",
                "--dataset",
                "synthetic",
                "--repeats",
                "2",
                "--warmup",
                "0",
                "--latency-batches",
                "0",
                "--samplers",
                "none",
                "--trials",
                "1",
                "--db",
                str(db),
            ],
        )
        assert result.exit_code == 0, result.output
    extended = runner.invoke(app, ["extend", str(a), str(b), "--blocks", "5"])
    assert extended.exit_code == 0, extended.output
    paired = runner.invoke(app, ["compare", str(a), str(b)])
    assert paired.exit_code == 0 and paired.output.count("6 pairs of trial medians, by block") == 2, paired.output
    # The same run compared with one taken after it: unpaired.
    result = runner.invoke(
        app,
        [
            "run",
            "--trials",
            "1",
            "--framework",
            "faulty",
            "--model",
            "mlp",
            "--dataset",
            "synthetic",
            "--repeats",
            "2",
            "--warmup",
            "0",
            "--latency-batches",
            "0",
            "--samplers",
            "none",
            "--trials",
            "6",
            "--db",
            str(c),
        ],
    )
    assert result.exit_code == 0, result.output
    unpaired = runner.invoke(app, ["compare", str(a), str(c)])
    assert unpaired.exit_code == 0 and unpaired.output.count("6+6 trial medians, unpaired") == 2, unpaired.output
    assert "pairs of trial" not in unpaired.output


def test_a_case_with_no_values_on_one_side_fails_the_gate_unless_allowed(tmp_path, faulty_plugin):
    """Every trial of B timed out: comparing nothing must not pass a CI gate."""
    db = tmp_path / "m.db"
    _run(db, faulty_plugin, 0.01)  # run 1
    (faulty_plugin / "dlbench_faulty" / "train_seconds").write_text("30")
    timed_out = runner.invoke(
        app,
        [
            "run",
            "--trials",
            "1",
            "--framework",
            "faulty",
            "--model",
            "mlp",
            "--dataset",
            "synthetic",
            "--repeats",
            "8",
            "--warmup",
            "1",
            "--latency-batches",
            "0",
            "--timeout",
            "2",
            "--samplers",
            "none",
            "--db",
            str(db),
        ],
    )  # run 2: the same case, timed out
    assert timed_out.exit_code == 1 and "1 timeout" in timed_out.output, timed_out.output
    gate = runner.invoke(app, ["compare", "1", "2", "--db", str(db)])
    assert gate.exit_code == 3, gate.output
    flat = " ".join(gate.output.split())
    assert "2 comparisons, 0 regressions, 2 without values on one side" in flat
    assert "error: 2 of 2 comparisons have no values on one side" in flat and "--allow-missing" in flat
    allowed = runner.invoke(app, ["compare", "1", "2", "--allow-missing", "--db", str(db)])
    assert allowed.exit_code == 0, allowed.output


def test_compare_names_every_setting_that_differs_and_shows_units(tmp_path, tiny_run):
    """The same run at --threads 1 and at --threads 2: compare says so (the case and the
    framework's fairness manifest), instead of 'nothing differs'."""
    from dlbench.analysis.comparisons import setting_changes
    from dlbench.report.drift import setting_line
    from dlbench.store import Store

    runner = CliRunner()
    dbs = [tmp_path / "t1.db", tmp_path / "t2.db"]
    for db, threads in zip(dbs, (1, 2)):
        tiny_run(db, threads=threads)
    with Store(dbs[0]) as a, Store(dbs[1]) as b:
        changes = setting_changes(a.trials(1), b.trials(1))
    lines = [setting_line(c) for c in changes]
    assert "threads: 1 → 2" in lines, lines
    assert all(c.key != "seed" for c in changes)  # what is equal is not listed
    out = runner.invoke(app, ["compare", str(dbs[0]), str(dbs[1]), "--allow-missing"])
    text = " ".join(out.output.split())
    assert "threads: 1 → 2" in text and "nothing dlbench records differs" not in text
    # Each time in the unit its size reads best in, as report and run write it ("18.4 ms").
    assert "median A" in text and "median B" in text and re.search(r"│ [\d.]+ (µs|ms|s|min) +│", out.output)
