"""The PostgreSQL store (`--db postgresql://...`, dlbench.store_pg) against a real server:
scripts/services/postgres.sh starts a throwaway one (installing Debian's postgresql when it
is missing), and every test gets a database of its own, created and dropped around it.

What SQLite does is the reference: the same migrations give the same tables and columns,
the same sequence of writes reads back the same, and the command line runs, reports and
lists a run on a URL as on a file. A URL's password is never printed."""

from __future__ import annotations

import glob
import json
import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from dlbench.cli import app
from dlbench.store import MIGRATIONS, Measurement, Store, StoreError, database_url, shown
from dlbench.store import postgres as store_pg
from dlbench.store.base import sqlite_tables

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "services" / "postgres.sh"
PORT = int(os.environ.get("DLBENCH_PG_PORT", "55432"))
SERVER = f"postgresql://postgres@127.0.0.1:{PORT}"
runner = CliRunner()


@pytest.fixture(scope="module")
def server():
    """The throwaway server, started (and installed, when missing) for this module."""
    pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install -r requirements-cluster.txt)")
    if os.geteuid() != 0 and not glob.glob("/usr/lib/postgresql/*/bin/postgres"):
        pytest.skip("no PostgreSQL server installed and not root to install it (scripts/services/postgres.sh up)")
    up = subprocess.run(["bash", str(SCRIPT), "up"], capture_output=True, text=True, timeout=600)
    assert up.returncode == 0, f"postgres.sh up failed:\n{up.stdout}\n{up.stderr}"
    yield SERVER
    subprocess.run(["bash", str(SCRIPT), "down"], capture_output=True, text=True, timeout=120)


def _admin(sql: str) -> None:
    import psycopg

    with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as conn:
        conn.execute(sql)


@pytest.fixture
def pg_url(server):
    """A fresh, empty database for one test."""
    name = f"dlbench_t_{uuid.uuid4().hex[:12]}"
    _admin(f"CREATE DATABASE {name}")
    yield f"{server}/{name}"
    _admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_urls_are_told_from_files_and_printed_masked():
    """No server needed: which --db is a URL (also after pathlib merged its "//"), and how
    a URL, a command line holding one and SQL's placeholders are rewritten."""
    for given, url in {
        "postgresql://u:pw@h:5/db": "postgresql://u:pw@h:5/db",
        Path("postgres://u@h/db"): "postgres://u@h/db",  # what typer's Path makes of --db
        "results.db": None,
        "postgresql.db": None,
        Path("postgres/x.db"): None,
    }.items():
        assert database_url(given) == url, given
    assert shown(Path("postgresql://u:p%40ss@h1:1,h2:2/db?password=x&sslmode=require")) == (
        "postgresql://u:***@h1:1,h2:2/db?password=***&sslmode=require"
    )
    assert shown("results.db") == "results.db" and shown("postgresql://u@h/db") == "postgresql://u@h/db"
    assert store_pg.secrets("postgresql://u:p%40ss@h/db") == ["p%40ss", "p@ss"]
    assert store_pg.mask_urls("dlbench run --db postgresql:/u:pw@h/db --run 1") == (
        "dlbench run --db postgresql:/u:***@h/db --run 1"
    )
    assert store_pg.placeholders("SELECT '?', \"a?\" FROM t WHERE x=? AND y LIKE 'a%'", True) == (
        "SELECT '?', \"a?\" FROM t WHERE x=%s AND y LIKE 'a%%'"
    )
    assert store_pg.placeholders("SELECT 'a%'", False) == "SELECT 'a%'"


def _columns(store: Store) -> dict[str, list[str]]:
    """Each table's columns in their order, from the database's own catalog."""
    if isinstance(store.path, Path):
        return {
            t: [r[0] for r in store.db.execute("SELECT name FROM pragma_table_info(?) ORDER BY cid", (t,))]
            for t in sqlite_tables(store.db)
        }
    rows = store.db.execute(
        "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema()"
        " AND table_name <> 'dlbench_schema' ORDER BY table_name, ordinal_position"
    ).fetchall()
    columns: dict[str, list[str]] = {}
    for table, column in rows:
        columns.setdefault(table, []).append(column)
    return columns


