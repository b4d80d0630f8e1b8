"""The per-call latency times packed: one float64 blob per trial, phase and write.

A run at paper scale is mostly per-call latency rows (phases latency_b<B>, one row per
timed call: 729,000 of a 10^6-measurement run), and a latency percentile needs only their
times. Reading them as rows made three Python objects per value (half a second at 10^6).
So each write of a trial's rows (Store.add_measurements) also stores, in the same
transaction, the times a percentile reads (warm-ups, NULL values and metrics other than
time left out) as little-endian float64, one blob per phase of that write, in the table
latency_packs; a reader turns a blob into an array without a Python object per value.

The rows stay the record: every value is still a row of measurements, for SQL and for
every other reader. The packs are a copy, and a copy can go stale when someone edits the
rows with another tool. trials.latency_packed says whether a trial's packs are complete:
dlbench sets it when it creates a trial (no rows yet) and keeps it across its own writes;
database triggers clear it whenever a latency row is inserted, changed or deleted by
anyone, and a reader takes the rows, not the packs, of every trial whose flag is clear.
A trial written by another tool (its flag defaults to 0) is read from its rows too.

The flag trusts the triggers, and another tool can drop them, or edit the packs
themselves. So the copy proves itself before it is used: every read of a run's packs
(Store.latency_samples) counts and sums, in SQL, the times its rows hold per trial and
phase, and takes a trial's packs only where they hold as many times with the same sum
(stale_trials below); a malformed blob (not a whole number of float64, not a blob) fails
the same way. A trial that fails is read from its rows, and the report says its copy was
stale and how to rebuild it (Store.repack, `dlbench repack`). The store checks its
triggers when it opens the file: a reader that finds one missing reads every trial from
its rows; a writer restores them and packs every trial again.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

# The per-call latency phases (latency_b<B>): in Python (the phases dlbench writes are lower
# case) and in SQL, of a table's row named `row` ("_" escaped, or LIKE would take it for any
# character). dlbench.store.core filters with the same SQL.
PHASE_PREFIX = "latency_b"
PHASE_SQL = r"{row}.phase LIKE 'latency\_b%' ESCAPE '\'"
DTYPE = "<f8"  # the blob's bytes: little-endian float64, whatever the machine that reads them


@dataclass(frozen=True)
class LatencyCopy:
    """What a read of a run's packs found (Store.latency_samples_checked)."""

    stale: tuple[int, ...] = ()  # trials whose packs did not hold their rows' times: read from the rows
    missing_triggers: tuple[str, ...] = ()  # the file lacked these: no pack trusted, every trial from its rows

    @property
    def trusted(self) -> bool:
        return not self.stale and not self.missing_triggers


def is_latency_phase(phase: str) -> bool:
    return phase.startswith(PHASE_PREFIX)


def pack(rows: Iterable[Any]) -> list[tuple[str, int, bytes]]:
    """(phase, n, blob) for each latency phase of rows (objects with phase, metric, warmup
    and value), in the order the phases first appear, with the times a percentile reads:
    metric time, not a warm-up, value not NULL, in the rows' order."""
    import numpy as np

    times: dict[str, list[float]] = {}
    for m in rows:
        if m.metric == "time" and not m.warmup and m.value is not None and is_latency_phase(m.phase):
            times.setdefault(m.phase, []).append(m.value)
    return [(phase, len(v), np.asarray(v, dtype=DTYPE).tobytes()) for phase, v in times.items()]


def unpack(blob: bytes | memoryview) -> Any:
    """The float64 array a pack holds (read-only: it shares the blob's memory)."""
    import numpy as np

    return np.frombuffer(blob, dtype=DTYPE)


def decode(blob: Any) -> Any:
    """unpack(blob), or None for what no pack dlbench writes can be: not bytes (a TEXT
    value another tool stored), or a length that is no whole number of float64."""
    if not isinstance(blob, bytes | memoryview) or len(blob) % 8:
        return None
    return unpack(blob)


def stale_trials(packed: dict[int, list[tuple[str, Any]]], rows: dict[tuple[int, str], tuple[int, float]]) -> set[int]:
    """The trials whose packs do not hold what their rows hold. `packed`: trial -> its
    (phase, values) pieces, values None where the blob was malformed; `rows`: (trial,
    phase) -> (count, sum) of the rows' times a percentile reads, for the same trials.
    A trial passes when, phase by phase, its pieces hold as many values as its rows with
    the same sum (relative 1e-9: SQL and numpy add in different orders). A count catches
    packs deleted, duplicated, truncated, moved, renamed or NaN-filled, and a flag set
    without packs; the sum, rows changed while the triggers were gone."""
    stale: set[int] = set()
    mine: dict[int, dict[str, tuple[int, float]]] = {}
    for trial, pieces in packed.items():
        phases = mine.setdefault(trial, {})
        for phase, values in pieces:
            if values is None:
                stale.add(trial)
                continue
            n, total = phases.get(phase, (0, 0.0))
            phases[phase] = (n + len(values), total + float(values.sum()))
    theirs: dict[int, dict[str, tuple[int, float]]] = {}
    for (trial, phase), counted in rows.items():
        theirs.setdefault(trial, {})[phase] = counted
    for trial in (set(mine) | set(theirs)) - stale:
        a, b = mine.get(trial, {}), theirs.get(trial, {})
        if set(a) != set(b) or any(
            a[phase][0] != n or not math.isclose(a[phase][1], total, rel_tol=1e-9, abs_tol=1e-12)
            for phase, (n, total) in b.items()
        ):
            stale.add(trial)
    return stale


