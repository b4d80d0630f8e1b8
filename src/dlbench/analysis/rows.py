"""The shapes the analysis reads: stored records and case dicts, and column-wise values.

A row is a record from dlbench.store (TrialRecord, MeasurementRecord, LatencyCall:
typed, frozen, their JSON columns already decoded, and still read by column name:
row["name"], row.keys()), or a dict with the same keys, as the tests build them (a trial
dict becomes a TrialRecord through dlbench.store.trial_record, which decodes its JSON
text). Typed Any so that both pass. A case is the dict a plan cell becomes (framework,
variant, model, ...).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeAlias

Row: TypeAlias = Any
Rows: TypeAlias = Iterable[Row]
Case: TypeAlias = dict[str, Any]


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
