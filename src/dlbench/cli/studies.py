"""study list, show, run, plan and report: the seed papers' experiments."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from dlbench.analysis.criteria import ALPHA, BAND
from dlbench.cli import complete
from dlbench.cli.app import study_app
from dlbench.cli.common import (
    ALPHA_OPT,
    BAND_OPT,
    BUSY_VERDICTS_OPT,
    DB,
    DB_DEFAULT_HELP,
    FORMAT,
    check_criteria,
    check_output,
    console,
    default_db,
    err_console,
    fail,
    invocation,
    print_report,
    write_output,
)
from dlbench.cli.options import EXECUTOR, MATRIX, PROTOCOL, executor_settings, with_groups
from dlbench.cli.reporting import collect_runs
from dlbench.cli.running import (
    MlflowOpt,
    PlanFormat,
    check_plan_format,
    mlflow_settings,
    plan_of,
    show_plan,
    start_and_run,
)
from dlbench.service import studies as studies_service

ScaleOpt = Annotated[
    str,
    typer.Option(
        help="smoke (seconds, CI), quick (the design's shape, minutes to hours on a 2-core CPU), cpu (the paper's "
        "design shrunk to under a day on a 2-core CPU; only studies whose paper scale takes longer) or paper "
        "(the paper's settings, its repetitions as independent processes)."
    ),
]

# A study's name, completed on <Tab> from the built-in studies (dlbench study list).
StudyName = Annotated[
    str, typer.Argument(help="A study name (dlbench study list).", autocompletion=complete.one_of(complete.studies))
]


def _study(name: str):
    from dlbench import studies
    from dlbench.config import ConfigError

    try:
        return studies.load(name), studies.load_facts(name)
    except ConfigError as exc:
        fail(str(exc))


def _study_plan(study: Any, scale: str, matrix: dict[str, Any], protocol: dict[str, Any]) -> Any:
    """The study's design at `scale`, with the flags given over it (as run's over a file);
    on the cpu unless --device names another."""
    from dlbench.config import ConfigError

    try:
        data = study.experiment_data(scale)
    except ConfigError as exc:
        fail(str(exc))
    data.setdefault("protocol", {})["device"] = protocol.get("device") or "cpu"
    return plan_of(data, matrix, protocol, source_name=f"study {study.name} ({scale})")


@study_app.command("list")
def study_list() -> None:
    """The built-in studies: name, seed paper, what it measures."""
    from rich.table import Table

    from dlbench import studies

    table = Table(title="studies (dlbench study show NAME)")
    for column in ("name", "seed", "paper", "study", "facts", "claims"):
        table.add_column(column)
    for name in studies.NAMES:
        study, facts = _study(name)
        table.add_row(name, study.seed, facts.cite(), study.title, str(len(facts.facts)), str(len(facts.claims)))
    console.print(table)


@study_app.command("show")
def study_show(
    name: StudyName,
) -> None:
    """What the paper did, how the study maps it, the open choices it made, and each scale's plan."""

    study, facts = _study(name)
    console.print(f"[bold]{study.name}[/bold] v{study.version}: {study.title}", highlight=False)
    console.print(f'paper (seed {facts.seed}): {facts.authors}, "{facts.title}", {facts.venue}', highlight=False)
    if study.first_line:
        console.print(study.first_line, highlight=False)
    for m in facts.machines:
        console.print(f"paper machine {m.label}: {m.hardware}; {m.software}", highlight=False)
    console.print(f"facts: {len(facts.facts)} numbers, {len(facts.claims)} claims (studies/{name}/facts.toml)")
    for title, items in (("open choices, and what the study picked", study.choices), ("cannot", study.cannot)):
        if items:
            console.print(f"{title}:")
            for item in items:
                console.print(f"  - {item}", highlight=False)
    if study.settings:
        console.print("settings read apart in the comparison:")
        for st in study.settings:
            console.print(f"  - {st.name}: {st.where}" + (f" ({st.about})" if st.about else ""), highlight=False)
    for scale in study.scale_names():
        plan = _study_plan(study, scale, {"matrix": {}, "options": []}, {})
        p = plan.experiment.protocol
        console.print(
            f"scale {scale}: {len(plan.trials)} trials, {len(plan.skipped)} skipped cells; "
            f"{p.repeats} repeats + {p.warmup} warm-up per trial",
            highlight=False,
        )
        changes = (
            study.scales[scale].changes
            if scale != "paper"
            else ("the paper's settings, its repetitions as independent processes (trials) in interleaved blocks",)
        )
        for change in changes:
            console.print(f"  - {change}", highlight=False)
    console.print(f"the paper's design in words: {_studies_dir()}/{name}/paper.md", highlight=False)