# -- the triggers that clear trials.latency_packed -----------------------------------
# Each marks the trial of a latency row inserted or deleted, and both trials of any row
# updated (rare, never by dlbench). "<> 0" skips rewriting a trial already marked: a
# batch of 10^5 latency rows rewrites its trial's row once.
_MARK = "UPDATE trials SET latency_packed = 0 WHERE id = {row}.trial_id AND latency_packed <> 0;"

SQLITE_TRIGGERS = (
    f"CREATE TRIGGER IF NOT EXISTS latency_unpacked_insert AFTER INSERT ON measurements"
    f" WHEN {PHASE_SQL.format(row='new')} BEGIN {_MARK.format(row='new')} END",
    f"CREATE TRIGGER IF NOT EXISTS latency_unpacked_delete AFTER DELETE ON measurements"
    f" WHEN {PHASE_SQL.format(row='old')} BEGIN {_MARK.format(row='old')} END",
    f"CREATE TRIGGER IF NOT EXISTS latency_unpacked_update AFTER UPDATE ON measurements"
    f" BEGIN {_MARK.format(row='old')} {_MARK.format(row='new')} END",
)

# PostgreSQL runs a trigger's work in a function; one function serves the three triggers.
POSTGRES_TRIGGERS = (
    "CREATE OR REPLACE FUNCTION dlbench_latency_unpacked() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
    f" IF TG_OP <> 'INSERT' THEN {_MARK.format(row='OLD')} END IF;"
    f" IF TG_OP <> 'DELETE' THEN {_MARK.format(row='NEW')} END IF;"
    " RETURN NULL; END $$",
    f"CREATE TRIGGER latency_unpacked_insert AFTER INSERT ON measurements FOR EACH ROW"
    f" WHEN ({PHASE_SQL.format(row='NEW')}) EXECUTE FUNCTION dlbench_latency_unpacked()",
    f"CREATE TRIGGER latency_unpacked_delete AFTER DELETE ON measurements FOR EACH ROW"
    f" WHEN ({PHASE_SQL.format(row='OLD')}) EXECUTE FUNCTION dlbench_latency_unpacked()",
    "CREATE TRIGGER latency_unpacked_update AFTER UPDATE ON measurements FOR EACH ROW"
    " EXECUTE FUNCTION dlbench_latency_unpacked()",
)


TRIGGER_NAMES = frozenset({"latency_unpacked_insert", "latency_unpacked_delete", "latency_unpacked_update"})


def install_triggers(db: Any) -> None:
    """The three triggers, whichever of them the database has already (a rebuild, Store.repack,
    installs them again): SQLite's say IF NOT EXISTS; PostgreSQL has no such clause for a
    trigger before version 14, so each is dropped first where it exists."""
    if isinstance(db, sqlite3.Connection):
        for statement in SQLITE_TRIGGERS:
            db.execute(statement)
        return
    for name in sorted(TRIGGER_NAMES):
        db.execute(f"DROP TRIGGER IF EXISTS {name} ON measurements")
    for statement in POSTGRES_TRIGGERS:
        db.execute(statement)


def missing_triggers(db: Any) -> set[str]:
    """The triggers that keep trials.latency_packed honest and that the database lacks
    (another tool can drop them)."""
    if isinstance(db, sqlite3.Connection):
        sql = "SELECT name FROM sqlite_master WHERE type='trigger' AND tbl_name='measurements'"
    else:
        sql = "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal AND tgrelid = 'measurements'::regclass"
    return set(TRIGGER_NAMES) - {row[0] for row in db.execute(sql).fetchall()}


class _Row:
    """One measurement row as pack() reads it."""

    __slots__ = ("phase", "metric", "warmup", "value")

    def __init__(self, phase: str, metric: str, warmup: int, value: float | None) -> None:
        self.phase, self.metric, self.warmup, self.value = phase, metric, warmup, value


def _rows_by_trial(db: Any) -> Iterator[tuple[int, list[_Row]]]:
    """Every latency-phase row of the database, grouped by trial, in each trial's row order.
    Read in batches (a server's 10^7 rows are never all in memory)."""
    sql = (
        "SELECT trial_id, phase, metric, warmup, value FROM measurements"
        f" WHERE {PHASE_SQL.format(row='measurements')} ORDER BY trial_id, id"
    )
    if isinstance(db, sqlite3.Connection):
        cursor = db.execute(sql)
        batches: Iterable[list[Any]] = iter(lambda: cursor.fetchmany(100_000), [])
    else:
        batches = db.chunks(sql, (), 100_000)
    trial: int | None = None
    rows: list[_Row] = []
    for batch in batches:
        for trial_id, *row in batch:
            if trial_id != trial:
                if rows:
                    assert trial is not None
                    yield trial, rows
                trial, rows = trial_id, []
            rows.append(_Row(*row))
    if rows:
        assert trial is not None
        yield trial, rows


def pack_existing(db: Any) -> None:
    """Migration 8's data step, and a rebuild: the packs of every trial already stored
    (any packs there were are replaced: a file another tool touched can hold some), every
    trial then marked complete, and the triggers installed (after the packing, which
    writes no row)."""
    db.execute("DELETE FROM latency_packs")
    for trial_id, rows in _rows_by_trial(db):
        packs = pack(rows)
        if packs:
            db.executemany(
                "INSERT INTO latency_packs (trial_id, phase, n, times) VALUES (?,?,?,?)",
                [(trial_id, *p) for p in packs],
            )
    db.execute("UPDATE trials SET latency_packed = 1")
    install_triggers(db)
