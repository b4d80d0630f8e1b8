"""Stored values that are no measurement (infinity, a value at the float's limit, text in
the number column), written by another tool: read as missing everywhere, named in one
line, never a traceback (dlbench.store.core.VALID_VALUE, dlbench.report.invalid)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlbench.cli import app
from dlbench.store import Measurement, Store

CASE = {
    "dataset": "digits", "device": "cpu", "epochs": 1, "init": "glorot-uniform", "lr": 0.01, "momentum": 0.0,
    "optimizer": "sgd", "precision": "float32", "seed": 0, "steps": None, "threads": 1, "model": "mlp",
    "batch_size": 32, "input_shape": 0, "layout": "native", "pipeline": "preloaded", "model_options": {},
    "synthetic": None, "train_samples": 0, "test_samples": 0, "variant": "v",
}  # fmt: skip
TIMES = {"torch": [2.0, 2.1, 2.2, 2.3, 2.4, 2.5], "numpy": [1.0, 1.05, 1.1, 1.15, 1.2, 1.25]}


def _run(path: Path) -> Path:
    store = Store(path)
    run_id = store.create_run(
        name="r", command="test", config_source="test", config_text="", experiment={}, environment={}, version="0"
    )
    for block in range(6):
        for position, fw in enumerate(TIMES):
            tid = store.add_trial(run_id, case_key=fw, block=block, position=position,
                                  case={**CASE, "framework": fw}, protocol={"repeats": 1, "warmup": 0})  # fmt: skip
            store.start_trial(tid)
            store.add_measurements(tid, [Measurement(1, False, "train", "time", TIMES[fw][block], "s")])
            store.finish_trial(tid, status="ok", error=None, returncode=0, wall_s=1.0, stderr="")
    store.close()
    return path


def _spoil(path: Path, trial_ids: list[int], value: object) -> None:
    con = sqlite3.connect(path)
    with con:
        for t in trial_ids:
            con.execute("UPDATE measurements SET value=? WHERE trial_id=? AND metric='time'", (value, t))
    con.close()


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), 1.7e308, "fast"])
def test_a_value_no_measurement_holds_is_left_out_and_named(tmp_path, value):
    db = _run(tmp_path / "r.db")
    _spoil(db, [1], value)  # torch's first trial
    with Store(db, readonly=True) as store:
        rows = [m for m in store.measurements(1) if m.trial_id == 1 and m.metric == "time"]
        assert [m.value for m in rows] == [None]
        assert store.invalid_values(1) == [(1, "train", "time", str(value))]
    result = CliRunner().invoke(app, ["report", "--db", str(db)])
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "INVALID VALUES: 1 stored value(s) are no number a measurement can hold" in said
    assert f"trial 1 train time = {str(value)[:24]}" in said
    document = CliRunner().invoke(app, ["report", "--db", str(db), "--format", "json"])
    assert document.exit_code == 0, document.output
    assert any("INVALID VALUES" in w for w in json.dumps(json.loads(document.output)).split('"'))


def test_compare_with_every_value_of_a_side_invalid_says_no_values_not_a_traceback(tmp_path):
    a, b = _run(tmp_path / "a.db"), _run(tmp_path / "b.db")
    _spoil(b, list(range(1, 13, 2)), float("inf"))  # every torch trial of run B
    result = CliRunner().invoke(app, ["compare", f"{a}:1", f"{b}:1", "--format", "json"])
    assert result.exit_code == 3, result.output  # no values on one side, as for failed trials
    assert "Traceback" not in result.output and '"comparisons"' in result.output