def _studies_dir() -> str:
    from importlib import resources

    return str(resources.files("dlbench.studies"))


@study_app.command("run")
@with_groups(MATRIX, PROTOCOL, EXECUTOR)
def study_run(
    ctx: typer.Context,
    name: StudyName,
    scale: ScaleOpt = "quick",
    matrix: Any = None,
    protocol: Any = None,
    executor: Any = None,
    fmt: PlanFormat = "console",
    mlflow: MlflowOpt = None,
    db: DB = Path("dlbench.db"),
) -> None:
    """Run a study at a scale; the report starts with the paper's numbers beside this run's. The matrix and
    protocol flags replace the scale's values (a verdict needs 6 or more --trials for two frameworks)."""
    from dlbench.service import execution

    dry = ctx.info_name == "plan"  # `study plan`: this command's dry run, as `plan` is run's
    check_plan_format(fmt, dry, f"study plan {name}", f"study report {name}")
    if not dry:
        execution.stop_on_signals()
    study, facts = _study(name)
    plan = _study_plan(study, scale, matrix, protocol)
    if dry:
        extras = studies_service.plan_design(study, plan)
        if fmt == "json":
            from dlbench.report.json_out import dumps, plan_document

            doc = plan_document(plan)
            doc["study"] = {"name": study.name, "scale": scale, **extras}
            sys.stdout.write(dumps(doc))
            return
        show_plan(plan, fmt)
        _print_design(study, scale, extras)
        return

    def preface(store, run_id: int):
        # With the earlier runs this one completes (a study run in parts into one database).
        runs = [(store, r) for r in studies_service.parts(store, study, run_id)]
        return studies_service.paper_section(study, facts, runs, reported=run_id)

    # The device the study ran on is said in its command (it is the study's own choice, cpu, when not named).
    command = invocation(ctx, device=plan.experiment.protocol.device)
    start_and_run(
        plan,
        db,
        command,
        preface=preface,
        executor=executor_settings(plan.experiment.executor, executor),
        tracking=mlflow_settings(plan.experiment.mlflow, mlflow, db),
    )


def _print_design(study: Any, scale: str, extras: dict[str, Any]) -> None:
    """The study plan's design, its power and about how long it would take here, in words."""
    d, e = extras["design"], extras["estimate"]
    if d is not None:
        how = "paired by block" if d["paired"] else "unpaired"
        if not d["independent_processes"]:
            how = "one process per case"
        console.print(
            f"design ({study.name} {scale}): {d['members']} frameworks, {d['trials']} trial(s) of {d['repeats']} "
            f"repeat(s) per case, {how}; {d['test']}; smallest p {d['smallest_p']:.2g} "
            f"({'can' if d['smallest_p'] < d['alpha'] else 'cannot'} reach alpha {d['alpha']:g})",
            highlight=False,
        )
        power = ", ".join(f"{p['ratio']:g}x: {p['power']:.2f} (+/- {p['sim_error']:.2f})" for p in d["power"])
        console.print(
            f"power (share of {d['sims']} simulated runs deciding the slower framework slower): {power}; "
            f"trial medians' between-process CV {d['cv']:.3f}, from the {d['cv_source']}",
            highlight=False,
        )
    if e is not None:
        console.print(
            f"estimated time on this machine: {e['words']} for {e['processes']} processes "
            f"({e['startup_s'] / 60:.0f} minutes of it process start-up), {e['basis']}",
            highlight=False,
        )
        if e["borrowed"]:
            console.print(
                "  not in the smoke run, so at their framework's typical per-sample overhead: "
                + ", ".join(e["borrowed"]),
                highlight=False,
            )
    else:
        console.print("estimated time: unknown (the study's smoke run, docs/studies/data, is not in this install)")


