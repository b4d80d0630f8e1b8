"""Tables for plans, runs, summaries, latency and telemetry, built format-neutral.

Builders take plain data and return TableData (dlbench.report.render): rows of
strings that the console (rich), Markdown, LaTeX, HTML and CSV renderers share.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from dlbench.analysis import quality
from dlbench.analysis.rows import columns
from dlbench.analysis.stats import Summary
from dlbench.analysis.summary import CaseSummary
from dlbench.cases import case_label, stored_case
from dlbench.plan import Plan
from dlbench.report.render import TableData
from dlbench.store.records import trial_record
from dlbench.terminal import drop_shared, duration, number, time_unit

PLAN_ROWS = 1000  # trials (and skipped cells) a plan table lists
SKIPPED_REASONS = 10  # the most common reasons counted under a cut skipped table


def plan_table(plan: Plan) -> TableData:
    p = plan.experiment.protocol
    t = TableData(
        f"{len(plan.trials)} trials ({len(plan.cases)} cases x {p.trials} trial(s)), "
        f"{p.warmup} warm-up + {p.repeats} measured repeats each",
        ["#", "block", "case", "key"],
    )
    for i, trial in enumerate(plan.trials[:PLAN_ROWS], 1):
        t.add_row(str(i), str(trial.block), case_label(trial.case.as_dict()), trial.case.key)
    if len(plan.trials) > PLAN_ROWS:
        # A table of 100,000 rows takes longer to print than the plan took to make.
        t.add_row("…", "", f"{len(plan.trials) - PLAN_ROWS} more trials (the first {PLAN_ROWS} are shown)", "")
    return t


def skipped_table(skipped: Iterable[tuple[dict, str]]) -> TableData | None:
    rows = list(skipped)
    if not rows:
        return None
    # The three identifying factors always; any other factor only where it varies
    # among the skipped cells (else identical-looking rows would differ unseen).
    fixed = ["framework", "model", "dataset"]
    extra = [
        k
        for k in sorted({k for cell, _ in rows for k in cell} - set(fixed))
        if len({json.dumps(cell.get(k)) for cell, _ in rows}) > 1
    ]
    t = TableData(f"{len(rows)} skipped cells", [*fixed, *extra, "reason"])
    for cell, reason in rows[:PLAN_ROWS]:
        t.add_row(*(str(cell.get(k, "")) for k in (*fixed, *extra)), reason)
    if len(rows) > PLAN_ROWS:
        # 25,000 skipped cells took 20 s of CPU to print, for a list nobody reads to its end;
        # each reason is counted below, and plan --format json lists every cell.
        t.add_row(
            "…", *[""] * (len(fixed) + len(extra) - 1), f"{len(rows) - PLAN_ROWS} more (the first {PLAN_ROWS} shown)"
        )
        reasons: dict[str, int] = {}
        for _, reason in rows:
            reasons[reason] = reasons.get(reason, 0) + 1
        common = sorted(reasons.items(), key=lambda r: -r[1])
        t.notes.extend(f"{n} cells: {reason}" for reason, n in common[:SKIPPED_REASONS])
        if len(common) > SKIPPED_REASONS:
            t.notes.append(f"{len(common) - SKIPPED_REASONS} other reasons")
        t.notes.append("every skipped cell: dlbench plan ... --format json")
    return t


# The quality metrics as table rows: (phase, metric, label, scale, unit shown), from their
# declaration (analysis.quality): "accuracy" in %, "test MSE" a plain number.
QUALITY_HEADLINE = tuple((q.phase, q.metric, q.label, q.scale, q.shown) for q in quality.QUALITY)
# Token throughput of next-token models (tables appear when a case has values).
TOKEN_HEADLINE = tuple((p, m, label, 1.0, quality.TOKEN_UNIT) for p, m, label in quality.TOKEN_THROUGHPUT)

# (phase, metric, label, scale, unit shown)
HEADLINE = (
    ("train", "time", "train time", 1.0, "s"),
    ("infer", "time", "infer time", 1000.0, "ms"),
    *QUALITY_HEADLINE,
    # Time-to-accuracy runs only (tables appear when a case has values).
    ("tta", "time", "time to target accuracy, training only", 1.0, "s"),
    ("tta", "epochs", "epochs to target accuracy", 1.0, "epochs"),
    *TOKEN_HEADLINE,
)
OPTIONAL_HEADLINE = {("tta", "time"), ("tta", "epochs"), *((p, m) for p, m, *_ in TOKEN_HEADLINE)}


def with_heads(rows: tuple[tuple[Any, ...], ...], summaries: Iterable[CaseSummary]) -> tuple[tuple[Any, ...], ...]:
    """`rows` (HEADLINE or GLANCE) with the quality metric of each head that the cases hold
    ("test MSE (price)": analysis.quality) after the declared quality metrics: the heads'
    names are the user's, found in the data, not in a static list."""
    keys = {key for s in summaries for key in s.stats}
    heads = [q for q in quality.present(keys) if q not in quality.QUALITY]
    if not heads:
        return rows
    last = max(i for i, row in enumerate(rows) if row[0] == quality.PHASE)
    added = tuple((q.phase, q.metric, q.label, q.scale, q.shown) for q in heads)
    return (*rows[: last + 1], *added, *rows[last + 1 :])


