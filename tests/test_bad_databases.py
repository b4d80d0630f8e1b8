"""Databases dlbench must not touch (corrupt, foreign, newer, read-only when writing),
read-only opening for the commands that only read, and concurrent first opens.

A refused file gets one `error:` line naming it, exit status 2, and nothing written:
the same bytes, the same mtime, and no -wal or -shm file beside it that was not there."""

from __future__ import annotations

import ctypes
import gc
import hashlib
import json
import os
import re
import shutil
import sqlite3
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

import dlbench
from dlbench.store import MIGRATIONS, Measurement, Store, StoreError

CASE = {"framework": "numpy", "variant": "default", "model": "mlp", "dataset": "synthetic", "batch_size": 8}


# -- building the files ---------------------------------------------------------
def real_db(path: Path, migrations=MIGRATIONS, trials: int = 3, rows: int = 100) -> Path:
    """A dlbench database written through the Store API, checkpointed and closed:
    a single file, in WAL mode, with no -wal beside it."""
    if len(migrations) < len(MIGRATIONS):
        return _old_db(path, migrations, trials, rows)
    with Store(path, migrations=migrations) as s:
        run_id = s.create_run(
            name="t",
            command="c",
            config_source="s",
            config_text="x",
            experiment={},
            environment={"cpu": "x"},
            version="0",
        )
        for block in range(trials):
            tid = s.add_trial(run_id, case_key="k", block=block, position=0, case=CASE, protocol={"repeats": 1})
            s.add_measurements(tid, [Measurement(r, False, "train", "time", 1.0 + r / 100, "s") for r in range(rows)])
            s.finish_trial(tid, status="ok", error=None, returncode=0, wall_s=1.0, stderr="")
        s.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert siblings(path) == [path.name]
    return path


def _old_db(path: Path, migrations, trials: int, rows: int) -> Path:
    """A database at an older schema version, written with that version's columns
    (today's Store methods write columns that later migrations added)."""
    with Store(path, migrations=migrations) as s, s.db:
        run_id = s.db.execute(
            "INSERT INTO runs (name, status, started_at, command) VALUES ('t', 'finished', 'x', 'c')"
        ).lastrowid
        for block in range(trials):
            tid = s.db.execute(
                "INSERT INTO trials (run_id, case_key, block, position, framework, variant, model, dataset,"
                " batch_size, case_json, protocol_json, status) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    run_id,
                    "k",
                    block,
                    0,
                    CASE["framework"],
                    CASE["variant"],
                    CASE["model"],
                    CASE["dataset"],
                    CASE["batch_size"],
                    json.dumps(CASE),
                    '{"repeats": 1}',
                    "ok",
                ),
            ).lastrowid
            s.db.executemany(
                "INSERT INTO measurements (trial_id, repeat, warmup, phase, metric, value, unit)"
                " VALUES (?,?,?,?,?,?,?)",
                [(tid, r, 0, "train", "time", 1.0 + r / 100, "s") for r in range(rows)],
            )
    with Store(path, migrations=migrations) as s:
        s.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert siblings(path) == [path.name]
    return path


