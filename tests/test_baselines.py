"""Named baselines (migration 7, dlbench.service.baselines, `dlbench baseline ...` and
`dlbench compare --baseline NAME RUN`): kept in the store, SQLite and PostgreSQL alike, an
older database upgraded, one line for every refusal, and the compare gate's exit status
passed through unchanged when A is named by a baseline.

Runs are written straight into a Store (no training): each test builds what it needs in
well under a second; the PostgreSQL tests use the throwaway server of test_store_postgres."""

from __future__ import annotations

import shutil
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from dlbench.service import ServiceError
from dlbench.service import baselines as service
from dlbench.store import MIGRATIONS, Measurement, Store
from dlbench.store.core import BaselineExists
from stored_cases import stored_case
from test_store_postgres import pg_url, server  # noqa: F401 (fixtures)

CASE = stored_case("numpy", "reference")
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _run(
    store: Store,
    train_times: list[float],
    offset_s: float = 0.0,
    status: str = "ok",
    environment: dict[str, str] | None = None,
) -> int:
    """A finished run of one case with one trial per block (block k's train time
    train_times[k], two repeats each). Block k starts at T0 + 10k + offset_s seconds and
    lasts one: two runs with offsets 0 and 2 took turns block by block, as `dlbench extend`
    runs them. `environment`: what the run recorded about its machine and code."""
    trials = [
        {"case_key": "k", "block": block, "position": 0, "case": CASE, "protocol": {}}
        for block in range(len(train_times))
    ]
    run_id = store.create_run(
        name="r", command="dlbench run", config_source="cli", config_text="", experiment={},
        environment=environment or {}, version="0", trials=trials,
    )  # fmt: skip
    for trial, value in zip(store.trials(run_id), train_times, strict=True):
        start = T0 + timedelta(seconds=10 * trial["block"] + offset_s)
        store.add_measurements(
            trial["id"], [Measurement(r, False, "train", "time", value * (1 + 0.001 * r), "s") for r in range(2)]
        )
        store.finish_trial(trial["id"], status=status, error=None, returncode=0, wall_s=1.0, stderr="")
        with store.db:
            store.db.execute(
                "UPDATE trials SET started_at=?, finished_at=? WHERE id=?",
                (start.isoformat(), (start + timedelta(seconds=1)).isoformat(), trial["id"]),
            )
    store.finish_run(run_id, "finished")
    return run_id


BASE = [1.00, 1.02, 0.99, 1.01, 0.98, 1.00]


@pytest.fixture
def two_runs(tmp_path: Path) -> Path:
    """Run 1 and run 2 (the same times) and run 3 (50% slower), all three in turns."""
    db = tmp_path / "b.db"
    with Store(db) as store:
        _run(store, BASE, 0)
        _run(store, BASE, 2)
        _run(store, [1.5 * v for v in BASE], 4)
    return db


