"""Everything a report of one run shows, built once as plain data.

build_report() reads the store and returns a Report: the run's header, its
environment fingerprint, each trial's fairness manifest, and every table as
TableData. The renderers (console, markdown, latex, html, csv_out) only lay it out.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from dlbench.analysis.busy import BUSY_THRESHOLD
from dlbench.analysis.comparisons import ALPHA, BAND
from dlbench.cases import stored_case
from dlbench.report.answer import Answer, build_answer
from dlbench.report.render import Preface, TableData
from dlbench.store.records import trial_record

# (what a table cell says, what it means): the notes line explains the words the tables use.
LEGEND_PARTS = (
    (
        ("1 process",),
        "'1 process' = repeats inside one worker process (correlated: a ratio, never a verdict; "
        "--trials N gives N independent processes per case)",
    ),
    (("noisy", "IQR/median>10%"), "'noisy' or IQR/median>10% = high variance"),
    (
        ("BUSY",),
        f"BUSY = other processes took at least {BUSY_THRESHOLD:g}% of the CPU while the case ran (re-measure it)",
    ),
)
LEGEND = "; ".join(text for _, text in LEGEND_PARTS)


def legend_for(tables: Sequence[TableData]) -> str:
    """The part of LEGEND whose words appear in `tables` (their cells or captions): the console
    explains what it printed, not every word a report can print."""
    shown = " ".join([t.caption for t in tables] + [cell for t in tables for row in t.rows for cell in row])
    return "; ".join(text for words, text in LEGEND_PARTS if any(w in shown for w in words))


@dataclass
class Manifest:
    trial_id: int
    block: int
    case: str
    status: str
    manifest: dict
    error: str


# Parts of an ok trial that can fail on their own, as the worker records them in its
# manifest: the trial's timed measurements stand, and the report says what is missing.
PART_ERRORS = {"profile_error": "profile"}


def failed_parts(manifests: list[Manifest]) -> list[str]:
    """One note per part that failed, naming the trials and the first error."""
    out = []
    for key, part in PART_ERRORS.items():
        hit = [m for m in manifests if m.manifest.get(key)]
        if hit:
            ids = ", ".join(str(m.trial_id) for m in hit[:10]) + (" ..." if len(hit) > 10 else "")
            out.append(
                f"{part.upper()} FAILED in {len(hit)} trial(s) ({ids}): {hit[0].manifest[key]}; "
                f"their timed measurements stand, their {part} is missing"
            )
    return out


def left_processes(trials: Any) -> list[str]:
    """One note when a model left processes running after its trial (the worker's telemetry
    note "processes", dlbench.trial.launch.end_leftovers): they were ended, and while they ran
    they may have loaded the machine for the trials after theirs."""
    hit = {}
    for t in map(trial_record, trials):
        lines = (t.telemetry_notes or {}).get("processes")
        if isinstance(lines, list) and lines:
            hit[t.id] = str(lines[0])
    if not hit:
        return []
    ids = ", ".join(str(i) for i in list(hit)[:10]) + (" ..." if len(hit) > 10 else "")
    return [
        f"PROCESSES LEFT BEHIND in {len(hit)} trial(s) ({ids}): the model started processes that outlived its trial "
        f"({next(iter(hit.values()))}); they may have loaded the machine for the trials after theirs"
    ]


def failed_samplers(trials: Any) -> list[str]:
    """One note when a telemetry sampler failed in some trials (its poller dropped it
    and said why in the trial's telemetry notes): that telemetry is partial there."""
    hit: dict[int, str] = {}
    for t in map(trial_record, trials):
        for sampler, lines in (t.telemetry_notes or {}).items():
            failed = [x for x in lines if isinstance(x, str) and " failed" in x] if isinstance(lines, list) else []
            if failed:
                hit.setdefault(t.id, f"{sampler}: {failed[0]}")
    if not hit:
        return []
    ids = ", ".join(str(i) for i in list(hit)[:10]) + (" ..." if len(hit) > 10 else "")
    return [
        f"SAMPLER FAILED in {len(hit)} trial(s) ({ids}): {next(iter(hit.values()))}; "
        "their timed measurements stand, that telemetry is partial"
    ]


@dataclass
class Report:
    run: dict  # the runs row: id, name, status, started_at, finished_at, command, config_text, ...
    environment: dict
    manifests: list[Manifest]
    settings: str  # settings every case shares
    legend: str
    summary: list[TableData]
    latency: TableData | None
    telemetry: list[TableData]
    omnibus: TableData | None
    verdicts: TableData | None
    failed: TableData | None
    skipped: TableData | None
    hypotheses: list[dict] = field(default_factory=list)
    hypothesis_table: TableData | None = None
    # Batch-size sweeps: per batch size, and the largest batch that fits.
    sweeps: list[TableData] = field(default_factory=list)
    # The numbers behind the summary tables (full precision, for CSV and the answer block).
    summaries: list = field(default_factory=list)
    answer: Answer = field(default_factory=Answer)
    glance: TableData | None = None  # every case on one row, fastest first (the console's summary)
    energy_note: str = ""  # one line when no energy source measured anything
    samplers_line: str = ""
    experiment: dict = field(default_factory=dict)  # the run's experiment, decoded by the store
    # A section shown before everything else (a study's paper vs this run); its first line leads.
    preface: Preface | None = None
    # Data-parallel runs: speed-up and scaling efficiency against one process.
    scaling: TableData | None = None
    # The numbers the answer and the verdict table word (analysis.comparisons Ranking and
    # PairVerdict), kept for the JSON format, which states them instead of wording them.
    rankings: list = field(default_factory=list)
    pairs: list = field(default_factory=list)
    band: float = BAND  # the verdict criteria the report was built with
    alpha: float = ALPHA
    units: dict = field(default_factory=dict)  # (phase, metric) -> the unit its values were stored in
    # Compile time, throughput, peak memory, final loss per case: the console shows it under
    # the summary; the written formats (and HTML's summary section) have it last in `summary`.
    measured: TableData | None = None
    # How to get (case key, phase, metric) -> the interval of that summary's median
    # (median_interval): only the JSON format states them, and at 10^6 measurements they cost
    # 0.5 s that a console report would spend for nothing, so they are made on first use.
    median_cis_from: Callable[[], dict] | None = field(default=None, repr=False, compare=False)

    @cached_property
    def median_cis(self) -> dict:
        """(case key, phase, metric) -> the interval of that summary's median."""
        return self.median_cis_from() if self.median_cis_from is not None else {}

    def lead_lines(self) -> list[str]:
        """What shows before any table: the run, the settings every case shares."""
        lines = [f"run {self.run['id']} '{self.run['name']}' ({self.run['status']}), started {self.run['started_at']}"]
        if self.settings:
            lines.append(f"settings shared by every case: {self.settings}")
        return lines

    @property
    def title(self) -> str:
        return f"dlbench run {self.run['id']}: {self.run['name']}"

    def environment_table(self) -> TableData:
        t = TableData("environment fingerprint", ["key", "value"])
        for key, value in self.environment.items():
            if key == "model_checks":  # said in the answer's notes (dlbench.report.checks)
                continue
            if isinstance(value, dict):
                text = ", ".join(f"{k} {v}" for k, v in value.items())
            elif isinstance(value, list):
                text = ", ".join(str(v) for v in value)
            else:
                text = "—" if value is None else str(value)
            t.add_row(key, text)
        return t

    def console_tables(self, details: bool = False) -> list[TableData]:
        """What `dlbench report` and the end of `dlbench run` print, in that order: the
        one-row-per-case summary, sweeps, latency and failures; with details, every
        table of the written formats too (per-metric statistics, telemetry, verdicts).
        The samplers table is left out unless details: `dlbench run` printed it before
        the run, and samplers_line says the same in one line."""
        from dlbench.report.tables import footnoted

        if details:
            return [
                *(footnoted(t) if t is self.measured else t for t in self.summary),
                *(t for t in (self.scaling,) if t),
                *self.sweeps,
                *(t for t in (self.latency,) if t),
                *self.telemetry,
                *(t for t in (self.omnibus, self.verdicts, self.failed, self.skipped) if t),
            ]
        return [
            *(t for t in (self.glance, footnoted(self.measured) if self.measured else None, self.scaling) if t),
            *self.sweeps,
            *(t for t in (self.latency, self.failed) if t),
        ]

    def document_tables(self) -> list[tuple[str, list[TableData]]]:
        """Sections of the written formats (Markdown, LaTeX), each a heading and its tables."""
        sections = [
            ("Environment", [self.environment_table()]),
            ("Summary", [*(t for t in (self.glance,) if t), *self.summary]),
            ("Data-parallel scaling", [self.scaling] if self.scaling else []),
            ("Batch-size sweeps", self.sweeps),
            ("Latency", [self.latency] if self.latency else []),
            ("Telemetry", self.telemetry),
            ("Verdicts", [t for t in (self.omnibus, self.verdicts) if t]),
            ("Hypotheses", [self.hypothesis_table] if self.hypothesis_table else []),
            ("Failed trials", [self.failed] if self.failed else []),
            ("Skipped cells", [self.skipped] if self.skipped else []),
        ]
        return [(name, tables) for name, tables in sections if tables]


def _by_metric(measurements: Any) -> Callable[[Sequence[tuple[str, str, str]]], list[Any]]:
    """of(metrics): the rows of those (phase, metric, words), each metric's in stored order.
    The comparisons read a metric's rows and no other (comparisons.samples), one pass over
    every row per metric otherwise: seven passes over 122,000 records at 10^6 measurements."""
    from dlbench.analysis.rows import columns

    measurements = measurements if isinstance(measurements, list) else list(measurements)
    rows: dict[tuple[str, str], list[Any]] = {}
    for key, m in zip(zip(*columns(measurements, ("phase", "metric"))), measurements, strict=True):
        rows.setdefault(key, []).append(m)

    def of(metrics: Sequence[tuple[str, str, str]]) -> list[Any]:
        from dlbench.analysis.comparisons import with_heads_of

        # The quality metrics bring the heads' of a model of several outputs ("mse/price").
        pairs = dict.fromkeys((phase, metric) for phase, metric, _ in with_heads_of(metrics, rows))  # each once
        return [m for pair in pairs for m in rows.get(pair, ())]

    return of


def _units(measurements: Any) -> dict[tuple[str, str], str]:
    """(phase, metric) -> its unit, as the last row of it stored says."""
    from dlbench.analysis.rows import columns

    phase, metric, unit = columns(measurements, ("phase", "metric", "unit"))
    return dict(zip(zip(phase, metric, strict=True), unit, strict=True))


MEDIAN_CI_METHOD = "distribution-free order-statistic interval (binomial, exact coverage at least the level)"
MEDIAN_CI_LEVEL = 0.95


def median_interval(sample: Sequence[float], level: float = MEDIAN_CI_LEVEL) -> dict[str, Any]:
    """The confidence interval of a sample's median from its order statistics: the r-th
    smallest and r-th largest values, r the largest for which the binomial(n, 1/2) chance
    of the median lying outside is at most 1 - level. It assumes nothing of the
    distribution (times are skewed and often bimodal). With fewer than 6 values no pair
    reaches 95%: the interval is [min, max] with the coverage it has, and `why` says so
    (with fewer than 2, no interval at all)."""
    from scipy.stats import binom

    xs = sorted(v for v in sample if v is not None and math.isfinite(v))
    n = len(xs)
    out: dict[str, Any] = {"level": level, "method": MEDIAN_CI_METHOD, "low": None, "high": None}
    best = None
    for r in range(1, n // 2 + 1):
        coverage = 1.0 - 2.0 * float(binom.cdf(r - 1, n, 0.5))
        if coverage < level:
            break
        best = (r, coverage)
    if best is None:
        need = next(m for m in range(1, 64) if 1.0 - 2.0 * 0.5**m >= level)
        if n < 2:
            out.update(coverage=None, why=f"{n} value(s): no interval; {need} values reach {level:.0%}")
            return out
        # The widest interval there is, [min, max], with the coverage it has: short of the level.
        coverage = 1.0 - 2.0 * 0.5**n
        out.update(
            low=xs[0],
            high=xs[-1],
            coverage=coverage,
            why=f"{n} values: [min, max] covers {coverage:.1%}, short of {level:.0%} ({need} values reach it)",
        )
        return out
    r, coverage = best
    out.update(low=xs[r - 1], high=xs[n - r], coverage=coverage, why=None)
    return out


def median_intervals(measurements: Any, level: float = MEDIAN_CI_LEVEL) -> dict[tuple[str, str, str], dict[str, Any]]:
    """(case key, phase, metric) -> the median's interval over the sample its summary
    describes (dlbench.analysis.summary: one median per trial with 2+ trials, else the
    repeats of the one trial), measured values of ok trials only."""
    import statistics
    from collections import defaultdict

    values: dict[tuple[str, str, str], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for m in measurements:
        if m["warmup"] or m["status"] != "ok" or m["repeat"] is None or m["value"] is None:
            continue
        values[(m["case_key"], m["phase"], m["metric"])][m["trial_id"]].append(m["value"])
    out = {}
    for key, per_trial in values.items():
        sample = (
            [statistics.median(v) for v in per_trial.values()]
            if len(per_trial) >= 2
            else next(iter(per_trial.values()))
        )
        out[key] = median_interval(sample, level)
    return out


def build_report(
    store,
    run_id: int,
    hypotheses: bool = True,
    trials: list | None = None,
    measurements: list | None = None,
    band: float = BAND,
    alpha: float = ALPHA,
    busy_verdicts: bool = False,
) -> Report:
    """busy_verdicts=False (the default): a time comparison with a case measured on a busy
    machine (analysis.busy) gets its ratio and CI but no verdict word; True judges it anyway.
    hypotheses=False skips the hypothesis report (normality Monte Carlo and a bootstrap
    per pair), which the console output does not show. `trials`/`measurements`: the
    run's rows when the caller has loaded them already; the per-call latency rows
    (nine in ten of a run's rows) are not needed there: only the latency table uses
    them, and it reads them apart, column-wise (Store.latency_samples: 9 in 10 of a
    10^6-measurement run's rows, which as records took half the report's time)."""
    from dlbench.analysis import stats
    from dlbench.analysis.busy import busy_cases
    from dlbench.analysis.comparisons import ACCURACY, TIMED, analyse, comparison_groups, rankings, within_run
    from dlbench.analysis.placements import machine_kinds
    from dlbench.analysis.rows import latency_percentiles_of
    from dlbench.analysis.scaling import scaling
    from dlbench.analysis.summary import summarize
    from dlbench.analysis.sweeps import sweeps
    from dlbench.cases import case_label
    from dlbench.report.coverage import answer_notes, partial_settings, row_notes
    from dlbench.report.hypotheses import hypothesis_rows, hypothesis_table
    from dlbench.report.scaling_tables import scaling_answer, scaling_table
    from dlbench.report.sweep_tables import largest_batch_table, sweep_table
    from dlbench.report.tables import (
        common_settings,
        energy_note,
        glance_table,
        latency_table,
        measured_table,
        per_what,
        samplers_line,
        skipped_table,
        summary_tables,
        telemetry_tables,
        trials_table,
    )
    from dlbench.report.verdict_tables import omnibus_table, verdict_table

    row = store.run(run_id)
    trials = store.trials(run_id) if trials is None else trials
    measurements = store.measurements(run_id, latency=False) if measurements is None else measurements
    summaries = summarize(trials, measurements)
    found = sweeps(summaries)
    of_metrics = _by_metric(measurements)
    busy = busy_cases(measurements)
    analysed = analyse(list(trials), of_metrics(TIMED), band=band, alpha=alpha, busy=() if busy_verdicts else busy)
    accuracy = [
        (g, stats.compare_many(g.values, paired=g.paired, alpha=alpha, band=band, independent=g.independent))
        for g in comparison_groups(list(trials), of_metrics(ACCURACY), ACCURACY, alpha=alpha)
    ]
    sampler_rows = store.samplers(run_id)
    labels = {s.case_key: case_label(s.case) for s in summaries}
    verdicts, omnibus = within_run(list(trials), measurements, analysed=analysed)
    failed = [t for t in trials if t["status"] != "ok"]
    manifests = [
        Manifest(t.id, t.block, case_label(stored_case(t.case)), t.status, t.manifest or {}, t.error or "")
        for t in map(trial_record, trials)
    ]
    rows = hypothesis_rows(trials, measurements, alpha=alpha, band=band, analysed=analysed) if hypotheses else []
    scaled = scaling(trials, measurements)
    ranked = rankings(analysed, accuracy)
    per = per_what(summaries, measurements)
    measured = measured_table(summaries, measurements, trials)
    answer = build_answer(
        ranked,
        {labels[k]: v for k, v in busy.items() if k in labels},
        band=band,
        alpha=alpha,
        busy_threads=frozenset(int(s.case.get("threads") or 0) for s in summaries if s.case_key in busy),
        per=per,
        cases=len(summaries),
        withheld=not busy_verdicts,
    )
    if scaled:
        answer.items.extend(scaling_answer(scaled))
        answer.empty = ""
    # A setting that did not apply in full to a case (a user's layers that kept the
    # builder's init) is no setting "shared by every case": the row and the answer say so.
    partial = partial_settings(trials)
    for warning in (
        *answer_notes(partial, labels),
        *failed_parts(manifests),
        *failed_samplers(trials),
        *left_processes(trials),
    ):
        answer.warn(warning)
    case_notes = row_notes(partial, {s.case_key: s.case for s in summaries})
    leave_out = {setting for settings in partial.values() for setting in settings}
    environment = row.environment
    from dlbench.report.invalid import invalid_note

    # A diverged trial's non-finite loss is dlbench's own record of the divergence (its
    # trial row says so), not a value something else wrote.
    diverged = {t["id"] for t in trials if t["status"] == "diverged"}
    if note := invalid_note([v for v in store.invalid_values(run_id) if v[0] not in diverged]):
        answer.warn(note, first=True)
    from dlbench.report.latency_copy import latency_copy_note

    latency_samples, latency_check = store.latency_samples_checked(run_id)
    if note := latency_copy_note(latency_check, str(store.path)):
        answer.warn(note)
    from dlbench.report.checks import check_notes

    for line, warns in check_notes(environment.get("model_checks") or {}):
        answer.warn(line) if warns else answer.notes.append(line)
    kinds = machine_kinds(trials, environment)
    if len(kinds) > 1:
        # A cluster run can land on several node types: never pool them silently.
        answer.warn(
            f"MIXED HARDWARE: the ok trials ran on {len(kinds)} kinds of machine ("
            + "; ".join(f"{label}: {len(ids)} trial(s)" for label, ids in sorted(kinds.items()))
            + "), and every comparison below pools them. Pin the run to one kind (Ray uses one node kind "
            "per run; Slurm: --slurm-partition or --slurm-option constraint=...) or compare per machine.",
            first=True,
        )
    return Report(
        run=row.columns(),
        experiment=row.experiment,
        environment=environment,
        manifests=manifests,
        settings=common_settings([s.case for s in summaries], leave_out) if summaries else "",
        legend=LEGEND,
        summary=[*summary_tables(summaries, busy, case_notes, per), *([measured] if measured else [])],
        measured=measured,
        median_cis_from=lambda: median_intervals(measurements),
        latency=latency_table(summaries, latency_percentiles_of(latency_samples)),
        telemetry=telemetry_tables(summaries, measurements, sampler_rows),
        omnibus=omnibus_table(omnibus) if omnibus else None,
        verdicts=verdict_table(verdicts, band=band, alpha=alpha) if verdicts else None,
        failed=trials_table(failed) if failed else None,
        skipped=skipped_table([(s.cell, s.reason) for s in store.skipped(run_id)]),
        hypotheses=rows,
        hypothesis_table=hypothesis_table(rows),
        sweeps=[t for t in (sweep_table(found), largest_batch_table(found)) if t],
        summaries=summaries,
        answer=answer,
        scaling=scaling_table(scaled),
        glance=glance_table(summaries, busy, case_notes, per),
        energy_note=energy_note(summaries, measurements, sampler_rows),
        samplers_line=samplers_line(sampler_rows) if sampler_rows else "",
        rankings=ranked,
        pairs=verdicts,
        band=band,
        alpha=alpha,
        units=_units(measurements),
    )
