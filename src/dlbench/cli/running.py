"""run, plan and extend: parse the flags, call dlbench.service.runs, print."""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer

from dlbench.cli import complete
from dlbench.cli.app import app
from dlbench.cli.common import (
    DB,
    EXIT_BUSY,
    NamedDatasetOpt,
    NamedModelOpt,
    console,
    data_readings,
    db_text,
    design_note,
    err_console,
    execute,
    exit_on_signal,
    fail,
    invocation,
    named_sources,
    open_store,
    parts_failed,
    print_plan,
    print_report,
    print_samplers,
    print_skipped,
    resolve_run,
    stored_run,
)
from dlbench.cli.options import EXECUTOR, FILE, MATRIX, PROTOCOL, executor_settings, with_groups
from dlbench.terminal import printable


def plan_of(source: Any, matrix: dict[str, Any], protocol: dict[str, Any], source_name: str = "<dict>") -> Any:
    """The plan of the experiment the flags describe: `source` an experiment file, a study's
    table (a dict) or None (the embedded default), `matrix` the MATRIX group's value and
    `protocol` the PROTOCOL group's. A mistake is one line and exit 2."""
    from dlbench import config
    from dlbench.service import runs

    try:
        options = config.parse_option_flags(matrix["options"])
        exp = runs.experiment(source, matrix["matrix"], protocol, options, source_name=source_name)
        return runs.plan(exp)
    except config.ConfigError as exc:
        fail(str(exc))
    except KeyboardInterrupt as exc:
        exit_on_signal(exc, "nothing was stored")


# The dry runs' output: run, plan, study run and study plan share it (a flag of run is one of plan's).
PlanFormat = Annotated[
    str,
    typer.Option(
        "--format",
        "-f",
        help="console (default: tables) or json: for plan, the plan as one JSON document on standard output "
        "and nothing else; for run, the finished run's report as one JSON document on standard output (the "
        "document of dlbench report --format json, its run id in it), the progress on standard error "
        "(docs/json.md).",
        autocompletion=complete.one_of(lambda: ("console", "json")),
    ),
]


# MLflow logging (dlbench.tracking.mlflow_log; docs/mlflow.md): the run is logged after it finished.
MlflowOpt = Annotated[
    str | None,
    typer.Option(
        "--mlflow",
        metavar="URI",
        help="After the run, log it to this MLflow tracking server (e.g. http://127.0.0.1:5000): one parent "
        "MLflow run, one nested run per case with its factors, protocol, the medians of its measured values and "
        "their spread, verdicts and the reports as artifacts. Overrides $MLFLOW_TRACKING_URI, which overrides "
        "uri of the experiment file's [mlflow] table; $MLFLOW_EXPERIMENT_NAME overrides the table's experiment "
        "(the variables say where, not whether: without this flag or a uri in the table nothing is logged). "
        "Needs the mlflow extra (pip install 'dlbench[mlflow]'). A server that cannot be reached, or that holds "
        "this run already, is one line; the run is unaffected. plan ignores it.",
    ),
]


def mlflow_settings(base: Any, uri: str | None, db: Path | str | None = None, environment: bool = True) -> Any:
    """The [mlflow] table (`base`; None: none) with --mlflow over it, checked: a bad value, a
    tracking URI without the mlflow extra installed, or one that would write into the results
    database `db` is one line and exit 2, before anything runs. Where logging is on (--mlflow
    or the table's uri) and `environment`, $MLFLOW_TRACKING_URI and $MLFLOW_EXPERIMENT_NAME go
    between the two: over the table, under the flag."""
    from dlbench import config
    from dlbench.protocol_settings import MlflowSettings
    from dlbench.tracking.mlflow_log import TrackingError, from_environment, refuse_results_file, require_installed

    try:
        settings = base
        if environment and (uri is not None or (settings is not None and settings.uri)):
            settings = from_environment(settings or MlflowSettings(), uri=uri is None)
        if uri is not None:
            settings = config.parse_mlflow("--mlflow", {"uri": uri}, settings)
        if settings is not None and settings.uri:
            if db is not None:
                refuse_results_file(settings.uri, db)
            require_installed("--mlflow" if uri is not None else "[mlflow] uri")
    except (config.ConfigError, TrackingError) as exc:
        fail(str(exc))
    return settings