def test_fresh_database_migrates_to_the_sqlite_schema(pg_url, tmp_path):
    with Store(tmp_path / "ref.db") as lite, Store(pg_url) as pg:
        assert pg.version == lite.version == len(MIGRATIONS)
        assert _columns(pg) == _columns(lite)
        types = {
            (t, c): (d, i)
            for t, c, d, i in pg.db.execute(
                "SELECT table_name, column_name, data_type, is_identity FROM information_schema.columns"
                " WHERE table_schema = current_schema()"
            ).fetchall()
        }
        # SQLite's 64-bit integers and 8-byte reals; ids that number themselves.
        assert types["measurements", "value"] == ("double precision", "NO")
        assert types["trials", "block"] == ("bigint", "NO")
        assert types["trials", "id"] == ("bigint", "YES")
        assert [tuple(r) for r in pg.db.execute("SELECT * FROM dlbench_schema")] == [(1, len(MIGRATIONS))]
    with Store(pg_url) as again:  # opening a current database again changes nothing
        assert again.version == len(MIGRATIONS)
        assert again.db.execute("SELECT count(*) FROM dlbench_schema").fetchone()[0] == 1


def test_migration_4_rebuilds_trials_and_keeps_rows_ids_and_foreign_keys(pg_url):
    """SQLite's rebuild of trials (version 4: DROP TABLE, ALTER TABLE ... RENAME), on
    PostgreSQL: the rows and ids come through, the other tables' foreign keys point at the
    new trials table, and the next id follows the copied ones."""
    with Store(pg_url, migrations=MIGRATIONS[:3]) as s, s.db:
        assert s.version == 3
        run_id = s.db.execute("INSERT INTO runs (name, status, started_at) VALUES ('t', 'finished', 'x')").lastrowid
        for block in range(2):
            tid = s.db.execute(
                "INSERT INTO trials (run_id, case_key, block, position, framework, variant, model, dataset,"
                " batch_size, case_json, protocol_json, status, telemetry_notes)"
                " VALUES (?, 'k', ?, 0, 'torch', 'eager', 'mlp', 'digits', 8, '{}', '{}', 'ok', 'n')",
                (run_id, block),
            ).lastrowid
            s.db.execute(
                "INSERT INTO measurements (trial_id, repeat, warmup, phase, metric, value, unit)"
                " VALUES (?, 0, 0, 'train', 'time', ?, 's')",
                (tid, 1.5 + block),
            )
    with Store(pg_url) as s:
        assert s.version == len(MIGRATIONS)
        trials = s.trials(run_id)
        assert [(t["id"], t["block"], t["attempt"], t["retired"], t["telemetry_notes"]) for t in trials] == [
            (1, 0, 1, 0, "n"),
            (2, 1, 1, 0, "n"),
        ]
        assert [m["value"] for m in s.measurements(run_id)] == [1.5, 2.5]
        with pytest.raises(store_pg.IntegrityError, match="foreign key"):
            s.db.execute(
                "INSERT INTO measurements (trial_id, warmup, phase, metric, unit) VALUES (99, 0, 'p', 'm', 'u')"
            )
        s.db.rollback()
        s.db.execute("UPDATE trials SET status='interrupted' WHERE id=1")
        s.db.commit()
        assert s.retire_unfinished(run_id) == 1
        current = s.trials(run_id)
        assert [(t["id"], t["block"], t["attempt"], t["status"]) for t in current] == [
            (3, 0, 2, "pending"),
            (2, 1, 1, "ok"),
        ]
        with pytest.raises(store_pg.IntegrityError, match="unique"):
            s.db.execute("UPDATE trials SET attempt=1 WHERE id=3")
        s.db.rollback()


# -- the same writes, the same reads ---------------------------------------------------
CASE = {"framework": "numpy", "variant": "reference", "model": "mlp", "dataset": "digits", "batch_size": 8}


