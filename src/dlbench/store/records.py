"""What the store hands back: typed, frozen records, their JSON columns decoded here, once.

A run's and a trial's JSON columns (case_json, protocol_json, ...) are decoded when the
store reads the row, into fields of their own (TrialRecord.case, .protocol, ...): no
caller parses a store column again. A column damaged by something other than dlbench
(not JSON, or not a JSON object) is one StoreError naming the database, the row and the
column, raised before anything is read from it.

The bulky rows (measurements, latency calls, series: up to hundreds of thousands per
run) are NamedTuples, which cost a third of a frozen dataclass to build; runs, trials,
skipped cells and samplers are frozen dataclasses. Both are immutable: a field cannot be
set. The decoded dicts are the record's own (each read decodes anew), so changing one
changes nothing stored and no other record.

For code written against sqlite3.Row, every record is still read the old way for now:
record["case_json"] is the stored text, record["id"] the id, record.keys() the column
names, dict(record) the row as stored (see _Columns).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from dlbench.store.base import StoreError

# The JSON columns a read checks; REQUIRED_JSON may not be NULL. owner_json and
# telemetry_notes are read leniently, as before: damage there reads as nothing recorded.
RUN_JSON = ("experiment_json", "environment_json", "idle_json", "explain_json")
TRIAL_JSON = ("case_json", "protocol_json", "manifest_json", "placement_json")
REQUIRED_JSON = ("case_json", "protocol_json")
DAMAGED = "the database was changed by something other than dlbench: nothing was read from it"


def decode(text: Any, *, column: str, where: str) -> dict[str, Any] | None:
    """A JSON column's object (None for NULL or JSON null where allowed), or one StoreError
    naming `where` (the database and the row) and the column."""
    if text is None and column not in REQUIRED_JSON:
        return None
    value: Any
    try:
        value = json.loads(text) if isinstance(text, str | bytes) else None
    except ValueError as exc:
        value = exc
    if value is None and column not in REQUIRED_JSON:
        return None  # JSON null: nothing recorded
    if not isinstance(value, dict):
        why = f"not JSON ({value})" if isinstance(value, ValueError) else "not a JSON object"
        raise StoreError(f"{where}: {column} is {why}; {DAMAGED}")
    return value


def lenient(text: Any) -> dict[str, Any] | None:
    """A column read as before, without refusing: damage reads as nothing recorded."""
    try:
        value = json.loads(text) if isinstance(text, str | bytes) and text else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def explain_of_description(experiment_json: Any) -> str | None:
    """The explain pairs an older dlbench kept in its experiment's description
    ({"explain": [...], "from_run": N} as text), as the JSON text of explain_json; None
    when the description holds none."""
    experiment = lenient(experiment_json)
    description = lenient((experiment or {}).get("description"))
    if description is None or not isinstance(description.get("explain"), list):
        return None
    return json.dumps(description, sort_keys=True)


class _Columns:
    """The old way to read a row (sqlite3.Row's): record["column"] gives the value as
    stored (a JSON column's text), record[0] by position, keys() the column names, and
    dict(record) the stored row. Kept while callers move to the typed fields; a name
    that is a field but no column (a decoded value) reads the field."""

    __slots__ = ()
    row: Mapping[str, Any]

    def __getitem__(self, key: str | int) -> Any:
        if isinstance(key, int):
            return list(self.row.values())[key]
        if key in self.row:
            return self.row[key]
        if key in self.__dataclass_fields__:  # type: ignore[attr-defined]
            return getattr(self, key)
        raise KeyError(key)

    def keys(self) -> list[str]:
        return list(self.row)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.row.values())

    def __len__(self) -> int:
        return len(self.row)

    def columns(self) -> dict[str, Any]:
        """The row as stored: column -> stored value."""
        return dict(self.row)


def _get(row: Mapping[str, Any] | Any, column: str, default: Any = None) -> Any:
    keys = row.keys()
    return row[column] if column in keys else default


def _stored(row: Any) -> dict[str, Any]:
    return {k: row[k] for k in row.keys()}


@dataclass(frozen=True, slots=True)
class RunRecord(_Columns):
    """One run. experiment, environment and idle are {} when nothing was recorded."""

    id: int
    name: str
    status: str
    started_at: str
    finished_at: str | None
    command: str | None
    config_source: str | None
    config_text: str | None
    experiment: dict[str, Any]
    environment: dict[str, Any]
    dlbench_version: str | None
    idle: dict[str, Any]
    stop_reason: str | None
    owner: dict[str, Any] | None
    # An explain run's pairs: {"explain": [pair, ...], "from_run": N}; None for other runs.
    explain: dict[str, Any] | None
    # Store.runs() only: the run's trial counts and where they ran ("ray:node-a=4 ...").
    n_trials: int | None = None
    n_ok: int | None = None
    placements: str | None = None
    row: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class TrialRecord(_Columns):
    """One trial (one attempt of one case in one block). case and protocol as stored
    (dlbench.cases.stored_case completes an older case); manifest, placement and
    telemetry_notes None when nothing was recorded."""

    id: int
    run_id: int
    case_key: str
    block: int
    position: int
    framework: str
    variant: str
    model: str
    dataset: str
    batch_size: int
    case: dict[str, Any]
    protocol: dict[str, Any]
    manifest: dict[str, Any] | None
    status: str
    error: str | None
    returncode: int | None
    started_at: str | None
    finished_at: str | None
    wall_s: float | None
    stderr: str | None
    telemetry_notes: dict[str, Any] | None
    attempt: int
    retired: bool
    placement: dict[str, Any] | None
    row: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class SkippedRecord(_Columns):
    """A cell of the matrix that was not run, and why."""

    id: int
    run_id: int
    cell: dict[str, Any]
    reason: str
    row: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class SamplerRecord(_Columns):
    """One telemetry sampler of a run: available or not, and why."""

    id: int
    run_id: int
    name: str
    available: bool
    reason: str | None
    hint: str | None
    interval_s: float | None
    row: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)


def _column_names(self: Any) -> tuple[str, ...]:
    return tuple(self._fields)


def _by_column(self: Any, key: str | int | slice) -> Any:
    """row["name"] as well as row[0]: a bulky row read the old way, by column name (the
    NamedTuple records below share it: a NamedTuple cannot take a base class with methods)."""
    if key.__class__ is str:
        try:
            return getattr(self, key)
        except AttributeError:
            raise KeyError(key) from None
    return tuple.__getitem__(self, key)  # type: ignore[index]


class Records(list):  # type: ignore[type-arg]
    """The list of bulky records a read returns, keeping the columns taken out of it.

    A report hands the same 10^5 measurement records to ten analyses, and each read its
    columns again (dlbench.analysis.rows.columns): 30 column passes over 122,472 records at
    10^6 measurements, 0.25 s, where 11 distinct columns take 0.05 s. The columns are kept
    here, on the list they came from, as tuples (no reader can change one), and every
    in-place change of the list drops them: a column never disagrees with its rows.
    Otherwise a plain list."""

    column_cache: dict[str, tuple[Any, ...]]

    def __init__(self, items: Any = ()) -> None:
        super().__init__(items)
        self.column_cache = {}


def _dropping_columns(name: str) -> Any:
    change = getattr(list, name)

    def method(self: Records, *args: Any, **kwargs: Any) -> Any:
        self.column_cache.clear()
        return change(self, *args, **kwargs)

    method.__name__ = name
    return method


for _name in (
    "__setitem__", "__delitem__", "__iadd__", "__imul__",
    "append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse",
):  # fmt: skip
    setattr(Records, _name, _dropping_columns(_name))


class MeasurementRecord(NamedTuple):
    """One stored value with the trial columns the analyses group by (Store.measurements).
    warmup is 0 or 1 as stored; attempt and retired tell a resumed trial's attempts apart."""

    trial_id: int
    case_key: str
    block: int
    framework: str
    variant: str
    model: str
    dataset: str
    batch_size: int
    status: str
    repeat: int | None
    warmup: int
    phase: str
    metric: str
    value: float | None
    unit: str
    seq: int | None
    method: str | None
    flag: str | None
    attempt: int
    retired: int
    id: int

    def keys(self) -> tuple[str, ...]:
        return _column_names(self)

    def __getitem__(self, key: str | int | slice) -> Any:  # type: ignore[override]
        return _by_column(self, key)


class LatencyCall(NamedTuple):
    """One per-call latency value (phases latency_b<B>), with what percentiles need."""

    case_key: str
    status: str
    warmup: int
    phase: str
    metric: str
    value: float | None

    def keys(self) -> tuple[str, ...]:
        return _column_names(self)

    def __getitem__(self, key: str | int | slice) -> Any:  # type: ignore[override]
        return _by_column(self, key)


class SeriesPoint(NamedTuple):
    """One polled telemetry value (t in seconds of the monotonic clock)."""

    id: int
    trial_id: int
    name: str
    t: float
    value: float | None
    unit: str
    kind: str | None
    method: str | None

    def keys(self) -> tuple[str, ...]:
        return _column_names(self)

    def __getitem__(self, key: str | int | slice) -> Any:  # type: ignore[override]
        return _by_column(self, key)


# The methods above say what mypy checks; at run time row["name"] calls the shared
# function itself, not a method that calls it: one Python call less per read (measured on
# the 2-core VM: 0.36-0.47 us -> 0.33 us), and a report reads a 10^6-measurement run's
# records by column about 10^7 times.
for _kind in (MeasurementRecord, LatencyCall, SeriesPoint):
    _kind.__getitem__ = _by_column  # type: ignore[method-assign]


# -- building records from stored rows ------------------------------------------------
def run_record(row: Any, where: str) -> RunRecord:
    """A runs row (sqlite3.Row, a PostgreSQL Row or a mapping) as a RunRecord; `where`
    names the database in an error."""
    here = f"{where}: run {_get(row, 'id')}"
    decoded = {c: decode(_get(row, c), column=c, where=here) for c in RUN_JSON}
    explain = decoded["explain_json"]
    if explain is None:  # an older run: its pairs may still be in its description
        text = explain_of_description(_get(row, "experiment_json"))
        explain = json.loads(text) if text else None
    return RunRecord(
        id=int(row["id"]),
        name=row["name"],
        status=row["status"],
        started_at=row["started_at"],
        finished_at=_get(row, "finished_at"),
        command=_get(row, "command"),
        config_source=_get(row, "config_source"),
        config_text=_get(row, "config_text"),
        experiment=decoded["experiment_json"] or {},
        environment=decoded["environment_json"] or {},
        dlbench_version=_get(row, "dlbench_version"),
        idle=decoded["idle_json"] or {},
        stop_reason=_get(row, "stop_reason"),
        owner=lenient(_get(row, "owner_json")),
        explain=explain,
        n_trials=_get(row, "n_trials"),
        n_ok=_get(row, "n_ok"),
        placements=_get(row, "placements"),
        row=_stored(row),
    )


def trial_record(row: Any, where: str = "") -> TrialRecord:
    """A trials row as a TrialRecord (a TrialRecord as it is). A mapping that lacks a
    column (a test's hand-built row) reads it as NULL (a JSON column: as empty)."""
    if isinstance(row, TrialRecord):
        return row
    here = f"{where}: trial {_get(row, 'id')}" if where else f"trial {_get(row, 'id')}"
    keys = row.keys()
    decoded = {c: decode(row[c], column=c, where=here) if c in keys else None for c in TRIAL_JSON}
    case, protocol = decoded["case_json"] or {}, decoded["protocol_json"] or {}
    return TrialRecord(
        id=_get(row, "id"),
        run_id=_get(row, "run_id"),
        case_key=_get(row, "case_key"),
        block=_get(row, "block"),
        position=_get(row, "position"),
        framework=_get(row, "framework", case.get("framework")),
        variant=_get(row, "variant", case.get("variant")),
        model=_get(row, "model", case.get("model")),
        dataset=_get(row, "dataset", case.get("dataset")),
        batch_size=_get(row, "batch_size", case.get("batch_size")),
        case=case,
        protocol=protocol,
        manifest=decoded["manifest_json"],
        status=_get(row, "status"),
        error=_get(row, "error"),
        returncode=_get(row, "returncode"),
        started_at=_get(row, "started_at"),
        finished_at=_get(row, "finished_at"),
        wall_s=_get(row, "wall_s"),
        stderr=_get(row, "stderr"),
        telemetry_notes=lenient(_get(row, "telemetry_notes")),
        attempt=_get(row, "attempt", 1),
        retired=bool(_get(row, "retired", 0)),
        placement=decoded["placement_json"],
        row=_stored(row),
    )


def skipped_record(row: Any, where: str) -> SkippedRecord:
    cell = decode(row["cell_json"], column="cell_json", where=f"{where}: skipped cell {row['id']}") or {}
    return SkippedRecord(id=row["id"], run_id=row["run_id"], cell=cell, reason=row["reason"], row=_stored(row))


def sampler_record(row: Any) -> SamplerRecord:
    return SamplerRecord(
        id=row["id"],
        run_id=row["run_id"],
        name=row["name"],
        available=bool(row["available"]),
        reason=row["reason"],
        hint=row["hint"],
        interval_s=row["interval_s"],
        row=_stored(row),
    )


@dataclass(frozen=True, slots=True)
class BaselineRecord:
    """A named baseline (dlbench baseline save): the run a name stands for, when and by
    whom it was saved, with which command and note; with the run's name, start time and
    number of cases (read with it, for listing)."""

    name: str
    run_id: int
    saved_at: str
    saved_by: str | None
    command: str | None
    note: str | None
    run_name: str | None = None
    run_started_at: str | None = None
    n_cases: int | None = None


def baseline_record(row: Any) -> BaselineRecord:
    """A baselines row (joined with its run's name, start and case count where read so)."""
    n_cases = _get(row, "n_cases")
    return BaselineRecord(
        name=row["name"],
        run_id=int(row["run_id"]),
        saved_at=row["saved_at"],
        saved_by=_get(row, "saved_by"),
        command=_get(row, "command"),
        note=_get(row, "note"),
        run_name=_get(row, "run_name"),
        run_started_at=_get(row, "run_started_at"),
        n_cases=None if n_cases is None else int(n_cases),
    )