def per_what(summaries: Iterable[CaseSummary], measurements: Iterable[Any]) -> dict[str, str]:
    """phase -> what one of its times covers, where every case agrees: "3 epochs" (train),
    "a pass over 352 test samples" (infer: samples per pass, read off the stored
    throughput × time). A phase whose cases differ says nothing here: each row's
    columns (epochs, dataset) tell it."""
    cases = [s.case for s in summaries]
    out: dict[str, str] = {}
    # A case that trains no epochs (a k-NN fit) has none: it does not make the others differ.
    epochs = {c.get("epochs") for c in cases} - {None}
    steps = {c.get("steps") for c in cases} - {None, 0}
    if len(steps) == 1 and next(iter(steps)):
        n = int(next(iter(steps)) or 0)
        out["train"] = f"{n} step{'s' if n != 1 else ''}"
    elif len(epochs) == 1 and next(iter(epochs)):
        n = int(next(iter(epochs)) or 0)
        out["train"] = f"{n} epoch{'s' if n != 1 else ''}"
    pass_time: dict[tuple[Any, Any], float] = {}
    rate: dict[tuple[Any, Any], float] = {}
    names = ("phase", "metric", "value", "repeat", "warmup", "trial_id")
    for phase, metric, value, repeat, warmup, trial in zip(*columns(measurements, names), strict=True):
        if phase != "infer" or value is None or repeat is None or warmup:
            continue
        if metric == "time":
            pass_time[(trial, repeat)] = value
        elif metric == "throughput":
            rate[(trial, repeat)] = value
    samples = {round(pass_time[k] * rate[k]) for k in pass_time.keys() & rate.keys()}
    batches = {c.get("batch_size") for c in cases}
    if len(samples) == 1:
        n = samples.pop()
        batch = f" in batches of {next(iter(batches))}" if len(batches) == 1 and next(iter(batches)) else ""
        out["infer"] = f"a pass over {n:,} test samples{batch}"
    return out


def _title(label: str, unit: str) -> str:
    """ "train time (s)"; a plain number's label alone ("test MSE")."""
    return f"{label} ({unit})" if unit else label


def _quality_shown(summaries: Iterable[CaseSummary], phase: str, metric: str) -> bool:
    """Whether a quality metric's table or column appears: where some case has values; and
    accuracy, today's metric, also where no quality metric has any (every trial failed)."""
    summaries = list(summaries)
    if any((phase, metric) in s.stats for s in summaries):
        return True
    return metric == "accuracy" and not any(_quality_of(s) for s in summaries)


def _quality_of(s: CaseSummary) -> list[tuple[str, str]]:
    """The quality metrics a case has values of."""
    return [key for key in s.stats if quality.quality(*key) is not None]


def format_stat(stats: Summary | None, scale: float, digits: int = 3, fixed: bool = False) -> dict[str, str]:
    """Table cells of a Summary: `digits` significant digits, or `digits` decimals when fixed."""
    if stats is None:
        return {"n": "0", "mean ± sd": "—", "median": "—", "Q1": "—", "Q3": "—"}
    spec = f".{digits}{'f' if fixed else 'g'}"

    def f(v: float) -> str:
        return "—" if not math.isfinite(v) else format(v * scale, spec)

    return {
        "n": str(stats.n),
        "mean ± sd": f"{f(stats.mean)} ± {f(stats.sd)}",
        "median": f(stats.median),
        "Q1": f(stats.q1),
        "Q3": f(stats.q3),
    }


# The units the time metrics are stored in (×1) or were shown in (×1000): such a time is
# shown with its own unit instead (dlbench.terminal.duration), the same in every format.
TIME_SHOWN = ("s", "ms")


def time_stat(stats: Summary) -> dict[str, str]:
    """format_stat for a time: every cell of the row in the unit its median reads best in."""
    unit = time_unit([stats.median])
    return {
        "n": str(stats.n),
        "mean ± sd": f"{duration(stats.mean, unit)} ± {duration(stats.sd, unit)}",
        "median": duration(stats.median, unit),
        "Q1": duration(stats.q1, unit),
        "Q3": duration(stats.q3, unit),
    }


CASE_COLUMNS = (
    "framework",
    "variant",
    "model",
    "dataset",
    "batch_size",
    "input_shape",
    "init",
    "optimizer",
    "lr",
    "epochs",
    "steps",
    "threads",
    "device",
    "precision",
    "layout",
    "pipeline",
    "runtime",
    "model_options",
)


NOT_APPLICABLE = (None, "none")