def _write(store: Store) -> int:
    """One run through every writing method, a resume included: what a run and a resume do."""
    trials = [
        {"case_key": "k", "block": b, "position": 0, "case": {**CASE, "seed": 1}, "protocol": {"repeats": 2}}
        for b in range(3)
    ]
    samplers = [
        SimpleNamespace(name="cpu", available=True, reason=None, hint=None, interval_s=0.1),
        SimpleNamespace(
            name="rapl", available=False, reason="no powercap: 100% off?", hint="modprobe", interval_s=None
        ),
    ]
    run_id = store.create_run(
        name="same",
        command="dlbench run --db 'x?y' --note '50% done'",
        config_source="cli",
        config_text="[matrix]\nframework = ['numpy']  # ünïcode, 'quotes'; semicolon?",
        experiment={"matrix": {"framework": ["numpy"]}},
        environment={"cpu": "x", "n": 2**40},
        version="9.9",
        trials=trials,
        skipped=[({"framework": "torch"}, "not installed")],
        samplers=samplers,
        owner={"pid": 1, "host": "a"},
    )
    assert store.committed_run() == run_id
    extra = store.add_trial(run_id, case_key="k2", block=0, position=1, case={**CASE, "batch_size": 16}, protocol={})
    first, second, third = (t["id"] for t in store.trials(run_id) if t["case_key"] == "k")
    # First trial: finished, with values, telemetry and where it ran.
    store.start_trial(first)
    store.set_manifest(first, {"threads": 1, "cpu_affinity": [0]})
    store.add_measurements(
        first,
        [
            Measurement(0, True, "train", "time", 0.1 + 0.2, "s"),
            Measurement(1, False, "train", "time", 1 / 3, "s", method="counter"),
            Measurement(1, False, "latency_b8", "time", 1e-7, "s", seq=0),
            Measurement(1, False, "latencyXb8", "time", None, "s", flag="unreliable: 5% off"),
        ],
    )
    series = [SimpleNamespace(name="cpu", unit="%", kind="gauge", method="polled", points=[(1_000_000_000, 12.5)])]
    markers = [{"phase": "train", "repeat": 1, "edge": "start", "t": 2_000_000_000}]
    store.add_telemetry(first, series, markers, [Measurement(1, False, "train", "cpu", 55.5, "%")], {"cpu": ["ok"]})
    store.set_placement(first, {"executor": "ray", "host": "n1"})
    store.set_placement(first, {"machine": {"cpu_model": "x"}})
    store.set_placement(extra, {"executor": "slurm", "host": "n2"})
    store.finish_trial(first, status="ok", error=None, returncode=0, wall_s=2.5, stderr="warn: 100%?\n")
    # Second: killed after storing a value; third: started, nothing stored.
    store.start_trial(second)
    store.add_measurements(second, [Measurement(0, False, "train", "time", 2.0, "s")])
    store.start_trial(third)
    store.mark_interrupted(run_id)
    store.finish_run(run_id, "interrupted")
    store.set_idle(run_id, {"cpu": 1.5})
    # The resume: claimed while the old owner is dead, then the unfinished kept and re-planned.
    assert store.claim_run(run_id, {"pid": 2, "host": "a"}, lambda holder: False) is None
    assert store.claim_run(run_id, {"pid": 3, "host": "a"}, lambda holder: True) == {"pid": 2, "host": "a"}
    assert store.retire_unfinished(run_id) == 1
    store.finish_trial(second + 3, status="failed", error="boom: 'x' ?", returncode=1, wall_s=0.5, stderr="")
    store.release_run(run_id, {"pid": 2, "host": "a"})
    store.finish_run(run_id, "finished", "enough")
    return run_id


def _timeless(rows) -> list[dict]:
    """Rows as dicts, with their wall-clock times reduced to whether they are set."""
    return [
        {k: (v is not None) if k in ("started_at", "finished_at") else v for k, v in zip(r.keys(), r)} for r in rows
    ]


def _read(store: Store, run_id: int) -> dict:
    from dlbench.results import Results

    trials = store.trials(run_id, retired=True)
    results = Results.of_store(store)
    return {
        "version": store.version,
        "runs": _timeless(store.runs()),
        "run": _timeless([store.run(run_id)]),
        "latest": store.run()["id"],
        "trials": _timeless(trials),
        "current": [t["id"] for t in store.trials(run_id)],
        "ok": [t["id"] for t in store.trials(run_id, statuses=["ok", "failed"])],
        "measurements": _timeless(store.measurements(run_id)),
        "no_latency": _timeless(store.measurements(run_id, latency=False)),
        "latency": _timeless(store.latency_calls(run_id)),
        "skipped": _timeless(store.skipped(run_id)),
        "samplers": _timeless(store.samplers(run_id)),
        "series": [_timeless(store.series(t["id"])) for t in trials],
        "markers": _timeless(store.db.execute("SELECT * FROM markers ORDER BY id").fetchall()),
        "frames": {
            name: getattr(results, name)(run_id).drop(columns=["started_at", "finished_at"], errors="ignore")
            for name in ("runs", "trials", "measurements", "summary")
        },
    }


