"""JSON documents for scripts: a report, a run-vs-run comparison, the runs, a plan, this machine.

Each document is plain data laid out from the objects the other formats render (the
Report's rankings, pair verdicts and case summaries; compare's RunDiffs; the store's run
records; a Plan; the environment fingerprint): nothing is recomputed here. Every
document names its kind and schema version ("schema": "dlbench/report",
"schema_version": 1; dlbench.documents); src/dlbench/schemas/output.schema.json (JSON
Schema draft 2020-12) describes each kind, `dlbench export`'s JSON (dlbench.results)
included, and docs/json.md documents them and when the version changes.

Numbers stay numbers at full precision; a value that is not finite (NaN, an infinite
CI bound) is null, since JSON has no NaN. Times are in seconds.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

# The header every document starts with, from dlbench.documents (re-exported: `as` says so).
from dlbench.documents import KINDS as KINDS
from dlbench.documents import SCHEMA_FILE as SCHEMA_FILE
from dlbench.documents import SCHEMA_VERSION as SCHEMA_VERSION
from dlbench.documents import header as header


def _plain(value: Any) -> Any:
    """`value` as JSON data: non-finite floats null, tuples lists, keys text, anything else its text."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _plain(dataclasses.asdict(value))
    if hasattr(value, "item"):  # a numpy scalar
        return _plain(value.item())
    return str(value)