def _applicable(cases: list[dict], field: str) -> set[str]:
    """Distinct values of a field, ignoring cases where it does not apply (knn has no lr).
    Model options are compared within one model (resnet18's and lstm's options always
    differ; only two resnet18 configurations make the column worth showing)."""
    if field == "model_options":
        per_model: dict[str, set[str]] = {}
        for x in cases:
            per_model.setdefault(str(x.get("model")), set()).add(json.dumps(x.get(field), sort_keys=True))
        widest = max(per_model.values(), key=len, default=set())
        return widest if len(widest) > 1 else (widest if len(per_model) == 1 else set())
    return {json.dumps(x.get(field)) for x in cases if _applies(x, field)}


# Settings every case has, whatever it trains.
ALWAYS_APPLICABLE = ("framework", "variant", "model", "dataset", "batch_size", "threads", "device")


def varying_fields(cases: list[dict]) -> list[str]:
    """Case fields whose value differs between cases (always framework and model)."""
    return [c for c in CASE_COLUMNS if c in ("framework", "model") or len(_applicable(cases, c)) > 1]


def cell(case: dict, field: str) -> str:
    value = case.get(field)
    if field == "model_options" and isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in sorted(value.items()) if v is not None) or "—"
    if case.get("optimizer") == "none" and field in ("init", "optimizer", "lr", "epochs", "steps"):
        return "—"
    return "—" if value is None else str(value)


def common_settings(cases: list[dict], leave_out: Collection[str] = ()) -> str:
    """The settings every case shares, printed once above the tables. A setting that does
    not apply to some cases (a k-NN has no init, optimizer, lr or epochs) is said to be
    shared only by the cases it applies to, which are named by what they lack. `leave_out`:
    the settings that did not apply in full to some case (dlbench.report.coverage), which
    every case asked for but not every case got."""
    varying = varying_fields(cases)
    every: list[str] = []
    some: dict[str, str] = {}  # setting -> "setting=value", for the settings some cases lack
    for c in CASE_COLUMNS:
        values = _applicable(cases, c)
        if c not in varying and len(values) == 1 and c not in leave_out:
            value = json.loads(values.pop())
            if value in (None, 0, {}, "") and c in ("input_shape", "model_options", "steps"):
                continue  # not set: saying so adds nothing
            if all(_applies(x, c) for x in cases):
                every.append(f"{c}={value}")
            else:
                some[c] = f"{c}={value}"
    if not some:
        return ", ".join(every)
    without = sorted({str(x.get("model")) for x in cases if not all(_applies(x, c) for c in some)})
    shared = ", ".join(some.values())
    return ", ".join(every) + f"; by every case but {', '.join(without)} (which takes none of them): " + shared


def _applies(case: dict, field: str) -> bool:
    """Whether a case has the setting at all (a k-NN fit has no optimizer, lr or epochs)."""
    return field in ALWAYS_APPLICABLE or (case.get(field) not in NOT_APPLICABLE and case.get("optimizer") != "none")


def _case_columns(columns: list[str]) -> list[str]:
    return [c.replace("batch_size", "batch") for c in columns]


def summary_tables(
    summaries: list[CaseSummary],
    busy: dict[str, float] | None = None,
    case_notes: Mapping[str, list[str]] | None = None,
    per: Mapping[str, str] | None = None,
) -> list[TableData]:
    """One table per headline metric, one row per case: n, mean ± sd, median, Q1, Q3.
    `case_notes`: more words for a case's note cell, by case key (a setting applied in part);
    `per`: phase -> what one time of it covers (per_what)."""
    # Rows grouped the way the seed tables are: by model and dataset, then framework.
    order = ("model", "dataset", "batch_size", "init", "optimizer", "lr", "framework", "variant")
    summaries = sorted(summaries, key=lambda s: tuple(json.dumps(s.case.get(k)) for k in order))
    cases = [s.case for s in summaries]
    columns = varying_fields(cases)
    tables = []
    for phase, metric, label, scale, unit in with_heads(HEADLINE, summaries):
        if (phase, metric) in OPTIONAL_HEADLINE and not any((phase, metric) in s.stats for s in summaries):
            continue
        measures_quality = quality.quality(phase, metric) is not None
        if measures_quality and not _quality_shown(summaries, phase, metric):
            continue
        stat_cols = ["n", "mean ± sd", "median", "Q1", "Q3"]
        covers = (per or {}).get(phase) if metric == "time" else None
        t = TableData(
            (label if metric == "time" and unit in TIME_SHOWN else _title(label, unit))
            + (f", {covers}" if covers else ""),
            [*_case_columns(columns), *stat_cols, "note"],
            align=["left"] * len(columns) + ["right"] * len(stat_cols) + ["left"],
            nowrap=frozenset(stat_cols),
        )
        any_row = False
        for s in summaries:
            stats = s.stats.get((phase, metric))
            if stats is None and "ok" not in s.statuses:
                continue
            if stats is None and measures_quality and _quality_of(s):
                continue  # a case of another task: its quality has a table of its own
            if stats is None:
                cells = format_stat(None, scale)
            elif metric == "time" and unit in TIME_SHOWN:
                cells = time_stat(stats)
            elif unit == "%":
                cells = format_stat(stats, scale, digits=2, fixed=True)
            else:
                cells = format_stat(stats, scale, digits=4)
            notes = []
            if busy and s.case_key in busy:
                notes.append(f"BUSY: others took {busy[s.case_key]:.0f}% CPU")
            if stats is not None and stats.noisy and phase != quality.PHASE:
                notes.append("IQR/median>10%")
            if s.within_process and stats is not None and stats.n > 1:
                notes.append("1 process")
            reached = s.stats.get(("tta", "reached"))
            if phase == "tta" and reached is not None and reached.mean < 1:
                notes.append(f"target reached in {reached.mean:.0%} of {reached.n} repeats")
            bad = {k: v for k, v in s.statuses.items() if k != "ok"}
            if bad:
                notes.append(", ".join(f"{v} {k}" for k, v in bad.items()))
            notes += (case_notes or {}).get(s.case_key, [])
            t.add_row(
                *(cell(s.case, c) for c in columns),
                cells["n"],
                cells["mean ± sd"],
                cells["median"],
                cells["Q1"],
                cells["Q3"],
                "; ".join(notes),
            )
            any_row = True
        if any_row:
            tables.append(t)
    return tables


