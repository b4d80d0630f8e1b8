"""explain: re-run a gap between two cases with one setting toggled at a time, and report the share each closes."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from dlbench.analysis.criteria import ALPHA, BAND
from dlbench.cli.app import app
from dlbench.cli.common import (
    ALPHA_OPT,
    BAND_OPT,
    DB,
    FORMAT,
    NamedDatasetOpt,
    NamedModelOpt,
    check_criteria,
    check_output,
    console,
    db_text,
    execute,
    fail,
    invocation,
    named_sources,
    open_store,
    parts_failed,
    print_plan,
    write_output,
)


@app.command()
def explain(
    ctx: typer.Context,
    run_id: Annotated[
        int | None, typer.Argument(help="The run whose cases are explained (default: the latest run).")
    ] = None,
    case: Annotated[
        str | None,
        typer.Option(
            "--case",
            help="A, the faster case: framework[:variant] (torch, tensorflow:xla), key=value settings "
            "(threads=2), or a case key's start.",
        ),
    ] = None,
    vs: Annotated[str | None, typer.Option("--vs", help="B, the slower case, named the same way.")] = None,
    vs_run: Annotated[
        int | None,
        typer.Option(help="Take B from this run (default: RUN's), e.g. a run made with other --threads."),
    ] = None,
    where: Annotated[
        str,
        typer.Option(
            help="Narrow both --case and --vs (or the comparison sets), e.g. model=resnet18,batch_size=32; "
            "a|b for either value (framework=torch|tensorflow)."
        ),
    ] = "",
    only: Annotated[
        str | None,
        typer.Option(
            help="Toggle only these settings, comma list (threads, variant, pipeline, layout, precision, init, "
            "runtime); SETTING=VALUE toggles it to that value instead (variant=xla, precision=tf32, threads=2, "
            "runtime=malloc-fixed+interop-fixed)."
        ),
    ] = None,
    blocks: Annotated[
        int,
        typer.Option(
            help="Interleaved blocks (one fresh worker per case each); a gap and a closure need 6 or more "
            "(the exact Wilcoxon test over trial medians)."
        ),
    ] = 6,
    repeats: Annotated[int, typer.Option(help="Measured repeats per trial.")] = 5,
    warmup: Annotated[int, typer.Option(help="Warm-up repeats per trial (stored, flagged).")] = 1,
    profile_steps: Annotated[
        int, typer.Option(help="Training steps profiled per trial, after its timed repeats (0: no profile).")
    ] = 10,
    profile_calls: Annotated[
        int, typer.Option(help="Profiled calls per trial, each on a fresh model (and as many without the profiler).")
    ] = 3,
    traces: Annotated[
        Path | None, typer.Option(help="Keep every profile's trace (Chrome/Perfetto .json.gz) in this folder.")
    ] = None,
    model: NamedModelOpt = None,
    dataset: NamedDatasetOpt = None,
    show: Annotated[
        int | None, typer.Option(help="Print the report of this stored explain run instead of running one.")
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="Print the pairs, toggles and trials this explain would run, and stop: nothing is stored."
        ),
    ] = False,
    fmt: FORMAT = "console",
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write the report to this file.")] = None,
    band: BAND_OPT = BAND,
    alpha: ALPHA_OPT = ALPHA,
    db: DB = Path("dlbench.db"),
) -> None:
    """Why is one case faster than another? Reruns the slower case (B) with each recorded setting
    toggled toward the faster one's (A) or the framework's best known value, in interleaved blocks
    with A and B, profiles every case with the framework's own profiler, and reports the share of
    the gap each setting closes (with 95% CIs) and where the step time goes by op category.
    Without --case/--vs: the fastest case of every comparison set against each other case."""
    from dlbench import env, runner
    from dlbench.config import Experiment, Protocol
    from dlbench.explain import ablation, selection
    from dlbench.plan import physical_cores
    from dlbench.protocol_settings import MAX_PROFILE_CALLS, MAX_PROFILE_STEPS
    from dlbench.store import StoreError
    from dlbench.trialspec import case_from_dict

    if fmt not in ("console", "markdown", "html"):
        fail(f"--format {fmt}: explain writes console, markdown or html")
    check_criteria(band, alpha)
    if (case is None) != (vs is None):
        fail("--case and --vs go together (or leave both out to explain every comparison set)")
    for name, value, low in (("--blocks", blocks, 2), ("--repeats", repeats, 1), ("--warmup", warmup, 0)):
        if not low <= value <= 100:
            fail(f"{name} {value}: allowed {low}..100" + (" (a CI needs two blocks)" if name == "--blocks" else ""))
    if not 0 <= profile_steps <= MAX_PROFILE_STEPS:
        fail(f"--profile-steps {profile_steps}: allowed 0..{MAX_PROFILE_STEPS}")
    if not 1 <= profile_calls <= MAX_PROFILE_CALLS:
        fail(f"--profile-calls {profile_calls}: allowed 1..{MAX_PROFILE_CALLS}")
    if fmt == "console" and out is not None:
        fail("--out needs a written format (markdown or html); console output goes to the terminal")
    if out is not None:
        check_output(out, [db])
    store = open_store(db, readonly=dry_run)
    if show is not None:
        _explain_report(store, show, fmt, out, band, alpha)
        return
    try:
        source = store.run(run_id)
    except StoreError as exc:
        fail(str(exc))
    trials = store.trials(source["id"])
    cases = {t["case_key"]: case_from_dict(json.loads(t["case_json"])) for t in trials}
    b_trials = trials
    if vs_run is not None:
        if vs is None:
            fail("--vs-run names where --vs is found: give --case and --vs too")
        try:
            b_trials = store.trials(store.run(vs_run)["id"])
        except StoreError as exc:
            fail(str(exc))
    b_cases = {t["case_key"]: case_from_dict(json.loads(t["case_json"])) for t in b_trials}
    cores = physical_cores()
    toggled = tuple(s.strip() for s in (only or "").split(",") if s.strip())
    try:
        if case is not None and vs is not None:
            a_case = selection.select(cases.values(), case, where)
            chosen = [(a_case, selection.select(b_cases.values(), vs, where, "--vs"))]
        else:
            times = ablation.step_times(trials, store.measurements(source["id"], latency=False))
            chosen = selection.default_pairs(selection.narrowed(cases, where), selection.medians(times))
            if not chosen:
                fail(
                    f"run {source['id']}: no two cases of one comparison set have step times; "
                    "name them with --case/--vs"
                )
    except ablation.AblationError as exc:
        fail(f"run {source['id']}: {exc}")
    # Your own model or data is imported (to check the toggles, then in the workers) only
    # when named again now; checked before the explain run is created: a refusal leaves
    # no pending run behind.
    sources = named_sources(model, dataset)
    try:
        for run_of_cases, side in ((source["id"], 0), (vs_run if vs_run is not None else source["id"], 1)):
            uses = {(kind, getattr(two[side], kind)) for two in chosen for kind in ("model", "dataset")}
            runner.check_uses(store, store.run(run_of_cases)["id"], uses, sources)
        pairs = [ablation.pair_for(a, b, cores, toggled, sources) for a, b in chosen]
    except runner.SourcesMissing as exc:
        fail(str(exc))
    except ablation.AblationError as exc:
        fail(f"run {source['id']}: {exc}")
    first = json.loads(next(t["protocol_json"] for t in b_trials if t["case_key"] == pairs[0].b.key))
    protocol = Protocol(
        repeats=repeats,
        warmup=warmup,
        trials=blocks,
        timeout=float(first.get("timeout", 1800.0)),
        data_dir=first.get("data_dir"),
        samplers="cpu",  # the busy-machine check; telemetry is not what an explanation needs
        latency_batches=0,
        infer_min_time=0.0,
        profile_steps=profile_steps,
        profile_traces=str(traces) if traces else "",
        profile_calls=profile_calls,
    )
    label = ", ".join(f"{selection_label(p.b)} vs {selection_label(p.a)}" for p in pairs[:3])
    exp = Experiment(
        name=f"explain run {source['id']}: {label}" + (f" (+{len(pairs) - 3} more)" if len(pairs) > 3 else ""),
        description=ablation.description(pairs, source["id"]),
        protocol=protocol,
        source="dlbench explain",
        sources=sources,
    )
    plan = ablation.plan_for(pairs, exp)
    if dry_run:
        console.print(
            f"explain of run {source['id']} (dry run, nothing stored): {len(pairs)} pair(s), {len(plan.cases)} cases "
            f"x {blocks} blocks = {len(plan.trials)} trials"
        )
        _print_pairs(pairs)
        print_plan(plan)
        return
    # The run explained, by id: "the latest run" would be, once this one is stored, this one.
    command = invocation(ctx, run_id=source["id"])
    explain_id = runner.create_run(store, plan, command=command, environment=env.fingerprint())
    console.print(
        f"explain run {explain_id}: {len(pairs)} pair(s), {len(plan.cases)} cases x {blocks} blocks "
        f"= {len(plan.trials)} trials -> {db_text(db)}"
    )
    _print_pairs(pairs)
    counts = execute(store, explain_id, db, sources, traces=str(traces) if traces else "")
    _explain_report(store, explain_id, fmt, out, band, alpha)
    console.print("trials: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    if any(status not in ("ok", "oom") for status in counts) or parts_failed(store, explain_id):
        raise typer.Exit(1)


def _print_pairs(pairs: list[Any]) -> None:
    """Each explained pair: B vs A, and the settings toggled (and those not tried, with why)."""
    for p in pairs:
        toggles = "; ".join(f"{t.words()} ({t.toward})" for t in p.toggles) or "none"
        if p.not_tried:
            toggles += "; not tried: " + "; ".join(p.not_tried)
        console.print(
            f"  {selection_label(p.b)} vs {selection_label(p.a)}, {p.a.model} b{p.a.batch_size}: toggles {toggles}",
            highlight=False,
        )


def selection_label(case) -> str:
    from dlbench.cases import case_label

    return case_label(case.as_dict(), setting=False)


def _explain_report(store, run_id: int, fmt: str, out: Path | None, band: float = BAND, alpha: float = ALPHA) -> None:
    from dlbench.explain import ablation
    from dlbench.report import explain as explain_report
    from dlbench.store import StoreError
    from dlbench.trialspec import case_from_dict

    try:
        run = store.run(run_id)
    except StoreError as exc:
        fail(str(exc))
    trials = store.trials(run_id)
    cases = {t["case_key"]: case_from_dict(json.loads(t["case_json"])) for t in trials}
    experiment = json.loads(run["experiment_json"] or "{}")
    try:
        pairs = ablation.pairs_from(experiment.get("description", ""), cases)
    except ablation.AblationError as exc:
        fail(f"run {run_id}: {exc}")
    measurements = store.measurements(run_id, latency=False)
    times = ablation.step_times(trials, measurements)
    gaps = []
    for pair in pairs:
        try:
            gaps.append(ablation.analyse(pair, times, band=band, alpha=alpha))
        except ablation.AblationError as exc:
            console.print(f"run {run_id}: {exc}", highlight=False)
    sections = explain_report.sections(gaps, ablation.profiles(trials, measurements))
    title = f"dlbench explain: run {run_id} ({run['name']})"
    if fmt == "console":
        from dlbench.report.console import print_preface

        console.print(title, highlight=False)
        for s in sections:
            print_preface(console, s.preface, details=True)
        return
    if fmt == "markdown":
        figures = out.parent / f"{out.stem}_figures" if out is not None else None
        text = explain_report.markdown(sections, title, figures, out.parent if out is not None else None)
    else:
        text = explain_report.html(sections, title)
    if out is None:
        sys.stdout.write(text)
    else:
        write_output(out, text, [store.path])
        console.print(f"wrote {out}", highlight=False)