def log_to_mlflow(store: Any, run_id: int, db: Path, settings: Any, replace: bool = False) -> bool:
    """Log the finished run (dlbench.tracking.mlflow_log): one line saying where, or one line on
    standard error saying why not. The run, its store and the exit status are never touched.
    A run logged to that experiment already is refused unless `replace` (mlflow-log --replace)."""
    from dlbench.tracking.mlflow_log import AlreadyLogged, TrackingError, log_run, run_url, ui_url

    try:
        logged = log_run(store, run_id, settings, replace=replace)
    except TrackingError as exc:
        again = (
            f"dlbench mlflow-log --run {run_id} --db {shlex.quote(db_text(db))} --mlflow {shlex.quote(settings.uri)} "
            f"--experiment {shlex.quote(settings.experiment)}"
        )
        if isinstance(exc, AlreadyLogged):
            urls = [url for old in exc.runs if (url := ui_url(settings, exc.experiment_id, old))]
            shown = ", ".join(exc.runs) + (f" ({', '.join(urls)})" if urls else "")
            said = (
                f"mlflow: not logged: run {run_id} is already logged to experiment {settings.experiment!r} as MLflow "
                f"run {shown}; to replace it: {again} --replace"
            )
        else:
            said = f"mlflow: not logged: {printable(str(exc))}; run {run_id} is stored, log it later with: {again}"
        err_console.print(said, highlight=False, soft_wrap=True, markup=False)
        return False
    except KeyboardInterrupt as exc:
        exit_on_signal(exc, f"while logging to MLflow; run {run_id} is finished and stored")
    replaced = f", replacing MLflow run {', '.join(logged.replaced)} (deleted)" if logged.replaced else ""
    console.print(
        f"mlflow: logged run {run_id} ({len(logged.case_runs)} cases, {len(logged.artifacts)} artifacts) to "
        f"experiment {settings.experiment!r}{replaced}: {run_url(settings, logged)}",
        highlight=False,
        soft_wrap=True,
        markup=False,
    )
    return True


def check_plan_format(fmt: str, dry: bool, plan_command: str, report_command: str | None) -> None:
    """One line for a --format neither the dry run nor the run prints. `report_command`: the
    command that prints the run's results as JSON where the run itself does not (study run);
    None where the run prints them with --format json (run)."""
    if fmt not in ("console", "json"):
        fail(f"--format {fmt!r}: allowed: console, json")
    if fmt == "json" and not dry and report_command is not None:
        fail(
            f"--format json prints a plan (dlbench {plan_command} --format json); a run's results: "
            f"dlbench {report_command} --format json"
        )


def show_plan(plan: Any, fmt: str) -> None:
    """The dry run's output: the plan's tables, or its JSON document alone on standard output."""
    if fmt == "json":
        from dlbench.report.json_out import dumps, plan_document

        sys.stdout.write(dumps(plan_document(plan)))
        return
    print_plan(plan)


@app.command()
@with_groups(MATRIX, PROTOCOL, EXECUTOR)
def run(
    ctx: typer.Context,
    file: FILE = None,
    matrix: Any = None,
    protocol: Any = None,
    resume: Annotated[int | None, typer.Option(help="Finish the unfinished trials of run ID.")] = None,
    redo_busy: Annotated[
        bool,
        typer.Option(
            "--redo-busy",
            help="With --resume: run again every block that holds a trial measured on a busy machine (marked BUSY); "
            "the busy attempts are kept, retired, and leave the analysis with their whole block.",
        ),
    ] = False,
    executor: Any = None,
    fmt: PlanFormat = "console",
    mlflow: MlflowOpt = None,
    db: DB = Path("dlbench.db"),
) -> None:
    """Run an experiment: every trial in a fresh worker process, results into the database."""
    from dlbench.service import execution

    # `dlbench plan` is this command registered again (below): it takes every flag run
    # takes, so a stored run's command with run -> plan prints that run's plan, and a flag
    # run gains cannot be missing from it. It stops at the plan.
    dry = ctx.info_name == "plan"
    check_plan_format(fmt, dry, "plan", None)
    if not dry:
        execution.stop_on_signals()
    if redo_busy and resume is None:
        fail("--redo-busy runs the busy blocks of a stored run again: give the run with --resume ID")
    if resume is not None:
        from dlbench.store import StoreError

        if dry:
            fail(f"--resume {resume} finishes a stored run (dlbench run --resume {resume}); there is no plan to print")

        tracking = mlflow_settings(_default_mlflow(), mlflow, db)
        store = open_store(db)
        try:
            store.run(resume)
        except StoreError as exc:
            fail(str(exc))
        # A resumed run imports the user's own model or data only if named again now;
        # it runs on the executor named now (local unless named), whichever started it.
        named = matrix["matrix"]
        traces = protocol["profile_traces"] or ""
        _say_unnamed_traces(store, resume, traces)
        _refuse_missing_engine(executor_settings(None, executor))
        # --format json: the report's document alone on standard output, everything else on stderr.
        json_to = sys.stdout if fmt == "json" else None
        with contextlib.redirect_stdout(sys.stderr) if json_to is not None else contextlib.nullcontext():
            if redo_busy:
                _redo_busy(store, resume)
            _execute_and_report(
                store,
                resume,
                db,
                named_sources(",".join(named["model"] or []) or None, ",".join(named["dataset"] or []) or None),
                executor=executor_settings(None, executor),
                traces=traces,
                tracking=tracking,
                json_to=json_to,
            )
        return
    # A user's model module that prints at import must not put its text before the JSON
    # document on standard output: while the plan is made (models imported), stdout is stderr.
    with contextlib.redirect_stdout(sys.stderr) if fmt == "json" else contextlib.nullcontext():
        plan = plan_of(file, matrix, protocol)
    if dry:
        show_plan(plan, fmt)
        return
    tracking = mlflow_settings(plan.experiment.mlflow, mlflow, db)
    json_to = sys.stdout if fmt == "json" else None
    with contextlib.redirect_stdout(sys.stderr) if json_to is not None else contextlib.nullcontext():
        start_and_run(
            plan,
            db,
            invocation(ctx),
            executor=executor_settings(plan.experiment.executor, executor),
            tracking=tracking,
            json_to=json_to,
        )