GLANCE = (
    ("train", "time", "train", 1.0, "s"),
    ("infer", "time", "infer", 1000.0, "ms"),
    *QUALITY_HEADLINE,
)


def _set_key(case: dict) -> str:
    return json.dumps({k: v for k, v in case.items() if k not in ("framework", "variant")}, sort_keys=True, default=str)


def ratio_text(ratio: float) -> str:
    """ "19.6×", "5.17×", "1.00×": three significant digits, two decimals below 10."""
    return f"{ratio:.1f}×" if ratio >= 10 else f"{ratio:.2f}×"


def glance_table(
    summaries: list[CaseSummary],
    busy: dict[str, float] | None = None,
    case_notes: Mapping[str, list[str]] | None = None,
    per: Mapping[str, str] | None = None,
) -> TableData | None:
    """Every case on one row, fastest first within its comparison set: median train
    time, inference time and accuracy, each time with its ratio to the fastest case
    of the set ("1.00×" is the fastest). The console's summary; the per-metric tables
    (n, mean ± sd, median, quartiles) follow in the written formats. `case_notes`:
    more words for a case's note cell, by case key."""
    timed = [s for s in summaries if s.stats]
    if not timed:
        return None
    columns = [c for c in varying_fields([s.case for s in timed]) if c not in ("framework", "variant")]
    present = [g for g in with_heads(GLANCE, timed) if any((g[0], g[1]) in s.stats for s in timed)]

    def median(s: CaseSummary, phase: str, metric: str) -> float | None:
        st = s.stats.get((phase, metric))
        return st.median if st is not None else None

    first_timed = next((g for g in present if g[0] != quality.PHASE), None)
    sets: dict[str, list[CaseSummary]] = {}
    for s in timed:
        sets.setdefault(_set_key(s.case), []).append(s)
    head = []
    for phase, metric, label, _, unit in present:
        head.append(f"{label} {unit}" if unit and not (metric == "time" and unit in TIME_SHOWN) else label)
        if phase != quality.PHASE:
            head.append(f"{label} ×")
    covers = "; ".join(f"{label}: {(per or {})[phase]}" for phase, _, label, *_ in present if phase in (per or {}))
    t = TableData(
        "summary: medians, fastest first (× = time relative to the fastest of the same setting)",
        ["framework", *_case_columns(columns), *head, "n", "note"],
        align=["left"] * (len(columns) + 1) + ["right"] * (len(head) + 1) + ["left"],
        optional=("n",),
        nowrap=frozenset(label for phase, metric, label, *_ in present if metric == "time"),
    )
    if covers:
        t.notes.append(f"one time = {covers}")
    everywhere_one_process = all(s.within_process and any(st.n > 1 for st in s.stats.values()) for s in timed)
    if everywhere_one_process:  # said once under the table, not on every row
        t.caption = "every case: repeats in 1 process (correlated; --trials 2+ for independent samples)"
    order = ("model", "dataset", "batch_size", "input_shape", "init", "optimizer", "lr", "epochs", "steps")
    # "runtime=all" on every row is a shared setting, printed once above the table.
    frameworks = sorted({case_label(s.case, setting=False) for s in timed})
    shown_names = dict(zip(frameworks, drop_shared(frameworks))) if len(frameworks) > 1 else {}
    for key in sorted(sets, key=lambda k: tuple(json.dumps(sets[k][0].case.get(f), default=str) for f in order)):
        members = sets[key]
        if first_timed is not None:
            members.sort(key=lambda s: (median(s, *first_timed[:2]) is None, median(s, *first_timed[:2]) or 0.0))
        fastest = {
            (ph, me): min((v for v in (median(s, ph, me) for s in members) if v is not None), default=None)
            for ph, me, *_ in present
        }
        for s in members:
            cells = []
            for phase, metric, _, scale, unit in present:
                value = median(s, phase, metric)
                if value is None:
                    cells.append("—")
                elif metric == "time" and unit in TIME_SHOWN:  # each time in the unit its size reads best in
                    cells.append(duration(value))
                else:
                    cells.append(format(value * scale, ".2f") if unit == "%" else number(value * scale, 4))
                if phase != quality.PHASE:
                    best = fastest[(phase, metric)]
                    cells.append("—" if value is None or not best else ratio_text(value / best))
            notes = []
            if busy and s.case_key in busy:
                notes.append("[BUSY]")
            if any(st.noisy for (ph, _), st in s.stats.items() if ph != quality.PHASE):
                notes.append("noisy")
            if s.within_process and any(st.n > 1 for st in s.stats.values()) and not everywhere_one_process:
                notes.append("1 process")
            bad = {k: v for k, v in s.statuses.items() if k != "ok"}
            if bad:
                notes.append(", ".join(f"{v} {k}" for k, v in bad.items()))
            notes += (case_notes or {}).get(s.case_key, [])
            first = s.stats.get(first_timed[:2]) if first_timed else None
            n = first.n if first is not None else max(st.n for st in s.stats.values())
            t.add_row(
                shown_names.get(fw := case_label(s.case, setting=False), fw),
                *(cell(s.case, c) for c in columns),
                *cells,
                str(n),
                "; ".join(notes),
            )
    return t


