"""Stored results as tidy pandas DataFrames: `dlbench.load("results.db")` (or a
PostgreSQL URL, `dlbench.load("postgresql://user@host/db")`).

Every factor of a case is a column of its own (framework, variant, model,
dataset, batch_size, init, optimizer, lr, momentum, epochs, steps, device,
threads, precision, seed, train_samples, test_samples, synthetic, input_shape,
layout, pipeline) and each model option is a column `option.<name>`, so sweeps
over any of them are told apart without reading `case_key`. Column names are
constants here and documented in docs/schema.md; the database is opened
read-only and never created. The rows come from the Store's records (runs(),
trials(), measurements()), the one read path dlbench.report.model builds its
reports on too, and the statistics from dlbench.analysis, the same code the
reports use, so a median here is the median `dlbench report` prints.

Cells: a list of numbers is written `AxBxC` (a tuple option `2x2x2x2`); the
synthetic spec [*shape, classes, train, test] is written `28x28x1/10/1000/200`;
any other list or a dict is compact JSON. An option whose values mix kinds
across models (a number for one, text for another) is text in every row, so
that every export format can store the column. Integer columns that can be
missing (repeat, seq, epochs, ...) are pandas' nullable Int64.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any, TextIO

import pandas as pd

from dlbench.analysis.criteria import ALPHA, BAND
from dlbench.cases import stored_case
from dlbench.documents import header
from dlbench.plan import DISTRIBUTION_DEFAULTS, Case
from dlbench.store import Store, database_url

FACTOR_COLUMNS: tuple[str, ...] = tuple(f for f in Case.__dataclass_fields__ if f != "model_options")
OPTION_PREFIX = "option."

RUN_COLUMNS = ("id", "name", "status", "started_at", "finished_at", "dlbench_version", "stop_reason", "command")
# The trial's own columns, as stored (run_id, trial_id and case_key lead every frame).
TRIAL_FIELDS = (
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
)
TRIAL_COLUMNS = ("run_id", "trial_id", "case_key", *TRIAL_FIELDS, *FACTOR_COLUMNS)
MEASUREMENT_FIELDS = ("repeat", "warmup", "phase", "metric", "value", "unit", "seq", "method", "flag")
TEXT_FIELDS = ("phase", "metric", "unit", "method", "flag")  # what a kind of value is (Store.measurement_parts)
MEASUREMENT_COLUMNS = (
    "run_id",
    "trial_id",
    "case_key",
    "block",
    "attempt",
    "retired",
    "status",
    *FACTOR_COLUMNS,
    *MEASUREMENT_FIELDS,
)
STAT_COLUMNS = ("n", "median", "mean", "std", "q1", "q3", "min", "max", "cv")
SUMMARY_COLUMNS = (
    "run_id",
    "case_key",
    *FACTOR_COLUMNS,
    "phase",
    "metric",
    "unit",
    *STAT_COLUMNS,
    "within_process",
)
COMPARE_COLUMNS = (
    "run_a",
    "run_b",
    "set",
    "metric",
    "a",
    "b",
    "n_a",
    "n_b",
    "median_a",
    "median_b",
    "ratio_a_over_b",
    "ci_low",
    "ci_high",
    "ratio_b_over_a",
    "ratio_b_over_a_ci_low",
    "ratio_b_over_a_ci_high",
    "test",
    "p_value",
    "p_adjusted",
    "verdict",
    "why",
    "to_decide",
    "paired",
    "independent",
    *FACTOR_COLUMNS,
)
# Whole numbers that may be missing: nullable Int64, so that 3 stays 3 and not 3.0.
INTEGER_COLUMNS = frozenset(
    {
        "id",
        "run_id",
        "trial_id",
        "block",
        "position",
        "attempt",
        "returncode",
        "batch_size",
        "epochs",
        "steps",
        "threads",
        "seed",
        "train_samples",
        "test_samples",
        "input_shape",
        "repeat",
        "to_decide",
        "seq",
        "n",
        "n_a",
        "n_b",
        "run_a",
        "run_b",
    }
)
FORMATS = ("csv", "json", "parquet")


# -- cells ----------------------------------------------------------------------
def _cell(value: Any) -> Any:
    """A factor or option value as one cell: numbers 'AxBxC', other lists and dicts JSON."""
    if isinstance(value, list | tuple) and value and all(_is_number(v) for v in value):
        return "x".join(str(v) for v in value)
    if isinstance(value, list | tuple | dict):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _synthetic(value: Any) -> Any:
    """[*shape, classes, train, test] -> '28x28x1/10/1000/200' (the shape apart from the counts)."""
    if isinstance(value, list | tuple) and len(value) >= 4 and all(_is_number(v) for v in value):
        return "/".join(["x".join(str(v) for v in value[:-3]), *(str(v) for v in value[-3:])])
    return _cell(value)


def _case_columns(case: dict[str, Any]) -> dict[str, Any]:
    """Every factor of a case (case_json parsed) and its model options as option.<name>."""
    # A single-device case's JSON leaves out strategy, world size and batch scope (its
    # key stays what it was before they existed): their defaults are its values.
    case = {**DISTRIBUTION_DEFAULTS, **case}
    out = {f: _synthetic(case.get(f)) if f == "synthetic" else _cell(case.get(f)) for f in FACTOR_COLUMNS}
    for name, value in sorted((case.get("model_options") or {}).items()):
        out[OPTION_PREFIX + name] = _cell(value)
    return out


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _one_kind(values: pd.Series) -> pd.Series:
    """An option column whose values mix kinds (number, text, bool) as text: a parquet
    column has one type, and a number beside text would otherwise fail the export."""
    kinds = {bool if isinstance(v, bool) else str if isinstance(v, str) else float for v in values if not _missing(v)}
    if len(kinds) <= 1:
        return values
    return values.map(lambda v: None if _missing(v) else v if isinstance(v, str) else json.dumps(v))


def _frame(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> pd.DataFrame:
    """Rows -> DataFrame: the stable columns in order, then the option.* columns sorted."""
    options = sorted({k for r in rows for k in r if k.startswith(OPTION_PREFIX)})
    frame = pd.DataFrame(rows, columns=[*columns, *options])
    for column in options:
        frame[column] = _one_kind(frame[column])
    for column in INTEGER_COLUMNS.intersection(columns):
        frame[column] = frame[column].astype("Int64")
    return frame


def _used(codes: Any, size: int) -> tuple[Any, Any]:
    """Of codes into a table of `size` entries: the entries used (ascending) and each code
    renumbered into them, in O(n) (np.unique would sort the million codes)."""
    import numpy as np

    used = np.flatnonzero(np.bincount(codes, minlength=size))
    renumber = np.zeros(size, dtype=np.int64)
    renumber[used] = np.arange(len(used))
    return used, renumber[codes]


# -- the database ---------------------------------------------------------------
class Results:
    """One database, read-only. Each method takes `run` (None: every run in the file)."""

    path: Path | str  # a PostgreSQL URL is kept as text, its password masked

    def __init__(self, path: str | Path) -> None:
        if database_url(path) is not None:  # PostgreSQL: a server's database, never created here
            self.store = Store(path, readonly=True)
            self.path = self.store.path
            return
        path = Path(path)
        # Checked before Store: reading must never leave a new, empty database behind.
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such database file (give the --db that dlbench run wrote)")
        self.path = path
        self.store = Store(path, readonly=True)

    @classmethod
    def of_store(cls, store: Store) -> Results:
        """Results over an already open store (the caller keeps closing it)."""
        results = cls.__new__(cls)
        results.path = store.path if hasattr(store, "path") else Path("?")
        results.store = store
        return results

    def __enter__(self) -> Results:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.store.close()

    def _run_ids(self, run: int | None) -> list[int]:
        ids = [r.id for r in self.store.runs()]
        if run is None:
            return ids
        if run not in ids:
            raise ValueError(f"{self.path}: no run {run}; runs here: {', '.join(map(str, ids)) or 'none'}")
        return [run]

    def _latest(self, run: int | None) -> int:
        ids = self._run_ids(run)
        if not ids:
            raise ValueError(f"{self.path}: holds no runs yet")
        return ids[-1]

    def runs(self, run: int | None = None) -> pd.DataFrame:
        """One row per run: RUN_COLUMNS."""
        wanted = set(self._run_ids(run))
        rows = [{c: getattr(r, c) for c in RUN_COLUMNS} for r in self.store.runs() if r.id in wanted]
        return _frame(rows, RUN_COLUMNS)

    def trials(self, run: int | None = None) -> pd.DataFrame:
        """One row per trial (retired attempts included, flagged): TRIAL_COLUMNS, then option.*."""
        rows = []
        for rid in self._run_ids(run):
            for t in self.store.trials(rid, retired=True):
                rows.append(
                    {
                        "run_id": rid,
                        "trial_id": t.id,
                        "case_key": t.case_key,
                        **{c: getattr(t, c) for c in TRIAL_FIELDS},
                        **_case_columns(stored_case(t.case)),
                    }
                )
        return _frame(rows, TRIAL_COLUMNS)

    def measurements(self, run: int | None = None) -> pd.DataFrame:
        """Every stored value, one row each: warm-ups (warmup True), per-call latencies and
        retired attempts (retired True) included. MEASUREMENT_COLUMNS, then option.*.

        Built column-wise (Store.measurement_parts): what belongs to a trial (its case's
        factors) is computed once per trial and what belongs to a kind of value (phase,
        metric, unit, method, flag) once per kind, then spread over the rows by index; a
        million rows take seconds, where a dict per row took twenty. Each column is typed
        as _frame types it from the rows (the same values, seen once each)."""
        import numpy as np

        trial_rows: list[dict[str, Any]] = []
        text_rows: list[dict[str, Any]] = []
        columns: dict[str, list[Any]] = {c: [] for c in ("trial", "text", "repeat", "warmup", "value", "seq")}
        for rid in self._run_ids(run):
            parts = self.store.measurement_parts(rid, latency=True, retired=True)
            cases = {t.id: _case_columns(stored_case(t.case)) for t in self.store.trials(rid, retired=True)}
            # Only the trials and kinds that have rows: a column's type is what its rows hold.
            used_trials, trial_at = _used(parts["trial"], len(parts["trials"]))
            used_texts, text_at = _used(parts["text"], len(parts["texts"]))
            columns["trial"].append(trial_at + len(trial_rows))
            columns["text"].append(text_at + len(text_rows))
            for i in used_trials.tolist():
                t = parts["trials"][i]
                trial_rows.append(
                    {
                        "run_id": rid,
                        "trial_id": t[0],
                        "case_key": t[1],
                        "block": t[2],
                        "attempt": t[10],
                        "retired": bool(t[11]),
                        "status": t[9],
                        **cases[t[0]],
                    }
                )
            text_rows += [dict(zip(TEXT_FIELDS, parts["texts"][i], strict=True)) for i in used_texts.tolist()]
            for c in ("repeat", "warmup", "value", "seq"):
                columns[c].append(parts[c])
        if not trial_rows:
            return _frame([], MEASUREMENT_COLUMNS)
        per_trial = _frame(trial_rows, MEASUREMENT_COLUMNS[:7] + FACTOR_COLUMNS)
        options = [c for c in per_trial.columns if c.startswith(OPTION_PREFIX)]
        per_text = pd.DataFrame(text_rows, columns=list(TEXT_FIELDS))
        at_trial, at_text = np.concatenate(columns["trial"]), np.concatenate(columns["text"])
        data: dict[str, Any] = {c: per_trial[c].array.take(at_trial) for c in per_trial.columns}
        data.update({c: per_text[c].array.take(at_text) for c in TEXT_FIELDS})
        data["repeat"] = pd.array(np.concatenate(columns["repeat"]), dtype="Int64")
        data["seq"] = pd.array(np.concatenate(columns["seq"]), dtype="Int64")
        data["warmup"] = np.concatenate(columns["warmup"]).astype(bool)
        data["value"] = np.concatenate(columns["value"])
        # copy=False: every array here was made for this frame, and pandas would otherwise copy
        # each into consolidated blocks (0.34-0.57 s of a 10^6-row load, against 0.016 s).
        return pd.DataFrame(data, columns=[*MEASUREMENT_COLUMNS, *options], copy=False)

    def _measurements_by_record(self, run: int | None = None) -> pd.DataFrame:
        """measurements() as it was built before, a dict per stored row: the reference the
        column-wise path is tested against (tests/test_scale_paths.py); slow at scale."""
        rows = []
        for rid in self._run_ids(run):
            cases = {t.id: _case_columns(stored_case(t.case)) for t in self.store.trials(rid, retired=True)}
            for m in self.store.measurements(rid, latency=True, retired=True):
                rows.append(
                    {
                        "run_id": rid,
                        "trial_id": m.trial_id,
                        "case_key": m.case_key,
                        "block": m.block,
                        "attempt": m.attempt,
                        "retired": bool(m.retired),
                        "status": m.status,
                        **cases[m.trial_id],
                        **{c: getattr(m, c) for c in MEASUREMENT_FIELDS},
                        "warmup": bool(m.warmup),
                        "value": math.nan if m.value is None else float(m.value),
                    }
                )
        return _frame(rows, MEASUREMENT_COLUMNS)

    def summary(self, run: int | None = None) -> pd.DataFrame:
        """Per run, case, phase and metric: the statistics the reports print, from
        dlbench.analysis.summary.summarize (warm-ups, per-process values and trials
        that did not end ok left out; with several trials a case's sample is one median
        per trial, within_process False). SUMMARY_COLUMNS, then option.*."""
        from dlbench.analysis.summary import summarize

        rows = []
        for rid in self._run_ids(run):
            measurements = self.store.measurements(rid, latency=False)
            units = {(m["case_key"], m["phase"], m["metric"]): m["unit"] for m in measurements}
            for s in summarize(self.store.trials(rid), measurements):
                factors = _case_columns(s.case)
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
                            "q1": st.q1,
                            "q3": st.q3,
                            "min": st.min,
                            "max": st.max,
                            "cv": st.cv,
                            "within_process": s.within_process,
                        }
                    )
        return _frame(rows, SUMMARY_COLUMNS)

    def compare(
        self,
        a: str | int,
        b: str | int,
        metric: str = "train.time",
        run: int | None = None,
        band: float = BAND,
        alpha: float = ALPHA,
        busy_verdicts: bool = False,
    ) -> pd.DataFrame:
        """Two frameworks (or framework:variant labels) of one run (default: the latest),
        per comparison set (cases equal in every factor but framework and variant); or,
        with two run ids, run a against run b per matching case (dlbench compare A B).
        metric is 'phase.metric'. Medians, both ratios with their 95% CIs, the rank test's
        p-value (Holm-adjusted within a set, as in the report) and the verdict of a relative
        to b: faster or slower for times, lower or higher for other metrics, no meaningful
        difference, or undecided, at `band` and `alpha` (two frameworks only). A time of a case
        measured on a busy machine (dlbench.analysis.busy), on either side, is undecided unless
        `busy_verdicts`, as in the report. COMPARE_COLUMNS, then option.*."""
        if isinstance(a, int) and isinstance(b, int):
            if run is not None:
                raise ValueError(f"compare({a}, {b}) compares two runs; leave run out")
            return self._run_vs_run(a, b, metric, busy_verdicts)
        if isinstance(a, int) or isinstance(b, int):
            raise ValueError(f"compare({a!r}, {b!r}): give two frameworks, or two run ids")
        return self._frameworks(a, b, metric, self._latest(run), band, alpha, busy_verdicts)

    def _frameworks(
        self, a: str, b: str, metric: str, rid: int, band: float, alpha: float, busy_verdicts: bool = False
    ) -> pd.DataFrame:
        from dlbench.analysis import stats
        from dlbench.analysis.busy import busy_cases
        from dlbench.analysis.comparisons import comparison_groups, comparison_sets, label

        trials, measurements = self.store.trials(rid), self.store.measurements(rid, latency=False)
        phase, name, words = _metric(metric, measurements, rid)
        cases = {t.case_key: stored_case(t.case) for t in trials}
        names = sorted({label(c) for c in cases.values()})
        side_a, side_b = _side(a, names, rid), _side(b, names, rid)
        if side_a & side_b:
            raise ValueError(f"run {rid}: {a!r} and {b!r} name the same framework(s): {', '.join(sorted(side_a))}")
        # Each comparison set is analysed on its own rows, as comparisons.analyse does (one
        # Holm family per set and metric), so that the p-values equal the report's.
        trials_of: defaultdict[str, list[Any]] = defaultdict(list)
        rows_of: defaultdict[str, list[Any]] = defaultdict(list)
        for t in trials:
            trials_of[t.case_key].append(t)
        for m in measurements:
            rows_of[m.case_key].append(m)
        busy = () if busy_verdicts or not _timed(phase, name) else busy_cases(measurements)
        rows = []
        for keys in comparison_sets(cases):
            set_trials = [t for k in keys for t in trials_of[k]]
            set_rows = [m for k in keys for m in rows_of[k]]
            factors = {**_case_columns(cases[keys[0]]), "framework": None, "variant": None}
            for g in comparison_groups(set_trials, set_rows, ((phase, name, words),), alpha=alpha, busy=busy):
                result = stats.compare_many(
                    g.values, paired=g.paired, alpha=alpha, band=band, independent=g.independent, busy=g.busy
                )
                for x, y, comp in result.pairwise:
                    if x in side_a and y in side_b:
                        ab, ba, first, second = comp, stats.reverse(comp), x, y
                    elif x in side_b and y in side_a:
                        ab, ba, first, second = stats.reverse(comp), comp, y, x
                    else:
                        continue
                    row = _comparison_row(rid, rid, g.set_label, metric, first, second, ab, ba, _timed(phase, name))
                    rows.append({**row, **factors})
        return _frame(rows, COMPARE_COLUMNS)

    def _run_vs_run(self, run_a: int, run_b: int, metric: str, busy_verdicts: bool = False) -> pd.DataFrame:
        from dlbench.analysis import stats
        from dlbench.analysis.comparisons import TIMED, run_vs_run
        from dlbench.cases import case_label

        for rid in (run_a, run_b):
            self._run_ids(rid)  # a missing run: one line naming the runs there are
        timed = {f"{p}.{m}": words for p, m, words in TIMED}
        if metric not in timed:
            raise ValueError(f"compare({run_a}, {run_b}): runs are compared on {', '.join(timed)}; not {metric!r}")
        diffs = run_vs_run(
            self.store.trials(run_a),
            self.store.measurements(run_a, latency=False),
            self.store.trials(run_b),
            self.store.measurements(run_b, latency=False),
            busy_verdicts=busy_verdicts,
        )
        rows = []
        for d in diffs:
            if d.metric != timed[metric]:
                continue
            factors = _case_columns(d.case)
            a, b = f"run {run_a}", f"run {run_b}"
            if d.comparison is None:  # one side has no values: a row of its own, numbers missing
                missing = {"run_a": run_a, "run_b": run_b, "set": case_label(d.case), "metric": metric}
                rows.append({**missing, "a": a, "b": b, **factors})
                continue
            # run_vs_run compares B relative to A; the frame states a relative to b beside it.
            ba, ab = d.comparison, stats.reverse(d.comparison)
            rows.append({**_comparison_row(run_a, run_b, case_label(d.case), metric, a, b, ab, ba, True), **factors})
        return _frame(rows, COMPARE_COLUMNS)


def _metric(metric: str, measurements: list[Any], rid: int) -> tuple[str, str, str]:
    """'train.time' -> ('train', 'time', 'train time'), checked against what the run measured."""
    from dlbench.analysis import quality
    from dlbench.analysis.comparisons import ACCURACY, TIMED

    measured = sorted({f"{m['phase']}.{m['metric']}" for m in measurements if m["repeat"] is not None})
    if metric not in measured:
        raise ValueError(f"run {rid}: no metric {metric!r}; measured: {', '.join(measured) or 'none'}")
    phase, name = metric.split(".", 1)
    words = {(p, m): w for p, m, w in (*TIMED, *ACCURACY)}.get((phase, name), f"{phase} {name}")
    declared = quality.quality(phase, name)  # a head's quality ("mse/price") is labelled "test MSE (price)"
    return phase, name, declared.label if declared is not None else words


def _timed(phase: str, metric: str) -> bool:
    """Verdicts (faster, slower) are read lower-is-better: only for times."""
    from dlbench.analysis.comparisons import TIMED

    return any((phase, metric) == (p, m) for p, m, _ in TIMED)


def _side(name: str, names: list[str], rid: int) -> set[str]:
    """The framework:variant labels that `name` stands for ('torch' is every torch variant)."""
    found = {n for n in names if name in (n, n.split(":")[0])}
    if not found:
        raise ValueError(f"run {rid}: no {name!r} to compare; frameworks in it: {', '.join(names) or 'none'}")
    return found


def to_decide(c: Any) -> int | None:
    """About how many trials per side (pairs where paired) would decide an undecided
    comparison: the fewest the exact test needs, or, where it ran enough but the CI is not
    clear of or inside the band, the sample that would at this spread; None where more
    trials alone would not (a ratio on the band's edge, a busy machine) or it is decided."""
    why = c.why
    if c.decided or why is None:
        return None
    if why.cause in ("too few", "one process", "not interleaved", "too few for quantile", "few non-zero"):
        return why.need
    if why.cause in ("overlaps band", "not significant") and why.projection in ("clear", "inside"):
        return why.projected
    return None


def _comparison_row(
    run_a: int, run_b: int, set_label: str, metric: str, a: str, b: str, ab: Any, ba: Any, verdict: bool
) -> dict[str, Any]:
    """One compare() row from the comparison a relative to b (ab) and b relative to a (ba)."""
    return {
        "run_a": run_a,
        "run_b": run_b,
        "set": set_label,
        "metric": metric,
        "a": a,
        "b": b,
        "n_a": ab.n_a,
        "n_b": ab.n_b,
        "median_a": ab.estimate_a,
        "median_b": ab.estimate_b,
        "ratio_a_over_b": ab.ratio,
        "ci_low": ab.ratio_ci[0],
        "ci_high": ab.ratio_ci[1],
        "ratio_b_over_a": ba.ratio,
        "ratio_b_over_a_ci_low": ba.ratio_ci[0],
        "ratio_b_over_a_ci_high": ba.ratio_ci[1],
        "test": ab.test,
        "p_value": ab.p_value,
        "p_adjusted": ab.p_adjusted,
        # Times speak of faster/slower; other metrics of lower/higher (the engine's verdict either way).
        "verdict": ab.verdict if verdict else {"faster": "lower", "slower": "higher"}.get(ab.verdict, ab.verdict),
        "why": ab.why.cause if ab.why is not None else None,
        "to_decide": to_decide(ab),
        "paired": ab.paired,
        "independent": ab.independent,
    }


def load(path: str | Path) -> Results:
    """A results database, read-only (FileNotFoundError when there is no such file): an
    SQLite file or a PostgreSQL URL."""
    return Results(path)


def export_document(frame: pd.DataFrame) -> dict[str, Any]:
    """`export --format json`: the "dlbench/export" document of a measurements() frame: the
    runs it holds, its columns in order, and its rows as records (column: value, missing as
    null; docs/json.md)."""
    # Python's float repr round-trips exactly; pandas' own JSON writer keeps at most 15 digits.
    records = frame.astype(object).where(frame.notna(), None).to_dict(orient="records")
    doc = header("export")
    doc["runs"] = sorted({int(r) for r in frame["run_id"].dropna()}) if "run_id" in frame.columns else []
    doc["columns"] = [str(c) for c in frame.columns]
    doc["measurements"] = records
    return doc


def export(frame: pd.DataFrame, path: Path | TextIO, fmt: str) -> None:
    """Write `frame` as csv, json or parquet (pyarrow), each of which reads back with the
    values stored: floats are written with every digit they have. json is the
    "dlbench/export" document (export_document): its `measurements`, the rows as records,
    read back with pd.DataFrame(doc["measurements"], columns=doc["columns"]).
    `path` may be an open text stream (standard output) for csv and json."""
    if fmt == "csv":
        frame.to_csv(path, index=False)  # pandas writes floats by repr: they read back equal
    elif fmt == "json":
        document = export_document(frame)  # compact, not indented: a million rows
        if not isinstance(path, Path):
            json.dump(document, path, allow_nan=False, default=str)
            return
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(document, fh, allow_nan=False, default=str)
    elif fmt == "parquet":
        frame.to_parquet(path, index=False)
    else:
        raise ValueError(f"format {fmt!r}: allowed: {', '.join(FORMATS)}")