def _refuse_missing_engine(settings: Any) -> None:
    from dlbench.service import ServiceError, runs

    try:
        runs.check_executor(settings)
    except ServiceError as exc:
        fail(str(exc))


def _redo_busy(store: Any, run_id: int) -> None:
    from dlbench.service.runs import redo_busy

    redone = redo_busy(store, run_id)
    if not redone.blocks:
        console.print(f"--redo-busy: no trial of run {run_id} ran on a busy machine; nothing to run again")
        return
    console.print(
        f"--redo-busy: run {run_id}'s block(s) {', '.join(map(str, redone.blocks))} held trials measured on a busy "
        f"machine (other processes took up to {redone.worst:.0f}% of the CPU): their {redone.trials} trial(s) are "
        "kept, retired, and run again now",
        highlight=False,
        soft_wrap=True,
    )


def _default_mlflow() -> Any:
    from dlbench.protocol_settings import MlflowSettings

    return MlflowSettings()


def start_and_run(
    plan: Any,
    db: Path,
    command_line: str,
    preface: Any = None,
    executor: Any = None,
    tracking: Any = None,
    json_to: Any = None,
) -> None:
    """Store a new run of `plan` (after its data is in place), execute it and print its
    report (with `preface` first, a study's paper vs this run): dlbench.service.runs does
    the work, this says what happens. `tracking`: where to log the finished run (MLflow
    settings; None: the experiment's [mlflow] table)."""
    from dlbench.service import ServiceError, runs

    if tracking is None:
        tracking = mlflow_settings(plan.experiment.mlflow, None, db)

    run_id = None
    store = None
    try:
        try:
            runs.check_runnable(plan)
        except ServiceError:
            print_skipped([(s.cell, s.reason) for s in plan.skipped])
            fail("nothing to run: every cell was skipped (reasons above)")
        _refuse_missing_engine(executor)
        # Opened after planning, so that a mistake in the command or a bad data
        # file leaves no new database behind; before any download, so that a
        # database that cannot be written is said before minutes are spent.
        store = open_store(db)
        try:
            runs.ensure_data(plan)
        except ServiceError as exc:
            fail(str(exc))

        def created(new_id: int) -> None:
            console.print(
                f"run {new_id}: {len(plan.trials)} trials, {len(plan.skipped)} skipped cells -> {db_text(db)}"
            )
            data_readings(plan)
            print_skipped([(s.cell, s.reason) for s in plan.skipped])
            design_note(plan)
            print_samplers(store.samplers(new_id))
            say_estimate(runs.estimate(store, plan))

        def idle(seconds: float) -> None:
            console.print(f"measuring idle power for {seconds:g} s ...")

        started = runs.start_run(store, plan, command_line, on_created=created, on_idle=idle)
        run_id = started.run_id
        if started.idle_power is not None:
            console.print(
                "idle power: "
                + (
                    ", ".join(f"{k} {v:.2f} W" for k, v in started.idle_power.items())
                    or "no energy counter available, nothing to subtract"
                )
            )
    except KeyboardInterrupt as exc:
        if run_id is None and store is not None:
            # The signal may have landed inside create_run after its commit (seen once in
            # the fault suite: SIGTERM 0.84 s into a run said "nothing was stored" over a
            # stored run), or during the idle baseline.
            run_id = store.committed_run()
        if run_id is None or store is None:
            exit_on_signal(exc, "nothing was stored")
        store.finish_run(run_id, "interrupted")
        exit_on_signal(
            exc,
            f"run {run_id} is stored, no trial ran yet. Resume with: dlbench run --resume {run_id} "
            f"--db {shlex.quote(db_text(db))}",
        )
    _execute_and_report(
        store,
        run_id,
        db,
        plan.experiment.sources,
        preface,
        executor,
        plan.experiment.protocol.profile_traces,
        tracking=tracking,
        json_to=json_to,
    )


