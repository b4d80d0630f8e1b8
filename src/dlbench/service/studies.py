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


def _same_machine(a: dict[str, Any], b: dict[str, Any]) -> bool:
    from dlbench.env import machine_label

    return machine_label(a) == machine_label(b) and a.get("hostname") == b.get("hostname")


def _case_keys(store: Any, run_id: int) -> set[str]:
    return {str(t.case_key) for t in store.trials(run_id)}


def parts(store: Any, study: Any, run_id: int) -> list[int]:
    """The runs that make one measurement with run `run_id`: it, and each earlier run of the
    same study and scale in `store`, taken on the same machine (CPU, cores, GPUs, host name),
    that measured none of the cases already taken: a study narrowed with --model for time,
    then the rest run on another day into the same database. Newest first, so a rerun of
    the same cases replaces the older run rather than joining it; returned in run order."""
    row = store.run(run_id)
    name = str(row["name"])
    prefix = f"study {study.name} v"
    if not name.startswith(prefix):
        return [run_id]
    scale = name.rsplit(" ", 1)[-1]
    taken, chosen = _case_keys(store, run_id), [run_id]
    for other in sorted((r for r in runs_of(store, study) if int(r["id"]) < run_id), key=lambda r: -int(r["id"])):
        if str(other["name"]).rsplit(" ", 1)[-1] != scale:
            continue
        if not _same_machine(store.run(int(other["id"])).environment, row.environment):
            continue
        keys = _case_keys(store, int(other["id"]))
        if keys and not keys & taken:
            taken |= keys
            chosen.append(int(other["id"]))
    return sorted(chosen)


def group_parts(study: Any, runs: list[tuple[Any, int]]) -> list[list[tuple[Any, int]]]:
    """`runs` grouped into machines: runs of one store that are all parts of one measurement
    (`parts` of the newest) share a group, in run order; every other run is a group of its own."""
    groups: list[list[tuple[Any, int]]] = []
    for store, run_id in runs:
        for group in groups:
            ids = [rid for _, rid in group] + [run_id]
            if group[0][0] is store and set(ids) <= set(parts(store, study, max(ids))):
                group.append((store, run_id))
                group.sort(key=lambda pair: pair[1])
                break
        else:
            groups.append([(store, run_id)])
    return groups


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
    runs: list[tuple[Any, int]],
    band: float = BAND,
    alpha: float = ALPHA,
    busy_verdicts: bool = False,
    study: Any = None,
) -> list[Any]:
    """One paper_vs_run.Machine per (store, run id), its verdicts at `band` and `alpha` (a
    time measured on a busy machine undecided unless `busy_verdicts`, as in the report),
    with the explain runs stored beside it. With `study`, runs that are parts of one
    measurement (`parts`) make one Machine: their cases side by side, each comparison
    made within the run that measured both of its cases, nothing pooled across runs."""
    import pandas as pd

    from dlbench.analysis.busy import busy_cases
    from dlbench.env import machine_label
    from dlbench.results import Results
    from dlbench.studies import paper_vs_run

    groups = group_parts(study, runs) if study is not None else [[r] for r in runs]
    out: list[paper_vs_run.Machine] = []
    for group in groups:
        store = group[0][0]
        ids = [rid for _, rid in group]
        run_id = ids[0]
        results = Results.of_store(store)
        fingerprint = store.run(run_id).environment
        label = machine_label(fingerprint)
        if any(m.label == label for m in out):
            label += f" ({'run' if len(ids) == 1 else 'runs'} {'+'.join(str(i) for i in ids)})"

        def compare(a: str, b: str, metric: str, results=results, ids=tuple(ids)):
            frames = []
            for rid in ids:  # each run's own comparison sets: a case is compared within its run
                try:
                    frame = results.compare(
                        a, b, metric=metric, run=rid, band=band, alpha=alpha, busy_verdicts=busy_verdicts
                    )
                except ValueError:  # one side is not in this part
                    if len(ids) == 1:
                        raise
                    continue
                if frame is not None and len(frame):
                    frames.append(frame)
            return pd.concat(frames, ignore_index=True) if len(frames) > 1 else (frames[0] if frames else None)

        def joined(frames: list[Any]) -> Any:
            return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]

        busy: set[str] = set()
        if not busy_verdicts:
            for rid in ids:
                busy |= set(busy_cases(store.measurements(rid, latency=False)))
        out.append(
            paper_vs_run.Machine(
                label,
                run_id,
                joined([results.summary(rid) for rid in ids]),
                compare,
                fingerprint,
                joined([results.measurements(rid) for rid in ids]),
                band=band,
                alpha=alpha,
                explanations=tuple(e for rid in ids for e in explanations(store, rid, band, alpha)),
                busy=frozenset(busy),
                run_ids=tuple(ids),
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

    return paper_vs_run.compare(study, facts, machines(runs, band, alpha, busy_verdicts, study=study))


def paper_section(
    study: Any,
    facts: Any,
    runs: list[tuple[Any, int]],
    band: float = BAND,
    alpha: float = ALPHA,
    busy_verdicts: bool = False,
    reported: int | None = None,
) -> Any:
    """The paper vs this run section for one or more (store, run id), one machine each (the
    parts of one measurement, `parts`, one machine together); its verdicts at `band` and
    `alpha` (busy_verdicts: as in the report). `reported`: the run whose report follows
    the section (default: the first)."""
    from dlbench.report import study_section

    found = comparison(study, facts, runs, band, alpha, busy_verdicts)
    scales = [str(store.run(run_id)["name"]).rsplit(" ", 1)[-1] for store, run_id in runs]
    scale = scales[0] if len(set(scales)) == 1 else "/".join(scales)
    changes = study.scales[scales[0]].changes if scales[0] in study.scales else ()
    preface = study_section.build(study, facts, found, scale, changes)
    reported = runs[0][1] if reported is None else reported
    for machine in found.machines:
        if len(machine.run_ids) > 1:
            others = [i for i in machine.run_ids if i != reported]
            preface.lines.append(
                f"{machine.label}: {machine.runs}, one measurement made in parts (the same study and scale on this "
                f"machine, each run measuring other cases); every comparison is made within the run that measured "
                f"both of its cases. Each run's own report: "
                + ", ".join(f"dlbench report --run {i} --db {runs[0][0].path}" for i in others)
                + "."
            )
    if len(found.machines) > 1:
        preface.lines.append(
            f"{len(found.machines)} machines, one column group each, nothing pooled across them; the report below is "
            f"run {reported}'s (the first machine's)."
        )
    elif len(runs) > 1:
        preface.lines.append(f"The report below is run {reported}'s.")
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
