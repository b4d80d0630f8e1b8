"""Stored results as tidy pandas DataFrames: `dlbench.load("results.db")`.

Every factor of a case is a column of its own (framework, variant, model,
dataset, batch_size, init, optimizer, lr, momentum, epochs, steps, device,
threads, precision, seed, train_samples, test_samples, synthetic, input_shape,
layout, pipeline) and each model option is a column `option.<name>`, so sweeps
over any of them are told apart without reading `case_key`. Column names are
constants here and documented in docs/schema.md; the database is opened
read-only. Statistics come from dlbench.analysis, the same code the reports use.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from dlbench.plan import Case
from dlbench.store import Store

FACTOR_COLUMNS = tuple(f for f in Case.__dataclass_fields__ if f != "model_options")
TRIAL_COLUMNS = (
    "run_id",
    "trial_id",
    "case_key",
    "block",
    "position",
    "attempt",
    "retired",
    "status",
    "error",
    "returncode",
    "wall_s",
    "started_at",
    "finished_at",
    *FACTOR_COLUMNS,
)
MEASUREMENT_COLUMNS = (
    "run_id",
    "trial_id",
    "case_key",
    "block",
    "attempt",
    "retired",
    "status",
    *FACTOR_COLUMNS,
    "repeat",
    "warmup",
    "phase",
    "metric",
    "value",
    "unit",
    "seq",
    "method",
    "flag",
)
SUMMARY_COLUMNS = ("run_id", "case_key", *FACTOR_COLUMNS, "phase", "metric", "unit", "n", "median", "mean", "std")
OPTION_PREFIX = "option."


def _factor(value: Any) -> Any:
    """A factor value as one cell: lists (synthetic shape, tuple options) as 'AxBxC'."""
    if isinstance(value, list | tuple):
        return "x".join(str(v) for v in value)
    return value


def _case_columns(case_json: str) -> dict[str, Any]:
    case = json.loads(case_json)
    out = {f: _factor(case.get(f)) for f in FACTOR_COLUMNS}
    for name, value in sorted((case.get("model_options") or {}).items()):
        out[OPTION_PREFIX + name] = _factor(value)
    return out


class Results:
    """One database, read-only. Each method takes `run` (None: every run in the file)."""

    def __init__(self, path: str | Path) -> None:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such database file (give the --db that dlbench run wrote)")
        self.path = path
        self.store = Store(path, readonly=True)

    def _run_ids(self, run: int | None) -> list[int]:
        ids = [int(r["id"]) for r in self.store.runs()]
        if run is None:
            return ids
        if run not in ids:
            raise ValueError(f"{self.path}: no run {run}; runs: {', '.join(map(str, ids)) or 'none'}")
        return [run]

    def runs(self) -> pd.DataFrame:
        cols = ("id", "name", "status", "started_at", "finished_at", "dlbench_version", "stop_reason", "command")
        return pd.DataFrame([{c: r[c] for c in cols} for r in self.store.runs()], columns=list(cols))

    def trials(self, run: int | None = None) -> pd.DataFrame:
        rows = []
        for rid in self._run_ids(run):
            for t in self.store.trials(rid, retired=True):
                row = {c: t[c] for c in TRIAL_COLUMNS[3:13]}
                rows.append(
                    {
                        "run_id": rid,
                        "trial_id": t["id"],
                        "case_key": t["case_key"],
                        **row,
                        **_case_columns(t["case_json"]),
                    }
                )
        return _frame(rows, TRIAL_COLUMNS)

    def measurements(self, run: int | None = None) -> pd.DataFrame:
        """Every stored value, warm-ups (warmup True) and retired attempts included."""
        rows = []
        for rid in self._run_ids(run):
            trials = {t["id"]: t for t in self.store.trials(rid, retired=True)}
            cases = {tid: _case_columns(t["case_json"]) for tid, t in trials.items()}
            for m in self.store.db.execute(
                "SELECT m.* FROM measurements m JOIN trials t ON t.id = m.trial_id WHERE t.run_id=?"
                " ORDER BY t.block, t.position, t.attempt, m.id",
                (rid,),
            ):
                t = trials[m["trial_id"]]
                rows.append(
                    {
                        "run_id": rid,
                        "trial_id": m["trial_id"],
                        "case_key": t["case_key"],
                        "block": t["block"],
                        "attempt": t["attempt"],
                        "retired": bool(t["retired"]),
                        "status": t["status"],
                        **cases[m["trial_id"]],
                        "repeat": m["repeat"],
                        "warmup": bool(m["warmup"]),
                        "phase": m["phase"],
                        "metric": m["metric"],
                        "value": float("nan") if m["value"] is None else float(m["value"]),
                        "unit": m["unit"],
                        "seq": m["seq"],
                        "method": m["method"],
                        "flag": m["flag"],
                    }
                )
        return _frame(rows, MEASUREMENT_COLUMNS)

    def summary(self, run: int | None = None) -> pd.DataFrame:
        """Per case, phase and metric: the statistics the reports print (medians over
        repeats, or over trial medians with several trials), warm-ups and failed trials out."""
        from dlbench.analysis.summary import summarize

        rows = []
        for rid in self._run_ids(run):
            units = {
                (m["case_key"], m["phase"], m["metric"]): m["unit"] for m in self.store.measurements(rid, latency=False)
            }
            for s in summarize(self.store.trials(rid), self.store.measurements(rid, latency=False)):
                factors = _case_columns(json.dumps(s.case))
                for (phase, metric), st in s.stats.items():
                    rows.append(
                        {
                            "run_id": rid,
                            "case_key": s.case_key,
                            **factors,
                            "phase": phase,
                            "metric": metric,
                            "unit": units.get((s.case_key, phase, metric)),
                            "n": st.n,
                            "median": st.median,
                            "mean": st.mean,
                            "std": st.sd,
                        }
                    )
        return _frame(rows, SUMMARY_COLUMNS)

    def compare(self, a: str, b: str, run: int | None = None) -> pd.DataFrame:
        """Framework (or framework:variant) a against b in one run, per comparison set and
        timed metric: medians, ratio a/b with its 95% CI, p-value (Holm-adjusted), verdict."""
        from dlbench.analysis.comparisons import within_run
        from dlbench.analysis.stats import reverse

        ids = self._run_ids(run)
        rid = ids[-1] if run is None else run
        trials, measurements = self.store.trials(rid), self.store.measurements(rid, latency=False)
        verdicts, _ = within_run(trials, measurements)
        names = sorted({v.a for v in verdicts} | {v.b for v in verdicts})

        def label(x: str) -> list[str]:
            return [n for n in names if n == x or n.split(":")[0] == x]

        for x in (a, b):
            if not label(x):
                raise ValueError(f"run {rid}: no {x!r} to compare; frameworks in it: {', '.join(names) or 'none'}")
        rows = []
        for v in verdicts:
            c = v.comparison
            if v.a in label(a) and v.b in label(b):
                ratio, lo, hi, verdict = c.ratio, c.ratio_ci[0], c.ratio_ci[1], c.verdict
                first, second = v.a, v.b
            elif v.a in label(b) and v.b in label(a):
                r = reverse(c)
                ratio, lo, hi, verdict = r.ratio, r.ratio_ci[0], r.ratio_ci[1], r.verdict
                first, second = v.b, v.a
                c = r
            else:
                continue
            rows.append(
                {
                    "run_id": rid,
                    "set": v.set_label,
                    "metric": v.metric,
                    "a": first,
                    "b": second,
                    "median_a": c.estimate_a,
                    "median_b": c.estimate_b,
                    "ratio_a_over_b": ratio,
                    "ci_low": lo,
                    "ci_high": hi,
                    "test": c.test,
                    "p_value": c.p_value,
                    "p_adjusted": c.p_adjusted,
                    "verdict": verdict,
                    "independent_trials": v.independent,
                }
            )
        return pd.DataFrame(rows)

    def close(self) -> None:
        self.store.close()


def _frame(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> pd.DataFrame:
    """Rows -> DataFrame with the stable columns first, then the option.* columns sorted."""
    options = sorted({k for r in rows for k in r if k.startswith(OPTION_PREFIX)})
    return pd.DataFrame(rows, columns=[*columns, *options])


def load(path: str | Path) -> Results:
    return Results(path)


def export(frame: pd.DataFrame, path: Path, fmt: str) -> None:
    """Write `frame` as csv, json (records, full float precision) or parquet (pyarrow)."""
    if fmt == "csv":
        frame.to_csv(path, index=False)
    elif fmt == "json":
        # Python's float repr round-trips exactly; pandas' own writer keeps 15 digits.
        records = frame.astype(object).where(frame.notna(), None).to_dict(orient="records")
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(records, fh, allow_nan=False, default=str)
    elif fmt == "parquet":
        frame.to_parquet(path, index=False)
    else:
        raise ValueError(f"format {fmt!r}: allowed: csv, json, parquet")
