"""The results store: every raw value, committed as it arrives, in SQLite (a file) or,
for teams that share one database, PostgreSQL (`--db postgresql://...`, dlbench.store.postgres).

Tables (docs/design.md): runs (config text verbatim, environment
fingerprint, an explain run's pairs), trials (full case and fairness manifest, status,
error text), measurements (long format: trial, repeat, warm-up flag, phase, metric,
value, unit), series (polled time series, for telemetry), skipped (cells not run,
with the reason). The schema and its versions: dlbench.store.migrations. WAL mode
lets `dlbench report` read while a run writes. The parent process is the only writer.

Reads return the typed, frozen records of dlbench.store.records, their JSON columns
decoded once, here; writes take plain values and encode them here.
"""

from __future__ import annotations

import json
import os
import random
import shlex
import sqlite3
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar, cast

from dlbench.store import latency_packs, records
from dlbench.store.base import SQLITE, StoreError
from dlbench.store.latency_packs import LatencyCopy
from dlbench.store.migrations import MIGRATIONS, apply_sqlite, schema_of
from dlbench.store.records import (
    LatencyCall,
    MeasurementRecord,
    RunRecord,
    SamplerRecord,
    SeriesPoint,
    SkippedRecord,
    TrialRecord,
)

_Record = TypeVar("_Record", MeasurementRecord, LatencyCall, SeriesPoint)

STATUSES = ("pending", "running", "ok", "failed", "oom", "timeout", "diverged", "interrupted")


LATENCY_PHASE = latency_packs.PHASE_SQL.format(row="m")  # a measurement m of a per-call latency phase
CASE_KINDS = 64  # kinds of value (phase, metric, unit, method, flag) numbered by the database up to this many
# A stored value a measurement can hold: a number within +-1e300. Infinity, a value near the
# float's limit (1.7e308 overflowed the report's unit arithmetic) and text another tool put in
# the number column are read as NULL, "invalid value" (Store.invalid_values names them). In
# SQLite text sorts after every number, so BETWEEN is false for it; PostgreSQL's column is a
# double. Only a database written by something else holds them: dlbench stores no such value.
VALID_VALUE = "{row}.value BETWEEN -1e300 AND 1e300"
VALUE = "CASE WHEN m.value BETWEEN -1e300 AND 1e300 THEN m.value END"


def database_url(path: str | os.PathLike[str]) -> str | None:
    """The PostgreSQL URL that --db names (postgresql://... or postgres://...), else None."""
    from dlbench.store.postgres import url_of

    return url_of(path)


def shown(path: str | os.PathLike[str]) -> str:
    """A --db as it may be printed: a PostgreSQL URL with its password masked."""
    url = database_url(path)
    if url is None:
        return os.fspath(path)
    from dlbench.store.postgres import masked

    return masked(url)


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class Measurement:
    repeat: int | None
    warmup: bool
    phase: str
    metric: str
    value: float | None
    unit: str
    seq: int | None = None
    method: str | None = None  # how it was obtained: "counter", "integrated-power", "polled", ...
    flag: str | None = None  # e.g. "unreliable: window shorter than the update period"


# -- opening a database safely ------------------------------------------------
# Before anything is written into an existing file it is checked, with reads only:
# the SQLite header, PRAGMA quick_check (50-120 ms over 150,000 measurements, a
# 9.6 MB file, on a 2-core VM; readers pay it too, a report takes seconds), and the
# schema its user_version implies. A corrupt, foreign or newer file is refused
# with one line that names it, and nothing is written into it.

SQLITE_HEADER = b"SQLite format 3\x00"
UNTOUCHED = "dlbench neither reads nor writes it"
_BUSY, _READONLY, _CORRUPT, _CANTOPEN, _NOTADB = 5, 8, 11, 14, 26  # primary SQLite result codes