def latency_table(summaries: list[CaseSummary], latencies: dict) -> TableData | None:
    """p50 / p90 / p99 of single-batch inference latency at batch B and at batch 1."""
    rows = [(s, latencies[s.case_key]) for s in summaries if s.case_key in latencies]
    if not rows:
        return None
    columns = varying_fields([s.case for s, _ in rows])
    # Per what: one call on a batch of B (the run's batch size, where every case shares it) or of 1.
    batches = {s.case.get("batch_size") for s, _ in rows}
    at_b = f"a batch of {next(iter(batches))}" if len(batches) == 1 else "at batch B"
    t = TableData(
        "inference latency per call (ms): p50 / p90 / p99",
        [*_case_columns(columns), at_b, "a batch of 1" if len(batches) == 1 else "at batch 1"],
        align=["left"] * len(columns) + ["right", "right"],
    )
    for s, phases in sorted(
        rows,
        key=lambda r: tuple(
            json.dumps(r[0].case.get(k)) for k in ("model", "dataset", "batch_size", "framework", "variant")
        ),
    ):

        def fmt(phase: str) -> str:
            if phase not in phases:
                return "—"
            n, p50, p90, p99 = phases[phase]
            return f"{p50 * 1e3:.3g} / {p90 * 1e3:.3g} / {p99 * 1e3:.3g} (n={n})"

        t.add_row(*(cell(s.case, c) for c in columns), fmt(f"latency_b{s.case['batch_size']}"), fmt("latency_b1"))
    return t


def trials_table(trials: Iterable) -> TableData:
    t = TableData("trials", ["id", "block", "case", "status", "wall s", "error"])
    for r in map(trial_record, trials):
        err = (r.error or "").splitlines()[0][:120] if r.error else ""
        wall = f"{r.wall_s:.1f}" if r.wall_s is not None else ""
        t.add_row(str(r.id), str(r.block), case_label(stored_case(r.case)), r.status, wall, err)
    return t


def placements_table(trials: Iterable) -> TableData:
    """Where each trial of a run ran: executor, host, the engine's id, the machine."""
    t = TableData("where each trial ran", ["id", "block", "case", "status", "executor", "host", "engine id", "machine"])
    for r in map(trial_record, trials):
        p = r.placement or {}
        engine = p.get("slurm_job") or (p.get("ray_node") or "")[:12]
        machine = p.get("machine") or {}
        t.add_row(
            str(r.id),
            str(r.block),
            case_label(stored_case(r.case)),
            r.status,
            p.get("executor") or "—",
            str(p.get("host") or "—"),
            str(engine or "—"),
            str(machine.get("label") or "—"),
        )
    return t


def runs_table(runs: Iterable) -> TableData:
    # A run's name and start are one value each: never cut across lines (the other cells wrap).
    t = TableData(
        "runs",
        ["id", "name", "status", "started", "trials", "ok", "ran on (executor:host=trials)"],
        nowrap=frozenset({"name", "started"}),
    )
    for r in runs:
        where = r["placements"] if "placements" in r.keys() else None
        t.add_row(
            str(r["id"]), r["name"], r["status"], r["started_at"], str(r["n_trials"]), str(r["n_ok"]), where or "—"
        )
    return t


