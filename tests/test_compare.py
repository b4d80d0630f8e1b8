"""`dlbench compare A B`: identical code -> no meaningful difference; a run slowed on
purpose -> a regression and a non-zero exit status (usable as a CI gate)."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from dlbench.cli import app

runner = CliRunner()


def _run(db, plugin, seconds: float) -> None:
    (plugin / "dlbench_faulty" / "train_seconds").write_text(str(seconds))
    result = runner.invoke(app, ["run", "--framework", "faulty", "--model", "mlp", "--dataset", "synthetic",
                                 "--repeats", "8", "--warmup", "1", "--latency-batches", "0",
                                 "--samplers", "none", "--db", str(db)])
    assert result.exit_code == 0, result.output


def test_identical_runs_show_no_difference_and_a_slowdown_is_a_regression(tmp_path, faulty_plugin):
    db = tmp_path / "c.db"
    _run(db, faulty_plugin, 0.1)    # run 1
    _run(db, faulty_plugin, 0.1)    # run 2: the same code
    _run(db, faulty_plugin, 0.15)   # run 3: 50% slower training
    same = runner.invoke(app, ["compare", "1", "2", "--db", str(db)])
    assert same.exit_code == 0, same.output
    assert "no meaningful difference" in same.output and "REGRESSION" not in same.output
    slow = runner.invoke(app, ["compare", "1", "3", "--db", str(db)])
    assert slow.exit_code == 1, slow.output
    assert "REGRESSION" in slow.output and "2 comparisons, 2 regressions" in slow.output  # train and inference
    # The slowdown came from a file the plugin reads, which no run records: the note says so.
    flat = " ".join(slow.output.split())
    assert "nothing dlbench records differs between A and B" in flat
    moved = re.search(r"2 comparison\(s\) moved \(×([\d.]+) to ×([\d.]+)\) although", flat)
    assert moved and all(1.4 < float(r) < 1.6 for r in moved.groups()), flat  # train and inference, 50% slower
    assert "code outside what dlbench records" in flat
    faster = runner.invoke(app, ["compare", "3", f"{db}:1", "--db", str(db)])
    assert faster.exit_code == 0 and "faster" in faster.output
    # A low quantile sees the same slowdown (8 repeats: the 25th percentile rests on 2 below it)...
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


def _diff(framework: str, verdict: str, ratio: float):
    from dataclasses import replace

    from dlbench import stats
    from dlbench.comparisons import RunDiff

    c = stats.compare_two([1.0, 1.1, 0.9, 1.05, 0.95, 1.0], [1.0, 1.1, 0.9, 1.05, 0.95, 1.0], paired=False)
    return RunDiff({"framework": framework}, "train time", replace(c, verdict=verdict, ratio=ratio),
                   verdict == "slower")


ENV = {"hostname": "box", "cpu_model": "Xeon", "logical_cores": 2, "python": "3.11.7", "dlbench_git": "abc",
       "cwd": "/a", "packages": {"torch": "2.13.0", "jax": "0.10.2", "jaxlib": "0.10.2", "numpy": "2.4.6"}}


def test_drift_notes_name_what_differs_and_unchanged_cases_that_moved():
    from dlbench.comparisons import drift_notes

    # Identical environments (the working directory does not count): a move is the machine's or unrecorded.
    same = drift_notes([_diff("jax", "slower", 1.23), _diff("torch", "undecided", 1.1)], ENV, dict(ENV, cwd="/b"))
    assert same[0] == "nothing dlbench records differs between A and B (machine, packages, dlbench)"
    assert same[1].startswith("1 comparison(s) moved (×1.23) although nothing dlbench records differs")
    # torch upgraded: jax is the control; its move says the machine changed too.
    upgraded = dict(ENV, packages=dict(ENV["packages"], torch="2.14.0"))
    notes = drift_notes([_diff("torch", "slower", 1.3), _diff("jax", "slower", 1.2)], ENV, upgraded)
    assert notes[0] == "recorded differences between A and B: torch: 2.13.0 → 2.14.0"
    assert notes[1].startswith("1 comparison(s) of cases whose framework packages, machine and dlbench are the "
                               "same in both runs moved (×1.2)")
    # Only the upgraded framework moved: no warning.
    assert drift_notes([_diff("torch", "slower", 1.3), _diff("jax", "undecided", 1.0)], ENV, upgraded) == notes[:1]
    # Another machine: no case is a control, and the notes say what differs.
    other = drift_notes([_diff("jax", "faster", 0.5)], ENV, dict(ENV, hostname="big", cpu_model="EPYC"))
    assert other == ["recorded differences between A and B: hostname: box → big; cpu_model: Xeon → EPYC"]
