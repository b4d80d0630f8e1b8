"""CSV rendering of a report's summary tables: one row per case and headline metric.

The summary statistics only; `dlbench export` writes every raw measurement.
"mean ± sd" is split into two columns so that the file loads as numbers.
"""

from __future__ import annotations

import csv
import io


def _cell(value: str) -> str:
    # The tables' "—" (no value) is an empty field, which every CSV reader takes as missing.
    return "" if value.strip() in ("—", "") else value


def render(report) -> str:
    fields: list[str] = ["metric"]
    records: list[dict[str, str]] = []
    for t in report.summary:
        for row in t.rows:
            rec = {"metric": t.title}
            for col, value in zip(t.columns, row):
                if col == "mean ± sd":
                    mean, _, sd = value.partition(" ± ")
                    rec["mean"], rec["sd"] = _cell(mean), _cell(sd)
                else:
                    rec[col] = _cell(value)
            records.append(rec)
            fields += [k for k in rec if k not in fields]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=fields, restval="", lineterminator="\n")
    writer.writeheader()
    writer.writerows(records)
    return buf.getvalue()
