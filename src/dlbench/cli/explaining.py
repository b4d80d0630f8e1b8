"""explain: re-run a gap between two cases with one setting toggled at a time, and report the share each closes."""

from __future__ import annotations

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
from dlbench.cli.options import protocol_help
from dlbench.protocol_settings import Protocol


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
    repeats: Annotated[int, typer.Option(help=protocol_help("repeats"))] = Protocol.repeats,
    warmup: Annotated[int, typer.Option(help=protocol_help("warmup"))] = Protocol.warmup,
    profile_steps: Annotated[
        int, typer.Option(help="Training steps profiled per trial, after its timed repeats (0: no profile).")
    ] = 10,
    profile_calls: Annotated[int, typer.Option(help=protocol_help("profile_calls"))] = Protocol.profile_calls,
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
    from dlbench.service import ServiceError
    from dlbench.service import explain as service

    if fmt not in ("console", "markdown", "html"):
        fail(f"--format {fmt}: explain writes console, markdown or html")
    check_criteria(band, alpha)
    settings = service.Settings(blocks, repeats, warmup, profile_steps, profile_calls, str(traces) if traces else "")
    try:
        service.protocol({"repeats": 1, "warmup": 0}, settings)  # the flags' bounds, before any database is read
    except ServiceError as exc:
        fail(str(exc))
    if fmt == "console" and out is not None:
        fail("--out needs a written format (markdown or html); console output goes to the terminal")
    if out is not None:
        check_output(out, [db])
    store = open_store(db, readonly=dry_run)
    if show is not None:
        _explain_report(store, show, fmt, out, band, alpha)
        return
    # Your own model or data is imported (to check the toggles, then in the workers) only
    # when named again now; checked before the explain run is created: a refusal leaves
    # no pending run behind.
    sources = named_sources(model, dataset)
    try:
        prepared = service.prepare(
            store, run_id, case=case, vs=vs, vs_run=vs_run, where=where, only=only, sources=sources, settings=settings
        )
    except ServiceError as exc:
        fail(str(exc))
    pairs, plan = prepared.pairs, prepared.plan
    if dry_run:
        console.print(
            f"explain of run {prepared.source_run} (dry run, nothing stored): {len(pairs)} pair(s), "
            f"{len(plan.cases)} cases x {blocks} blocks = {len(plan.trials)} trials"
        )
        _print_pairs(pairs)
        print_plan(plan)
        return
    # The run explained, by id: "the latest run" would be, once this one is stored, this one.
    explain_id = service.start(store, prepared, invocation(ctx, run_id=prepared.source_run))
    console.print(
        f"explain run {explain_id}: {len(pairs)} pair(s), {len(plan.cases)} cases x {blocks} blocks "
        f"= {len(plan.trials)} trials -> {db_text(db)}"
    )
    _print_pairs(pairs)
    counts = execute(store, explain_id, db, sources, traces=settings.traces)
    _explain_report(store, explain_id, fmt, out, band, alpha)
    console.print("trials: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    if any(status not in ("ok", "oom") for status in counts) or parts_failed(store, explain_id):
        raise typer.Exit(1)


def _print_pairs(pairs: list[Any]) -> None:
    from dlbench.service.explain import selection_label

    """Each explained pair: B vs A, and the settings toggled (and those not tried, with why)."""
    for p in pairs:
        toggles = "; ".join(f"{t.words()} ({t.toward})" for t in p.toggles) or "none"
        if p.not_tried:
            toggles += "; not tried: " + "; ".join(p.not_tried)
        console.print(
            f"  {selection_label(p.b)} vs {selection_label(p.a)}, {p.a.model} b{p.a.batch_size}: toggles {toggles}",
            highlight=False,
        )


def _explain_report(store, run_id: int, fmt: str, out: Path | None, band: float = BAND, alpha: float = ALPHA) -> None:
    from dlbench.report import explain as explain_report
    from dlbench.service import ServiceError
    from dlbench.service import explain as service

    try:
        explained = service.read(store, run_id, band, alpha)
    except ServiceError as exc:
        fail(str(exc))
    for note in explained.notes:
        console.print(note, highlight=False)
    gaps = explained.gaps
    run = {"name": explained.name}
    sections = explain_report.sections(gaps, explained.profiles)
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
        console.print(f"wrote {out}", highlight=False, soft_wrap=True)
