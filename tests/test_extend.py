"""`dlbench extend`: more blocks for stored runs, the runs taking turns (ABBA), each
under the interpreter it recorded; bad references fail before anything runs."""

from __future__ import annotations

import json
import re
import sqlite3

from dlbench.store import Store


def test_extend_adds_blocks_to_two_runs_in_turn(tmp_path, faulty_run, cli):
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    faulty_run(a, train_seconds=0.01)
    faulty_run(b, train_seconds=0.01)
    output = cli("extend", a, f"{b}:1", "--blocks", "3")
    turns = re.findall(r"block (\d)/3: (\S+) \(run 1\) block (\d) done", output)
    # ABBA: A, B | B, A | A, B; each run's blocks numbered on from its first (block 0)
    assert [(int(i), ref, int(blk)) for i, ref, blk in turns] == [
        (1, str(a), 1),
        (1, f"{b}:1", 1),
        (2, f"{b}:1", 2),
        (2, str(a), 2),
        (3, str(a), 3),
        (3, f"{b}:1", 3),
    ]
    for db in (a, b):
        with Store(db) as store:
            trials = store.trials(1)
            assert sorted(t["block"] for t in trials) == [0, 1, 2, 3]
            assert {t["status"] for t in trials} == {"ok"} and store.run(1)["status"] == "finished"
            # every new trial has the case and protocol of the first
            assert len({(t["case_json"], t["protocol_json"]) for t in trials}) == 1
            n = store.db.execute(
                "SELECT COUNT(*) FROM measurements m JOIN trials t ON t.id = m.trial_id "
                "WHERE t.block = 3 AND m.phase = 'train' AND m.metric = 'time'"
            ).fetchone()[0]
            assert n == 2  # the two measured repeats of the last block are stored
    flat = "".join(output.split())  # the console wraps long paths
    assert flat.count("4ok") == 2 and f"dlbenchcompare{a}{b}:1" in flat


def test_extend_refuses_bad_input_before_running(tmp_path, faulty_run, cli):
    a = tmp_path / "a.db"
    faulty_run(a, train_seconds=0.01)
    assert "is named twice" in cli("extend", "1", a, "--db", a, code=2)
    assert "--blocks 0: must be at least 1" in cli("extend", "1", "--blocks", "0", "--db", a, code=2)
    assert "no such database file" in cli("extend", "nope.db", code=2)
    with sqlite3.connect(a) as con:  # a run recorded under an interpreter this machine lacks
        env = json.loads(con.execute("SELECT environment_json FROM runs WHERE id = 1").fetchone()[0])
        env["python_executable"] = "/nonexistent/venv/bin/python"
        con.execute("UPDATE runs SET environment_json = ? WHERE id = 1", (json.dumps(env),))
    assert "/nonexistent/venv/bin/python, which does not exist here" in cli("extend", "1", "--db", a, code=2)
    with Store(a) as store:
        assert len(store.trials(1)) == 1  # nothing was added by the refused commands


def test_extend_bounds_the_blocks(tmp_path, faulty_run, cli):
    a = tmp_path / "a.db"
    faulty_run(a, train_seconds=0.01)
    assert "--blocks 5000: must be at least 1 and at most 1000" in cli(
        "extend", "1", "--blocks", "5000", "--db", a, code=2
    )


def test_extend_refuses_an_interpreter_that_cannot_run_dlbench(tmp_path, faulty_run, cli):
    """A run recorded under /bin/false, named as trusted: one line, exit 2, no trial added."""
    a = tmp_path / "a.db"
    faulty_run(a, train_seconds=0.01)
    with sqlite3.connect(a) as con:
        env = json.loads(con.execute("SELECT environment_json FROM runs WHERE id = 1").fetchone()[0])
        env["python_executable"] = "/bin/false"
        con.execute("UPDATE runs SET environment_json = ? WHERE id = 1", (json.dumps(env),))
    said = " ".join(cli("extend", "1", "--python", "/bin/false", "--db", a, code=2).split())
    assert "--python /bin/false: not a Python that can run dlbench's worker (exit 1" in said
    assert "nothing was run or stored" in said
    with Store(a) as store:
        assert len(store.trials(1)) == 1


def test_a_database_name_with_a_newline_is_refused(tmp_path, cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DLBENCH_DB", "results\n.db")
    said = cli("report", code=2)
    assert "a database name holds no control characters" in said
    assert not any(p.name.startswith("results") for p in tmp_path.iterdir())