def _code(exc: sqlite3.Error) -> int:
    return (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF


def _sqlite_header(path: Path) -> bytes:
    with open(path, "rb") as fh:
        return fh.read(100)


def _uri(path: Path, query: str) -> str:
    return f"{path.resolve().as_uri()}?{query}"  # as_uri percent-encodes "?", "#" and "%"


class Store:
    """The results database. Store(path) opens it for writing, creating and
    migrating it; Store(path, readonly=True) never writes into the file: it is
    opened read-only, and an older schema is migrated in an in-memory copy.

    A path that is a PostgreSQL URL (postgresql://user@host/db) opens that database
    instead (dlbench.store.postgres): the same tables, migrations and methods. `path` is then
    the URL with its password masked, and `db` a postgres.Connection standing in for the
    sqlite3.Connection (execute, executemany, commit, rollback, in_transaction, `with`),
    whose rows are read like sqlite3.Row. A reader of an older PostgreSQL schema is
    refused rather than upgraded (a copy in memory is SQLite's alone)."""

    path: Path | str

    def __init__(
        self, path: str | Path, *, migrations: Sequence[str] = MIGRATIONS, readonly: bool = False, timeout: float = 30
    ) -> None:
        self.readonly = readonly
        self.timeout = timeout
        self._sql = SQLITE
        url = database_url(path)
        if url is not None:
            from dlbench.store import postgres as store_pg

            self._sql = store_pg.DIALECT
            self.path = store_pg.masked(url)
            self.db = cast(sqlite3.Connection, self._open_postgres(url, list(migrations)))
        else:
            self.path = Path(path)
            self._refuse_url_like(os.fspath(path))
            self._refuse_special()
            self.db = (self._open_readonly if readonly else self._open_readwrite)(list(migrations))
            self.db.row_factory = sqlite3.Row
        # Packs (migration 8) are written where the schema has them: a Store given an older
        # list of migrations (the tests' databases of earlier versions) writes that schema.
        self._packs = "latency_packs" in schema_of(tuple(migrations))
        # The triggers that keep trials.latency_packed honest, as this open found them
        # (another tool can drop them): a writer restores them and packs again; a reader
        # without them trusts no pack (latency_samples).
        self.missing_triggers: frozenset[str] = frozenset()
        if self._packs:
            self.missing_triggers = self._check_triggers()
        # The id create_run gave its run, set inside its transaction: a signal that lands
        # during or just after the commit is handled where the id was never returned, and
        # the handler asks committed_run() whether the run was stored.
        self._creating_run: int | None = None
        # Closed when the Store goes, and at the latest at interpreter exit, also when an exception's
        # traceback still holds it: SQLite removes the -wal and -shm files only on a real close.
        weakref.finalize(self, self.db.close)

    # -- opening ------------------------------------------------------------
    def _check_triggers(self) -> frozenset[str]:
        """The latency triggers this file lacks, after a writer restored them: while they
        were gone, rows may have changed without clearing any trial's flag, so the writer
        packs every trial again (latency_packs.pack_existing) in the same transaction."""
        missing = frozenset(latency_packs.missing_triggers(self.db))
        if not missing or self.readonly:
            return missing
        self.repack()
        return frozenset()

    def repack(self) -> int:
        """Every trial's latency times packed again from its rows, the old packs dropped, and
        the triggers restored; the number of packs written. The rows are the record: this
        rebuilds the copy after another tool changed either."""
        with self.db:
            latency_packs.pack_existing(self.db)
        return int(self._tuples("SELECT COUNT(*) FROM latency_packs", ())[0][0])

    @property
    def _file(self) -> Path:
        """The SQLite file (the methods that only SQLite has use it)."""
        assert isinstance(self.path, Path), self.path
        return self.path

    def _refuse_url_like(self, text: str) -> None:
        """A --db that reads as a URL ('postgresql://' without a host, 'file:x.db?mode=rwc',
        'sqlite:...') and is no existing file: SQLite would make a file of that odd name
        (or take it as a URI) that no later command finds. A file whose name has a colon
        is still opened when it exists, or when named with its folder (/path/to/a:b.db)."""
        import re

        scheme = re.match(r"([A-Za-z][A-Za-z0-9+.-]*):", text)
        if scheme is None or os.path.exists(text) or len(scheme.group(1)) == 1:  # C:... on Windows
            return
        raise StoreError(
            f"{text}: reads as a URL ({scheme.group(1)}:), not a database file; a PostgreSQL database is "
            "postgresql://USER@HOST[:PORT]/DATABASE, an SQLite file a path (for a new file whose name has a "
            "colon, give its folder too: $PWD/NAME)"
        )

    def _refuse_special(self) -> None:
        """A FIFO or a device as --db: SQLite would block on a FIFO forever, and /dev/null
        reads as an empty database that keeps nothing."""
        import stat

        try:
            mode = self._file.stat().st_mode
        except OSError:
            return  # absent (created by a writer) or unreadable: the open says which
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise StoreError(f"{self._file}: is a special file (a FIFO or a device), not a database file")

    def _open_postgres(self, url: str, migrations: list[str]) -> Any:
        from dlbench.store import postgres as store_pg

        db = store_pg.connect(url, readonly=self.readonly, timeout=self.timeout)
        try:
            (store_pg.check_readable if self.readonly else store_pg.migrate)(db, migrations, self._check_schema)
        except BaseException:
            db.close()
            raise
        return db

    def _open_readwrite(self, migrations: list[str]) -> sqlite3.Connection:
        path = self._file
        folder = path.parent
        if path.is_dir():
            raise StoreError(f"{path}: is a directory, not a database file")
        if path.exists():
            self._check_header()
            if not os.access(path, os.W_OK):
                raise StoreError(
                    f"{path}: cannot store results: the file is read-only (no write permission); "
                    "nothing was written; make it writable or use another database file "
                    "(runs, report, export and compare read it as it is)"
                )
            if not os.access(folder, os.W_OK):
                raise StoreError(
                    f"{path}: cannot store results: its directory {folder} is read-only and SQLite "
                    f"must create {path.name}-wal beside the database; nothing was written; use a "
                    "database file in a writable directory (runs, report, export and compare read "
                    "it as it is)"
                )
        elif folder.is_dir() and not os.access(folder, os.W_OK):
            raise StoreError(f"{path}: cannot create the database: directory {folder} is read-only")
        try:
            db = sqlite3.connect(path, timeout=self.timeout)
        except sqlite3.Error as exc:
            raise StoreError(f"{path}: cannot open database: {exc}") from None
        try:
            self._inspect(db, migrations)  # reads only: nothing is written before the file passed
            self._when_unlocked(db, "PRAGMA journal_mode=WAL")  # lets `dlbench report` read while a run writes
            # Foreign keys stay off while migrating: a migration that rebuilds a
            # table (4) must drop the old one, which the children's references forbid.
            self._migrate(db, migrations)
            db.execute("PRAGMA foreign_keys=ON")
        except BaseException as exc:
            db.close()
            if isinstance(exc, sqlite3.Error):
                raise self._error(exc) from None
            raise
        return db

    def _open_readonly(self, migrations: list[str]) -> sqlite3.Connection:
        path = self._file
        if not path.exists():
            raise StoreError(f"{path}: no such database file")
        if path.is_dir():
            raise StoreError(f"{path}: is a directory, not a database file")
        header = self._check_header()
        wal = path.with_name(path.name + "-wal")
        wal_mode = len(header) > 18 and header[18] == 2
        if wal_mode and not wal.exists() and os.access(path, os.W_OK) and os.access(path.parent, os.W_OK):
            # Reading a WAL database needs its -wal and -shm files. A mode=ro
            # connection creates them but cannot remove them; a read-write one
            # with query_only set removes them when it closes, and the file has
            # no -wal content it could fold in.
            query = "mode=rw"
        else:
            query = "mode=ro"
        db = None
        try:
            db = sqlite3.connect(_uri(path, query), uri=True, timeout=self.timeout)
            db.execute("PRAGMA query_only=ON")
            try:
                version = self._inspect(db, migrations)
            except sqlite3.OperationalError as exc:
                # mode=ro cannot create the -wal and -shm files in a read-only directory
                if not wal_mode or _code(exc) not in (_READONLY, _CANTOPEN):
                    raise
                db.close()
                db = None
                if wal.exists() and wal.stat().st_size > 0:
                    raise StoreError(
                        f"{path}: the database has un-checkpointed WAL content ({wal.name}, "
                        f"{wal.stat().st_size} bytes: results not yet in the database file) and SQLite cannot "
                        f"read it without write access to {path.parent}; it cannot be read safely read-only; "
                        f"copy {path.name} and {wal.name} together into a writable directory and read the "
                        "copy"
                    ) from None
                # No -wal content: the file alone is the whole database.
                db = sqlite3.connect(_uri(path, "immutable=1"), uri=True, timeout=self.timeout)
                db.execute("PRAGMA query_only=ON")
                version = self._inspect(db, migrations)
            if version < len(migrations):
                # An older schema is upgraded in a copy in memory; the file stays as it is.
                memory = sqlite3.connect(":memory:")
                db.backup(memory)
                db.close()
                db = memory
                self._migrate(db, migrations)
                db.execute("PRAGMA query_only=ON")
        except BaseException as exc:
            if db is not None:
                db.close()
            if isinstance(exc, sqlite3.Error):
                raise self._error(exc) from None
            raise
        return db

    def _check_header(self) -> bytes:
        try:
            header = _sqlite_header(self._file)
        except OSError as exc:
            raise StoreError(f"{self.path}: cannot read: {exc.strerror}") from None
        if header and not header.startswith(SQLITE_HEADER[: len(header)]):
            raise StoreError(
                f"{self.path}: not a dlbench database: not an SQLite file (it does not start with "
                f"the SQLite header); {UNTOUCHED}; check the path"
            )
        return header

    def _inspect(self, db: sqlite3.Connection, migrations: Sequence[str]) -> int:
        """Reads only: the file's integrity and schema. Returns its schema version."""
        db.execute("BEGIN")  # one snapshot: a new file another process migrates meanwhile is read before or after
        try:
            return self._inspect_snapshot(db, migrations)
        finally:
            if db.in_transaction:
                db.rollback()

    def _inspect_snapshot(self, db: sqlite3.Connection, migrations: Sequence[str]) -> int:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        try:
            rows = [r[0] for r in db.execute("PRAGMA quick_check(10)")]
        except MemoryError:
            # SQLite reports a damaged record size that asks for terabytes as out of memory
            raise self._corrupt("integrity check: SQLite ran out of memory reading a damaged record") from None
        except sqlite3.DatabaseError as exc:
            if _code(exc) != _CORRUPT:
                raise
            raise self._corrupt("integrity check: stopped at a damaged page") from None
        if rows != ["ok"]:
            problems = [
                line.strip()
                for row in rows
                for line in row.splitlines()
                if line.strip() and line.strip() not in ("*** in database main ***", "database disk image is malformed")
            ]
            problems = problems or ["database disk image is malformed"]
            more = (
                f", and {len(problems) - 1}{'+' if len(problems) >= 10 else ''} more problems"
                if len(problems) > 1
                else ""
            )
            raise self._corrupt(f"integrity check: {problems[0]}{more}")
        self._check_schema(db, version, migrations)
        return int(version)

    def _check_schema(self, db: Any, version: int, migrations: Sequence[str]) -> None:
        path, latest, another = self.path, len(migrations), self._sql.another
        if version > latest:
            raise StoreError(
                f"{path}: schema version {version} is newer than this dlbench understands "
                f"({latest}); {UNTOUCHED}; upgrade dlbench"
            )
        if version < 0:
            raise StoreError(f"{path}: not a dlbench database: schema version {version}; {UNTOUCHED}; {another}")
        tables = self._sql.tables(db)
        if version == 0:
            if tables:
                ours = set(schema_of(tuple(migrations)))
                hint = (
                    " (a copy made with `.dump` loses the schema version; copy with `.backup` or "
                    "`.recover`, which keep it)"
                    if set(tables) <= ours and self._sql is SQLITE
                    else ""
                )
                raise StoreError(
                    f"{path}: not a dlbench database: it has no dlbench schema version but holds "
                    f"tables ({', '.join(sorted(tables))}){hint}; {UNTOUCHED}; "
                    f"{another}"
                )
            return  # empty: a new database
        expected = schema_of(tuple(migrations[:version]))
        if not set(expected) & set(tables):
            raise StoreError(
                f"{path}: not a dlbench database: its schema version is {version}, but it has none "
                f"of dlbench's tables; {UNTOUCHED}; {another}"
            )
        lacks = [f"table {t}" for t in sorted(set(expected) - set(tables))]
        lacks += [
            f"column{'s' if len(expected[t] - tables[t]) > 1 else ''} "
            + ", ".join(f"{t}.{c}" for c in sorted(expected[t] - tables[t]))
            for t in sorted(set(expected) & set(tables))
            if expected[t] - tables[t]
        ]
        if lacks:
            raise StoreError(
                f"{path}: not a dlbench database: its schema version is {version}, but it lacks "
                f"{'; '.join(lacks) if len(lacks) < 4 else ', '.join(lacks[:3]) + ' and more'}"
                f"; {UNTOUCHED}; {another}"
            )

    def _migrate(self, db: sqlite3.Connection, migrations: Sequence[str]) -> None:
        """Every pending migration in one write transaction. The version is read
        inside it, so that of several processes opening a new file at once, the
        first applies the migrations and the others find them applied."""
        self._when_unlocked(db, "BEGIN IMMEDIATE")
        try:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            self._check_schema(db, version, migrations)
            try:
                apply_sqlite(db, migrations, version)
            except StoreError as exc:  # what the file holds does not fit the schema: name the file
                raise StoreError(f"{self.path}: {exc}") from None
            broken = db.execute("PRAGMA foreign_key_check").fetchone()  # keys are off while migrating
            if broken is not None:
                raise StoreError(
                    f"{self.path}: a migration would leave a row of {broken[0]} without its "
                    f"{broken[2]} row; nothing was changed"
                )
            db.commit()
        except BaseException:
            if db.in_transaction:
                db.rollback()
            raise

    def _when_unlocked(self, db: sqlite3.Connection, sql: str) -> None:
        """Runs sql, retrying while another connection holds the lock. SQLite's busy
        timeout covers most waits, but PRAGMA journal_mode=WAL and BEGIN IMMEDIATE
        on a database another process is converting can report "database is
        locked" at once."""
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                db.execute(sql)
                return
            except sqlite3.OperationalError as exc:
                if _code(exc) != _BUSY or time.monotonic() > deadline:
                    raise
                time.sleep(random.uniform(0.005, 0.05))

    def _corrupt(self, detail: str) -> StoreError:
        return StoreError(
            f"{self.path}: database disk image is malformed ({detail}); {UNTOUCHED}; recover a "
            f"copy with `sqlite3 {shlex.quote(str(self._file))} .recover | sqlite3 "
            f"{shlex.quote(str(self._file) + '.recovered')}`"
        )

    def _error(self, exc: sqlite3.Error) -> StoreError:
        """The one line for an SQLite error met while opening."""
        code, path = _code(exc), self.path
        if code == _CORRUPT:
            return self._corrupt("SQLite stopped at a damaged page")
        if code == _NOTADB:
            return StoreError(
                f"{path}: not a dlbench database: not an SQLite file ({exc}); {UNTOUCHED}; check the path"
            )
        if code == _BUSY:
            return StoreError(
                f"{path}: database is locked by another process (waited {self.timeout:g} s); try again when it is done"
            )
        if code == _READONLY and not self.readonly:
            return StoreError(
                f"{path}: cannot store results: {exc}; make the file and its directory "
                "writable or use another database file"
            )
        return StoreError(f"{path}: cannot open database: {exc}")

    @property
    def version(self) -> int:
        return self._sql.version(self.db)

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- runs -------------------------------------------------------------
    def create_run(
        self,
        *,
        name: str,
        command: str,
        config_source: str,
        config_text: str,
        experiment: dict[str, Any],
        environment: dict[str, Any],
        version: str,
        trials: Sequence[dict[str, Any]] = (),
        skipped: Iterable[tuple[dict[str, Any], str]] = (),
        samplers: Iterable[Any] = (),
        owner: dict[str, Any] | None = None,
        explain: dict[str, Any] | None = None,
    ) -> int:
        """The run with its planned trials (see add_trials), skipped cells, sampler table,
        owner and, for an explain run, its pairs (see set_explain), in ONE transaction: a
        run killed while being created leaves nothing, never a run with part of its trials
        (which a resume would call finished). A PostgreSQL URL's password in `command` is
        stored masked. An experiment whose description holds explain pairs (as `dlbench
        explain` wrote them before they had a column) has them stored in the column too."""
        from dlbench.store.postgres import mask_urls

        command = mask_urls(command)
        experiment_text = json.dumps(experiment, default=str)
        explain_text = (
            json.dumps(explain, sort_keys=True)
            if explain is not None
            else records.explain_of_description(experiment_text)
        )
        with self.db:
            cur = self.db.execute(
                "INSERT INTO runs (name, status, started_at, command, config_source, config_text,"
                " experiment_json, environment_json, dlbench_version, owner_json, explain_json)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (
                    name,
                    "running",
                    now(),
                    command,
                    config_source,
                    config_text,
                    experiment_text,
                    json.dumps(environment, default=str),
                    version,
                    json.dumps(owner) if owner else None,
                    explain_text,
                ),
            )
            assert cur.lastrowid is not None  # an INSERT always sets it
            run_id = int(cur.lastrowid)
            self._creating_run = run_id
            self._insert_trials(run_id, trials)
            self.db.executemany(
                "INSERT INTO skipped (run_id, cell_json, reason) VALUES (?,?,?)",
                [(run_id, json.dumps(c, sort_keys=True), r) for c, r in skipped],
            )
            self._insert_samplers(run_id, samplers)
        return run_id

    # -- the run's owner (dlbench.runlock decides who is alive) ------------------
    def claim_run(
        self, run_id: int, owner: dict[str, Any], alive: Callable[[dict[str, Any]], bool]
    ) -> dict[str, Any] | None:
        """Make `owner` the process that executes the run, unless another live one is:
        then return that one and change nothing. Read and write happen in one
        IMMEDIATE transaction, so two processes claiming at once cannot both win."""
        self.db.commit()
        self.db.execute(self._sql.begin_immediate)
        try:
            row = self.db.execute("SELECT owner_json FROM runs WHERE id=?" + self._sql.lock_row, (run_id,)).fetchone()
            holder: dict[str, Any] | None = json.loads(row[0]) if row is not None and row[0] else None
            if holder is not None and holder != owner and alive(holder):
                self.db.rollback()
                return holder
            self.db.execute("UPDATE runs SET owner_json=? WHERE id=?", (json.dumps(owner), run_id))
            self.db.commit()
        except BaseException:
            self.db.rollback()
            raise
        return None

    def settle_dead_runs(self, alive: Callable[[dict[str, Any]], bool]) -> list[int]:
        """Mark 'interrupted' the runs still 'running' whose executing process is gone
        (killed, or a study rerun instead of resumed): without it such a run would read
        'running' forever. Returns their ids."""
        rows = self.db.execute("SELECT id, owner_json FROM runs WHERE status='running'").fetchall()
        dead = []
        for run_id, text in rows:
            try:
                owner = json.loads(text) if text else None
            except ValueError:
                owner = None
            if not isinstance(owner, dict) or not alive(owner):
                dead.append(int(run_id))
        for run_id in dead:
            self.finish_run(
                run_id,
                "interrupted",
                "its dlbench process ended before the run did (found later); finish it with "
                f"dlbench run --resume {run_id}",
            )
        return dead

    def release_run(self, run_id: int, owner: dict[str, Any]) -> None:
        with self.db:
            self.db.execute("UPDATE runs SET owner_json=NULL WHERE id=? AND owner_json=?", (run_id, json.dumps(owner)))

    def finish_run(self, run_id: int, status: str, stop_reason: str | None = None) -> None:
        with self.db:
            self.db.execute(
                "UPDATE runs SET status=?, finished_at=?, stop_reason=coalesce(?, stop_reason) WHERE id=?",
                (status, now(), stop_reason, run_id),
            )

    def committed_run(self) -> int | None:
        """The run the last create_run stored, if its transaction committed (None when it
        rolled back, or none was created): for a command interrupted around that call."""
        run_id = self._creating_run
        if run_id is None or self.db.in_transaction:
            return None
        return run_id if self.db.execute("SELECT 1 FROM runs WHERE id=?", (run_id,)).fetchone() else None

    def run(self, run_id: int | None = None) -> RunRecord:
        """A run (None: the latest), or one StoreError naming the runs there are."""
        if run_id is not None and not 1 <= run_id < 2**63:  # beyond SQLite's integers: no run, not an OverflowError
            raise StoreError(f"{self.path}: no run {run_id}; a run id is a positive integer (see dlbench runs)")
        if run_id is None:
            row = self.db.execute("SELECT * FROM runs ORDER BY id DESC LIMIT 1").fetchone()
            if row is None:
                raise StoreError(f"{self.path}: holds no runs yet")
            return records.run_record(row, str(self.path))
        row = self.db.execute("SELECT * FROM runs WHERE id=?", (run_id,)).fetchone()
        if row is None:
            ids = [r[0] for r in self.db.execute("SELECT id FROM runs ORDER BY id")]
            raise StoreError(f"{self.path}: no run {run_id}; runs here: {ids or 'none'}")
        return records.run_record(row, str(self.path))

    def runs(self) -> list[RunRecord]:
        """Every run, oldest first, with its trial counts (n_trials, n_ok) and where its
        trials ran (placements)."""
        sql = self._sql
        executor, host = sql.json_text("t.placement_json", "executor"), sql.json_text("t.placement_json", "host")
        joined = sql.string_agg("w || '=' || n", "' '", "w")
        rows = self.db.execute(
            "SELECT r.*, (SELECT COUNT(*) FROM trials t WHERE t.run_id=r.id) AS n_trials,"
            " (SELECT COUNT(*) FROM trials t WHERE t.run_id=r.id AND t.status='ok') AS n_ok,"
            # Where the trials ran: "executor:host" with a count each, e.g. "ray:node-a=4".
            f" (SELECT {joined} FROM (SELECT coalesce({executor},"
            f" '?') || ':' || coalesce({host}, '?') AS w,"
            " COUNT(*) AS n FROM trials t WHERE t.run_id=r.id AND t.placement_json IS NOT NULL GROUP BY w"
            " ORDER BY w) AS p) AS placements"
            " FROM runs r ORDER BY r.id"
        ).fetchall()
        return [records.run_record(r, str(self.path)) for r in rows]

    def skipped(self, run_id: int) -> list[SkippedRecord]:
        rows = self.db.execute("SELECT * FROM skipped WHERE run_id=? ORDER BY id", (run_id,)).fetchall()
        return [records.skipped_record(r, str(self.path)) for r in rows]

    # -- an explain run's pairs -------------------------------------------------
    def set_explain(self, run_id: int, explain: dict[str, Any]) -> None:
        """An explain run's pairs ({"explain": [pair, ...], "from_run": N}, dlbench.explain)."""
        with self.db:
            self.db.execute("UPDATE runs SET explain_json=? WHERE id=?", (json.dumps(explain, sort_keys=True), run_id))

    def explain(self, run_id: int) -> dict[str, Any] | None:
        """The run's explain pairs (see set_explain), None for a run that is no explain run.
        A run an older dlbench stored in a database not yet migrated keeps them in its
        experiment's description: they are read from there."""
        return self.run(run_id).explain

    # -- trials -----------------------------------------------------------
    # A trial dict for add_trials / create_run: case_key, block, position, case, protocol.
    def _insert_trials(self, run_id: int, trials: Iterable[dict[str, Any]]) -> None:
        self.db.executemany(
            "INSERT INTO trials (run_id, case_key, block, position, framework, variant, model,"
            " dataset, batch_size, case_json, protocol_json, status, attempt"
            + (", latency_packed" if self._packs else "")
            + ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?"
            + (",1)" if self._packs else ")"),
            [
                (
                    run_id,
                    t["case_key"],
                    t["block"],
                    t["position"],
                    t["case"]["framework"],
                    t["case"]["variant"],
                    t["case"]["model"],
                    t["case"]["dataset"],
                    t["case"]["batch_size"],
                    json.dumps(t["case"], sort_keys=True),
                    json.dumps(t["protocol"], sort_keys=True),
                    "pending",
                    1,
                )
                for t in trials
            ],
        )

    def add_trials(self, run_id: int, trials: Sequence[dict[str, Any]]) -> None:
        """Planned trials (status pending), all or none: an adaptive or extended block
        is never left half inserted."""
        with self.db:
            self._insert_trials(run_id, trials)

    def add_trial(
        self, run_id: int, *, case_key: str, block: int, position: int, case: dict[str, Any], protocol: dict[str, Any]
    ) -> int:
        with self.db:
            self._insert_trials(
                run_id,
                [{"case_key": case_key, "block": block, "position": position, "case": case, "protocol": protocol}],
            )
            return int(self.db.execute(self._sql.last_id).fetchone()[0])

    def start_trial(self, trial_id: int) -> None:
        with self.db:
            self.db.execute(
                "UPDATE trials SET status='running', started_at=?, error=NULL WHERE id=?", (now(), trial_id)
            )

    def retire_unfinished(self, run_id: int) -> int:
        """Before a resume: every trial of the run that started but never finished
        (status running or interrupted) and stored anything is kept as it is, marked
        retired with status interrupted, and its case and block are planned again as
        the next attempt; one that stored nothing is simply planned again. Nothing is
        deleted. Returns the number of attempts retired."""
        unfinished = self.db.execute(
            "SELECT t.*, (SELECT COUNT(*) FROM measurements m WHERE m.trial_id = t.id)"
            " + (SELECT COUNT(*) FROM markers k WHERE k.trial_id = t.id)"
            " + (SELECT COUNT(*) FROM series s WHERE s.trial_id = t.id) AS stored"
            " FROM trials t WHERE t.run_id=? AND t.retired=0 AND t.status IN ('running', 'interrupted')",
            (run_id,),
        ).fetchall()
        retired = 0
        with self.db:
            for t in unfinished:
                if not t["stored"]:
                    self.db.execute(
                        "UPDATE trials SET status='pending', started_at=NULL, manifest_json=NULL,"
                        " telemetry_notes=NULL WHERE id=?",
                        (t["id"],),
                    )
                    continue
                repeats = self.db.execute(
                    "SELECT COUNT(DISTINCT repeat) FROM measurements WHERE trial_id=? AND repeat IS NOT NULL",
                    (t["id"],),
                ).fetchone()[0]
                self.db.execute(
                    "UPDATE trials SET status='interrupted', retired=1, finished_at=coalesce(finished_at, ?),"
                    " error=? WHERE id=?",
                    (
                        now(),
                        f"interrupted after storing {repeats} repeat(s); kept as attempt {t['attempt']}, "
                        f"the trial ran again as attempt {t['attempt'] + 1}",
                        t["id"],
                    ),
                )
                self._next_attempt(t["id"])
                retired += 1
        return retired

    def _next_attempt(self, trial_id: int) -> None:
        """Plan a trial's case and block again, as a pending trial of the next attempt."""
        self.db.execute(
            "INSERT INTO trials (run_id, case_key, block, position, framework, variant, model, dataset,"
            " batch_size, case_json, protocol_json, status, attempt"
            + (", latency_packed" if self._packs else "")
            + ") SELECT run_id, case_key, block, position, framework, variant, model, dataset, batch_size,"
            " case_json, protocol_json, 'pending', attempt + 1"
            + (", 1" if self._packs else "")
            + " FROM trials WHERE id=?",
            (trial_id,),
        )

    def retire_blocks(self, run_id: int, blocks: Iterable[int], why: str) -> int:
        """Plan whole blocks again: every finished trial of the run in `blocks` is kept as it
        is, marked retired (its values leave every analysis, which reads retired=0), with
        `why` in its error column, and its case and block are planned again as the next
        attempt. A whole block, not one trial: the members of a block are paired because
        they ran at the same time, so re-measuring one member alone would pair two moments.
        Returns the number of trials retired."""
        wanted = sorted(set(blocks))
        if not wanted:
            return 0
        marks = ", ".join("?" * len(wanted))
        finished = self.db.execute(
            f"SELECT id, attempt FROM trials WHERE run_id=? AND retired=0 AND block IN ({marks})"
            " AND status NOT IN ('pending', 'running')",
            (run_id, *wanted),
        ).fetchall()
        with self.db:
            for t in finished:
                self.db.execute(
                    "UPDATE trials SET retired=1, error=? WHERE id=?",
                    (f"{why}; kept as attempt {t['attempt']}, its block ran again as attempt {t['attempt'] + 1}",
                     t["id"]),
                )  # fmt: skip
                self._next_attempt(t["id"])
        return len(finished)

    def set_manifest(self, trial_id: int, manifest: dict[str, Any]) -> None:
        with self.db:
            self.db.execute(
                "UPDATE trials SET manifest_json=? WHERE id=?",
                (json.dumps(manifest, sort_keys=True, default=str), trial_id),
            )

    def finish_trial(
        self, trial_id: int, *, status: str, error: str | None, returncode: int | None, wall_s: float, stderr: str
    ) -> None:
        if status not in STATUSES:
            raise ValueError(f"status {status!r} not in {STATUSES}")
        with self.db:
            self.db.execute(
                "UPDATE trials SET status=?, error=?, returncode=?, finished_at=?, wall_s=?, stderr=? WHERE id=?",
                (status, error, returncode, now(), wall_s, stderr, trial_id),
            )

    def set_placement(self, trial_id: int, placement: dict[str, Any]) -> None:
        """Where the trial's worker runs (or ran): merged into what is stored already,
        since an executor learns the host at submission and the machine at the end."""
        with self.db:
            row = self.db.execute("SELECT placement_json FROM trials WHERE id=?", (trial_id,)).fetchone()
            merged = json.loads(row[0]) if row and row[0] else {}
            merged.update(placement)
            self.db.execute(
                "UPDATE trials SET placement_json=? WHERE id=?",
                (json.dumps(merged, sort_keys=True, default=str), trial_id),
            )

    def mark_interrupted(self, run_id: int) -> None:
        with self.db:
            self.db.execute("UPDATE trials SET status='interrupted' WHERE run_id=? AND status='running'", (run_id,))

    def trials(self, run_id: int, statuses: Sequence[str] | None = None, retired: bool = False) -> list[TrialRecord]:
        """The run's trials, one per case and block: the current attempt of each.
        retired=True adds the interrupted attempts that a resume kept."""
        sql = "SELECT * FROM trials WHERE run_id=?" + ("" if retired else " AND retired=0")
        args: list[Any] = [run_id]
        if statuses:
            sql += f" AND status IN ({','.join('?' * len(statuses))})"
            args.extend(statuses)
        rows = self.db.execute(sql + " ORDER BY block, position, attempt", args).fetchall()
        return [records.trial_record(r, str(self.path)) for r in rows]

    def ok_trials_of(self, case_keys: Iterable[str]) -> list[TrialRecord]:
        """The current ok trials of these cases, in every run (in batches of keys: SQLite
        allows a bounded number of parameters)."""
        keys = sorted(set(case_keys))
        found: list[TrialRecord] = []
        for start in range(0, len(keys), 500):
            part = keys[start : start + 500]
            rows = self.db.execute(
                f"SELECT * FROM trials WHERE retired=0 AND status='ok' AND case_key IN ({','.join('?' * len(part))})"
                " ORDER BY id",
                part,
            ).fetchall()
            found.extend(records.trial_record(r, str(self.path)) for r in rows)
        return found

    # -- measurements -----------------------------------------------------
    def add_measurements(self, trial_id: int, rows: Iterable[Measurement]) -> int:
        """The rows, and their per-call latency times packed (dlbench.store.latency_packs), in
        one transaction. The triggers clear the trial's latency_packed flag as its latency
        rows go in; it is set again only if it was set before: then the packs, this write's
        included, still hold every time of the trial's rows."""
        rows = list(rows)
        values = [
            (trial_id, m.repeat, int(m.warmup), m.phase, m.metric, m.value, m.unit, m.seq, m.method, m.flag)
            for m in rows
        ]
        latency = self._packs and any(latency_packs.is_latency_phase(m.phase) for m in rows)
        with self.db:
            complete = False
            if latency:
                flag = self.db.execute("SELECT latency_packed FROM trials WHERE id=?", (trial_id,)).fetchone()
                complete = flag is not None and flag[0] == 1
            self.db.executemany(
                "INSERT INTO measurements (trial_id, repeat, warmup, phase, metric, value, unit, seq, method, flag)"
                " VALUES (?,?,?,?,?,?,?,?,?,?)",
                values,
            )
            if latency:
                self.db.executemany(
                    "INSERT INTO latency_packs (trial_id, phase, n, times) VALUES (?,?,?,?)",
                    [(trial_id, *p) for p in latency_packs.pack(rows)],
                )
                if complete:
                    self.db.execute("UPDATE trials SET latency_packed=1 WHERE id=?", (trial_id,))
        return len(values)

    def add_telemetry(
        self,
        trial_id: int,
        series: Iterable[Any],
        markers: Iterable[dict[str, Any]],
        rows: Iterable[Measurement],
        notes: dict[str, list[str]],
    ) -> None:
        """Raw series (t in monotonic seconds), phase markers, per-phase rows and
        sampler notes of one trial, in one transaction."""
        with self.db:
            for s in series:
                self.db.executemany(
                    "INSERT INTO series (trial_id, name, t, value, unit, kind, method) VALUES (?,?,?,?,?,?,?)",
                    [(trial_id, s.name, t / 1e9, v, s.unit, s.kind, s.method) for t, v in s.points],
                )
            self.db.executemany(
                "INSERT INTO markers (trial_id, phase, repeat, edge, t) VALUES (?,?,?,?,?)",
                [(trial_id, m["phase"], m["repeat"], m["edge"], m["t"] / 1e9) for m in markers],
            )
            self.db.execute("UPDATE trials SET telemetry_notes=? WHERE id=?", (json.dumps(notes), trial_id))
        self.add_measurements(trial_id, rows)

    def _insert_samplers(self, run_id: int, table: Iterable[Any]) -> None:
        self.db.executemany(
            "INSERT INTO samplers (run_id, name, available, reason, hint, interval_s) VALUES (?,?,?,?,?,?)",
            [(run_id, a.name, int(a.available), a.reason, a.hint, a.interval_s) for a in table],
        )

    def samplers(self, run_id: int) -> list[SamplerRecord]:
        rows = self.db.execute("SELECT * FROM samplers WHERE run_id=? ORDER BY id", (run_id,)).fetchall()
        return [records.sampler_record(r) for r in rows]

    def set_idle(self, run_id: int, idle: dict[str, Any]) -> None:
        with self.db:
            self.db.execute("UPDATE runs SET idle_json=? WHERE id=?", (json.dumps(idle), run_id))

    def series(self, trial_id: int) -> list[SeriesPoint]:
        rows = self._tuples(
            "SELECT id, trial_id, name, t, value, unit, kind, method FROM series WHERE trial_id=? ORDER BY id",
            (trial_id,),
        )
        return self._records(SeriesPoint, rows)

    def _tuples(self, sql: str, args: Sequence[Any]) -> list[Any]:
        """The rows of a big read as plain tuples: neither sqlite3.Row nor, on PostgreSQL, the
        Row of dlbench.store.postgres is built for each (PostgreSQL: through _chunks'
        server-side cursor, which hands out tuples)."""
        if isinstance(self.db, sqlite3.Connection):
            cursor = self.db.cursor()
            cursor.row_factory = None
            return cursor.execute(sql, args).fetchall()
        return [row for rows in self._chunks(sql, args) for row in rows]

    @staticmethod
    def _records(kind: type[_Record], rows: list[Any]) -> list[_Record]:
        new = tuple.__new__
        return records.Records(new(kind, r) for r in rows)

    def measurements(self, run_id: int, latency: bool = True, retired: bool = False) -> list[MeasurementRecord]:
        """Every measurement of a run in execution order, each with the few trial columns
        the analyses group by and the case's main factors. The whole case is in
        trials(): copying its JSON into each of 100,000 rows took a quarter of the read.
        latency=False leaves out the per-call latency rows (phases latency_b<B>), which
        are most of a run's rows and which no figure draws. retired=True adds the values
        of the attempts a resume retired (their rows say retired 1)."""
        from itertools import groupby
        from operator import itemgetter

        keep = "" if retired else " AND retired=0"
        trials = self._tuples(
            "SELECT id, case_key, block, framework, variant, model, dataset, batch_size, status, attempt, retired"
            f" FROM trials WHERE run_id=?{keep} ORDER BY block, position, attempt, id",
            (run_id,),
        )
        parts = {t[0]: (t[:9], t[9:]) for t in trials}
        # Each record is built here from its trial's columns and its row's, rather than by a
        # JOIN: the trial's strings are then one object shared by its rows, and so are the
        # phase, metric and unit of every row (shared through `same`), where each row used to
        # bring its own copies: 790 bytes a record at 10^6 before, a third of that now. The
        # rows are read in batches, so that only one batch of them exists beside the records.
        same: dict[Any, Any] = {}
        text = same.setdefault
        new, kind = tuple.__new__, MeasurementRecord
        by_trial: dict[int, list[MeasurementRecord]] = {}
        for rows in self._chunks(
            f"SELECT m.trial_id, m.repeat, m.warmup, m.phase, m.metric, {VALUE}, m.unit, m.seq, m.method, m.flag, m.id"
            f" FROM measurements m WHERE m.trial_id IN (SELECT id FROM trials WHERE run_id=?{keep})"
            + ("" if latency else f" AND NOT {LATENCY_PHASE}")
            + " ORDER BY m.trial_id, m.id",
            (run_id,),
        ):
            for trial_id, group in groupby(rows, key=itemgetter(0)):
                if trial_id not in parts:  # a trial another client added meanwhile
                    continue
                head, tail = parts[trial_id]
                by_trial.setdefault(trial_id, []).extend(
                    new(
                        kind,
                        (
                            *head,
                            r[1],
                            r[2],
                            text(r[3], r[3]),
                            text(r[4], r[4]),
                            r[5],
                            text(r[6], r[6]),
                            *r[7:10],
                            *tail,
                            r[10],
                        ),
                    )
                    for r in group
                )
        out = records.Records()
        for t in trials:
            out.extend(by_trial.pop(t[0], ()))
        return out

    def latency_calls(self, run_id: int) -> list[LatencyCall]:
        """The per-call latency rows of a run (phases latency_b<B>), with only the columns
        latency percentiles need: a third of the time of reading them whole."""
        rows = self._tuples(
            f"SELECT t.case_key, t.status, m.warmup, m.phase, m.metric, {VALUE}"
            " FROM measurements m JOIN trials t ON t.id = m.trial_id"
            f" WHERE t.run_id=? AND t.retired=0 AND {LATENCY_PHASE}",
            (run_id,),
        )
        return self._records(LatencyCall, rows)

    # -- column-wise reads: one array per column, no record per row ---------------------
    # A 10^6-measurement run is mostly per-call latency rows; building a record (or a dict)
    # per row, then reading it back by column name, was most of a report's time. These
    # readers fetch only the columns asked for and hand back numpy arrays. Indexes they
    # use (EXPLAIN QUERY PLAN): trials_run (trials of a run), measurements_trial (the rows
    # of each trial); the order of the record reads is restored with numpy, not by SQL.

    def _chunks(self, sql: str, args: Sequence[Any], size: int = 200_000) -> Iterator[list[Any]]:
        """The rows of a big read as plain tuples, `size` at a time: a caller turns each
        batch into arrays, so that a run of 10^7 rows never exists as Python objects at once."""
        if isinstance(self.db, sqlite3.Connection):
            cursor = self.db.cursor()
            cursor.row_factory = None
            cursor.execute(sql, args)
            while rows := cursor.fetchmany(size):
                yield rows
            return
        from dlbench.store.postgres import Connection

        assert isinstance(self.db, Connection)
        yield from self.db.chunks(sql, args, size)

    def latency_samples(self, run_id: int) -> list[tuple[str, str, Any]]:
        """latency_samples_checked's values alone."""
        return self.latency_samples_checked(run_id)[0]

    def latency_samples_checked(self, run_id: int) -> tuple[list[tuple[str, str, Any]], LatencyCopy]:
        """The per-call latency values a percentile reads, pooled per case and latency
        phase: (case_key, phase, float64 array) for every case and phase latency_b<B> that
        has any, in the order they first appear (trials by id, each in its rows' order),
        from the run's current, ok trials, warm-ups and NULL values left out, metric time.
        The same values latency_calls() gives: a trial whose packs are complete
        (dlbench.store.latency_packs) and prove it (they hold as many times as its rows,
        with the same sum, phase by phase) is read from them, one blob per phase and write;
        any other from its rows, filtered in SQL and read in batches into arrays. With the
        values, what the check found (LatencyCopy): the trials whose copy was stale, and
        the triggers missing (then no pack is trusted). Memory: the packs' bytes and one
        copy of the values (no per-value index: 7.3 million values of a 10^7 run took
        0.7 GB more while they were sorted by case and phase)."""
        import heapq

        import numpy as np

        trials = self._tuples(
            "SELECT id, case_key, latency_packed FROM trials WHERE run_id=? AND retired=0 AND status='ok' ORDER BY id",
            (run_id,),
        )
        case_of = {t: c for t, c, _ in trials}
        # The flags as read here decide which trials come from packs and which from rows,
        # so that a flag another client clears meanwhile cannot bring a trial in twice.
        flagged = {t for t, _, flag in trials if flag == 1}
        from_packs = set() if self.missing_triggers else set(flagged)
        ok = "SELECT id FROM trials WHERE run_id=? AND retired=0 AND status='ok'"
        pieces: dict[int, list[tuple[str, Any]]] = {t: [] for t in from_packs}
        stale: set[int] = set()
        if from_packs:
            # SQLite lets another tool store TEXT in the blob column (which would not even
            # decode as UTF-8): read as NULL, a malformed pack.
            times = "CASE WHEN typeof(times) = 'blob' THEN times END" if self._sql is SQLITE else "times"
            for trial, phase, blob in self._tuples(
                f"SELECT trial_id, phase, {times} FROM latency_packs WHERE trial_id IN ({ok} AND latency_packed=1)"
                " ORDER BY trial_id, id",
                (run_id,),
            ):
                if trial in from_packs:
                    values = latency_packs.decode(blob)
                    pieces[trial].append((phase, None if values is None else _valid(values)))
            # What the rows hold, counted and summed in SQL (no Python object per row).
            counted = {
                (trial, phase): (int(n), float(total or 0.0))
                for trial, phase, n, total in self._tuples(
                    f"SELECT m.trial_id, m.phase, COUNT(*), SUM(m.value) FROM measurements m"
                    f" WHERE m.trial_id IN ({ok} AND latency_packed=1) AND m.warmup=0 AND m.metric='time'"
                    f" AND {VALID_VALUE.format(row='m')} AND {LATENCY_PHASE} GROUP BY m.trial_id, m.phase",
                    (run_id,),
                )
                if trial in from_packs
            }
            stale = latency_packs.stale_trials(pieces, counted)
            from_packs -= stale
        packed = ((trial, phase, values) for trial in sorted(from_packs) for phase, values in pieces[trial])
        args: tuple[int, ...] = (run_id,)
        if self.missing_triggers:
            where = ok  # every ok trial from its rows
        elif stale:
            marks = ",".join("?" * len(stale))
            where, args = f"{ok} AND (latency_packed<>1 OR id IN ({marks}))", (run_id, *sorted(stale))
        else:
            where = f"{ok} AND latency_packed<>1"
        unpacked = (
            piece
            for piece in (self._latency_rows(where, args) if len(from_packs) < len(trials) else ())
            if piece[0] in case_of and piece[0] not in from_packs
        )
        # Both in trial order: merged by trial, each trial's pieces keep their order.
        groups: dict[tuple[str, str], list[Any]] = {}
        for trial, phase, values in heapq.merge(packed, unpacked, key=lambda piece: piece[0]):
            groups.setdefault((case_of[trial], phase), []).append(values)
        check = LatencyCopy(tuple(sorted(stale & flagged)), tuple(sorted(self.missing_triggers)))
        return [(case, phase, np.concatenate(parts)) for (case, phase), parts in groups.items()], check

    def _latency_rows(self, trials: str, args: Sequence[Any]) -> Iterator[tuple[int, str, Any]]:
        """latency_samples' read from the rows, of the trials the query `trials` (with its
        `args`) selects: (trial, phase, values) for each run of consecutive rows of one
        trial and phase."""
        from operator import itemgetter

        import numpy as np

        # Each column is taken out of a batch's tuples by C-level map(): a Python expression
        # per row was half of this read at 10^6 rows.
        first, second, third = itemgetter(0), itemgetter(1), itemgetter(2)
        for rows in self._chunks(
            f"SELECT m.trial_id, m.phase, m.value FROM measurements m WHERE m.trial_id IN ({trials})"
            f" AND m.warmup=0 AND m.metric='time' AND {VALID_VALUE.format(row='m')} AND {LATENCY_PHASE}"
            " ORDER BY m.trial_id, m.id",
            args,
        ):
            n = len(rows)
            phases = list(dict.fromkeys(map(second, rows)))
            number = {p: i for i, p in enumerate(phases)}
            trial = np.fromiter(map(first, rows), np.int64, n)
            phase = np.fromiter(map(number.__getitem__, map(second, rows)), np.int64, n)
            value = np.fromiter(map(third, rows), np.float64, n)
            edges = np.flatnonzero((trial[1:] != trial[:-1]) | (phase[1:] != phase[:-1])) + 1
            for start, stop in zip(np.append(0, edges), np.append(edges, n), strict=True):
                yield int(trial[start]), phases[phase[start]], value[start:stop]

    def invalid_values(self, run_id: int) -> list[tuple[int, str, str, str]]:
        """(trial id, phase, metric, the value as text) of every stored value of the run's
        current trials that is no number a measurement can hold (VALID_VALUE): read as NULL
        everywhere, named here so that the report can say what it left out."""
        return [
            (int(t), str(p), str(m), str(v))
            for t, p, m, v in self._tuples(
                "SELECT m.trial_id, m.phase, m.metric, m.value FROM measurements m WHERE m.trial_id IN"
                f" (SELECT id FROM trials WHERE run_id=? AND retired=0) AND m.value IS NOT NULL"
                f" AND NOT ({VALID_VALUE.format(row='m')}) ORDER BY m.trial_id, m.id",
                (run_id,),
            )
        ]

    def measurement_parts(self, run_id: int, latency: bool = True, retired: bool = False) -> dict[str, Any]:
        """measurements() encoded, for a reader that builds its own columns: "trials", the
        run's trials (id, case_key, block, position, framework, variant, model, dataset,
        batch_size, status, attempt, retired) in execution order; "texts", the distinct
        (phase, metric, unit, method, flag) of its rows; and per row, in measurements()'s
        order, "trial" (an index into trials), "text" (an index into texts), "repeat" and
        "seq" (object: int or None), "warmup" and "id" (int64), "value" (float64, NULL: nan).
        Read in batches: the Python objects of one batch exist at a time."""
        import numpy as np

        keep = "" if retired else " AND retired=0"
        trials = self._tuples(
            "SELECT id, case_key, block, position, framework, variant, model, dataset, batch_size, status,"
            f" attempt, retired FROM trials WHERE run_id=?{keep} ORDER BY block, position, attempt, id",
            (run_id,),
        )
        # A row's trial as its place in execution order, found by numpy in the sorted ids.
        ids = np.array([t[0] for t in trials], dtype=np.int64)
        by_id = np.argsort(ids)
        # (phase, metric, unit, method, flag) -> its number: the distinct ones first (one scan
        # in the database), then each row's number computed there (CASE): a row then brings
        # one small int instead of five strings, 0.3 s less of Python per 10^6 rows.
        rows_of_run = f"FROM measurements m WHERE m.trial_id IN (SELECT id FROM trials WHERE run_id=?{keep})" + (
            "" if latency else f" AND NOT {LATENCY_PHASE}"
        )
        texts = ("m.phase", "m.metric", "m.unit", "m.method", "m.flag")
        kinds = [tuple(k) for k in self._tuples(f"SELECT DISTINCT {', '.join(texts)} {rows_of_run}", (run_id,))]
        # A CASE tries its WHENs in turn: with many kinds (a run of many metrics) the rows
        # bring their strings, numbered here as before; so does a second read when a kind
        # appeared between the two statements (a run still writing: ELSE -1).
        same = " AND ".join(f"{c} IS NOT DISTINCT FROM ?" for c in texts)
        code = f"CASE {' '.join(f'WHEN {same} THEN {i}' for i in range(len(kinds)))} ELSE -1 END" if kinds else "-1"
        for in_sql in (True, False) if len(kinds) <= CASE_KINDS else (False,):
            number = {k: i for i, k in enumerate(kinds)}
            parts: dict[str, list[Any]] = {c: [] for c in ("trial", "repeat", "warmup", "text", "value", "seq", "id")}
            for rows in self._chunks(
                f"SELECT m.trial_id, m.repeat, m.warmup, {VALUE}, m.seq, m.id, {code if in_sql else ', '.join(texts)} "
                + rows_of_run,
                (*(v for k in kinds for v in k), run_id) if in_sql else (run_id,),
            ):
                n = len(rows)
                table = np.empty((n, 7), dtype=object)
                table[:] = rows if in_sql else [(*r[:6], number.setdefault(r[6:], len(number))) for r in rows]
                trial_id = table[:, 0].astype(np.int64)
                parts["trial"].append(by_id[np.searchsorted(ids, trial_id, sorter=by_id)])
                parts["repeat"].append(table[:, 1])
                parts["warmup"].append(table[:, 2].astype(np.int64))
                value = table[:, 3]
                parts["value"].append(np.where(value == None, np.nan, value).astype(np.float64))  # noqa: E711
                parts["seq"].append(table[:, 4])
                parts["id"].append(table[:, 5].astype(np.int64))
                parts["text"].append(table[:, 6].astype(np.int64))
            if not (in_sql and any((t < 0).any() for t in parts["text"])):
                break
        empty = {"repeat": object, "seq": object, "value": np.float64}
        col = {c: np.concatenate(v) if v else np.empty(0, dtype=empty.get(c, np.int64)) for c, v in parts.items()}
        # Execution order: by trial, then by id (the order records are read in).
        order = np.lexsort((col["id"], col["trial"]))
        out: dict[str, Any] = {c: v[order] for c, v in col.items()}
        out["trials"] = trials
        out["texts"] = list(number)
        return out

    def measurement_columns(self, run_id: int, latency: bool = True, retired: bool = False) -> dict[str, Any]:
        """The rows of measurements() as columns: a numpy array per field of
        MeasurementRecord, in the same order (block, position, attempt, id). value is
        float64 (NULL: nan); trial_id, block, batch_size, warmup, attempt, retired and id
        int64; repeat and seq object arrays (int or None); the text columns object arrays
        of str (method and flag: or None)."""
        import numpy as np

        parts = self.measurement_parts(run_id, latency=latency, retired=retired)
        trials, texts, rank, kind = parts["trials"], parts["texts"] or [(None,) * 5], parts["trial"], parts["text"]

        def spread(values: list[Any], dtype: Any, at: Any) -> Any:
            column = np.empty(len(values), dtype=dtype)
            column[:] = values
            return column[at]

        def trial_column(i: int, dtype: Any = object) -> Any:
            return spread([t[i] for t in trials], dtype, rank)

        def text_column(i: int) -> Any:
            return spread([k[i] for k in texts], object, kind)

        return {
            "trial_id": trial_column(0, np.int64),
            "case_key": trial_column(1),
            "block": trial_column(2, np.int64),
            "framework": trial_column(4),
            "variant": trial_column(5),
            "model": trial_column(6),
            "dataset": trial_column(7),
            "batch_size": trial_column(8, np.int64),
            "status": trial_column(9),
            "repeat": parts["repeat"],
            "warmup": parts["warmup"],
            "phase": text_column(0),
            "metric": text_column(1),
            "value": parts["value"],
            "unit": text_column(2),
            "seq": parts["seq"],
            "method": text_column(3),
            "flag": text_column(4),
            "attempt": trial_column(10, np.int64),
            "retired": trial_column(11, np.int64),
            "id": parts["id"],
        }

    # -- named baselines (migration 7) --------------------------------------------
    _BASELINES = (
        "SELECT b.name, b.run_id, b.saved_at, b.saved_by, b.command, b.note, r.name AS run_name,"
        " r.started_at AS run_started_at,"
        " (SELECT COUNT(DISTINCT t.case_key) FROM trials t WHERE t.run_id = b.run_id AND t.retired = 0) AS n_cases"
        " FROM baselines b JOIN runs r ON r.id = b.run_id"
    )

    def save_baseline(
        self, name: str, run_id: int, *, saved_by: str | None, command: str | None, note: str | None = None,
        replace: bool = False,
    ) -> tuple[records.BaselineRecord, records.BaselineRecord | None]:  # fmt: skip
        """Name run `run_id` a baseline: (the saved baseline, the one it replaced or None).
        A name that exists is pointed at the run only with replace=True; else BaselineExists,
        and nothing changes. Read and write happen in one IMMEDIATE transaction (the row
        locked on PostgreSQL), so two processes saving one name cannot both read it as
        free. A PostgreSQL URL's password in `command` is stored masked."""
        from dlbench.store.postgres import mask_urls

        self.run(run_id)  # no such run: one StoreError naming the runs there are
        self.db.commit()
        self.db.execute(self._sql.begin_immediate)
        try:
            locked = self.db.execute("SELECT id FROM baselines WHERE name=?" + self._sql.lock_row, (name,)).fetchone()
            previous = self.baseline(name) if locked is not None else None
            if previous is not None and not replace:
                raise BaselineExists(previous)
            values = (run_id, now(), saved_by, mask_urls(command) if command else command, note, name)
            if previous is None:
                self.db.execute(
                    "INSERT INTO baselines (run_id, saved_at, saved_by, command, note, name) VALUES (?,?,?,?,?,?)",
                    values,
                )
            else:
                self.db.execute(
                    "UPDATE baselines SET run_id=?, saved_at=?, saved_by=?, command=?, note=? WHERE name=?", values
                )
            self.db.commit()
        except sqlite3.IntegrityError:
            # PostgreSQL: another process inserted the name between our read and our write.
            self.db.rollback()
            raise StoreError(
                f"{self.path}: baseline {name!r} was saved meanwhile by another process; try again"
            ) from None
        except BaseException:
            self.db.rollback()
            raise
        saved = self.baseline(name)
        assert saved is not None  # saved in the transaction above
        return saved, previous

    def baselines(self) -> list[records.BaselineRecord]:
        """Every named baseline, by name, with its run's name, start and number of cases."""
        rows = self.db.execute(self._BASELINES + " ORDER BY b.name").fetchall()
        return [records.baseline_record(r) for r in rows]

    def baseline(self, name: str) -> records.BaselineRecord | None:
        """The baseline of that name, None when there is none."""
        row = self.db.execute(self._BASELINES + " WHERE b.name=?", (name,)).fetchone()
        return records.baseline_record(row) if row is not None else None

    def delete_baseline(self, name: str) -> records.BaselineRecord | None:
        """Forget the name (its run stays as it is): the baseline deleted, None when there was none."""
        found = self.baseline(name)
        if found is not None:
            with self.db:
                self.db.execute("DELETE FROM baselines WHERE name=?", (name,))
        return found


class BaselineExists(StoreError):
    """save_baseline without replace, of a name that exists: `existing` says which run it names."""

    def __init__(self, existing: records.BaselineRecord) -> None:
        super().__init__(f"baseline {existing.name!r} exists (run {existing.run_id}, saved {existing.saved_at})")
        self.existing = existing


def _valid(values: Any) -> Any:
    """A latency pack's values without those no measurement can hold (VALID_VALUE)."""
    import numpy as np

    keep = np.isfinite(values) & (np.abs(values) <= 1e300)
    return values if keep.all() else values[keep]
