"""CSV of a report's summary: one row per case and headline metric, at full precision.

Numbers come from the analysis (report.summaries), never from the tables' display
strings: floats are written with repr, so a value reads back exactly as computed.
Times are in seconds and each quality metric is in its stored unit (accuracy a
fraction, test MSE in squared target units: analysis.quality; units in the `unit`
column), the case's settings are columns of their own. `dlbench export` writes every raw value.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from dlbench.analysis import quality
from dlbench.report.tables import CASE_COLUMNS

# (phase, metric, words, unit); a metric without values in a case writes no row.
METRICS = (
    ("train", "time", "train time", "s"),
    ("infer", "time", "inference time", "s"),
    *((q.phase, q.metric, q.label, q.unit) for q in quality.QUALITY),
    ("tta", "time", "time to target accuracy", "s"),
    ("tta", "epochs", "epochs to target accuracy", "epochs"),
    *((p, m, words, quality.TOKEN_UNIT) for p, m, words in quality.TOKEN_THROUGHPUT),
)
STATS = ("n", "mean", "sd", "median", "q1", "q3", "min", "max")


def with_heads(keys: Any) -> tuple[tuple[str, str, str, str], ...]:
    """METRICS with the quality metric of each head a case holds ("mse/price", labelled
    "test MSE (price)"), after the declared quality metrics."""
    heads = [q for q in quality.present(keys) if q not in quality.QUALITY]
    if not heads:
        return METRICS
    last = max(i for i, row in enumerate(METRICS) if row[0] == quality.PHASE)
    added = tuple((q.phase, q.metric, q.label, q.unit) for q in heads)
    return (*METRICS[: last + 1], *added, *METRICS[last + 1 :])


def _number(v: float | int) -> str:
    return repr(v) if isinstance(v, float) and v == v else ("" if isinstance(v, float) else str(v))


def _setting(value: Any) -> str:
    if value is None:
        return ""
    return json.dumps(value, sort_keys=True) if isinstance(value, dict | list) else str(value)


def render(report, figures: Any = (), base: Any = None) -> str:
    fields = ["metric", "phase", "unit", *CASE_COLUMNS, *STATS, "trials", "statuses", "sample", "case_key"]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    for s in report.summaries:
        for phase, metric, words, unit in with_heads(s.stats):
            st = s.stats.get((phase, metric))
            if st is None:
                continue
            row = {
                "metric": words,
                "phase": phase,
                "unit": unit,
                "case_key": s.case_key,
                "trials": str(s.trials),
                "statuses": ", ".join(f"{v} {k}" for k, v in sorted(s.statuses.items())),
                "sample": "repeats in one process" if s.within_process else "one median per trial",
            }
            row.update({c: _setting(s.case.get(c)) for c in CASE_COLUMNS})
            row.update({k: _number(getattr(st, k)) for k in STATS})
            writer.writerow(row)
    return buf.getvalue()
