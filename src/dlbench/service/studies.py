"""A study's report section: the paper's numbers beside one or more stored runs of it.

`dlbench study run` puts it before the run's report, `dlbench study report` before the
report of the runs it finds; both call `paper_section` (one machine per run, nothing
pooled across them).
"""

from __future__ import annotations

from typing import Any

from dlbench.analysis.criteria import ALPHA, BAND


def runs_of(store: Any, study: Any) -> list[Any]:
    """The study's stored runs in `store` (the study names them "study NAME vN ...")."""
    prefix = f"study {study.name} v"
    return [r for r in store.runs() if str(r["name"]).startswith(prefix)]


def explanations(store: Any, run_id: int, band: float = BAND, alpha: float = ALPHA) -> tuple[Any, ...]:
    """The findings of every `dlbench explain` run stored in `store` that explains a gap of
    run `run_id`, one per pair, in the explain report's own sentences (its headline, the
    share each toggled setting closes, and where the step time goes by op category)."""
    from dlbench.report import explain as words
    from dlbench.service import explain
    from dlbench.studies.paper_vs_run import Explanation

    found = []
    for row in store.runs():
        pairs = store.explain(int(row["id"]))
        if not pairs or pairs.get("from_run") != run_id:
            continue
        read = explain.read(store, int(row["id"]), band, alpha)
        for gap in read.gaps:
            sentences = [words.headline(gap), *words.ablation_lines(gap)]
            if gap.significant:
                # Where the step time goes, with the report's caution where the profiler's own
                # cost differs between A and B (its shares are then indicative only).
                sentences += words.profile_lines(gap, read.profiles)
            cases = {gap.pair.a.framework: gap.pair.a.as_dict(), gap.pair.b.framework: gap.pair.b.as_dict()}
            found.append(Explanation(read.run_id, str(gap.pair.a.model), cases, " ".join(sentences)))
    return tuple(found)


def machines(
    runs: list[tuple[Any, int]], band: float = BAND, alpha: float = ALPHA, busy_verdicts: bool = False
) -> list[Any]:
    """One paper_vs_run.Machine per (store, run id), its verdicts at `band` and `alpha` (a
    time measured on a busy machine undecided unless `busy_verdicts`, as in the report),
    with the explain runs stored beside it."""
    from dlbench.analysis.busy import busy_cases
    from dlbench.env import machine_label
    from dlbench.results import Results
    from dlbench.studies import paper_vs_run

    out: list[paper_vs_run.Machine] = []
    for store, run_id in runs:
        results = Results.of_store(store)
        fingerprint = store.run(run_id).environment
        label = machine_label(fingerprint)
        if any(m.label == label for m in out):
            label += f" (run {run_id})"

        def compare(a: str, b: str, metric: str, results=results, run_id=run_id):
            return results.compare(a, b, metric=metric, run=run_id, band=band, alpha=alpha, busy_verdicts=busy_verdicts)

        out.append(
            paper_vs_run.Machine(
                label,
                run_id,
                results.summary(run_id),
                compare,
                fingerprint,
                results.measurements(run_id),
                band=band,
                alpha=alpha,
                explanations=explanations(store, run_id, band, alpha),
                busy=frozenset() if busy_verdicts else frozenset(busy_cases(store.measurements(run_id, latency=False))),
            )
        )
    return out


def comparison(
    study: Any,
    facts: Any,
    runs: list[tuple[Any, int]],
    band: float = BAND,
    alpha: float = ALPHA,
    busy_verdicts: bool = False,
) -> Any:
    """The paper beside one or more stored runs (paper_vs_run.compare), one machine each."""
    from dlbench.studies import paper_vs_run

    return paper_vs_run.compare(study, facts, machines(runs, band, alpha, busy_verdicts))


def paper_section(
    study: Any,
    facts: Any,
    runs: list[tuple[Any, int]],
    band: float = BAND,
    alpha: float = ALPHA,
    busy_verdicts: bool = False,
) -> Any:
    """The paper vs this run section for one or more (store, run id), one machine each; its
    verdicts at `band` and `alpha` (busy_verdicts: as in the report)."""
    from dlbench.report import study_section

    found = comparison(study, facts, runs, band, alpha, busy_verdicts)
    scales = [str(store.run(run_id)["name"]).rsplit(" ", 1)[-1] for store, run_id in runs]
    scale = scales[0] if len(set(scales)) == 1 else "/".join(scales)
    changes = study.scales[scales[0]].changes if scales[0] in study.scales else ()
    preface = study_section.build(study, facts, found, scale, changes)
    if len(runs) > 1:
        preface.lines.append(
            f"{len(runs)} machines, one column group each, nothing pooled across them; the report below is "
            f"run {runs[0][1]}'s (the first machine's)."
        )
    return preface


# Effects whose power `study plan` states: a 10% difference and a factor of 2.
POWER_RATIOS = (1.1, 2.0)
POWER_SIMS = 400


def plan_design(study: Any, plan: Any, sims: int = POWER_SIMS) -> dict[str, Any]:
    """What `study plan` adds to a plan: the design's test and power for a 1.1x and a 2x
    effect (analysis.power, at the between-process spread measured here), and about how
    long it would run on this machine (studies.estimate, from the study's smoke run).
    `design` is None when the plan compares nothing; `estimate` None without the smoke run."""
    from dlbench.analysis import power as pw
    from dlbench.analysis.design import check
    from dlbench.studies import estimate as est

    design = check(plan)
    out: dict[str, Any] = {"design": None, "estimate": None}
    if design is not None:
        if design.one_process:
            test = "none: one process per case (repeats give a ratio, never a verdict)"
        elif design.paired:
            test = f"exact Wilcoxon signed-rank on trial medians paired by block, Holm over {design.family} pairs"
        else:
            test = f"exact Mann-Whitney on trial medians (unpaired), Holm over {design.family} pairs"
        cv = pw.trial_cv(plan.experiment.protocol.repeats)
        powers = [
            {"ratio": r, "power": (p := pw.power(design, r, cv, sims=sims)), "sim_error": pw.sim_error(p, sims)}
            for r in POWER_RATIOS
        ]
        out["design"] = {
            "members": design.members,
            "paired": design.paired,
            "independent_processes": not design.one_process,
            "trials": plan.experiment.protocol.trials,
            "repeats": plan.experiment.protocol.repeats,
            "family": design.family,
            "test": test,
            "smallest_p": design.smallest_p,
            "alpha": design.alpha,
            "decidable": design.decidable,
            "cv": cv,
            "cv_source": pw.CV_SOURCE,
            "sims": sims,
            "power": powers,
        }
    db = est.smoke_db(study.name)
    if db is not None:
        e = est.estimate(plan, db)
        out["estimate"] = {
            "seconds": e.seconds,
            "words": est.words(e.seconds),
            "processes": e.processes,
            "startup_s": e.startup_s,
            "basis": e.basis,
            "borrowed": list(e.borrowed),
        }
    return out