def test_the_same_writes_read_back_the_same_as_sqlite(pg_url, tmp_path):
    with Store(tmp_path / "ref.db") as lite, Store(pg_url) as pg:
        lite_run, pg_run = _write(lite), _write(pg)
        assert lite_run == pg_run == 1
        want, got = _read(lite, lite_run), _read(pg, pg_run)
        want_frames, got_frames = want.pop("frames"), got.pop("frames")
        assert got == want
        for name, frame in want_frames.items():
            assert got_frames[name].equals(frame), name
        # What the resume did, spelled out (the comparison alone would pass on two equal bugs).
        states = [(t["block"], t["attempt"], t["retired"], t["status"]) for t in pg.trials(pg_run, retired=True)]
        assert states == [(0, 1, 0, "ok"), (0, 1, 0, "pending"), (1, 1, 1, "interrupted"), (1, 2, 0, "failed"),
                          (2, 1, 0, "pending")]  # fmt: skip
        assert pg.runs()[0]["placements"] == "ray:n1=1 slurm:n2=1"
        assert json.loads(pg.trials(pg_run)[0]["placement_json"]) == {
            "executor": "ray",
            "host": "n1",
            "machine": {"cpu_model": "x"},
        }
        # Another process's open of the same database sees the committed rows at once.
        with Store(pg_url, readonly=True) as reader:
            assert [r["id"] for r in reader.runs()] == [pg_run]
            with pytest.raises(StoreError, match="read-only transaction"):
                reader.db.execute("DELETE FROM skipped")


def test_the_latency_copy_is_checked_and_rebuilt_on_postgres(pg_url, tmp_path):
    """The copy's check and its rebuild on PostgreSQL: a dropped trigger is seen by a reader
    (no pack trusted) and restored by a writer, repack runs again over triggers that exist,
    and the percentiles are the rows' throughout."""
    from dlbench.analysis.rows import latency_percentiles_of
    from dlbench.analysis.summary import latency_percentiles

    with Store(pg_url) as pg:
        run = _write(pg)
        want = latency_percentiles(pg.latency_calls(run))
        samples, check = pg.latency_samples_checked(run)
        assert check.trusted and latency_percentiles_of(samples) == want
        assert pg.repack() > 0 and pg.repack() > 0  # twice: the triggers exist the second time
        with pg.db:
            pg.db.execute("DROP TRIGGER latency_unpacked_update ON measurements")
    with Store(pg_url, readonly=True) as reader:
        samples, check = reader.latency_samples_checked(run)
        assert check.missing_triggers == ("latency_unpacked_update",)
        assert latency_percentiles_of(samples) == want
    with Store(pg_url) as writer:
        assert writer.missing_triggers == frozenset()
        samples, check = writer.latency_samples_checked(run)
        assert check.trusted and latency_percentiles_of(samples) == want


def test_refused_databases_are_left_untouched(pg_url):
    import psycopg

    with pytest.raises(StoreError, match="holds no dlbench results yet"):
        Store(pg_url, readonly=True)
    with Store(pg_url, migrations=MIGRATIONS[:3]):
        pass
    # A reader never upgrades a shared database (SQLite's upgrade a copy in memory).
    with pytest.raises(StoreError, match=rf"schema version 3 is older than this dlbench's \({len(MIGRATIONS)}\)"):
        Store(pg_url, readonly=True)
    with Store(pg_url) as s:
        assert s.version == len(MIGRATIONS)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE dlbench_schema SET version = 99")
        with pytest.raises(StoreError, match="schema version 99 is newer than this dlbench understands"):
            Store(pg_url)
        assert conn.execute("SELECT version FROM dlbench_schema").fetchone() == (99,)
        conn.execute("DROP TABLE dlbench_schema")  # tables without a dlbench version: not ours
        with pytest.raises(StoreError, match="not a dlbench database: it has no dlbench schema version but holds"):
            Store(pg_url)
        assert conn.execute("SELECT to_regclass('dlbench_schema')").fetchone() == (None,)  # nothing written


