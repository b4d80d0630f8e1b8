"""`dlbench compare A B`: identical code -> no meaningful difference; a run slowed on
purpose -> a regression and a non-zero exit status (usable as a CI gate)."""

from __future__ import annotations

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
    faster = runner.invoke(app, ["compare", "3", f"{db}:1", "--db", str(db)])
    assert faster.exit_code == 0 and "faster" in faster.output


def test_compare_refuses_bad_references(tmp_path):
    result = runner.invoke(app, ["compare", "nope.db", "1", "--db", str(tmp_path / "x.db")])
    assert result.exit_code == 2 and "no such database file" in result.output
    result = runner.invoke(app, ["compare", "1", "2", "--threshold", "5", "--db", str(tmp_path / "x.db")])
    assert result.exit_code == 2 and "must lie strictly between 0 and 1" in result.output