def samplers_table(rows) -> TableData:
    """Availability of each telemetry source (from samplers.availability() or the store)."""
    t = TableData("telemetry samplers", ["sampler", "status", "interval", "reason / what would enable it"])
    for r in rows:
        get = r.__getitem__ if hasattr(r, "keys") else lambda k, r=r: getattr(r, k)
        ok = bool(get("available"))
        interval = get("interval_s")
        detail = "" if ok else f"{get('reason')} — to enable: {get('hint')}"
        t.add_row(get("name"), "available" if ok else "unavailable", f"{interval:g} s" if interval else "—", detail)
    return t


ENERGY_GROUPS = (
    ("CPU package", lambda n: n.startswith("rapl.") and "package" in n),
    ("DRAM", lambda n: n.startswith("rapl.") and n.endswith("dram")),
    ("GPU", lambda n: n.startswith("gpu") and n.endswith(".energy")),
)
UTILIZATION = (
    ("process CPU %", "cpu.process_util:mean"),
    ("system CPU %", "cpu.system_util:mean"),
    ("steal %", "cpu.steal:mean"),
    ("others' CPU %", "cpu.others_util:mean"),
    ("GPU %", None),
    ("max temp °C", None),
    ("peak RSS MiB", "memory.peak_rss"),
)


def _median(values: list[float]) -> float | None:
    import statistics

    return statistics.median(values) if values else None


def _telemetry_values(measurements, flagged: set | None = None) -> dict[tuple[str, str, str], dict[int, list[float]]]:
    """(case, phase, metric) -> {trial_repeat_key: values}, measured repeats of ok trials only.
    Keys of values that carry an "unreliable" flag are added to `flagged`."""
    from collections import defaultdict

    out: dict = defaultdict(lambda: defaultdict(list))
    for m in measurements:
        if m["warmup"] or m["status"] != "ok" or m["value"] is None or m["repeat"] is None:
            continue
        key = (m["case_key"], m["phase"], m["metric"])
        out[key][(m["trial_id"], m["repeat"])].append(m["value"])
        if flagged is not None and (m["flag"] or "").startswith("unreliable"):
            flagged.add(key)
    return out


NO_ENERGY = "no energy source was available: "


def energy_note(summaries: list[CaseSummary], measurements, sampler_rows) -> str:
    """One line when no energy was measured (naming each source's reason), else ""."""
    if not sampler_rows:
        return ""
    caption = energy_table(summaries, measurements, sampler_rows).caption
    if not caption.startswith(NO_ENERGY):
        return ""
    # Each source's reason up to its first colon: the cause; the samplers table (--details) has the rest.
    reasons = [
        f"{r['name']}: {str(r['reason']).split(':')[0]}"
        for r in sampler_rows
        if r["name"] in ("rapl", "nvml") and not r["available"]
    ]
    return "energy: not measured (" + ("; ".join(reasons) or "rapl and nvml were not selected") + ")"


def samplers_line(sampler_rows) -> str:
    """The telemetry sources in one line: which measured, which could not and why, cut at
    the reason's first colon (the samplers table, `dlbench env` or --details, has the rest
    and what would enable each)."""
    if not sampler_rows:
        return "telemetry: none selected"

    def get(r: Any, key: str) -> Any:
        return r[key] if hasattr(r, "keys") or isinstance(r, dict) else getattr(r, key)

    on = [get(r, "name") for r in sampler_rows if get(r, "available")]
    off = [
        f"{get(r, 'name')} ({str(get(r, 'reason') or 'unavailable').split(':')[0].strip()})"
        for r in sampler_rows
        if not get(r, "available")
    ]
    return (
        "telemetry: "
        + (", ".join(on) or "nothing")
        + " measured"
        + (f"; not measured here: {', '.join(off)}" if off else "")
    )


def energy_table(summaries: list[CaseSummary], measurements, sampler_rows) -> TableData:
    """Seed 000's Table VI shape: energy per case and source, train and inference."""
    values = _telemetry_values(measurements)
    columns = varying_fields([s.case for s in summaries])
    t = TableData(
        "energy (median over measured repeats): train J, train J/sample, infer J/pass",
        [*_case_columns(columns), *(label for label, _ in ENERGY_GROUPS)],
        align=["left"] * len(columns) + ["right"] * len(ENERGY_GROUPS),
    )
    any_value = False
    # Inference: per pass over the test split (its window spans several); runs
    # stored before the pass count existed timed one pass: their "energy:".
    per_pass = {k for k, ph, m in values if ph == "infer" and m.startswith("energy_per_pass:")}
    for s in summaries:
        cells = []
        infer = "energy_per_pass:" if s.case_key in per_pass else "energy:"
        for _, match in ENERGY_GROUPS:
            parts = []
            for phase, prefix in (("train", "energy:"), ("train", "energy_per_sample:"), ("infer", infer)):
                per_repeat: dict = {}
                for (key, ph, metric), by_repeat in values.items():
                    if key == s.case_key and ph == phase and metric.startswith(prefix) and match(metric[len(prefix) :]):
                        for r, v in by_repeat.items():
                            per_repeat[r] = per_repeat.get(r, 0.0) + sum(v)  # sum the domains of one repeat
                med = _median(list(per_repeat.values()))
                parts.append("—" if med is None else f"{med:.4g}")
            if any(p != "—" for p in parts):
                any_value = True
            cells.append(" / ".join(parts))
        t.add_row(*(cell(s.case, c) for c in columns), *cells)
    if not any_value:
        reasons = [
            f"{r['name']}: {r['reason']}" for r in sampler_rows if r["name"] in ("rapl", "nvml") and not r["available"]
        ]
        t.caption = NO_ENERGY + ("; ".join(reasons) or "rapl and nvml were not selected")
    return t