def dumps(document: dict[str, Any]) -> str:
    """The document as text, one JSON value and a newline (allow_nan=False: never NaN)."""
    return json.dumps(_plain(document), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def _run_named(found: dict[str, Any]) -> dict[str, Any]:
    """A run-vs-run comparison with each estimate and sample size named by its run: run_vs_run
    compares B relative to A, so the comparison's estimate_a and n_a are run B's.
    estimate_run_a, estimate_run_b, n_run_a and n_run_b say so; estimate_a, estimate_b, n_a
    and n_b are deprecated and go at the next schema version (docs/json.md)."""
    return {
        **found,
        "estimate_run_a": found["estimate_b"],
        "estimate_run_b": found["estimate_a"],
        "n_run_a": found["n_b"],
        "n_run_b": found["n_a"],
    }


def comparison(c: Any) -> dict[str, Any]:
    """One stats.Comparison: the ratio estimate_a / estimate_b, its CI, p, verdict and the design it rests on."""
    lo, hi = c.ratio_ci
    why = c.why
    return {
        "ratio": c.ratio,
        "ci_low": lo,
        "ci_high": hi,
        "ci_method": c.ci_method,
        "estimate_a": c.estimate_a,
        "estimate_b": c.estimate_b,
        "quantile": c.quantile,
        "test": c.test,
        "test_method": c.test_method,
        "statistic_name": c.statistic_name,
        "statistic": c.statistic,
        "p": c.p,
        "p_raw": c.p_value,
        "p_adjusted": c.p_adjusted,
        "p_at_floor": c.at_floor,
        "family_size": c.family_size,
        "cliffs_delta": c.cliffs_delta,
        "magnitude": c.magnitude,
        "verdict": c.verdict,
        "decided": c.decided,
        "band": c.band,
        "alpha": c.alpha,
        "paired": c.paired,
        "independent": c.independent,
        "interleaved": c.interleaved,
        "n_a": c.n_a,
        "n_b": c.n_b,
        "why": None
        if why is None
        else {"cause": why.cause, "need": why.need, "projected": why.projected, "projection": why.projection or None},
    }


# -- report ------------------------------------------------------------------------------


def _words() -> dict[tuple[str, str], str]:
    """(phase, metric) -> the words of the headline metrics, as the CSV format declares them."""
    from dlbench.report.csv_out import METRICS

    return {(phase, metric): words for phase, metric, words, _ in METRICS}


def _ranking(r: Any) -> dict[str, Any]:
    """A comparison set's metric, best first: the winner only where every other member is decided worse."""
    from dlbench.analysis import quality

    q = quality.by_label(r.metric) if r.phase == quality.PHASE else None
    worse = q.worse_verdict if q is not None else "slower"
    decided = all(s.comparison is not None and s.comparison.verdict == worse for s in r.standings[1:])
    return {
        "set": r.set_label,
        "phase": r.phase,
        "metric": r.metric,
        "unit": q.unit if q is not None else "s",
        "higher_is_better": bool(q is not None and q.higher_is_better),
        "paired": r.paired,
        "best": r.best.name,
        "winner": r.best.name if decided else None,
        "members": [
            {
                "name": s.name,
                "median": s.estimate,
                # name relative to the best: ratio = median(name) / median(best)
                "versus_best": None if s.comparison is None else comparison(s.comparison),
                "difference_ci": None if s.difference_ci is None else list(s.difference_ci),
            }
            for s in r.standings
        ],
    }


def _case(s: Any, words: dict[tuple[str, str], str], units: dict, cis: dict | None = None) -> dict[str, Any]:
    from dlbench.cases import case_label

    metrics = []
    cis = cis or {}
    for (phase, metric), st in s.stats.items():
        metrics.append(
            {
                "phase": phase,
                "metric": metric,
                "label": words.get((phase, metric), f"{phase} {metric}"),
                "unit": units.get((phase, metric)),
                **{k: getattr(st, k) for k in ("n", "mean", "sd", "median", "q1", "q3", "min", "max")},
                # The median's interval (Report.median_cis), or null bounds and why where none is.
                "median_ci": cis.get((s.case_key, phase, metric)),
            }
        )
    return {
        "case_key": s.case_key,
        "label": case_label(s.case),
        "case": s.case,
        "trials": s.trials,
        "statuses": s.statuses,
        # One trial: the values are repeats inside one process (correlated); else one median per trial.
        "independent": not s.within_process,
        "sample": "repeats in one process" if s.within_process else "one median per trial",
        "metrics": metrics,
    }


def table(t: Any, section: str = "") -> dict[str, Any]:
    """A TableData as it is shown in every format: its cells are display text."""
    return {
        "section": section,
        "title": t.title,
        "columns": list(t.columns),
        "rows": [list(r) for r in t.rows],
        "caption": t.caption,
        "notes": list(t.notes),
    }


def report_document(report: Any) -> dict[str, Any]:
    """The `report --format json` document of a built Report (dlbench.report.model)."""
    words = _words()
    env = report.environment or {}
    run = report.run
    experiment = report.experiment
    cases = [_case(s, words, report.units, report.median_cis) for s in report.summaries]
    with_values = [c for c in cases if c["metrics"]]
    doc = header("report")
    doc.update(
        {
            "run": {
                "id": run["id"],
                "name": run["name"],
                "status": run["status"],
                "started_at": run["started_at"],
                "finished_at": run.get("finished_at"),
                "command": run.get("command"),
                "config_source": run.get("config_source"),
                "dlbench_version": run.get("dlbench_version"),
            },
            # The verdict criteria (every comparison carries them too).
            "criteria": {"band": report.band, "alpha": report.alpha},
            "answer": {
                "rankings": [_ranking(r) for r in report.rankings],
                "lines": report.answer.lines() if report.answer.items else [],
                "notes": list(report.answer.notes),
                "empty": report.answer.empty or None,
            },
            "comparisons": [
                {"set": v.set_label, "metric": v.metric, "a": v.a, "b": v.b, **comparison(v.comparison)}
                for v in report.pairs
            ],
            "cases": cases,
            "design": {
                "independent_processes": bool(with_values) and all(c["independent"] for c in with_values),
                "one_process_cases": [c["case_key"] for c in with_values if not c["independent"]],
                "paired_by_block": any(r.paired for r in report.rankings),
                "blocks": len({m.block for m in report.manifests}),
                "trials": len(report.manifests),
            },
            "settings": report.settings,
            "protocol": experiment.get("protocol", {}),
            "machine": {k: v for k, v in env.items() if k != "packages"},
            "packages": env.get("packages", {}),
            "failed_trials": [
                {"id": m.trial_id, "block": m.block, "case": m.case, "status": m.status, "error": m.error}
                for m in report.manifests
                if m.status != "ok"
            ],
            "preface": None
            if report.preface is None
            else {
                "title": report.preface.title,
                "lines": list(report.preface.lines),
                "tables": [table(t) for t in report.preface.tables],
            },
            "tables": [table(t, section) for section, tables in report.document_tables() for t in tables],
        }
    )
    return doc


def render(report: Any, figures: Any = (), base: Any = None) -> str:
    """The Format writer (dlbench.report.formats): figures are not part of a JSON document."""
    return dumps(report_document(report))


# -- compare -------------------------------------------------------------------------------


def compare_document(
    diffs: list[Any],
    a: dict[str, Any],
    b: dict[str, Any],
    band: float,
    alpha: float,
    quantile: float,
    notes: list[str],
    allow_missing: bool,
) -> dict[str, Any]:
    """`compare --format json`: B relative to A per case and metric (ratio > 1: B's value is
    larger), the regression flags, and the counts the exit status follows from. `a`, `b`:
    {"ref", "db", "run"} of each side."""
    from dlbench.cases import case_label

    rows = []
    for d in diffs:
        c = d.comparison
        rows.append(
            {
                "case": d.case,
                "label": case_label(d.case),
                "metric": d.metric,
                "unit": d.declared.unit if d.declared is not None else "s",
                "verdict": d.verdict,
                "regression": d.regression,
                "missing": c is None,
                "sample": d.sample or None,
                # run_vs_run compares B relative to A: the comparison's a is run B, its b run A.
                "a_value": None if c is None else c.estimate_b,
                "b_value": None if c is None else c.estimate_a,
                "comparison": None if c is None else _run_named(comparison(c)),
            }
        )
    regressions = sum(d.regression for d in diffs)
    missing = sum(d.comparison is None for d in diffs)
    doc = header("compare")
    doc.update(
        {
            "a": a,
            "b": b,
            "criteria": {"band": band, "alpha": alpha, "quantile": quantile},
            "comparisons": rows,
            "summary": {
                "comparisons": len(diffs),
                "regressions": regressions,
                "missing": missing,
                "no_verdict": sum(
                    d.comparison is not None and not (d.comparison.independent and d.comparison.interleaved)
                    for d in diffs
                ),
                "allow_missing": allow_missing,
                # What `dlbench compare` exits with: 1 on a regression, 3 on missing values, else 0.
                "exit_status": 1 if regressions else 3 if missing and not allow_missing else 0,
            },
            "notes": notes,
        }
    )
    return doc


# -- runs, trials ------------------------------------------------------------------------


def runs_document(runs: list[Any]) -> dict[str, Any]:
    """`runs --format json`: every stored run with its trial counts and where they ran."""
    doc = header("runs")
    doc["runs"] = [
        {
            "id": r.id,
            "name": r.name,
            "status": r.status,
            "started_at": r.started_at,
            "finished_at": r.finished_at,
            "command": r.command,
            "trials": r.n_trials,
            "ok": r.n_ok,
            "placements": r.placements,
            "dlbench_version": r.dlbench_version,
        }
        for r in runs
    ]
    return doc


def trials_document(run_id: int, trials: list[Any]) -> dict[str, Any]:
    """`runs --run ID --format json`: each trial of a run and where it ran."""
    from dlbench.cases import case_label, stored_case
    from dlbench.store.records import trial_record

    doc = header("trials")
    doc["run"] = run_id
    doc["trials"] = []
    for r in map(trial_record, trials):
        p = r.placement or {}
        machine = p.get("machine") or {}
        case = stored_case(r.case)
        doc["trials"].append(
            {
                "id": r.id,
                "block": r.block,
                "position": r.position,
                "case_key": r.case_key,
                "label": case_label(case),
                "case": case,
                "status": r.status,
                # When the worker ran (UTC, ISO 8601, as stored) and its wall time in seconds; null
                # for a trial that has not started or ended.
                "started_at": r.started_at,
                "finished_at": r.finished_at,
                "wall_s": r.wall_s,
                "executor": p.get("executor"),
                "host": p.get("host"),
                "engine_id": p.get("slurm_job") or p.get("ray_node"),
                "machine": machine.get("label"),
            }
        )
    return doc


# -- plan ----------------------------------------------------------------------------------


def plan_document(plan: Any) -> dict[str, Any]:
    """`plan --format json`: the trials in order, the skipped cells with reasons, the protocol,
    whether the design can reach a verdict (analysis.design.check, as `dlbench plan` words it;
    null when the plan compares nothing) and how each of the user's data files is read."""
    from dlbench import registry
    from dlbench.analysis.design import check

    exp = plan.experiment
    design = check(plan)
    names = {t.case.dataset for t in plan.trials} | {s.cell["dataset"] for s in plan.skipped}
    readings = [r for r in (registry.dataset(n, exp.sources).reading for n in sorted(names)) if r]
    doc = header("plan")
    doc.update(
        {
            "experiment": {"name": exp.name, "description": exp.description, "source": exp.source},
            "protocol": dataclasses.asdict(exp.protocol),
            "cases": [{"key": c.key, "case": c.as_dict()} for c in plan.cases],
            "trials": [
                {"block": t.block, "position": t.position, "case_key": t.case.key, "case": t.case.as_dict()}
                for t in plan.trials
            ],
            "skipped": [{"cell": s.cell, "reason": s.reason} for s in plan.skipped],
            "design": None
            if design is None
            else {
                "decidable": design.decidable,
                "independent_processes": not design.one_process,
                "members": design.members,
                "family": design.family,
                "paired": design.paired,
                "n": design.n,
                "smallest_p": design.smallest_p,
                "trials_needed": design.trials_needed,
                "alpha": design.alpha,
            },
            "data_readings": readings,
        }
    )
    return doc


# -- env -----------------------------------------------------------------------------------


def env_document(fingerprint: dict[str, Any], samplers: list[Any]) -> dict[str, Any]:
    """`env --format json`: this machine's fingerprint and which telemetry samplers can measure here."""
    doc = header("env")
    doc["machine"] = fingerprint
    doc["samplers"] = [
        {"name": s.name, "available": s.available, "reason": s.reason, "hint": s.hint, "interval_s": s.interval_s}
        for s in samplers
    ]
    return doc


def env_table(fingerprint: dict[str, Any]) -> Any:
    """`dlbench env`'s table of the fingerprint (key, value), from the same dict the JSON document holds."""
    from dlbench.report.render import TableData

    def text(value: Any) -> str:
        if isinstance(value, dict):  # {"torch": {"torch": "2.13"}} -> "torch (torch 2.13)"
            return ", ".join(
                f"{k} ({text(v)})"
                if isinstance(v, dict)
                else text(v)
                if str(v).startswith(str(k))
                else f"{k} {text(v)}"
                for k, v in value.items()
            )
        if isinstance(value, list | tuple):
            return ", ".join(text(v) for v in value)
        return "—" if value is None else str(value)

    t = TableData("this machine", ["key", "value"])
    for key, value in fingerprint.items():
        t.add_row(key, text(value) or "—")
    return t


def gate_document(
    result: Any, a: dict[str, Any], b: dict[str, Any], settings: Any, undecided: str, exit_status: int
) -> dict[str, Any]:
    """`gate --format json`: how the gate was designed, why it stopped, and each comparison's
    last look (ratio B/A, both one-sided p-values, the decision). `a`, `b`: {"ref", "db", "run"}
    of each side; `result`: service.gate.GateResult; `settings`: its GateSettings; `exit_status`:
    the status the command exits with."""
    from dlbench.analysis.sequential import first_look
    from dlbench.cases import case_label

    words = {"slower": "slower", "within": "within", "continue": "undecided", "missing": "missing"}
    rows = []
    for g in result.compared:
        look = g.look
        rows.append(
            {
                "case": g.case,
                "label": case_label(g.case),
                "metric": g.metric,
                "decision": words[g.decision],
                "pairs": None if look is None else look.pairs,
                "busy_pairs": g.busy_pairs,
                "ratio": None if look is None else look.ratio,
                "p_slower": None if look is None else look.p_slower,
                "p_within": None if look is None else look.p_within,
            }
        )
    doc = header("gate")
    doc.update(
        {
            "a": a,
            "b": b,
            "settings": {
                "max_blocks": settings.max_blocks,
                "max_minutes": settings.max_minutes,
                "band": settings.band,
                "alpha": settings.alpha,
                "metrics": list(settings.metrics),
                "undecided": undecided,
            },
            "design": {
                "level": result.level,
                "family": result.family,
                "max_pairs": result.max_pairs,
                "first_look": first_look(result.level),
            },
            "rounds": result.rounds,
            "minutes": round(result.minutes, 3),
            "stopped": result.stopped,
            "comparisons": rows,
            "summary": {
                "comparisons": len(rows),
                "regressions": sum(r["decision"] == "slower" for r in rows),
                "undecided": sum(r["decision"] == "undecided" for r in rows),
                "missing": sum(r["decision"] == "missing" for r in rows),
                "exit_status": exit_status,
            },
        }
    )
    return doc
