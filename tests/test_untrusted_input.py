"""Nothing a user did not write is executed: not a `dlbench/` package planted in the
working directory, not an interpreter path read from a database someone sent."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")


def test_a_planted_dlbench_package_in_the_working_directory_is_never_imported(tmp_path, cli):
    planted = tmp_path / "dlbench"
    planted.mkdir()
    marker = tmp_path / "PWNED"
    evil = f"import pathlib; pathlib.Path({str(marker)!r}).write_text('ran')\n"
    (planted / "trial").mkdir()
    for name in ("__init__.py", "worker.py", "__main__.py", "trial/__init__.py", "trial/worker.py"):
        (planted / name).write_text(evil)
    (tmp_path / "numpy.py").write_text(evil)  # a planted framework dependency, too
    env = dict(os.environ, PYTHONPATH=SRC)
    # The installed console script (not `python -m dlbench`, which a user runs from where they choose).
    script = Path(sys.executable).parent / "dlbench"
    command = [str(script)] if script.exists() else [sys.executable, "-c", "from dlbench.cli import main; main()"]
    flags = cli.flags(
        trials=1, framework="numpy", model="mlp", dataset="synthetic", epochs=1, repeats=1, warmup=0, latency_batches=0,
        samplers="none",
    )  # fmt: skip
    result = subprocess.run(
        [*command, "run", *flags, "--db", str(tmp_path / "r.db")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert not marker.exists(), "code planted in the working directory ran"
    assert result.returncode == 0, result.stderr[-2000:]
    with sqlite3.connect(tmp_path / "r.db") as con:
        assert con.execute("SELECT status FROM trials").fetchall() == [("ok",)]


def _record_interpreter(db: Path, python: str) -> None:
    with sqlite3.connect(db) as con:
        env = json.loads(con.execute("SELECT environment_json FROM runs WHERE id = 1").fetchone()[0])
        env["python_executable"] = python
        con.execute("UPDATE runs SET environment_json = ? WHERE id = 1", (json.dumps(env),))


def test_extend_refuses_an_interpreter_the_database_names(tmp_path, faulty_run, cli):
    db = tmp_path / "sent.db"
    faulty_run(db, repeats=1)
    marker = tmp_path / "PWNED"
    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/sh\necho ran > {marker}\n")
    fake.chmod(0o755)
    _record_interpreter(db, str(fake))
    flat = " ".join(cli("extend", db, code=2).split())
    assert f"recorded the interpreter {fake}, which is not this dlbench's" in flat
    assert "dlbench runs no program a database names" in flat and f"--python {fake}" in flat
    assert not marker.exists()
    with sqlite3.connect(db) as con:  # nothing was added
        assert con.execute("SELECT COUNT(*) FROM trials").fetchone()[0] == 1

    # Named by the user, the same path is run: here it is no Python, so it is refused before any
    # trial (it ran once, to say whether it can run dlbench's worker), and nothing is added.
    said = " ".join(cli("extend", db, "--python", fake, code=2).split())
    assert f"--python {fake}: not a Python that can run dlbench's worker" in said
    assert marker.exists()
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT COUNT(*) FROM trials").fetchone()[0] == 1


def test_extend_runs_under_this_interpreter_and_refuses_a_missing_one(tmp_path, faulty_run, cli):
    db = tmp_path / "mine.db"
    faulty_run(db, repeats=1)
    cli("extend", db)
    _record_interpreter(db, str(tmp_path / "gone" / "python"))
    assert "which does not exist here" in " ".join(cli("extend", db, code=2).split())
    assert "not an executable file" in cli("extend", db, "--python", tmp_path, code=2)


def test_a_stored_profile_trace_folder_is_not_written_to_unless_named_again(tmp_path, tiny_run, cli):
    """A database someone sent chooses no folder to write into: run --resume keeps a
    stored profile_traces only when --profile-traces names the same folder now."""
    from dlbench.trial.spec import TrialSpec

    db = tmp_path / "sent.db"
    tiny_run(db, repeats=1)
    planted = tmp_path / "planted" / "deep"
    with sqlite3.connect(db) as con:
        row = con.execute("select id, protocol_json from trials").fetchone()
        protocol = dict(json.loads(row[1]), profile_traces=str(planted), profile_steps=2)
        con.execute(
            "update trials set status = 'pending', protocol_json = ? where id = ?", (json.dumps(protocol), row[0])
        )
        con.execute("update runs set status = 'interrupted'")
        con.row_factory = sqlite3.Row
        stored = con.execute("select * from trials").fetchone()
    assert TrialSpec.from_row(stored).protocol.profile_traces == ""
    assert TrialSpec.from_row(stored, traces=str(tmp_path / "other")).protocol.profile_traces == ""
    assert TrialSpec.from_row(stored, traces=str(planted)).protocol.profile_traces == str(planted)
    output = cli("run", "--resume", "1", "--db", db, code=None)
    assert "a path read from a database is not written to" in output and str(planted) in output
    assert not (tmp_path / "planted").exists()
