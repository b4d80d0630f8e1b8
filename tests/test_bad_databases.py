"""Databases dlbench must not touch (corrupt, foreign, newer), read-only opening, and
concurrent first opens.

A refused file gets one line naming it, and nothing written: the same bytes, the same
mtime, and no -wal or -shm file beside it that was not there."""

from __future__ import annotations

import hashlib
import multiprocessing
import re
import sqlite3
import struct
import time
from pathlib import Path

import pytest

from dlbench.store import MIGRATIONS, Measurement, Store, StoreError

CASE = {"framework": "numpy", "variant": "default", "model": "mlp", "dataset": "synthetic", "batch_size": 8}


# -- building the files ---------------------------------------------------------
def real_db(path: Path, migrations=MIGRATIONS, trials: int = 3, rows: int = 100) -> Path:
    """A dlbench database written through the Store API, checkpointed and closed:
    a single file, in WAL mode, with no -wal beside it."""
    with Store(path, migrations=migrations) as s:
        run_id = s.create_run(name="t", command="c", config_source="s", config_text="x", experiment={},
                              environment={"cpu": "x"}, version="0")
        for block in range(trials):
            tid = s.add_trial(run_id, case_key="k", block=block, position=0, case=CASE, protocol={"repeats": 1})
            s.add_measurements(tid, [Measurement(r, False, "train", "time", 1.0 + r / 100, "s")
                                     for r in range(rows)])
            s.finish_trial(tid, status="ok", error=None, returncode=0, wall_s=1.0, stderr="")
        s.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert siblings(path) == [path.name]
    return path