# -- the command line ------------------------------------------------------------------
def test_cli_runs_reports_and_lists_a_run_on_a_url(pg_url, tmp_path):
    secret = "Secr3t-pw"  # trust authentication: the password is ignored, and must never show
    url = pg_url.replace("postgres@", f"postgres:{secret}@")
    ran = runner.invoke(
        app,
        ["run", "--trials", "1", "--framework", "numpy", "--model", "mlp", "--dataset", "digits",
         "--repeats", "1", "--warmup", "0",
         "--threads", "1", "--latency-batches", "1", "--db", url],
    )  # fmt: skip
    assert ran.exit_code == 0, ran.output
    with Store(pg_url, readonly=True) as s:
        (run,) = s.runs()
        assert (run["id"], run["status"], run["n_trials"], run["n_ok"]) == (1, "finished", 1, 1)
        assert secret not in run["command"] and "postgres:***@" in run["command"]
        phases = {m["phase"] for m in s.measurements(1)}
        assert "train" in phases and any(p.startswith("latency_b") for p in phases), phases
    report = runner.invoke(app, ["report", "--db", url])
    assert report.exit_code == 0, report.output
    assert "run 1 'mlp on digits: numpy' (finished)" in report.output and "numpy" in report.output
    listed = runner.invoke(app, ["runs", "--db", url])
    assert listed.exit_code == 0, listed.output
    assert "mlp on digits: numpy" in listed.output and "finished" in listed.output
    for out in (ran.output, report.output, listed.output):
        assert secret not in out
    # export reads a URL too (it refuses only a missing file).
    exported = runner.invoke(app, ["export", str(tmp_path / "m.csv"), "--db", url])
    assert exported.exit_code == 0 and secret not in exported.output, exported.output


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_wrong_password_an_unreachable_server_or_a_bad_url_is_one_masked_line(server):
    import psycopg

    # A role that must give its password (postgres.sh: scram-sha-256 for it, trust for the rest).
    _admin(
        "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'dlbench_pw') THEN"
        " CREATE ROLE dlbench_pw LOGIN; END IF; END $$"
    )
    _admin("ALTER ROLE dlbench_pw PASSWORD 'Right-pw'")
    with psycopg.connect(f"postgresql://dlbench_pw:Right-pw@127.0.0.1:{PORT}/dlbench_test"):
        pass  # the right password connects: the failure below is the password's
    cases = {
        f"postgresql://dlbench_pw:Wr0ng-pw@127.0.0.1:{PORT}/dlbench_test": (
            "Wr0ng-pw",
            f"postgresql://dlbench_pw:***@127.0.0.1:{PORT}/dlbench_test: cannot connect: ",
            'password authentication failed for user "dlbench_pw"',
        ),
        f"postgres://u:Wr0ng-pw@127.0.0.1:{_free_port()}/db": ("Wr0ng-pw", "postgres://u:***@127.0.0.1:", "refused"),
        f"postgresql://u:Wr0ng%zz@127.0.0.1:{PORT}/db": ("Wr0ng", "not a valid PostgreSQL URL", "percent-encoded"),
        f"postgresql://127.0.0.1:{PORT}/db?password=Wr0ng-pw&bogus=1": ("Wr0ng-pw", "?password=***", "bogus"),
    }
    for url, (secret, *wanted) in cases.items():
        result = runner.invoke(app, ["runs", "--db", url])
        assert result.exit_code == 2, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), result.output
        assert secret not in result.output and all(w in lines[0] for w in wanted), result.output
    # The installed command itself: one line on stderr, no traceback.
    url = next(iter(cases))
    out = subprocess.run(
        [sys.executable, "-c", "from dlbench.cli import main; main()", "runs", "--db", url],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and out.stdout == "", out
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr, out.stderr
    assert "Wr0ng-pw" not in out.stderr and "dlbench_pw:***@" in out.stderr