# -- the schema -------------------------------------------------------------------------
def test_a_database_made_before_baselines_gains_the_table_and_keeps_its_runs(tmp_path: Path):
    path = tmp_path / "v6.db"
    with Store(path, migrations=MIGRATIONS[:6]) as old:
        run_id = _run(old, BASE)
        old.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    with sqlite3.connect(path) as con:
        assert con.execute("PRAGMA user_version").fetchone()[0] == 6
        assert "baselines" not in {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    before = path.read_bytes()
    with Store(path, readonly=True) as reader:  # a reader upgrades a copy in memory, the file stays as it was
        assert reader.version == len(MIGRATIONS) == 8 and reader.baselines() == []
    assert path.read_bytes() == before
    with Store(path) as store:
        assert store.version == 8
        assert [t["status"] for t in store.trials(run_id)] == ["ok"] * 6
        columns = [r[1] for r in store.db.execute("PRAGMA table_info(baselines)")]
        assert columns == ["id", "name", "run_id", "saved_at", "saved_by", "command", "note"]
        saved, replaced = store.save_baseline("main", run_id, saved_by="ci@runner", command="dlbench baseline save")
        assert replaced is None and (saved.name, saved.run_id, saved.n_cases) == ("main", run_id, 1)


def test_the_store_saves_replaces_lists_and_deletes(two_runs: Path):
    with Store(two_runs) as store:
        first, _ = store.save_baseline(
            "main", 1, saved_by="a@h", command="dlbench x --db postgresql://u:secret@h/db", note="abc123"
        )
        assert first.command == "dlbench x --db postgresql://u:***@h/db"  # a password is never stored
        with pytest.raises(BaselineExists) as refused:
            store.save_baseline("main", 2, saved_by="b@h", command="c")
        assert refused.value.existing.run_id == 1 and store.baseline("main").run_id == 1  # unchanged
        now, before = store.save_baseline("main", 2, saved_by="b@h", command="c", replace=True)
        assert (before.run_id, before.note, now.run_id, now.note, now.saved_by) == (1, "abc123", 2, None, "b@h")
        store.save_baseline("dev", 3, saved_by=None, command=None)
        assert [(b.name, b.run_id, b.n_cases, b.run_name) for b in store.baselines()] == [
            ("dev", 3, 1, "r"),
            ("main", 2, 1, "r"),
        ]
        gone = store.delete_baseline("dev")
        assert gone is not None and gone.run_id == 3 and store.delete_baseline("dev") is None
        assert [b.name for b in store.baselines()] == ["main"] and len(store.runs()) == 3  # the run stays


def test_the_service_refuses_bad_names_runs_without_values_and_unknown_names(two_runs: Path):
    with Store(two_runs) as store:
        failed = _run(store, [1.0], status="failed")
        for bad in ("", "has space", "-flag", "a" * 101, "x;y"):
            with pytest.raises(ServiceError, match="allowed: letters, digits"):
                service.save(store, bad, 1, command="c")
        with pytest.raises(ServiceError, match=f"--run {failed}: no trial of the run finished"):
            service.save(store, "main", failed, command="c")
        with pytest.raises(ServiceError, match="--run 99: .*no run 99; runs here: \\[1, 2, 3, 4\\]"):
            service.save(store, "main", 99, command="c")
        with pytest.raises(ServiceError, match="holds no baselines"):
            service.resolve(store, "main")
        assert service.save(store, "release/1.2", 1, command="c").baseline.run_id == 1
        with pytest.raises(ServiceError, match="no baseline named 'main' .*; baselines there: release/1.2$"):
            service.resolve(store, "main")
        started = store.run(1).started_at
        assert service.table(store.baselines()).rows[0][:5] == ["release/1.2", "1", "r", started, "1"]


# -- the command line ---------------------------------------------------------------
def test_save_list_replace_and_delete_on_the_command_line(cli, two_runs: Path):
    assert "no baselines in" in cli("baseline", "list", "--db", two_runs)
    out = cli("baseline", "save", "main", "--run", 1, "--note", "commit abc", "--db", two_runs)
    assert f"saved baseline 'main': run 1 of {two_runs} (1 case)" in " ".join(out.split())
    line = cli.error_line("baseline", "save", "main", "--run", 2, "--db", two_runs)
    assert "baseline 'main' exists" in line and "run 1" in line and "pass --replace to point it at run 2" in line
    out = cli("baseline", "save", "main", "--run", 2, "--replace", "--db", two_runs)
    assert "run 2" in out and "it named run 1 before" in out
    listed = cli("baseline", "list", "--db", two_runs)
    row = next(r for r in listed.splitlines() if "│ main" in r)
    with Store(two_runs, readonly=True) as store:
        started = store.run(2).started_at
    assert [c.strip() for c in row.strip("│ ").split("│")][:5] == ["main", "2", "r", started, "1"]
    with Store(two_runs, readonly=True) as store:
        saved = store.baseline("main")
        assert saved is not None and saved.command.startswith("dlbench baseline save main --run 2 --replace")
        assert saved.note is None and "@" in (saved.saved_by or "")
    assert "no baseline named 'dev'" in cli.error_line("baseline", "delete", "dev", "--db", two_runs)
    assert "deleted baseline 'main' (it named run 2" in cli("baseline", "delete", "main", "--db", two_runs)
    assert "no baselines in" in cli("baseline", "list", "--db", two_runs)
    missing = two_runs.parent / "none.db"
    assert "no such database file" in cli.error_line("baseline", "save", "x", "--run", 1, "--db", missing)
    assert not missing.exists()  # never created empty


def test_compare_against_a_baseline_keeps_the_gate_and_refuses_the_same_run(cli, two_runs: Path):
    cli("baseline", "save", "main", "--run", 1, "--db", two_runs)
    # The same run, named by the baseline: refused as any run compared with itself.
    line = cli.error_line("compare", "--baseline", "main", "1", "--db", two_runs)
    assert "is run 1" in line and "the same run" in line
    assert "the same run" in cli.error_line("compare", "--baseline", "main", f"{two_runs}:1", "--db", two_runs)
    # Another file holding a copy of that run is another run: compared, not refused.
    copy = two_runs.parent / "copy.db"
    shutil.copy(two_runs, copy)
    assert "the same run" not in cli("compare", "--baseline", "main", f"{copy}:1", "--db", two_runs)
    # The same code in turns: no meaningful difference, exit 0, the baseline named on the way.
    same = cli("compare", "--baseline", "main", "2", "--db", two_runs)
    flat = " ".join(same.split())
    assert "A is baseline 'main': run 1" in flat and "1 comparisons, 0 regressions" in flat
    assert "no meaningful difference" in flat and "1.000" in flat
    # 50% slower in turns: a regression, exit 1, as `compare 1 3` says it.
    slow = cli("compare", "--baseline", "main", "3", "--db", two_runs, code=1)
    direct = cli("compare", "1", "3", "--db", two_runs, code=1)
    assert "1 comparisons, 1 regressions" in slow and "REGRESSION" in slow and "1.500" in slow
    assert slow.split("\n", 1)[1] == direct  # what follows the baseline's line is the plain comparison
    # Refusals: one line each.
    assert "baselines there: main" in cli.error_line("compare", "--baseline", "nightly", "2", "--db", two_runs)
    assert "not two (2 and 3)" in cli.error_line("compare", "--baseline", "main", "2", "3", "--db", two_runs)
    assert "give the run to compare" in cli.error_line("compare", "--baseline", "main", "--db", two_runs)
    assert "compare needs two runs" in cli.error_line("compare", "2", "--db", two_runs)


def test_show_says_which_code_measured_a_baseline_and_prints_one_field_for_a_script(cli, tmp_path: Path):
    """The commit comes from a checkout's record (+dirty: modified) or from the version a
    build recorded; a script reads one field alone on standard output."""
    db = tmp_path / "p.db"
    sha = "0123456789abcdef0123456789abcdef01234567"
    with Store(db) as store:
        checkout = {"python_executable": "/ci/venvs/baseline/bin/python", "dlbench_version": "0.1.dev9+g0123456"}
        _run(store, BASE, environment={**checkout, "dlbench_git": sha})
        _run(store, BASE, 2, environment={**checkout, "dlbench_git": sha + "+dirty"})
        _run(store, BASE, 4, environment={"dlbench_version": "0.1.dev5+gabc1234.d20260101"})  # a wheel, no checkout
        _run(store, BASE, 6)  # recorded nothing
        for i, name in enumerate(("clean", "dirty", "wheel", "bare"), start=1):
            service.save(store, name, i, command="c")
        assert [
            (p.commit, p.modified, p.python, p.version)
            for p in (service.provenance(store, n) for n in ("clean", "dirty", "wheel", "bare"))
        ] == [
            (sha, False, "/ci/venvs/baseline/bin/python", "0.1.dev9+g0123456"),
            (sha, True, "/ci/venvs/baseline/bin/python", "0.1.dev9+g0123456"),
            ("abc1234", True, None, "0.1.dev5+gabc1234.d20260101"),
            (None, None, None, None),
        ]
    shown = cli("baseline", "show", "dirty", "--db", db)
    assert f"{sha} (with uncommitted changes)" in shown and "/ci/venvs/baseline/bin/python" in shown
    assert "not recorded" in cli("baseline", "show", "bare", "--db", db)
    clean = cli.result("baseline", "show", "clean", "--field", "commit", "--db", db)
    assert clean.exit_code == 0 and clean.stdout == f"{sha}\n" and clean.stderr == ""
    dirty = cli.result("baseline", "show", "dirty", "--field", "commit", "--db", db)
    assert dirty.exit_code == 0 and dirty.stdout == f"{sha}\n"  # the value alone; the warning on stderr
    warning = " ".join(dirty.stderr.split())
    assert "uncommitted changes" in warning and "not exactly the code it measured" in warning
    assert cli.result("baseline", "show", "wheel", "--field", "commit", "--db", db).stdout == "abc1234\n"
    assert cli.result("baseline", "show", "clean", "--field", "run", "--db", db).stdout == "1\n"
    line = cli.error_line("baseline", "show", "bare", "--field", "commit", "--db", db)
    assert "baseline 'bare': its run 4 recorded no dlbench commit" in line
    assert "saved without a note" in cli.error_line("baseline", "show", "clean", "--field", "note", "--db", db)
    assert "--field 'sha': allowed: run, commit, python, version, note" in cli.error_line(
        "baseline", "show", "clean", "--field", "sha", "--db", db
    )
    assert "baselines there: bare, clean, dirty, wheel" in cli.error_line("baseline", "show", "main", "--db", db)
    assert "no such database file" in cli.error_line("baseline", "show", "x", "--db", tmp_path / "none.db")


def test_extend_tells_two_virtual_environments_apart(tmp_path: Path):
    """Two environments' bin/python link to one base interpreter; extend runs each run's
    workers under the one it recorded, so they are two interpreters (and bin/python and
    bin/python3 of one environment are one)."""
    import sys

    from dlbench.cli.running import _real

    base = Path(sys.executable).resolve()
    for env in ("a", "b"):
        (tmp_path / env / "bin").mkdir(parents=True)
        for name in ("python", "python3"):
            (tmp_path / env / "bin" / name).symlink_to(base)
    a, a3, b = (str(tmp_path / p) for p in ("a/bin/python", "a/bin/python3", "b/bin/python"))
    assert _real(a) != _real(b) and _real(a) == _real(a3)
    assert _real(a)[1] == _real(b)[1] == str(base)


# -- PostgreSQL ------------------------------------------------------------------------
@pytest.mark.serial  # the PostgreSQL server on a fixed port, as tests/test_store_postgres.py (conftest.SERIAL)
def test_baselines_on_postgresql_migrate_and_behave_as_on_sqlite(pg_url, tmp_path, cli):  # noqa: F811
    with Store(pg_url, migrations=MIGRATIONS[:6]) as old:
        assert old.version == 6
        run_id = _run(old, BASE)
        _run(old, BASE, 2)
    with Store(pg_url) as store, Store(tmp_path / "ref.db") as lite:
        assert store.version == lite.version == 8
        columns = [
            r[0]
            for r in store.db.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema()"
                " AND table_name = 'baselines' ORDER BY ordinal_position"
            ).fetchall()
        ]
        assert columns == [r[1] for r in lite.db.execute("PRAGMA table_info(baselines)")]
        store.save_baseline("main", run_id, saved_by="a@h", command="c")
        with pytest.raises(BaselineExists):
            store.save_baseline("main", 2, saved_by="a@h", command="c")
        assert store.baseline("main").run_id == run_id
    out = cli("baseline", "save", "main", "--run", 2, "--replace", "--db", pg_url)
    assert "it named run 1 before" in out
    assert "A is baseline 'main': run 2" in " ".join(cli("compare", "--baseline", "main", "1", "--db", pg_url).split())
    assert "the same run" in cli.error_line("compare", "--baseline", "main", "2", "--db", pg_url)
    assert "deleted baseline 'main'" in cli("baseline", "delete", "main", "--db", pg_url)
    with Store(pg_url) as store:
        assert store.baselines() == [] and len(store.runs()) == 2