def utilization_table(summaries: list[CaseSummary], measurements) -> TableData | None:
    """Seed 002's shape: utilization, temperature and memory per case and phase
    (median over measured repeats of each repeat's mean; temperature: max)."""
    flagged: set = set()
    values = _telemetry_values(measurements, flagged)
    metrics = {metric for (_, _, metric) in values}
    gpu_util = sorted(m for m in metrics if m.startswith("gpu") and m.endswith(".util:mean"))
    temps = sorted(
        m
        for m in metrics
        if m.startswith(("temp.", "gpu")) and m.endswith((":max",)) and (m.startswith("temp.") or ".temperature" in m)
    )
    columns = varying_fields([s.case for s in summaries])
    t = TableData(
        "utilization, temperature and memory per phase (median over measured repeats)",
        [*_case_columns([*columns, "phase"]), *(label for label, _ in UTILIZATION)],
        align=["left"] * (len(columns) + 1) + ["right"] * len(UTILIZATION),
    )
    rows = 0
    for s in summaries:
        for phase in ("train", "infer"):
            cells = []
            for label, metric in UTILIZATION:
                if label == "GPU %":
                    wanted = gpu_util
                elif label.startswith("max temp"):
                    wanted = temps
                else:
                    wanted = [metric] if metric is not None else []
                per_repeat: dict = {}
                unreliable = any((s.case_key, phase, mname) in flagged for mname in wanted)
                for mname in wanted:
                    for r, v in values.get((s.case_key, phase, mname), {}).items():
                        # Several sensors or GPUs: the hottest / the mean of their means.
                        per_repeat.setdefault(r, []).extend(v)
                agg = max if label.startswith(("max temp", "peak")) else (lambda v: sum(v) / len(v))
                med = _median([agg(v) for v in per_repeat.values()])
                if med is not None and label.startswith("peak RSS"):
                    med /= 2**20
                cells.append("—" if med is None else f"{med:.1f}" + ("*" if unreliable else ""))
            if any(c != "—" for c in cells):
                t.add_row(*(cell(s.case, c) for c in columns), phase, *cells)
                rows += 1
    if flagged:
        t.caption = (
            "* includes windows too short for the source's resolution (e.g. under 10 CPU-time ticks "
            "= 100 ms): unreliable, see the flag column of the measurements"
        )
    return t if rows else None


def telemetry_tables(summaries: list[CaseSummary], measurements, sampler_rows) -> list[TableData]:
    if not sampler_rows:
        return []
    order = ("model", "dataset", "batch_size", "init", "optimizer", "lr", "framework", "variant")
    summaries = sorted(summaries, key=lambda s: tuple(json.dumps(s.case.get(k)) for k in order))
    out = [samplers_table(sampler_rows)]
    energy = energy_table(summaries, measurements, sampler_rows)
    if not energy.caption.startswith(NO_ENERGY):  # a table of dashes says less than its caption: one line
        out.append(energy)
    util = utilization_table(summaries, measurements)
    if util is not None:
        out.append(util)
    return out


def _mib(value: float) -> str:
    return f"{value / 2**20:,.0f} MiB" if value >= 2**20 else f"{value / 2**10:,.0f} KiB"


def _final_losses(measurements: Iterable[Any]) -> dict[str, list[float]]:
    """case key -> the last epoch's train loss of each measured repeat (the highest seq)."""
    last: dict[tuple[str, Any, Any], tuple[int, float]] = {}
    names = ("phase", "metric", "value", "warmup", "status", "case_key", "trial_id", "repeat", "seq")
    for phase, metric, value, warmup, status, case_key, trial, repeat, seq in zip(
        *columns(measurements, names), strict=True
    ):
        if phase != "train" or metric != "loss" or value is None or warmup or status != "ok":
            continue
        key = (case_key, trial, repeat)
        seq = seq if seq is not None else -1
        if key not in last or seq >= last[key][0]:
            last[key] = (seq, float(value))
    out: dict[str, list[float]] = {}
    for (case_key, _, _), (_, value) in last.items():
        out.setdefault(case_key, []).append(value)
    return out


def _memory_notes(trials: Iterable[Any]) -> dict[str, str]:
    """case key -> why the device memory peak was not read (the worker's note), where it said."""
    out: dict[str, str] = {}
    for t in map(trial_record, trials):
        notes = (t.telemetry_notes or {}).get("memory") if isinstance(t.telemetry_notes, dict) else None
        for note in notes or []:
            if isinstance(note, str) and note.startswith("device memory peak: "):
                out.setdefault(t.case_key, note.removeprefix("device memory peak: "))
    return out


