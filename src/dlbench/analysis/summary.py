"""Per-case summaries of stored measurements (the shape of seed 000's Tables I, II, V).

Warm-up repeats are excluded. With one trial per case the sample is the
repeats of that trial (within-process, correlated: flagged); with several
trials each trial's median is one sample (docs/design.md).
Nothing here is stored: summaries are always recomputed from the raw rows.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dlbench.analysis.rows import Case, Rows, columns
from dlbench.analysis.stats import Summary as Stats
from dlbench.analysis.stats import median_of, summary
from dlbench.cases import stored_case
from dlbench.store.records import trial_record


def describe(values: Sequence[float]) -> Stats | None:
    """stats.summary of the finite values, or None when there are none."""
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return summary(finite) if finite else None


@dataclass
class CaseSummary:
    case_key: str
    case: Case
    trials: int
    statuses: dict[str, int]
    within_process: bool
    stats: dict[tuple[str, str], Stats]


def summarize(trials: Rows, measurements: Rows) -> list[CaseSummary]:
    """trials: rows of the trials table; measurements: rows of Store.measurements()."""
    by_case: dict[str, CaseSummary] = {}
    for t in trials:
        s = by_case.get(t["case_key"])
        if s is None:
            s = by_case[t["case_key"]] = CaseSummary(t["case_key"], stored_case(trial_record(t).case), 0, {}, True, {})
        s.trials += 1
        s.statuses[t["status"]] = s.statuses.get(t["status"], 0) + 1
    values: dict[tuple[str, str, str], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    names = ("warmup", "status", "repeat", "value", "case_key", "phase", "metric", "trial_id")
    for warmup, status, repeat, value, key, phase, metric, trial in zip(*columns(measurements, names), strict=True):
        # A value that could not be measured (None: e.g. a test split smaller than one
        # batch has no inference pass) is no sample; with several trials it made the
        # per-trial median fail ("'<' not supported between NoneType and NoneType").
        if warmup or status != "ok" or repeat is None or value is None:
            continue
        values[(key, phase, metric)][trial].append(value)
    for (key, phase, metric), per_trial in values.items():
        s = by_case[key]
        if len(per_trial) >= 2:
            # Independent samples: one median per trial.
            s.within_process = False
            sample = [median_of(v) for v in per_trial.values()]
        else:
            sample = next(iter(per_trial.values()))
        stats = describe(sample)
        if stats is not None:
            s.stats[(phase, metric)] = stats
    return list(by_case.values())


def latency_percentiles(measurements: Rows) -> dict[str, dict[str, tuple[int, float, float, float]]]:
    """Per case and latency phase (latency_b<B>): (n, p50, p90, p99) in seconds over
    every measured single-batch call of the case's ok trials (warm-ups excluded)."""
    pooled: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for m in measurements:
        if (
            m["phase"].startswith("latency_b")
            and m["metric"] == "time"
            and not m["warmup"]
            and m["status"] == "ok"
            and m["value"] is not None
        ):
            pooled[m["case_key"]][m["phase"]].append(m["value"])
    out: dict[str, dict[str, tuple[int, float, float, float]]] = {}
    for key, phases in pooled.items():
        out[key] = {}
        for phase, values in phases.items():
            p50, p90, p99 = np.percentile(values, [50, 90, 99])
            out[key][phase] = (len(values), float(p50), float(p90), float(p99))
    return out