study_app.command(
    "plan",
    help="Dry run of study run: the trials it would run, in order, and the skipped cells with reasons; "
    "the same flags, so a stored study command with run -> plan shows that run's plan.",
)(study_run)


@study_app.command("report")
def study_report(
    name: StudyName,
    run_ids: Annotated[
        list[int] | None,
        typer.Option(
            "--run",
            autocompletion=complete.run_ids,
            help="Run id (default: the latest run of the study in each --db, with the earlier runs of the same "
            "scale on the same machine that measured other cases); repeat for several.",
        ),
    ] = None,
    dbs: Annotated[
        list[Path] | None,
        typer.Option(
            "--db", help=f"Results database; repeat to put runs from several machines side by side. {DB_DEFAULT_HELP}"
        ),
    ] = None,
    fmt: FORMAT = "console",
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write the report to this file.")] = None,
    details: Annotated[bool, typer.Option("--details", help="Console: every table of the run's report.")] = False,
    band: BAND_OPT = BAND,
    alpha: ALPHA_OPT = ALPHA,
    busy_verdicts: BUSY_VERDICTS_OPT = False,
) -> None:
    """The paper vs this run (every number of the paper beside ours, framework ratios and their direction,
    the paper's claims checked; one column group per machine), then the run's own report; every verdict
    at --band and --alpha."""
    from dlbench.report.formats import REGISTRY

    check_criteria(band, alpha)

    # A study report opens with the paper beside the run: a format without figures holds the summary only.
    if fmt not in REGISTRY or REGISTRY[fmt].figures == "none":
        fail(f"--format {fmt!r}: allowed: {', '.join(f for f, form in REGISTRY.items() if form.figures != 'none')}")
    if fmt == "console" and out is not None:
        fail("--out needs a written format (markdown, latex or html); console output goes to the terminal")
    study, facts = _study(name)
    paths = dbs or [default_db()]
    if out is not None:
        check_output(out, list(paths))

    def latest_of_study(store) -> list[int]:
        found = studies_service.runs_of(store, study)
        if not found:
            fail(f"{store.path}: no run of study {name}; run one with: dlbench study run {name} --db {store.path}")
        # The latest run, with the earlier runs it completes (the same study and scale on this
        # machine, measuring other cases): one measurement made in parts.
        return studies_service.parts(store, study, max(int(r["id"]) for r in found))

    runs = collect_runs(paths, list(run_ids or []), latest_of_study)
    for store, rid in runs:
        ours = {r["id"] for r in studies_service.runs_of(store, study)}
        if rid not in ours:
            listed = ", ".join(str(i) for i in sorted(ours)) or "none"
            fail(
                f"{store.path}: run {rid} ({store.run(rid)['name']!r}) is no run of study {name}; its runs there: "
                f"{listed} (`dlbench report --run {rid}` reports any run)"
            )
    preface = studies_service.paper_section(study, facts, runs, band=band, alpha=alpha, busy_verdicts=busy_verdicts)
    store, first = runs[0]
    if fmt == "console":
        print_report(store, first, details, preface=preface, band=band, alpha=alpha, busy_verdicts=busy_verdicts)
        return
    from dlbench.report.formats import render

    text = render(store, first, fmt, preface=preface, band=band, alpha=alpha, busy_verdicts=busy_verdicts)
    if out is None:
        sys.stdout.write(text)
    else:
        write_output(out, text, list(paths))
        err_console.print(f"wrote {out}")
