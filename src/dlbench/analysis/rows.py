"""The shapes the analysis reads: stored records and case dicts, and column-wise values.

A row is a record from dlbench.store (TrialRecord, MeasurementRecord, LatencyCall:
typed, frozen, their JSON columns already decoded, and still read by column name:
row["name"], row.keys()), or a dict with the same keys, as the tests build them (a trial
dict becomes a TrialRecord through dlbench.store.trial_record, which decodes its JSON
text). Typed Any so that both pass. A case is the dict a plan cell becomes (framework,
variant, model, ...).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, TypeAlias

Row: TypeAlias = Any
Rows: TypeAlias = Iterable[Row]
Case: TypeAlias = dict[str, Any]


def columns(rows: Rows, names: tuple[str, ...]) -> tuple[Sequence[Any], ...]:
    """The named columns of `rows`, one sequence each, in row order. Records of the store
    (NamedTuples) are read through their fields' C accessors (operator.attrgetter):
    reading 120,000 records by column name (record["phase"], a Python __getitem__) one
    value at a time took most of an analysis's time at 10^6 measurements, and a zip(*rows)
    of all 21 columns 0.6 s. A list the store returned (store.records.Records) keeps the
    columns read from it, so the next analysis that reads one gets it back. Dicts (as
    tests build them) are read by key."""

    cache: dict[str, tuple[Any, ...]] | None = getattr(rows, "column_cache", None)
    rows = rows if isinstance(rows, list) else list(rows)
    if not rows:
        return tuple(() for _ in names)
    if cache is not None:
        missing = [n for n in names if n not in cache]
        if missing:
            cache.update(zip(missing, _read(rows, tuple(missing)), strict=True))
        return tuple(cache[n] for n in names)
    return _read(rows, names)


def _read(rows: list[Row], names: tuple[str, ...]) -> tuple[tuple[Any, ...], ...]:
    from operator import attrgetter

    fields = getattr(rows[0], "_fields", None)
    if fields is not None and len(set(map(type, rows))) == 1:
        return tuple(tuple(map(attrgetter(n), rows)) for n in names)
    return tuple(tuple(r[n] for r in rows) for n in names)


def latency_percentiles_of(
    samples: Iterable[tuple[str, str, Any]],
) -> dict[str, dict[str, tuple[int, float, float, float]]]:
    """analysis.summary.latency_percentiles from column-wise values (Store.latency_samples:
    (case_key, phase, array) per case and latency phase, already the ok trials' measured
    calls): the same (n, p50, p90, p99) per case and phase, with no record per call."""
    import numpy as np

    out: dict[str, dict[str, tuple[int, float, float, float]]] = {}
    for key, phase, values in samples:
        p50, p90, p99 = np.percentile(values, [50, 90, 99])
        out.setdefault(key, {})[phase] = (len(values), float(p50), float(p90), float(p99))
    return out
