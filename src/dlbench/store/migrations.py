"""The schema's history: the ordered MIGRATIONS, and the data steps some of them need.

Schema versions live in SQLite's `PRAGMA user_version` (PostgreSQL: the one-row table
dlbench_schema) and are upgraded by MIGRATIONS in order (sqlite-utils' approach). Each
migration is SQLite's SQL; PostgreSQL runs the same list, translated mechanically
(dlbench.store.postgres), so both have the same schema at every version. A migration
that must also move data names a data step (DATA_STEPS, keyed by the migration's text),
which runs right after its SQL, in the same transaction, on either database. The schema
only ever gains: an old database opens and is upgraded; nothing is dropped but a table
that a migration rebuilt.
"""

from __future__ import annotations

import functools
import re
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

from dlbench.store.base import StoreError, sqlite_tables, statements
from dlbench.store.latency_packs import pack_existing
from dlbench.store.records import explain_of_description

MIGRATIONS: list[str] = [
    # 1: the initial schema
    """
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        status TEXT NOT NULL,
        started_at TEXT NOT NULL,
        finished_at TEXT,
        command TEXT,
        config_source TEXT,
        config_text TEXT,
        experiment_json TEXT,
        environment_json TEXT,
        dlbench_version TEXT
    );
    CREATE TABLE trials (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id),
        case_key TEXT NOT NULL,
        block INTEGER NOT NULL,
        position INTEGER NOT NULL,
        framework TEXT NOT NULL,
        variant TEXT NOT NULL,
        model TEXT NOT NULL,
        dataset TEXT NOT NULL,
        batch_size INTEGER NOT NULL,
        case_json TEXT NOT NULL,
        protocol_json TEXT NOT NULL,
        manifest_json TEXT,
        status TEXT NOT NULL,
        error TEXT,
        returncode INTEGER,
        started_at TEXT,
        finished_at TEXT,
        wall_s REAL,
        stderr TEXT,
        UNIQUE (run_id, case_key, block)
    );
    CREATE TABLE measurements (
        id INTEGER PRIMARY KEY,
        trial_id INTEGER NOT NULL REFERENCES trials(id),
        repeat INTEGER,
        warmup INTEGER NOT NULL DEFAULT 0,
        phase TEXT NOT NULL,
        metric TEXT NOT NULL,
        value REAL,
        unit TEXT NOT NULL,
        seq INTEGER
    );
    CREATE INDEX measurements_trial ON measurements(trial_id);
    CREATE TABLE series (
        id INTEGER PRIMARY KEY,
        trial_id INTEGER NOT NULL REFERENCES trials(id),
        name TEXT NOT NULL,
        t REAL NOT NULL,
        value REAL,
        unit TEXT NOT NULL
    );
    CREATE INDEX series_trial ON series(trial_id);
    CREATE TABLE skipped (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id),
        cell_json TEXT NOT NULL,
        reason TEXT NOT NULL
    );
    """,
    # 2: telemetry — how each value was obtained and whether it is reliable,
    # the worker's phase markers (to slice raw series later), the sampler
    # availability table of each run, the idle baseline, per-trial notes.
    """
    ALTER TABLE measurements ADD COLUMN method TEXT;
    ALTER TABLE measurements ADD COLUMN flag TEXT;
    ALTER TABLE series ADD COLUMN kind TEXT;
    ALTER TABLE series ADD COLUMN method TEXT;
    CREATE TABLE markers (
        id INTEGER PRIMARY KEY,
        trial_id INTEGER NOT NULL REFERENCES trials(id),
        phase TEXT NOT NULL,
        repeat INTEGER,
        edge TEXT NOT NULL,
        t REAL NOT NULL
    );
    CREATE INDEX markers_trial ON markers(trial_id);
    CREATE TABLE samplers (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id),
        name TEXT NOT NULL,
        available INTEGER NOT NULL,
        reason TEXT,
        hint TEXT,
        interval_s REAL
    );
    ALTER TABLE runs ADD COLUMN idle_json TEXT;
    ALTER TABLE trials ADD COLUMN telemetry_notes TEXT;
    """,
    # 3: why an adaptive run stopped adding blocks.
    """
    ALTER TABLE runs ADD COLUMN stop_reason TEXT;
    """,
    # 4: trial attempts and the run's owner. A trial interrupted after it stored
    # values is kept (retired = 1, status interrupted) and its case and block run
    # again as attempt + 1: a trial is one process, so the repeats of two processes
    # never mix, and no committed value is deleted. The UNIQUE constraint gains the
    # attempt, which SQLite can only do by rebuilding the table (foreign keys are
    # off during migrations, see Store._migrate). owner_json: the process that
    # executes the run now (dlbench.runlock), so that two resumes cannot both run it.
    """
    CREATE TABLE trials_v4 (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id),
        case_key TEXT NOT NULL,
        block INTEGER NOT NULL,
        position INTEGER NOT NULL,
        framework TEXT NOT NULL,
        variant TEXT NOT NULL,
        model TEXT NOT NULL,
        dataset TEXT NOT NULL,
        batch_size INTEGER NOT NULL,
        case_json TEXT NOT NULL,
        protocol_json TEXT NOT NULL,
        manifest_json TEXT,
        status TEXT NOT NULL,
        error TEXT,
        returncode INTEGER,
        started_at TEXT,
        finished_at TEXT,
        wall_s REAL,
        stderr TEXT,
        telemetry_notes TEXT,
        attempt INTEGER NOT NULL DEFAULT 1,
        retired INTEGER NOT NULL DEFAULT 0,
        UNIQUE (run_id, case_key, block, attempt)
    );
    INSERT INTO trials_v4 (id, run_id, case_key, block, position, framework, variant, model, dataset,
        batch_size, case_json, protocol_json, manifest_json, status, error, returncode, started_at,
        finished_at, wall_s, stderr, telemetry_notes)
        SELECT id, run_id, case_key, block, position, framework, variant, model, dataset, batch_size,
        case_json, protocol_json, manifest_json, status, error, returncode, started_at, finished_at,
        wall_s, stderr, telemetry_notes FROM trials;
    DROP TABLE trials;
    ALTER TABLE trials_v4 RENAME TO trials;
    CREATE INDEX trials_run ON trials(run_id, retired);
    ALTER TABLE runs ADD COLUMN owner_json TEXT;
    """,
    # 5: where each trial ran (dlbench.executors): the executor, the host, the engine's
    # own id for it (Ray node and task, Slurm job) and the node's machine fingerprint,
    # so that a comparison never pools different hardware without saying so.
    """
    ALTER TABLE trials ADD COLUMN placement_json TEXT;
    """,
    # 6: an explain run's pairs in a column of their own. Before, `dlbench explain` kept
    # them as JSON inside the experiment's free-text description; the data step below
    # copies them from there (the description stays as it was, still readable).
    """
    ALTER TABLE runs ADD COLUMN explain_json TEXT;
    """,
    # 7: named baselines (dlbench baseline save NAME --run ID): a name a CI gate compares
    # against (`dlbench compare --baseline NAME RUN`), kept beside the runs so that it
    # travels with the database; who saved it, with which command, and an optional note.
    # A name is one row: saving it again with --replace points it at another run.
    """
    CREATE TABLE baselines (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        run_id INTEGER NOT NULL REFERENCES runs(id),
        saved_at TEXT NOT NULL,
        saved_by TEXT,
        command TEXT,
        note TEXT
    );
    """,
    # 8: the per-call latency times packed, one float64 blob per trial, phase and write
    # (dlbench.store.latency_packs): a percentile over 10^6 of them reads a few thousand
    # blobs instead of 10^6 rows. The rows stay; trials.latency_packed says whether a
    # trial's packs hold all its rows' times (triggers, installed by the data step, clear it
    # when another tool inserts, changes or deletes a latency row).
    """
    CREATE TABLE latency_packs (
        id INTEGER PRIMARY KEY,
        trial_id INTEGER NOT NULL REFERENCES trials(id),
        phase TEXT NOT NULL,
        n INTEGER NOT NULL,
        times BLOB NOT NULL
    );
    CREATE INDEX latency_packs_trial ON latency_packs(trial_id);
    ALTER TABLE trials ADD COLUMN latency_packed INTEGER NOT NULL DEFAULT 0;
    """,
]


