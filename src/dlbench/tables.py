"""Console tables (rich) for plans, runs, summaries and the environment.

Renderers take plain data and return rich renderables; the CLI prints them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from rich.table import Table

from dlbench.plan import Plan
from dlbench.summary import HEADLINE, CaseSummary, format_stat


def case_label(case: dict) -> str:
    parts = [f"{case['framework']}:{case['variant']}", case["model"], case["dataset"], f"b{case['batch_size']}"]
    if case.get("optimizer") not in (None, "none"):
        parts += [case["init"], f"{case['optimizer']} lr={case['lr']:g}"]
        parts.append(f"{case['epochs']} ep" if case.get("epochs") else f"{case['steps']} steps")
    return " ".join(parts)


def plan_table(plan: Plan) -> Table:
    p = plan.experiment.protocol
    t = Table(title=f"{len(plan.trials)} trials ({len(plan.cases)} cases x {p.trials} trial(s)), "
                    f"{p.warmup} warm-up + {p.repeats} measured repeats each")
    for col in ("#", "block", "case", "key"):
        t.add_column(col)
    for i, trial in enumerate(plan.trials, 1):
        t.add_row(str(i), str(trial.block), case_label(trial.case.as_dict()), trial.case.key)
    return t


def skipped_table(skipped: Iterable[tuple[dict, str]]) -> Table | None:
    rows = list(skipped)
    if not rows:
        return None
    t = Table(title=f"{len(rows)} skipped cells")
    t.add_column("framework")
    t.add_column("model")
    t.add_column("dataset")
    t.add_column("reason", overflow="fold")
    for cell, reason in rows:
        t.add_row(str(cell["framework"]), str(cell["model"]), str(cell["dataset"]), reason)
    return t


CASE_COLUMNS = ("framework", "variant", "model", "dataset", "batch_size", "init", "optimizer", "lr",
                "epochs", "steps", "threads", "device")


NOT_APPLICABLE = (None, "none")


def _applicable(cases: list[dict], field: str) -> set[str]:
    """Distinct values of a field, ignoring cases where it does not apply (knn has no lr)."""
    return {json.dumps(x.get(field)) for x in cases
            if x.get(field) not in NOT_APPLICABLE and x.get("optimizer") != "none"
            or field in ("framework", "variant", "model", "dataset", "batch_size", "threads", "device")}


def varying_fields(cases: list[dict]) -> list[str]:
    """Case fields whose value differs between cases (always framework and model)."""
    return [c for c in CASE_COLUMNS if c in ("framework", "model") or len(_applicable(cases, c)) > 1]


def cell(case: dict, field: str) -> str:
    value = case.get(field)
    if case.get("optimizer") == "none" and field in ("init", "optimizer", "lr", "epochs", "steps"):
        return "—"
    return "—" if value is None else str(value)


def common_settings(cases: list[dict]) -> str:
    """The settings every case shares, printed once above the tables."""
    varying = varying_fields(cases)
    out = []
    for c in CASE_COLUMNS:
        values = _applicable(cases, c)
        if c not in varying and len(values) == 1:
            out.append(f"{c}={json.loads(values.pop())}")
    return ", ".join(out)


def _fixed(stats, scale: float, decimals: int) -> dict[str, str]:
    import math

    def f(v: float) -> str:
        return "—" if not math.isfinite(v) else f"{v * scale:.{decimals}f}"

    return {"n": str(stats.n), "mean ± sd": f"{f(stats.mean)} ± {f(stats.sd)}", "median": f(stats.median),
            "Q1": f(stats.q1), "Q3": f(stats.q3)}


def summary_tables(summaries: list[CaseSummary]) -> list[Table]:
    """One table per headline metric, one row per case: n, mean ± sd, median, Q1, Q3."""
    # Rows grouped the way the seed tables are: by model and dataset, then framework.
    order = ("model", "dataset", "batch_size", "init", "optimizer", "lr", "framework", "variant")
    summaries = sorted(summaries, key=lambda s: tuple(json.dumps(s.case.get(k)) for k in order))
    cases = [s.case for s in summaries]
    columns = varying_fields(cases)
    tables = []
    for phase, metric, label, scale, unit in HEADLINE:
        t = Table(title=f"{label} ({unit})")
        for col in columns:
            t.add_column(col.replace("batch_size", "batch"))
        for col in ("n", "mean ± sd", "median", "Q1", "Q3"):
            t.add_column(col, justify="right", no_wrap=True)
        t.add_column("note")
        any_row = False
        for s in summaries:
            stats = s.stats.get((phase, metric))
            if stats is None and "ok" not in s.statuses:
                continue
            if stats is None:
                cells = format_stat(None, scale)
            elif unit == "%":
                cells = _fixed(stats, scale, 2)
            else:
                cells = format_stat(stats, scale, digits=4)
            notes = []
            if stats is not None and stats.noisy and phase != "accuracy":
                notes.append("IQR/median>10%")
            if s.within_process and stats is not None and stats.n > 1:
                notes.append("1 process")
            bad = {k: v for k, v in s.statuses.items() if k != "ok"}
            if bad:
                notes.append(", ".join(f"{v} {k}" for k, v in bad.items()))
            t.add_row(*(cell(s.case, c) for c in columns), cells["n"], cells["mean ± sd"], cells["median"],
                      cells["Q1"], cells["Q3"], "; ".join(notes))
            any_row = True
        if any_row:
            tables.append(t)
    return tables


def latency_table(summaries: list[CaseSummary], latencies: dict) -> Table | None:
    """p50 / p90 / p99 of single-batch inference latency at batch B and at batch 1."""
    rows = [(s, latencies[s.case_key]) for s in summaries if s.case_key in latencies]
    if not rows:
        return None
    columns = varying_fields([s.case for s, _ in rows])
    t = Table(title="inference latency per call (ms): p50 / p90 / p99")
    for col in columns:
        t.add_column(col.replace("batch_size", "batch"))
    t.add_column("at batch B", justify="right")
    t.add_column("at batch 1", justify="right")
    for s, phases in sorted(rows, key=lambda r: tuple(json.dumps(r[0].case.get(k)) for k in
                                                       ("model", "dataset", "batch_size", "framework", "variant"))):
        def fmt(phase: str) -> str:
            if phase not in phases:
                return "—"
            n, p50, p90, p99 = phases[phase]
            return f"{p50 * 1e3:.3g} / {p90 * 1e3:.3g} / {p99 * 1e3:.3g} (n={n})"
        t.add_row(*(cell(s.case, c) for c in columns), fmt(f"latency_b{s.case['batch_size']}"), fmt("latency_b1"))
    return t


def trials_table(trials: Iterable) -> Table:
    t = Table(title="trials")
    for col in ("id", "block", "case", "status", "wall s", "error"):
        t.add_column(col, overflow="fold")
    for r in trials:
        err = (r["error"] or "").splitlines()[0][:120] if r["error"] else ""
        wall = f"{r['wall_s']:.1f}" if r["wall_s"] is not None else ""
        t.add_row(str(r["id"]), str(r["block"]), case_label(json.loads(r["case_json"])), r["status"], wall, err)
    return t


def runs_table(runs: Iterable) -> Table:
    t = Table(title="runs")
    for col in ("id", "name", "status", "started", "trials", "ok"):
        t.add_column(col)
    for r in runs:
        t.add_row(str(r["id"]), r["name"], r["status"], r["started_at"], str(r["n_trials"]), str(r["n_ok"]))
    return t