def corrupt(path: Path, fill: bytes = b"\xa5") -> Path:
    """Overwrites 64 bytes in the middle of the first table leaf page that is more than
    half full of rows (a measurements page: the schema's own pages, which hold the tables'
    and triggers' CREATE text, are passed over), as a bad sector would."""
    data = bytearray(path.read_bytes())
    page_size = struct.unpack(">H", data[16:18])[0]
    for number in range(2, len(data) // page_size + 1):
        page = (number - 1) * page_size
        content_start = struct.unpack(">H", data[page + 5 : page + 7])[0]
        schema = b"CREATE " in data[page : page + page_size]
        if data[page] == 0x0D and 0 < content_start < page_size // 2 and not schema:
            middle = page + page_size // 2
            data[middle : middle + 64] = fill * 64
            break
    else:
        raise AssertionError("no full data page")
    path.write_bytes(bytes(data))
    # The premise: SQLite itself finds the damage (read without creating side files).
    db = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    try:
        assert db.execute("PRAGMA quick_check").fetchall() != [("ok",)]
    except sqlite3.DatabaseError as exc:  # SQLite cannot walk past the damage
        assert exc.sqlite_errorname == "SQLITE_CORRUPT"
    except MemoryError:  # a damaged record size that asks for terabytes
        pass
    finally:
        db.close()
    return path


def foreign_db(path: Path) -> Path:
    """Another program's SQLite database: tables, but user_version 0."""
    db = sqlite3.connect(path)
    db.executescript("CREATE TABLE contacts (name TEXT, phone TEXT); INSERT INTO contacts VALUES ('a', '1');")
    db.close()
    return path


def versioned_empty_db(path: Path, version: int) -> Path:
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {version}")
    db.close()
    return path


def siblings(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir() if p.name.startswith(path.name))


def state(path: Path) -> tuple:
    """What must not change: content, mtime, and the files beside it."""
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns, siblings(path)


@pytest.fixture(scope="session")
def run_args(cli) -> list[str]:
    """`dlbench run` of a tiny numpy mlp on synthetic data, without its --db."""
    return ["run", *cli.flags(
        trials=1, framework="numpy", model="mlp", dataset="synthetic", epochs=1, repeats=1, warmup=0,
        latency_batches=0, train_samples=256, test_samples=64, samplers="none",
    )]  # fmt: skip


@pytest.fixture
def invoke(cli):
    """invoke(args) -> (exit status, output). CliRunner keeps the exception that ended a command,
    and with its traceback the stores the command opened; a process that exits closes them (and
    SQLite then removes the -wal and -shm files). Dropping the result's references does the same here."""

    def run(args: list[str]) -> tuple[int, str]:
        result = cli.result(*args)
        code, output = result.exit_code, result.output
        del result
        gc.collect()
        return code, output

    return run


def reading(out: Path, other: str) -> list[list[str]]:
    """The commands that only read the database their --db names: runs, report, export into
    `out`, and compare of its run 1 with `other`."""
    return [["runs"], ["report"], ["export", str(out)], ["compare", "1", other]]


def one_error_line(output: str) -> str:
    assert "Traceback" not in output, output
    errors = [line for line in output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, output
    return " ".join(output.split())  # the message, unwrapped (rich wraps at 150 columns off a terminal)


# The three ways SQLite's quick_check meets the 64 damaged bytes, by what they hold: a list
# of problems, an abort at a page it cannot walk, an allocation for a damaged record size.
BAD = {
    "corrupt": (
        lambda p: corrupt(real_db(p), b"\x5a"),
        r"database disk image is malformed \(integrity check: On tree page \d+ cell \d+: .*\); dlbench "
        r"neither reads nor writes it; recover a copy with `sqlite3 \S*bad\.db \.recover \| sqlite3 "
        r"\S*bad\.db\.recovered`",
    ),
    "corrupt-page": (
        lambda p: corrupt(real_db(p), b"\xa5"),
        r"database disk image is malformed \(integrity check: stopped at a damaged page\); dlbench "
        r"neither reads nor writes it; recover a copy with",
    ),
    "corrupt-size": (
        lambda p: corrupt(real_db(p), b"\xff"),
        r"database disk image is malformed \(integrity check: SQLite ran out of memory reading a "
        r"damaged record\); dlbench neither reads nor writes it; recover a copy with",
    ),
    "foreign": (
        foreign_db,
        r"not a dlbench database: it has no dlbench schema version but holds tables "
        r"\(contacts\); dlbench neither reads nor writes it; use another database file",
    ),
    "version-without-tables": (
        lambda p: versioned_empty_db(p, len(MIGRATIONS)),
        rf"not a dlbench database: its schema version is {len(MIGRATIONS)}, but it has none "
        r"of dlbench's tables; dlbench neither reads nor writes it; use another database file",
    ),
    "newer": (
        lambda p: versioned_empty_db(p, 99),
        rf"schema version 99 is newer than this dlbench understands \({len(MIGRATIONS)}\); dlbench neither "
        r"reads nor writes it; upgrade dlbench",
    ),
    "junk": (
        lambda p: p.write_bytes(b"this is not sqlite" * 100) and p,
        r"not a dlbench database: not an SQLite file \(it does not start with the SQLite header\)",
    ),
}


# -- the Store --------------------------------------------------------------------
@pytest.mark.parametrize("readonly", [False, True], ids=["read-write", "read-only"])
@pytest.mark.parametrize("kind", sorted(BAD))
def test_a_bad_database_is_refused_and_left_untouched(tmp_path, kind, readonly):
    make, message = BAD[kind]
    path = tmp_path / "bad.db"
    make(path)
    before = state(path)
    time.sleep(0.01)  # an mtime set by a write would differ
    with pytest.raises(StoreError) as refused:
        Store(path, readonly=True) if readonly else Store(path)
    assert str(refused.value).startswith(f"{path}: ")
    assert re.search(message, str(refused.value)), str(refused.value)
    assert "\n" not in str(refused.value)
    assert state(path) == before


def test_a_partly_missing_schema_is_named(tmp_path):
    path = real_db(tmp_path / "p.db")
    db = sqlite3.connect(path)
    db.execute("ALTER TABLE runs DROP COLUMN idle_json")
    db.execute("DROP TABLE samplers")
    db.close()
    with pytest.raises(
        StoreError,
        match=rf"its schema version is {len(MIGRATIONS)}, but it lacks table samplers; "
        r"column runs\.idle_json; dlbench neither",
    ):
        Store(path)


def test_a_copy_that_lost_its_version_is_told_how_to_copy(tmp_path):
    """`.dump` does not keep user_version: dlbench's tables at version 0."""
    source = real_db(tmp_path / "s.db")
    copy = tmp_path / "copy.db"
    db = sqlite3.connect(copy)
    db.executescript("\n".join(sqlite3.connect(source).iterdump()))
    db.close()
    with pytest.raises(
        StoreError,
        match=r"holds tables \(baselines, latency_packs, markers, measurements, .*\) \(a copy made with "
        r"`\.dump` loses the schema version",
    ):
        Store(copy, readonly=True)


def test_readonly_never_writes_and_upgrades_an_old_schema_in_memory(tmp_path):
    path = real_db(tmp_path / "old.db", migrations=MIGRATIONS[:2])
    before = state(path)
    time.sleep(0.01)
    with Store(path, readonly=True) as s:
        assert s.version == len(MIGRATIONS)  # the copy in memory
        assert s.run()["stop_reason"] is None and s.run()["name"] == "t"  # a column of migration 3
        assert len(s.measurements(1)) == 300 and s.trials(1)[0]["status"] == "ok"
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            s.db.execute("DELETE FROM runs")
    assert state(path) == before
    db = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    assert db.execute("PRAGMA user_version").fetchone()[0] == 2
    db.close()


def test_readonly_leaves_a_current_database_as_it_was(tmp_path):
    path = real_db(tmp_path / "cur.db")
    before = state(path)
    time.sleep(0.01)
    with Store(path, readonly=True) as s:
        assert len(s.runs()) == 1
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            s.db.execute("DELETE FROM runs")
    assert state(path) == before  # not even an empty -wal or -shm left behind


def test_readonly_sees_what_a_running_writer_committed(tmp_path):
    path = real_db(tmp_path / "live.db")
    with Store(path) as writer:
        writer.db.execute("PRAGMA wal_autocheckpoint=0")  # the new run stays in the -wal
        writer.create_run(
            name="second", command="c", config_source="s", config_text="x", experiment={}, environment={}, version="0"
        )
        assert (tmp_path / "live.db-wal").stat().st_size > 0
        with Store(path, readonly=True) as reader:
            assert [r["name"] for r in reader.runs()] == ["t", "second"]


def test_readonly_does_not_create_a_missing_file(tmp_path):
    with pytest.raises(StoreError, match=r"missing\.db: no such database file"):
        Store(tmp_path / "missing.db", readonly=True)
    assert not (tmp_path / "missing.db").exists()


def test_a_failed_migration_leaves_the_previous_version(tmp_path):
    path = real_db(tmp_path / "m.db", migrations=MIGRATIONS[:2])
    broken = MIGRATIONS[:2] + ["CREATE TABLE notes (x TEXT); ALTER TABLE nowhere ADD COLUMN name TEXT;"]
    with pytest.raises(StoreError, match="no such table: nowhere"):
        Store(path, migrations=broken)
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == 2
    assert db.execute("SELECT count(*) FROM sqlite_master WHERE name='notes'").fetchone()[0] == 0
    db.close()


def test_migrations_split_on_statements_not_on_every_semicolon(tmp_path):
    extra = MIGRATIONS + [
        """
        CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT DEFAULT 'a; b');
        CREATE TRIGGER notes_touch AFTER INSERT ON notes BEGIN
            UPDATE notes SET text = text || ';' WHERE id = new.id;
        END;
        -- a comment; with a semicolon
    """
    ]
    with Store(tmp_path / "s.db", migrations=extra) as s:
        assert s.version == len(MIGRATIONS) + 1
        with s.db:
            s.db.execute("INSERT INTO notes (id) VALUES (1)")
        assert s.db.execute("SELECT text FROM notes").fetchone()[0] == "a; b;"


# Run in a fresh interpreter: forking 20 children of the pytest process, which by then may
# hold loaded frameworks and gigabytes, cost up to 0.4 s a fork late in the suite.
OPEN_AT_ONCE = """
import json, multiprocessing, sys
from dlbench.store import Store

def open_at_once(path, barrier, results):
    try:
        barrier.wait(timeout=30)
        with Store(path) as s:
            results.put(("ok", s.version))
    except BaseException as exc:  # reported to the parent
        results.put(("error", f"{type(exc).__name__}: {exc}"))

if __name__ == "__main__":
    ctx = multiprocessing.get_context("fork")
    barrier, results = ctx.Barrier(20), ctx.Queue()
    procs = [ctx.Process(target=open_at_once, args=(sys.argv[1], barrier, results)) for _ in range(20)]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    print(json.dumps(outcomes))
"""


def test_concurrent_first_opens_of_a_new_database_all_succeed(tmp_path):
    """20 processes released together open one new file: one migrates, the others find it
    migrated; none sees "database is locked" or "duplicate column"."""
    for attempt in range(5):
        path = tmp_path / f"new{attempt}.db"
        done = subprocess.run(
            [sys.executable, "-c", OPEN_AT_ONCE, str(path)], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        outcomes = [tuple(o) for o in json.loads(done.stdout)]
        assert outcomes == [("ok", len(MIGRATIONS))] * 20, (attempt, [o for o in outcomes if o[0] != "ok"])
        with Store(path) as s:
            assert s.version == len(MIGRATIONS) and s.runs() == []


# -- the command line -------------------------------------------------------------
@pytest.fixture
def good_db(tmp_path):
    return real_db(tmp_path / "good.db")


def _commands(path: Path, good: Path, out: Path, run_args: list[str]) -> dict[str, list[str]]:
    return {
        "runs": ["runs", "--db", str(path)],
        "report": ["report", "--db", str(path)],
        "report-html": ["report", "--format", "html", "--out", str(out), "--db", str(path)],
        "export": ["export", str(out), "--db", str(path)],
        "compare-a": ["compare", str(path), str(good), "--db", str(good)],
        "compare-b": ["compare", "1", f"{path}:1", "--db", str(good)],
        "run": [*run_args, "--db", str(path)],
        "extend": ["extend", str(path)],
        "repack": ["repack", "--db", str(path)],
    }


@pytest.mark.parametrize(
    "kind", ["corrupt", "corrupt-page", "corrupt-size", "foreign", "version-without-tables", "newer"]
)
def test_every_command_refuses_a_bad_database_in_one_line_and_writes_nothing(tmp_path, good_db, kind, invoke, run_args):
    make, message = BAD[kind]
    path = tmp_path / "bad.db"
    make(path)
    before, good_before = state(path), state(good_db)
    out = tmp_path / "out.csv"
    time.sleep(0.01)
    for name, args in _commands(path, good_db, out, run_args).items():
        code, output = invoke(args)
        assert code == 2, (name, output)
        flat = one_error_line(output)
        assert re.search(message, flat), (name, flat)
        assert f"error: {path}: " in flat, (name, flat)
        assert state(path) == before, name
        assert not out.exists(), name
    assert state(good_db) == good_before


def test_reading_commands_leave_a_good_database_as_it_was(tmp_path, good_db, invoke):
    other = real_db(tmp_path / "other.db")
    before, other_before = state(good_db), state(other)
    time.sleep(0.01)
    out = tmp_path / "out.csv"
    for args in reading(out, f"{other}:1"):
        code, output = invoke([*args, "--db", str(good_db)])
        assert code == 0, (args, output)
    assert state(good_db) == before and state(other) == other_before
    assert len(out.read_text().splitlines()) == 301


def test_reading_commands_report_an_old_database_without_upgrading_it(tmp_path, cli):
    path = real_db(tmp_path / "old.db", migrations=MIGRATIONS[:2])
    before = state(path)
    time.sleep(0.01)
    runs = cli("runs", "--db", path)
    assert "│ t " in runs, runs
    cli("export", tmp_path / "o.csv", "--db", path)
    assert state(path) == before


def test_reading_commands_do_not_create_a_missing_database(tmp_path, cli):
    path = tmp_path / "none.db"
    for args in reading(tmp_path / "o.csv", "2"):
        assert f"{path}: no such database file" in one_error_line(cli(*args, "--db", path, code=2)), args
    assert not path.exists()


# -- read-only files and directories (file permissions, which root ignores) ---------------
def _drop_file_permission_override() -> None:
    """In the child before exec: root loses CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH for good
    (PR_CAPBSET_DROP), so that file modes bind it like any user."""
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):
        if libc.prctl(24, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def unprivileged(*args: str) -> subprocess.CompletedProcess:
    """`python -m dlbench ARGS` (or `python -c CODE` when args[0] == "-c") in a process that
    file permissions apply to."""
    src = str(Path(dlbench.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable, *args] if args[0] == "-c" else [sys.executable, "-m", "dlbench", *args]
    try:
        return subprocess.run(
            command,
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            preexec_fn=_drop_file_permission_override if os.geteuid() == 0 else None,
        )
    except subprocess.SubprocessError as exc:
        pytest.skip(f"running as root and cannot drop CAP_DAC_OVERRIDE: {exc}")


@pytest.fixture
def readonly_dir(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    yield folder
    folder.chmod(0o755)


def test_a_readonly_file_can_be_reported_but_not_run_into(tmp_path, good_db, run_args):
    copy = tmp_path / "copy.db"  # compare needs two runs: a run compared with itself is refused
    shutil.copy(good_db, copy)
    copy.chmod(0o644)
    good_db.chmod(0o444)
    before = state(good_db)
    time.sleep(0.01)
    for args in reading(tmp_path / "o.csv", f"{copy}:1"):
        result = unprivileged(*args, "--db", str(good_db))
        assert result.returncode == 0, (args, result.stdout + result.stderr)
    assert state(good_db)[:2] == before[:2]  # SQLite may leave an empty -wal and -shm beside it (mode=ro)
    result = unprivileged(*run_args, "--db", str(good_db))
    assert result.returncode == 2, result.stdout + result.stderr
    flat = one_error_line(result.stderr)
    assert (
        f"error: {good_db}: cannot store results: the file is read-only (no write permission); nothing was "
        "written; make it writable or use another database file"
    ) in flat, flat
    assert state(good_db)[:2] == before[:2]


def test_a_database_in_a_readonly_directory_can_be_reported_but_not_run_into(tmp_path, readonly_dir, run_args):
    path = real_db(readonly_dir / "r.db", migrations=MIGRATIONS[:2])  # an old one: upgraded in memory
    copy = tmp_path / "copy.db"  # compare needs two runs: a run compared with itself is refused
    shutil.copy(path, copy)
    readonly_dir.chmod(0o555)
    before = state(path)
    time.sleep(0.01)
    for args in reading(tmp_path / "o.csv", f"{copy}:1"):
        result = unprivileged(*args, "--db", str(path))
        assert result.returncode == 0, (args, result.stdout + result.stderr)
        assert args != ["runs"] or "│ t " in result.stdout
    result = unprivileged(*run_args, "--db", str(path))
    assert result.returncode == 2, result.stdout + result.stderr
    flat = one_error_line(result.stderr)
    assert f"error: {path}: cannot store results: its directory {readonly_dir} is read-only" in flat, flat
    new = readonly_dir / "new.db"
    result = unprivileged(*run_args, "--db", str(new))
    assert result.returncode == 2 and "cannot create the database: directory" in one_error_line(result.stderr)
    assert state(path) == before and not new.exists()


def test_a_readonly_directory_with_wal_content_is_refused_not_misread(tmp_path, readonly_dir):
    """The -wal holds committed results the database file lacks; read without it (immutable)
    they would be missing, and SQLite cannot use it without creating the -shm."""
    live = real_db(tmp_path / "live.db")
    writer = Store(live)
    writer.db.execute("PRAGMA wal_autocheckpoint=0")
    writer.create_run(
        name="second", command="c", config_source="s", config_text="x", experiment={}, environment={}, version="0"
    )
    path = readonly_dir / "r.db"
    shutil.copy(live, path)
    shutil.copy(tmp_path / "live.db-wal", readonly_dir / "r.db-wal")
    writer.close()
    readonly_dir.chmod(0o555)
    before = state(path)
    result = unprivileged("runs", "--db", str(path))
    assert result.returncode == 2, result.stdout + result.stderr
    flat = one_error_line(result.stderr)
    assert f"error: {path}: the database has un-checkpointed WAL content (r.db-wal, " in flat, flat
    assert "it cannot be read safely read-only; copy r.db and r.db-wal together into a writable directory" in flat
    assert state(path) == before


def test_damage_met_after_opening_is_one_line_not_a_traceback(tmp_path, monkeypatch, capsys):
    """quick_check on opening misses some damage (index vs table mismatches), and a
    device can fail mid-read: the console script still ends in one line and exit 1."""
    import sys

    from dlbench import cli
    from dlbench.store import Store as RealStore

    path = real_db(tmp_path / "r.db")

    def broken(self):
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(RealStore, "runs", broken)
    monkeypatch.setattr(sys, "argv", ["dlbench", "runs", "--db", str(path)])
    with pytest.raises(SystemExit) as exit_:
        cli.main()
    assert exit_.value.code == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith("error: database disk image is malformed (the database file may be damaged")


def test_a_run_id_beyond_sqlite_integers_is_no_run_not_a_traceback(tmp_path, cli):
    path = real_db(tmp_path / "r.db")
    for args in (["report", "--run", "99999999999999999999"], ["compare", "99999999999999999999", "1"]):
        result = cli.result(*args, "--db", path)
        assert result.exit_code == 2, result.output
        assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
        assert "no run 99999999999999999999; a run id is a positive integer" in " ".join(result.output.split())