def _move_explain_pairs(db: Any) -> None:
    """Migration 6's data: the pairs an older `dlbench explain` kept in its experiment's
    description, copied into runs.explain_json. A description that holds no pairs (any
    run but an explain run, or text a user wrote) is left as it is."""
    rows = db.execute("SELECT id, experiment_json FROM runs WHERE explain_json IS NULL").fetchall()
    moved = [(text, row_id) for row_id, text in ((r[0], explain_of_description(r[1])) for r in rows) if text]
    if moved:
        db.executemany("UPDATE runs SET explain_json=? WHERE id=?", moved)


# A data step runs right after its migration's SQL (keyed by that SQL, wherever the
# migration sits in a list: tests build lists of their own).
DATA_STEPS: dict[str, Callable[[Any], None]] = {MIGRATIONS[5]: _move_explain_pairs, MIGRATIONS[7]: pack_existing}


def data_step(script: str) -> Callable[[Any], None] | None:
    return DATA_STEPS.get(script)


@functools.lru_cache(maxsize=16)
def schema_of(migrations: tuple[str, ...]) -> dict[str, frozenset[str]]:
    """The tables and columns a database has after these migrations."""
    db = sqlite3.connect(":memory:")
    try:
        for script in migrations:
            for statement in statements(script):
                db.execute(statement)
        return {t: frozenset(cols) for t, cols in sqlite_tables(db).items()}
    finally:
        db.close()