def corrupt(path: Path, fill: bytes = b"\xa5") -> Path:
    """Overwrites 64 bytes in the middle of the first table leaf page that is more than
    half full of rows (a measurements page), as a bad sector would."""
    data = bytearray(path.read_bytes())
    page_size = struct.unpack(">H", data[16:18])[0]
    for number in range(2, len(data) // page_size + 1):
        page = (number - 1) * page_size
        content_start = struct.unpack(">H", data[page + 5:page + 7])[0]
        if data[page] == 0x0D and 0 < content_start < page_size // 2:
            middle = page + page_size // 2
            data[middle:middle + 64] = fill * 64
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


# The three ways SQLite's quick_check meets the 64 damaged bytes, by what they hold: a list
# of problems, an abort at a page it cannot walk, an allocation for a damaged record size.
BAD = {
    "corrupt": (lambda p: corrupt(real_db(p), b"\x5a"),
                r"database disk image is malformed \(integrity check: On tree page \d+ cell \d+: .*\); dlbench "
                r"neither reads nor writes it; recover a copy with `sqlite3 \S*bad\.db \.recover \| sqlite3 "
                r"\S*bad\.db\.recovered`"),
    "corrupt-page": (lambda p: corrupt(real_db(p), b"\xa5"),
                     r"database disk image is malformed \(integrity check: stopped at a damaged page\); dlbench "
                     r"neither reads nor writes it; recover a copy with"),
    "corrupt-size": (lambda p: corrupt(real_db(p), b"\xff"),
                     r"database disk image is malformed \(integrity check: SQLite ran out of memory reading a "
                     r"damaged record\); dlbench neither reads nor writes it; recover a copy with"),
    "foreign": (foreign_db, r"not a dlbench database: it has no dlbench schema version but holds tables "
                            r"\(contacts\); dlbench neither reads nor writes it; use another database file"),
    "version-without-tables": (lambda p: versioned_empty_db(p, len(MIGRATIONS)),
                               rf"not a dlbench database: its schema version is {len(MIGRATIONS)}, but it has none "
                               r"of dlbench's tables; dlbench neither reads nor writes it; use another database file"),
    "newer": (lambda p: versioned_empty_db(p, 99),
              rf"schema version 99 is newer than this dlbench understands \({len(MIGRATIONS)}\); dlbench neither "
              r"reads nor writes it; upgrade dlbench"),
    "junk": (lambda p: p.write_bytes(b"this is not sqlite" * 100) and p,
             r"not a dlbench database: not an SQLite file \(it does not start with the SQLite header\)"),
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
    with pytest.raises(StoreError, match=rf"its schema version is {len(MIGRATIONS)}, but it lacks table samplers; "
                                         r"column runs\.idle_json; dlbench neither"):
        Store(path)


def test_a_copy_that_lost_its_version_is_told_how_to_copy(tmp_path):
    """`.dump` does not keep user_version: dlbench's tables at version 0."""
    source = real_db(tmp_path / "s.db")
    copy = tmp_path / "copy.db"
    db = sqlite3.connect(copy)
    db.executescript("\n".join(sqlite3.connect(source).iterdump()))
    db.close()
    with pytest.raises(StoreError, match=r"holds tables \(markers, measurements, .*\) \(a copy made with "
                                         r"`\.dump` loses the schema version"):
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
        writer.create_run(name="second", command="c", config_source="s", config_text="x", experiment={},
                          environment={}, version="0")
        assert (tmp_path / "live.db-wal").stat().st_size > 0
        with Store(path, readonly=True) as reader:
            assert [r["name"] for r in reader.runs()] == ["t", "second"]


def test_readonly_does_not_create_a_missing_file(tmp_path):
    with pytest.raises(StoreError, match=r"missing\.db: no such database file"):
        Store(tmp_path / "missing.db", readonly=True)
    assert not (tmp_path / "missing.db").exists()


def test_a_failed_migration_leaves_the_previous_version(tmp_path):
    path = real_db(tmp_path / "m.db", migrations=MIGRATIONS[:2])
    broken = MIGRATIONS[:2] + ["CREATE TABLE notes (x TEXT); ALTER TABLE runs ADD COLUMN name TEXT;"]
    with pytest.raises(StoreError, match="duplicate column name: name"):
        Store(path, migrations=broken)
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == 2
    assert db.execute("SELECT count(*) FROM sqlite_master WHERE name='notes'").fetchone()[0] == 0
    db.close()


def test_migrations_split_on_statements_not_on_every_semicolon(tmp_path):
    extra = MIGRATIONS + ["""
        CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT DEFAULT 'a; b');
        CREATE TRIGGER notes_touch AFTER INSERT ON notes BEGIN
            UPDATE notes SET text = text || ';' WHERE id = new.id;
        END;
        -- a comment; with a semicolon
    """]
    with Store(tmp_path / "s.db", migrations=extra) as s:
        assert s.version == len(MIGRATIONS) + 1
        with s.db:
            s.db.execute("INSERT INTO notes (id) VALUES (1)")
        assert s.db.execute("SELECT text FROM notes").fetchone()[0] == "a; b;"


def _open_at_once(path, barrier, results) -> None:
    try:
        barrier.wait(timeout=30)
        with Store(path) as s:
            results.put(("ok", s.version))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        results.put(("error", f"{type(exc).__name__}: {exc}"))


def test_concurrent_first_opens_of_a_new_database_all_succeed(tmp_path):
    """20 processes released together open one new file: one migrates, the others find it
    migrated; none sees "database is locked" or "duplicate column"."""
    ctx = multiprocessing.get_context("fork")
    for attempt in range(5):
        path = tmp_path / f"new{attempt}.db"
        barrier, results = ctx.Barrier(20), ctx.Queue()
        procs = [ctx.Process(target=_open_at_once, args=(path, barrier, results)) for _ in range(20)]
        for p in procs:
            p.start()
        outcomes = [results.get(timeout=60) for _ in procs]
        for p in procs:
            p.join(timeout=60)
        assert outcomes == [("ok", len(MIGRATIONS))] * 20, (attempt, [o for o in outcomes if o[0] != "ok"])
        with Store(path) as s:
            assert s.version == len(MIGRATIONS) and s.runs() == []
