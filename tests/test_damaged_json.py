"""A database is data, never instructions (issue 33 item 3): JSON columns damaged by
something other than dlbench, and stored values outside what an experiment file
allows, are one line naming the row and the column, before anything runs or prints
from them, and the stored results stay as they were."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from dlbench.trial.spec import SpecError, case_from_dict


@pytest.fixture(scope="module")
def good(small_db: Path) -> Path:
    return small_db


def _damaged(good: Path, tmp_path: Path, sql: str) -> Path:
    db = tmp_path / "damaged.db"
    shutil.copy(good, db)
    with sqlite3.connect(db) as con:
        con.executescript(sql)
    return db


def _dlbench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dlbench", *args], capture_output=True, text=True, timeout=300, check=False
    )


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    ("sql", "says"),
    [
        ("update trials set case_json = '{not json'", "trial 1: case_json is not JSON"),
        ("update trials set protocol_json = '[1, 2]'", "trial 1: protocol_json is not a JSON object"),
        ("update trials set manifest_json = '{\"a\":'", "trial 1: manifest_json is not JSON"),
        ("update runs set environment_json = '[1,2'", "run 1: environment_json is not JSON"),
    ],
)
def test_damaged_json_is_one_line_for_every_reading_command(good: Path, tmp_path: Path, sql: str, says: str):
    db = _damaged(good, tmp_path, sql)
    before = _digest(db)
    for args in (
        ["report", "--db", str(db)],
        ["export", str(tmp_path / "out.csv"), "--db", str(db)],
        ["compare", str(good), str(db)],
    ):
        result = _dlbench(*args)
        assert result.returncode != 0 and "Traceback" not in result.stderr + result.stdout, (args, result.stderr)
        assert says in result.stderr and "something other than dlbench" in result.stderr, (args, result.stderr)
    assert _digest(db) == before and not (tmp_path / "out.csv").exists()


@pytest.mark.parametrize(
    ("sql", "says"),
    [
        ("update trials set protocol_json = json_set(protocol_json, '$.repeats', -5)", "repeats = -5: expected"),
        ("update trials set protocol_json = json_set(protocol_json, '$.timeout', 'soon')", "timeout = 'soon'"),
        ("update trials set case_json = json_set(case_json, '$.batch_size', 'big')", "batch_size = 'big'"),
        ("update trials set case_json = json_set(case_json, '$.precision', 'fp4')", "precision = 'fp4'"),
    ],
)
def test_stored_values_are_checked_as_if_typed_before_a_resume_runs_them(
    good: Path, tmp_path: Path, sql: str, says: str
):
    db = _damaged(
        good, tmp_path, sql + "; update trials set status = 'pending'; update runs set status = 'interrupted'"
    )
    result = _dlbench("run", "--resume", "1", "--db", str(db))
    assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr
    assert "trial 1: trial " in result.stderr and says in result.stderr and "nothing ran" in result.stderr
    with sqlite3.connect(db) as con:
        assert con.execute("select count(*) from measurements").fetchone()[0] > 0  # the stored results stay


def test_case_values_are_refused_with_the_rule():
    from dlbench.plan import Case

    case = Case(
        framework="numpy", variant="reference", model="mlp", dataset="digits", batch_size=8, init="glorot-uniform",
        optimizer="sgd", lr=0.01, momentum=0.0, epochs=1, steps=None, device="cpu", threads=1,
    ).as_dict()  # fmt: skip
    assert case_from_dict(case).batch_size == 8
    for name, value, rule in (
        ("lr", float("nan"), "a number from 0 to 100"),
        ("threads", True, "an integer from 1"),
        ("device", "tpu", "one of cpu, cuda"),
        ("synthetic", [28, -1], "a list of positive integers"),
    ):
        with pytest.raises(SpecError, match=f"trial case: {name} = .*: expected {rule}"):
            case_from_dict({**case, name: value})


def test_a_part_that_failed_is_in_the_answer_and_the_exit_status(good: Path, tmp_path: Path):
    """Every failure said (issue 33 item 4): a trial whose profile failed is ok (its timed
    repeats stand) but the report's answer names the failure, and so does the console."""
    from dlbench.report.model import Manifest, failed_parts

    ok = Manifest(1, 0, "a", "ok", {}, "")
    broken = Manifest(2, 0, "b", "ok", {"profile_error": "NotADirectoryError: traces"}, "")
    assert failed_parts([ok]) == []
    (line,) = failed_parts([ok, broken])
    assert line.startswith("PROFILE FAILED in 1 trial(s) (2): NotADirectoryError: traces")
    db = _damaged(
        good, tmp_path, """update trials set manifest_json = json_set(manifest_json, '$.profile_error', 'OSError: x')"""
    )
    result = _dlbench("report", "--db", str(db))
    assert result.returncode == 0 and "PROFILE FAILED in 1 trial(s) (1): OSError: x" in result.stdout


def test_a_profile_trace_folder_that_cannot_be_one_is_refused_before_running(tmp_path: Path):
    afile = tmp_path / "afile"
    afile.write_text("")
    result = _dlbench("plan", "--framework", "numpy", "--profile-steps", "2", "--profile-traces", str(afile / "sub"))
    assert result.returncode == 2 and f"{afile} is not a folder" in result.stderr, result.stderr


def test_a_user_model_that_exits_at_import_is_one_line_naming_the_file(tmp_path: Path):
    model = tmp_path / "exiter.py"
    model.write_text("import sys\nsys.exit(7)\n")
    result = _dlbench("plan", "--framework", "torch", "--model", f"{model}:M")
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert f"{model}:M: importing it raised SystemExit(7)" in result.stderr


def test_a_run_whose_process_died_is_interrupted_when_the_next_run_starts(good: Path, tmp_path: Path, tiny_run):
    """A run killed (or a study rerun instead of resumed) does not read 'running' forever."""
    dead = {"pid": 2**22 + 7, "host": "gone", "boot_id": "other", "start": 0.0}
    db = _damaged(good, tmp_path, f"update runs set status = 'running', owner_json = '{json.dumps(dead)}'")
    tiny_run(db, repeats=1)
    with sqlite3.connect(db) as con:
        status, reason = con.execute("select status, stop_reason from runs where id = 1").fetchone()
        assert con.execute("select status from runs where id = 2").fetchone()[0] == "finished"
    assert status == "interrupted" and "dlbench run --resume 1" in reason


def test_a_sampler_that_failed_is_in_the_answer(good: Path, tmp_path: Path):
    from dlbench.report.model import failed_samplers

    notes = {"cpu": ["poll failed, sampler stopped: OSError: gone"], "memory": ["fine"]}
    db = _damaged(good, tmp_path, f"update trials set telemetry_notes = '{json.dumps(notes)}'")
    with sqlite3.connect(db) as con:
        con.row_factory = sqlite3.Row
        trials = con.execute("select * from trials").fetchall()
    (line,) = failed_samplers(trials)
    assert line.startswith("SAMPLER FAILED in 1 trial(s) (1): cpu: poll failed, sampler stopped: OSError: gone")
    assert failed_samplers([{**dict(trials[0]), "telemetry_notes": json.dumps({"cpu": ["fine"]})}]) == []
    result = _dlbench("report", "--db", str(db))
    assert "SAMPLER FAILED in 1 trial(s)" in " ".join(result.stdout.split())