def apply_sqlite(db: sqlite3.Connection, migrations: Sequence[str], version: int) -> None:
    """The migrations after `version`, each with its data step, and user_version after each,
    inside the caller's transaction."""
    for number, script in enumerate(migrations[version:], start=version + 1):
        for statement in statements(script):
            if not _done_already(db, statement):
                db.execute(statement)
        step = data_step(script)
        if step is not None:
            step(db)
        db.execute(f"PRAGMA user_version = {number}")


# What a statement creates, where a file another tool touched may have it already (a
# version-7 file that already holds latency_packs): such a statement is skipped, so that a
# migration is idempotent, provided what is there has the columns dlbench would create.
_CREATE_TABLE = re.compile(r"\s*CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)", re.IGNORECASE)
_CREATE_INDEX = re.compile(r"\s*CREATE\s+(?:UNIQUE\s+)?INDEX\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)", re.IGNORECASE)
_ADD_COLUMN = re.compile(r"\s*ALTER\s+TABLE\s+(\w+)\s+ADD\s+COLUMN\s+(\w+)", re.IGNORECASE)


def _done_already(db: sqlite3.Connection, statement: str) -> bool:
    """Whether the table, index or column `statement` creates is in the file already. A table
    there without every column the statement gives it is refused: dlbench would then write
    rows that do not fit."""
    if match := _CREATE_TABLE.match(statement):
        name = match.group(1)
        if not _exists(db, "table", name):
            return False
        scratch = sqlite3.connect(":memory:")
        try:
            scratch.execute(statement)
            wanted = set(sqlite_tables(scratch)[name])
        finally:
            scratch.close()
        have = sqlite_tables(db).get(name, set())
        if not wanted <= have:
            raise StoreError(
                f"the database already holds a table {name} that dlbench's schema creates here, without its "
                f"column(s) {', '.join(sorted(wanted - have))} (another tool made it); nothing was changed"
            )
        return True
    if match := _CREATE_INDEX.match(statement):
        return _exists(db, "index", match.group(1))
    if match := _ADD_COLUMN.match(statement):
        table, column = match.groups()
        return column in sqlite_tables(db).get(table, set())
    return False


def _exists(db: sqlite3.Connection, kind: str, name: str) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE type=? AND name=?", (kind, name)).fetchone() is not None