MEASURED_TITLE = "what else was measured (medians per case)"


def measured_table(
    summaries: list[CaseSummary], measurements: Iterable[Any], trials: Iterable[Any]
) -> TableData | None:
    """The stored measurements no other table shows, one row per case: compile (or trace)
    time and its share of the first epoch, training throughput, peak memory of the
    process and of the device, and the final train loss. A case without a value says
    "not measured" and why, never a blank or a zero."""
    timed = [s for s in summaries if s.stats]
    if not timed:
        return None
    measurements = list(measurements)
    losses = _final_losses(measurements)
    device_why = _memory_notes(trials)
    columns = [c for c in varying_fields([s.case for s in timed]) if c not in ("framework", "variant")]
    frameworks = sorted({case_label(s.case, setting=False) for s in timed})
    shown_names = dict(zip(frameworks, drop_shared(frameworks))) if len(frameworks) > 1 else {}
    heads = [
        "parameters",
        "compile",
        "% epoch 1",
        "samples/s",
        "peak RSS",
        "device",
        "final loss",
    ]
    t = TableData(
        MEASURED_TITLE,
        ["framework", *_case_columns(columns), *heads],
        align=["left"] * (len(columns) + 1) + ["right"] * len(heads),
        caption="parameters: the network's trainable parameters as the framework counts them (a "
        "different count across frameworks is a different network, or a redundant tensor `dlbench check` names); "
        "compile: the first step's graph build or trace, before training; % epoch 1: its share of the "
        "first epoch, compile / (compile + train time / epochs), as epochs are not timed one by one; samples/s: "
        "training throughput; peak RSS: the worker process's resident memory at its highest over the phases; "
        "device: the framework's own peak of accelerator memory; final loss: the last epoch's train loss",
    )

    def median(s: CaseSummary, phase: str, metric: str) -> float | None:
        st = s.stats.get((phase, metric))
        return st.median if st is not None and math.isfinite(st.median) else None

    for s in sorted(timed, key=lambda s: (json.dumps(s.case.get("model")), case_label(s.case))):
        framework = s.case.get("framework", "")
        compile_s, train_s = median(s, "compile", "time"), median(s, "train", "time")
        epochs = s.case.get("epochs") or 0
        if compile_s is None:
            compile_cell = share = NOT_MEASURED + "no compile phase stored"
        elif not epochs:
            # A k-NN fit has no step to build or trace: its "compile" phase times an empty call.
            compile_cell = share = NOT_MEASURED + "no step to compile (this case trains no epochs)"
        else:
            compile_cell = duration(compile_s)
            share = (
                f"{compile_s / (compile_s + train_s / epochs):.0%}"
                if train_s is not None and epochs and compile_s + train_s > 0
                else NOT_MEASURED + "no epoch timed (this case trains no epochs)"
            )
        rate = median(s, "train", "throughput")
        # The peak over the phases: each phase's peak is stored apart (VmHWM reset at its start).
        rss = [v for ph, m in s.stats if m == "memory.peak_rss" and (v := median(s, ph, m)) is not None]
        device = [v for ph, m in s.stats if m == "memory.device_peak" and (v := median(s, ph, m)) is not None]
        final = losses.get(s.case_key)
        memory_off = "no memory peak stored (the memory sampler was off)"
        device_cell = (
            _mib(max(device))
            if device
            else NOT_MEASURED
            + (device_why.get(s.case_key) or (f"{framework} reports no device memory here" if rss else memory_off))
        )
        parameters = median(s, "build", "parameters")
        t.add_row(
            shown_names.get(fw := case_label(s.case, setting=False), fw),
            *(cell(s.case, c) for c in columns),
            f"{parameters:,.0f}" if parameters is not None else NOT_MEASURED + "no parameter count stored",
            compile_cell,
            share,
            number(rate, 4) if rate is not None else NOT_MEASURED + "no train phase stored",
            _mib(max(rss)) if rss else NOT_MEASURED + memory_off,
            device_cell,
            f"{_median(final):.4g}" if final else NOT_MEASURED + f"{framework} reports no train loss",
        )
    return t


NOT_MEASURED = "not measured: "


def footnoted(table: TableData) -> TableData:
    """`table` for the console: each "not measured: why" cell as "— (a)", and each distinct
    why once under the table ("(a) not measured: ..."), so that a reason said for six
    cases does not make six rows eight lines tall."""
    from dataclasses import replace

    marks: dict[str, str] = {}
    rows = []
    for row in table.rows:
        cells = []
        for text in row:
            if text.startswith(NOT_MEASURED):
                mark = marks.setdefault(text, chr(ord("a") + len(marks)) if len(marks) < 26 else str(len(marks)))
                text = f"— ({mark})"
            cells.append(text)
        rows.append(cells)
    return replace(table, rows=rows, notes=[*table.notes, *(f"({mark}) {text}" for text, mark in marks.items())])