def say_estimate(estimate: Any) -> None:
    """One line before the first trial: about how long the run will take, and from what."""
    from dlbench.studies.estimate import words

    if estimate is None:
        console.print("estimated time: unknown (no earlier trial of these cases in this database, no reference runs)")
        return
    console.print(
        f"estimated time: {words(estimate.seconds)} for {estimate.processes} "
        f"process{'es' if estimate.processes != 1 else ''} (from {estimate.basis})"
    )


def _say_unnamed_traces(store: Any, run_id: int, named: str) -> None:
    """One line when a resumed run stored a profile-trace folder that is not named now:
    a path read from a database is never written to unless the user names it again."""
    from dlbench.service.execution import same_folder

    for row in store.trials(run_id, statuses=("pending", "running", "interrupted")):
        try:
            stored = row.protocol.get("profile_traces")
        except (ValueError, AttributeError):
            continue
        if stored and not same_folder(stored, named):
            console.print(
                f"profile traces: run {run_id} stored the folder {printable(str(stored))!r}; a path read from a "
                "database is not written to: no traces are kept now (name it again with --profile-traces to keep "
                "them there)",
                highlight=False,
                soft_wrap=True,
            )
            return


def _execute_and_report(
    store,
    run_id: int,
    db: Path,
    sources: dict[str, str],
    preface: Any = None,
    executor: Any = None,
    traces: str = "",
    tracking: Any = None,
    json_to: Any = None,
) -> None:
    """Execute (or resume) run_id, print its report, exit 1 when a trial did not end ok or oom.
    `traces`: the profile-trace folder named in this invocation (a stored one is not obeyed);
    `tracking`: MLflow settings, the finished run is logged there when its uri is set;
    `json_to`: a stream the report goes to as its JSON document (run --format json)."""
    counts = execute(store, run_id, db, sources, executor, traces)
    try:
        before = preface(store, run_id) if callable(preface) else preface
        if json_to is not None:
            from dlbench.report.formats import render

            json_to.write(render(store, run_id, "json", preface=before))
            json_to.flush()
        else:
            print_report(store, run_id, preface=before)
    except KeyboardInterrupt as exc:  # SIGTERM too (runner.Terminated): the run itself is complete
        exit_on_signal(
            exc,
            f"while printing the report; run {run_id} is finished and stored: "
            f"dlbench report --run {run_id} --db {shlex.quote(db_text(db))}",
        )
    console.print("trials: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    if tracking is not None and tracking.uri:
        log_to_mlflow(store, run_id, db, tracking)
    # An out-of-memory cell is a result of a sweep (its gap is data); a failed,
    # timed-out or interrupted trial is not, and makes the exit status 1; so does a
    # part of a trial that failed (a profile), though its timed measurements stand.
    if any(status not in ("ok", "oom") for status in counts) or parts_failed(store, run_id):
        raise typer.Exit(1)


# The dry run of `run`: the same function, so the same flags and the same planning; it
# stops before anything is opened, stored or run (`dry` in run).
app.command(
    "plan",
    help="Dry run: the trials that would run, in order, and the skipped cells with reasons. Takes every flag "
    "of run, so a stored command with run -> plan shows that run's plan (--db and where trials run change nothing).",
)(run)


@app.command()
def extend(
    refs: Annotated[
        list[str],
        typer.Argument(
            metavar="RUN...", help="Runs to extend: run ids in --db, FILE.db (its latest run) or FILE.db:RUN."
        ),
    ],
    blocks: Annotated[int, typer.Option(help="Interleaved blocks (one trial of every case) to add to each run.")] = 1,
    python: Annotated[
        list[str] | None,
        typer.Option(
            "--python",
            help="An interpreter you trust to run a run's workers (repeatable). A run recorded under "
            "another interpreter than this dlbench's is extended only if you name that interpreter "
            "here: a database can come from someone else, and the path it records is not run "
            "on its word.",
        ),
    ] = None,
    model: NamedModelOpt = None,
    dataset: NamedDatasetOpt = None,
    db: DB = Path("dlbench.db"),
) -> None:
    """Add blocks to stored runs, the runs taking turns block by block (A, B, B, A, ...), so that two runs to
    be compared see the machine alike. Each run's workers use the interpreter that run recorded, so A and B may
    come from two virtual environments (two framework versions): this dlbench's own interpreter, or one you
    name with --python."""
    from dlbench.protocol_settings import MAX_TRIALS
    from dlbench.service import execution

    if not 1 <= blocks <= MAX_TRIALS:
        fail(f"--blocks {blocks}: must be at least 1 and at most {MAX_TRIALS} (the most trials a case may have)")
    targets = extend_targets(refs, python, model, dataset, db)
    names = {id(t): ref for t, ref in zip(targets, refs)}

    # Event lines and the command to copy stay one line each, whatever the paths' length.
    def on_block(target, block, done):
        console.print(
            f"block {done}/{blocks}: {names[id(target)]} (run {target.run_id}) block {block} done",
            highlight=False,
            soft_wrap=True,
        )

    counts: list[dict[str, int]] = []
    with taking_turns(targets, "finished trials are stored. Finish with dlbench run --resume RUN"):
        counts = execution.extend(targets, blocks, on_block=on_block)
    for ref, t, c in zip(refs, targets, counts):
        console.print(
            f"{ref} (run {t.run_id}): " + ", ".join(f"{v} {k}" for k, v in c.items()), highlight=False, soft_wrap=True
        )
    if len(refs) == 2:
        console.print(f"compare them with: dlbench compare {refs[0]} {refs[1]}", highlight=False, soft_wrap=True)
    if any(status not in ("ok", "oom") for c in counts for status in c):
        raise typer.Exit(1)


@contextlib.contextmanager
def taking_turns(targets: list[Any], stopped: str) -> Iterator[None]:
    """Runs taking turns (extend, gate): signals stop them as Ctrl-C does, and each failure is
    one line and its exit status; a signal marks every run interrupted and says `stopped`."""
    from dlbench.service import execution
    from dlbench.store import StoreError

    RunBusy, SourcesMissing = execution.errors()
    execution.stop_on_signals()
    try:
        yield
    except KeyboardInterrupt as exc:
        for t in targets:
            t.store.mark_interrupted(t.run_id)
        exit_on_signal(exc, stopped)
    except RunBusy as exc:
        fail(str(exc), code=EXIT_BUSY)
    except SourcesMissing as exc:
        fail(str(exc))
    except StoreError as exc:
        fail(str(exc), code=1)


def extend_targets(
    refs: list[str], python: list[str] | None, model: str | None, dataset: str | None, db: Path
) -> list[Any]:
    """The stored runs to add blocks to (extend, gate), each with the worker command of the
    interpreter it recorded: one the user named with --python, or this dlbench's own."""
    from dlbench.service import execution

    trusted = _trusted_interpreters(python or [])
    sources = named_sources(model, dataset)
    targets, seen = [], set()
    for ref in refs:
        store, row = resolve_run(ref, db)
        where = (str(Path(store.path).resolve()), row["id"])
        if where in seen:
            fail(f"{ref}: run {row['id']} of {store.path} is named twice")
        seen.add(where)
        recorded = row.environment.get("python_executable") or sys.executable
        interpreter = trusted.get(_real(str(recorded)))
        if interpreter is None:
            if not Path(str(recorded)).exists():
                fail(
                    f"{ref}: run {row['id']} ran under {recorded}, which does not exist here; its blocks must "
                    "run under the interpreter (and framework versions) it was recorded with"
                )
            fail(
                f"{ref}: run {row['id']} recorded the interpreter {recorded}, which is not this dlbench's "
                f"({sys.executable}); dlbench runs no program a database names. If you trust it, name it: "
                f"--python {shlex.quote(str(recorded))}"
            )
        targets.append(execution.target(store, row["id"], interpreter, sources))
    return targets


def _real(path: str) -> tuple[str, str]:
    """An interpreter's identity: the folder it is invoked from and the file it is. A virtual
    environment is the folder (its bin/python is a link to the same base interpreter as every
    other environment's), so two environments' pythons are two interpreters, while
    bin/python and bin/python3.11 of one environment are one."""
    return str(Path(os.path.abspath(path)).parent.resolve()), str(Path(path).resolve())


def _trusted_interpreters(named: list[str]) -> dict[tuple[str, str], str]:
    """Identity -> the path to run: this dlbench's interpreter and those the user named."""
    trusted = {_real(sys.executable): sys.executable}
    for path in named:
        if not Path(path).is_file() or not os.access(path, os.X_OK):
            fail(f"--python {path}: not an executable file")
        _can_run_dlbench(path)
        trusted[_real(path)] = path
    return trusted


def _can_run_dlbench(path: str) -> None:
    """One line and exit 2 unless `path` is a Python that imports dlbench: /bin/false or a
    script printing anything else would otherwise append a failed trial per case to the run."""
    import subprocess

    probe = "import dlbench.trial.worker, sys; print('dlbench-ok', sys.version_info[0])"
    try:
        # -P as the worker runs (trial.spec.worker_command): the working directory is not on sys.path.
        done = subprocess.run([path, "-P", "-c", probe], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        fail(f"--python {path}: cannot run it as a Python ({type(exc).__name__}): nothing was run or stored")
    if done.returncode != 0 or "dlbench-ok 3" not in done.stdout:
        tail = (done.stderr.strip().splitlines() or done.stdout.strip().splitlines() or ["no output"])[-1][:200]
        fail(
            f"--python {path}: not a Python that can run dlbench's worker (exit {done.returncode}: {tail}); "
            "install dlbench into that environment first; nothing was run or stored"
        )


@app.command("mlflow-log")
def mlflow_log(
    run_id: Annotated[
        int | None, typer.Option("--run", help="Run id (default: the latest).", autocompletion=complete.run_ids)
    ] = None,
    mlflow: Annotated[
        str | None,
        typer.Option(
            "--mlflow",
            metavar="URI",
            help="MLflow tracking URI (e.g. http://127.0.0.1:5000); default: $MLFLOW_TRACKING_URI, else uri of the "
            "run's [mlflow] table.",
        ),
    ] = None,
    experiment: Annotated[
        str | None,
        typer.Option(
            help="MLflow experiment (default: $MLFLOW_EXPERIMENT_NAME, else the run's [mlflow] table's, else dlbench)."
        ),
    ] = None,
    run_name: Annotated[
        str | None, typer.Option(help="The parent MLflow run's name (default: 'dlbench run ID: NAME').")
    ] = None,
    replace: Annotated[
        bool,
        typer.Option(
            "--replace",
            help="When the experiment holds this run already (a parent MLflow run tagged with its dlbench run id "
            "and start time): log it anew, then delete the earlier MLflow run and its nested runs (MLflow's soft "
            "delete). Without it such a run is refused, naming the MLflow run, exit status 1.",
        ),
    ] = False,
    db: DB = Path("dlbench.db"),
) -> None:
    """Log a stored run to MLflow, as run --mlflow logs a run when it finishes (docs/mlflow.md): one parent
    MLflow run, one nested run per case. Exit status 1 when it could not be logged (one line says why)."""
    from dlbench import config
    from dlbench.tracking.mlflow_log import ENV_URI, from_environment

    store = open_store(db, readonly=True)
    row = stored_run(store, run_id)
    try:
        # The [mlflow] table the run stored with its experiment, if any; MLflow's variables
        # over it; the flags over them.
        base = config.parse_mlflow("[mlflow]", dict(row.experiment.get("mlflow") or {}))
        base = from_environment(base, uri=mlflow is None, experiment=experiment is None)
        given = {"uri": mlflow, "experiment": experiment, "run_name": run_name}
        settings = config.parse_mlflow("command line", {k: v for k, v in given.items() if v is not None}, base)
    except config.ConfigError as exc:
        fail(str(exc))
    if not settings.uri:
        fail(f"run {row['id']}: no MLflow tracking URI: give --mlflow URI or set {ENV_URI}")
    settings = mlflow_settings(settings, None, db, environment=False)
    if not log_to_mlflow(store, row["id"], db, settings, replace=replace):
        raise typer.Exit(1)
