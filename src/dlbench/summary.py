"""Per-case summaries of stored measurements (the shape of seed 000's Tables I, II, V).

Warm-up repeats are excluded. With one trial per case the sample is the
repeats of that trial (within-process, correlated: flagged); with several
trials each trial's median is one sample (DESIGN.md "Independence").
Nothing here is stored: summaries are always recomputed from the raw rows.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

# (phase, metric, label, scale, unit shown)
HEADLINE = (
    ("train", "time", "train time", 1.0, "s"),
    ("infer", "time", "infer time", 1000.0, "ms"),
    ("accuracy", "accuracy", "accuracy", 100.0, "%"),
    # Time-to-accuracy runs only (tables appear when a case has values).
    ("tta", "time", "time to target accuracy, training only", 1.0, "s"),
    ("tta", "epochs", "epochs to target accuracy", 1.0, "epochs"),
)
OPTIONAL_HEADLINE = {("tta", "time"), ("tta", "epochs")}
VARIANCE_WARNING = 0.10  # IQR / median above this is flagged (torch.utils.benchmark's rule)


@dataclass(frozen=True)
class Stats:
    n: int
    mean: float
    sd: float
    median: float
    q1: float
    q3: float
    minimum: float
    maximum: float

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1

    @property
    def noisy(self) -> bool:
        return self.median != 0 and self.iqr / abs(self.median) > VARIANCE_WARNING


def describe(values: Sequence[float]) -> Stats | None:
    x = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    if x.size == 0:
        return None
    q1, med, q3 = np.percentile(x, [25, 50, 75])
    sd = float(x.std(ddof=1)) if x.size > 1 else float("nan")
    return Stats(int(x.size), float(x.mean()), sd, float(med), float(q1), float(q3),
                 float(x.min()), float(x.max()))


@dataclass
class CaseSummary:
    case_key: str
    case: dict
    trials: int
    statuses: dict[str, int]
    within_process: bool
    stats: dict[tuple[str, str], Stats]


def summarize(trials: Iterable, measurements: Iterable) -> list[CaseSummary]:
    """trials: rows of the trials table; measurements: rows of Store.measurements()."""
    by_case: dict[str, CaseSummary] = {}
    for t in trials:
        s = by_case.get(t["case_key"])
        if s is None:
            s = by_case[t["case_key"]] = CaseSummary(t["case_key"], json.loads(t["case_json"]), 0, {}, True, {})
        s.trials += 1
        s.statuses[t["status"]] = s.statuses.get(t["status"], 0) + 1
    values: dict[tuple[str, str, str], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for m in measurements:
        if m["warmup"] or m["status"] != "ok" or m["repeat"] is None:
            continue
        values[(m["case_key"], m["phase"], m["metric"])][m["trial_id"]].append(m["value"])
    for (key, phase, metric), per_trial in values.items():
        s = by_case[key]
        if len(per_trial) >= 2:
            # Independent samples: one median per trial.
            s.within_process = False
            sample = [float(np.median(v)) for v in per_trial.values()]
        else:
            sample = next(iter(per_trial.values()))
        stats = describe(sample)
        if stats is not None:
            s.stats[(phase, metric)] = stats
    return list(by_case.values())


def latency_percentiles(measurements: Iterable) -> dict[str, dict[str, tuple[int, float, float, float]]]:
    """Per case and latency phase (latency_b<B>): (n, p50, p90, p99) in seconds over
    every measured single-batch call of the case's ok trials (warm-ups excluded)."""
    pooled: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for m in measurements:
        if (m["phase"].startswith("latency_b") and m["metric"] == "time" and not m["warmup"]
                and m["status"] == "ok" and m["value"] is not None):
            pooled[m["case_key"]][m["phase"]].append(m["value"])
    out: dict[str, dict[str, tuple[int, float, float, float]]] = {}
    for key, phases in pooled.items():
        out[key] = {}
        for phase, values in phases.items():
            p50, p90, p99 = np.percentile(values, [50, 90, 99])
            out[key][phase] = (len(values), float(p50), float(p90), float(p99))
    return out


def format_stat(stats: Stats | None, scale: float, digits: int = 3, fixed: bool = False) -> dict[str, str]:
    """Table cells of a Stats: `digits` significant digits, or `digits` decimals when fixed."""
    if stats is None:
        return {"n": "0", "mean ± sd": "—", "median": "—", "Q1": "—", "Q3": "—"}
    spec = f".{digits}{'f' if fixed else 'g'}"

    def f(v: float) -> str:
        return "—" if not math.isfinite(v) else format(v * scale, spec)

    return {"n": str(stats.n), "mean ± sd": f"{f(stats.mean)} ± {f(stats.sd)}", "median": f(stats.median),
            "Q1": f(stats.q1), "Q3": f(stats.q3)}
