"""Command line: run, plan, list, report, runs, export, env.

A thin layer: parse flags, call the modules that do the work, print. Heavy
modules are imported inside the commands so that `dlbench --help` stays fast,
and nothing here ever imports a deep-learning framework.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from dlbench.analysis.criteria import ALPHA, BAND
from dlbench.terminal import SafeConsole, printable

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="dlbench: fair, repeated, statistically tested benchmarks of PyTorch, TensorFlow and JAX.",
)


def _version(value: bool) -> None:
    if value:
        from dlbench.version import __version__

        print(f"dlbench {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """dlbench: fair, repeated, statistically tested benchmarks of PyTorch, TensorFlow and JAX."""


# Logs and CI output are not terminals; rich would wrap them at 80 columns.
# markup=False: error texts, paths and TOML table names ("[protocol]") are printed verbatim.


def _width_off_terminal() -> int:
    """Off a terminal rich would assume 80 columns: COLUMNS when it is set (a pager,
    a CI log, `COLUMNS=100 dlbench run | tee`), else 150 so that logs keep whole rows."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        return 150
    return columns if 40 <= columns <= 1000 else 150


# SafeConsole: text from a database (run names, commands, errors) prints as text, never as
# terminal control sequences (dlbench.terminal).
console = SafeConsole(markup=False) if sys.stdout.isatty() else SafeConsole(width=_width_off_terminal(), markup=False)
err_console = (
    SafeConsole(stderr=True, markup=False)
    if sys.stderr.isatty()
    else SafeConsole(stderr=True, width=_width_off_terminal(), markup=False)
)

DB = Annotated[
    Path,
    typer.Option(
        "--db",
        help="Results database: an SQLite file, or a shared PostgreSQL database given as a URL, "
        "postgresql://USER@HOST[:PORT]/DATABASE (a password is best kept in ~/.pgpass or PGPASSWORD).",
    ),
]
ListOpt = Annotated[str | None, typer.Option(help="Comma-separated values; each value is a matrix factor level.")]
ShapeOpt = Annotated[
    str | None,
    typer.Option(
        help="Input sizes to sweep, comma-separated: the side of square "
        "synthetic images or a sequence length (0 = the dataset's own)."
    ),
]
# A stored run's own model or data, named again by the user (extend, explain): a
# database can come from someone else, so the reference it records is never imported.
NamedModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        help="Your own model the stored cases use (PATH.py:NAME or package.module:NAME, comma list), named again: "
        "a database can come from someone else, so dlbench imports the code of a stored run only when you name it.",
    ),
]
NamedDatasetOpt = Annotated[
    str | None,
    typer.Option("--dataset", help="Your own dataset the stored cases use (.npz file or IDX directory), named again."),
]
PrecisionOpt = Annotated[
    str | None,
    typer.Option(
        help="float32, tf32 (TensorFloat-32 matmuls and convolutions, NVIDIA GPUs) and/or bf16-mixed, comma-separated."
    ),
]
RuntimeOpt = Annotated[
    str | None,
    typer.Option(
        help="Runtime settings dlbench imposes, comma-separated values: defaults (none, as a plain script runs "
        "the framework; the default), all, or names joined by '+' from malloc-fixed (glibc's malloc thresholds "
        "fixed), interop-fixed (inter-op pool fixed: torch 1 thread, tensorflow 2), autotune-off (tf.data "
        "autotuning off: tensorflow). 'all' gives each framework the ones that apply to it; a named one that "
        "does not is a skipped cell."
    ),
]
PipelineOpt = Annotated[
    str | None,
    typer.Option(
        help="Training data pipeline(s), comma-separated: preloaded, "
        "native (augmentation in the framework's ops) or numpy."
    ),
]
LayoutOpt = Annotated[str | None, typer.Option(help="native, channels-last and/or channels-first, comma-separated.")]
StrategyOpt = Annotated[
    str | None,
    typer.Option(
        help="Training strategies, comma-separated: single, ddp, dp (torch), mirrored (tensorflow), "
        "multiworker (tensorflow, jax), sharded (jax)."
    ),
]
WorldSizeOpt = Annotated[
    str | None, typer.Option(help="Data-parallel replicas, comma-separated (e.g. 1,2); 1 = one device.")
]
BatchScopeOpt = Annotated[
    str | None,
    typer.Option(
        help="Is --batch-size the global batch (strong scaling, the default) or each replica's (per-replica: weak)?"
    ),
]
OptionOpt = Annotated[
    list[str] | None, typer.Option(help="A model option, MODEL.OPTION=VALUE (repeatable), e.g. lstm.hidden=650.")
]


# Exit statuses besides 0 (success), 1 (a trial failed / a regression) and 2 (bad input):
EXIT_MISSING = 3  # compare: a case has no values on one side (a gate must not pass on no data)
EXIT_BUSY = 4  # run --resume / extend: another live dlbench process is executing that run


def _show(table: Any) -> None:
    """Print a report TableData on the console (rich draws it; the data does not draw itself)."""
    from dlbench.report.console import rich_table

    console.print(rich_table(table))


def _fail(message: str, code: int = 2) -> None:
    from rich.text import Text

    # soft_wrap: one error is one line, also off a terminal (a log, a CI job), where
    # the console is 150 columns wide and would break a long path into several.
    err_console.print(Text.assemble(("error: ", "bold red"), printable(message)), highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _check_output(out: Path, reading: list[Any]) -> None:
    """One line and exit 2 when `out` would overwrite results or cannot be a file (dlbench.outputs)."""
    from dlbench import outputs

    try:
        outputs.check(out, reading)
    except outputs.OutputRefused as exc:
        _fail(f"--out {exc}")


def _write_output(out: Path, text: str, reading: list[Any]) -> None:
    """`text` into `out`, whole or not at all; the previous file stays if writing fails."""
    from dlbench import outputs

    try:
        outputs.write_text(out, text, reading)
    except outputs.OutputRefused as exc:
        _fail(f"--out {exc}")
    except OSError as exc:
        _fail(f"cannot write {out}: {exc.strerror or exc} (the previous file, if any, is unchanged)")


_KINDS = {int: "integers, e.g. 32,64", float: "numbers, e.g. 0.01,0.1", str: "values"}


def _split(value: str | None, cast=str, flag: str = "") -> list[Any] | None:
    """'a, b,,c' -> ['a', 'b', 'c'] (empty items dropped; no item at all is refused by the
    config's check of the factor); a value `cast` cannot read fails naming the flag."""
    if value is None:
        return None
    items = [v.strip() for v in value.split(",") if v.strip()]
    for v in items:
        try:
            cast(v)
        except ValueError:
            from dlbench.models.spec import short_repr

            _fail(
                f"{flag or 'command line'} {short_repr(value)}: {short_repr(v)} is not "
                f"{'an integer' if cast is int else 'a number'}; expected comma-separated "
                f"{_KINDS.get(cast, 'values')}"
            )
    return [cast(v) for v in items]


def _experiment(
    file: Path | None, matrix: dict[str, list[Any] | None], protocol: dict[str, Any], options: list[str] | None = None
):
    from dlbench import config
    from dlbench.config_toml import resolved

    given = {k: v for k, v in matrix.items() if v is not None}
    flags_given = bool(given or options or any(v is not None for v in protocol.values()))
    try:
        exp = config.load(file) if file is not None else config.default()
        exp = config.override(exp, given, protocol, model_options=config.parse_option_flags(options or []))
    except config.ConfigError as exc:
        _fail(str(exc))
    # What is stored and reported is what runs: the file and the flags merged.
    return resolved(exp, flags_given)


def _plan(
    file,
    framework,
    model,
    dataset,
    batch_size,
    init,
    optimizer,
    lr,
    protocol,
    input_shape=None,
    precision=None,
    layout=None,
    options=None,
    pipeline=None,
    strategy=None,
    world_size=None,
    runtime=None,
):
    from dlbench.plan import expand

    exp = _experiment(
        file,
        {
            "framework": _split(framework),
            "model": _split(model),
            "dataset": _split(dataset),
            "batch_size": _split(batch_size, int, "--batch-size"),
            "init": _split(init),
            "optimizer": _split(optimizer),
            "lr": _split(lr, float, "--lr"),
            "input_shape": _split(input_shape, int, "--input-shape"),
            "precision": _split(precision),
            "layout": _split(layout),
            "pipeline": _split(pipeline),
            "strategy": _split(strategy),
            "world_size": _split(world_size, int, "--world-size"),
            "runtime": _split(runtime),
        },
        protocol,
        options,
    )
    return expand(exp)


def _same_database(a: Any, b: Any) -> bool:
    """Two stores' paths name one database (a link or ./ included; URLs compared as text)."""
    from dlbench.outputs import same_file

    return same_file(a, b) if isinstance(a, Path) and isinstance(b, Path) else str(a) == str(b)


def _open_store(db: Path, readonly: bool = False):
    """readonly: for the commands that only read; the file is never written into, and an older
    schema is upgraded in a copy in memory."""
    from dlbench.store import Store, StoreError

    try:
        return Store(db, readonly=readonly)
    except StoreError as exc:
        _fail(str(exc))


# Where trials run (dlbench.executors): `run` and `study run` take the same options.
ExecutorOpt = Annotated[
    str | None,
    typer.Option(
        "--executor",
        help="Where each trial's worker runs: local (default), ray or slurm. A run resumes with any executor.",
    ),
]
RayAddressOpt = Annotated[
    str | None, typer.Option(help="Ray: the cluster to join (default: start a local one for the run).")
]
SlurmPartitionOpt = Annotated[str | None, typer.Option(help="Slurm: the partition (default: the cluster's).")]
SlurmGpusOpt = Annotated[int | None, typer.Option(help="Slurm: GPUs per job.")]
SlurmTimeOpt = Annotated[
    float | None, typer.Option(help="Slurm: minutes per job (default: the trial's timeout plus a margin).")
]
SlurmOptionOpt = Annotated[
    list[str] | None, typer.Option(help="Slurm: an extra sbatch option as key=value, or a flag (repeatable).")
]
SlurmFolderOpt = Annotated[
    str | None, typer.Option(help="Slurm: the job folder, on a path every node sees (default ./dlbench-slurm).")
]


FILE = Annotated[Path | None, typer.Argument(help="Experiment TOML file (default: the embedded default suite).")]


@app.command()
def run(
    ctx: typer.Context,
    file: FILE = None,
    framework: ListOpt = None,
    model: ListOpt = None,
    dataset: ListOpt = None,
    batch_size: ListOpt = None,
    init: ListOpt = None,
    optimizer: ListOpt = None,
    lr: ListOpt = None,
    input_shape: ShapeOpt = None,
    precision: PrecisionOpt = None,
    layout: LayoutOpt = None,
    pipeline: PipelineOpt = None,
    runtime: RuntimeOpt = None,
    strategy: StrategyOpt = None,
    world_size: WorldSizeOpt = None,
    batch_scope: BatchScopeOpt = None,
    option: OptionOpt = None,
    epochs: Annotated[int | None, typer.Option(help="Epochs per training repeat.")] = None,
    steps: Annotated[int | None, typer.Option(help="Optimizer steps per training repeat (instead of epochs).")] = None,
    momentum: Annotated[float | None, typer.Option(help="SGD momentum.")] = None,
    repeats: Annotated[int | None, typer.Option(help="Measured repeats per trial.")] = None,
    warmup: Annotated[int | None, typer.Option(help="Warm-up repeats per trial (stored, flagged).")] = None,
    trials: Annotated[
        int | None, typer.Option(help="Trials (fresh processes) per case, in interleaved blocks.")
    ] = None,
    threads: Annotated[int | None, typer.Option(help="Threads for every framework (0 = physical cores).")] = None,
    timeout: Annotated[float | None, typer.Option(help="Seconds per trial before the worker is killed.")] = None,
    seed: Annotated[int | None, typer.Option(help="Base seed (repeat r uses seed + r).")] = None,
    device: Annotated[str | None, typer.Option(help="cpu or cuda.")] = None,
    data_dir: Annotated[str | None, typer.Option(help="Directory searched first for dataset files.")] = None,
    train_samples: Annotated[int | None, typer.Option(help="Use only the first N training samples (0 = all).")] = None,
    test_samples: Annotated[int | None, typer.Option(help="Use only the first N test samples (0 = all).")] = None,
    latency_batches: Annotated[int | None, typer.Option(help="Batches timed one at a time per repeat.")] = None,
    infer_min_time: Annotated[
        float | None,
        typer.Option(
            help="Time inference over whole test-set passes filling at least this many seconds "
            "(default 0.1; 0 = one pass)."
        ),
    ] = None,
    samplers: Annotated[
        str | None, typer.Option(help="Telemetry: all, none, or a comma list of cpu, rapl, thermal, nvml, memory.")
    ] = None,
    sample_interval: Annotated[
        float | None,
        typer.Option(help="Seconds between sampler polls (default: each source's own, e.g. 0.1 s NVML, 0.5 s psutil)."),
    ] = None,
    idle_baseline: Annotated[
        float | None,
        typer.Option(
            help="Measure idle power for this many seconds before the run; energy is then also reported net of idle."
        ),
    ] = None,
    until_ci: Annotated[
        float | None,
        typer.Option(help="Adaptive: add interleaved blocks until every median's 95% CI is within ±PCT percent."),
    ] = None,
    max_repeats: Annotated[
        int | None, typer.Option(help="Adaptive: at most this many blocks (trials per case).")
    ] = None,
    budget: Annotated[float | None, typer.Option(help="Adaptive: stop adding blocks after this many minutes.")] = None,
    until_ci_metrics: Annotated[
        str | None,
        typer.Option(help="Adaptive: the phase.metric medians that must converge, comma list (default train.time)."),
    ] = None,
    target_accuracy: Annotated[
        float | None,
        typer.Option(
            help="Time to accuracy: train epoch by epoch until this test accuracy (fraction), at most --epochs epochs."
        ),
    ] = None,
    tta_budget: Annotated[
        float | None, typer.Option(help="Time to accuracy: stop after this many seconds of training.")
    ] = None,
    memory_limit: Annotated[
        str | None,
        typer.Option(help="Cap each worker's memory (e.g. 2GiB; RLIMIT_DATA): cells that exceed it are stored as oom."),
    ] = None,
    profile_steps: Annotated[
        int | None,
        typer.Option(
            help="After the timed repeats, profile this many training steps with the framework's own profiler "
            "(time per step by op category; 0 = off)."
        ),
    ] = None,
    profile_traces: Annotated[
        str | None, typer.Option(help="Keep the profiles' traces (Chrome/Perfetto .json.gz) in this folder.")
    ] = None,
    profile_calls: Annotated[
        int | None,
        typer.Option(help="Profiled calls per trial (and as many without the profiler, in turns; default 3)."),
    ] = None,
    resume: Annotated[int | None, typer.Option(help="Finish the unfinished trials of run ID.")] = None,
    executor: ExecutorOpt = None,
    ray_address: RayAddressOpt = None,
    slurm_partition: SlurmPartitionOpt = None,
    slurm_gpus: SlurmGpusOpt = None,
    slurm_time: SlurmTimeOpt = None,
    slurm_option: SlurmOptionOpt = None,
    slurm_folder: SlurmFolderOpt = None,
    db: DB = Path("dlbench.db"),
) -> None:
    """Run an experiment: every trial in a fresh worker process, results into the database."""
    from dlbench import runner

    # `dlbench plan` is this command registered again (below `_print_report`): it takes
    # every flag run takes, so a stored run's command with run -> plan prints that run's
    # plan, and a flag run gains cannot be missing from it. It stops at the plan.
    dry = ctx.info_name == "plan"
    if not dry:
        runner.raise_on_termination()
    executor_flags = _executor_flags(
        executor, ray_address, slurm_partition, slurm_gpus, slurm_time, slurm_option, slurm_folder
    )
    if resume is not None:
        from dlbench.store import StoreError

        if dry:
            _fail(f"--resume {resume} finishes a stored run (dlbench run --resume {resume}); there is no plan to print")

        store = _open_store(db)
        try:
            store.run(resume)
        except StoreError as exc:
            _fail(str(exc))
        # A resumed run imports the user's own model or data only if named again now;
        # it runs on the executor named now (local unless named), whichever started it.
        settings = _executor_settings(None, executor_flags)
        _say_unnamed_traces(store, resume, profile_traces or "")
        _execute_and_report(
            store, resume, db, _named_sources(model, dataset), executor=settings, traces=profile_traces or ""
        )
        return
    protocol = dict(
        epochs=epochs,
        steps=steps,
        momentum=momentum,
        repeats=repeats,
        warmup=warmup,
        trials=trials,
        threads=threads,
        timeout=timeout,
        seed=seed,
        device=device,
        data_dir=data_dir,
        train_samples=train_samples,
        test_samples=test_samples,
        latency_batches=latency_batches,
        infer_min_time=infer_min_time,
        samplers=samplers,
        sample_interval=sample_interval,
        idle_baseline=idle_baseline,
        until_ci=until_ci,
        max_repeats=max_repeats,
        budget=budget,
        until_ci_metrics=until_ci_metrics,
        memory_limit=memory_limit,
        target_accuracy=target_accuracy,
        tta_budget=tta_budget,
        batch_scope=batch_scope,
        profile_steps=profile_steps,
        profile_traces=profile_traces,
        profile_calls=profile_calls,
    )
    try:
        plan = _plan(
            file,
            framework,
            model,
            dataset,
            batch_size,
            init,
            optimizer,
            lr,
            protocol,
            input_shape,
            precision,
            layout,
            option,
            pipeline,
            strategy,
            world_size,
            runtime,
        )
    except KeyboardInterrupt as exc:
        _exit_on_signal(exc, "nothing was stored")
    if dry:
        _print_plan(plan)
        return
    _start_and_run(plan, db, _command_line(ctx), executor=_executor_settings(plan.experiment.executor, executor_flags))


def _executor_flags(
    name: str | None,
    ray_address: str | None,
    slurm_partition: str | None,
    slurm_gpus: int | None,
    slurm_time: float | None,
    slurm_option: list[str] | None,
    slurm_folder: str | None,
) -> dict[str, Any]:
    """The executor flags as given (None: not given), keyed like the [executor] table."""
    return {
        "name": name,
        "ray_address": ray_address,
        "slurm_partition": slurm_partition,
        "slurm_gpus": slurm_gpus,
        "slurm_time": slurm_time,
        "slurm_options": slurm_option or None,
        "slurm_folder": slurm_folder,
    }


def _executor_settings(base: Any, flags: dict[str, Any]) -> Any:
    """The experiment file's [executor] table (base; None: local) with the flags given over it."""
    from dataclasses import asdict

    from dlbench.executors import ExecutorError, ExecutorSettings, parse_settings

    given = {k: v for k, v in flags.items() if v is not None}
    try:
        parse_settings("command line", given, flags=True)  # the flags alone first: errors name the flag
        merged = {k: v for k, v in asdict(base or ExecutorSettings()).items() if v is not None} | given
        return parse_settings("command line", merged, flags=True)
    except ExecutorError as exc:
        _fail(str(exc))


def _db_text(db: Path) -> str:
    """--db as it may be printed: a PostgreSQL URL's password masked."""
    from dlbench.store import shown

    return shown(db)


def _is_url(db: Path) -> bool:
    from dlbench.store import database_url

    return database_url(db) is not None


def _executor_flags_text(settings: Any) -> str:
    """The flags that name `settings` again (empty for local), for a resume command."""
    from dataclasses import asdict

    from dlbench.executors import FLAGS, ExecutorSettings

    if settings is None or settings.name == "local":
        return ""
    default = asdict(ExecutorSettings())
    out = []
    for key, value in asdict(settings).items():
        if value == default[key] or value is None:
            continue
        for one in value if isinstance(value, tuple) else (value,):
            out.append(f" {FLAGS[key]} {shlex.quote(str(one if not isinstance(one, float) else f'{one:g}'))}")
    return "".join(out)


def _start_and_run(plan, db: Path, command_line: str, preface: Any = None, executor: Any = None) -> None:
    """Store a new run of `plan` (after its data is in place), execute it and print its
    report (with `preface` first, a study's paper vs this run)."""
    from dlbench import env, registry, runner
    from dlbench.datasets import DatasetError

    run_id = None
    store = None
    try:
        if not plan.trials:
            _print_skipped([(s.cell, s.reason) for s in plan.skipped])
            _fail("nothing to run: every cell was skipped (reasons above)")
        # Opened after planning, so that a mistake in the command or a bad data
        # file leaves no new database behind; before any download, so that a
        # database that cannot be written is said before minutes are spent.
        store = _open_store(db)
        sources = plan.experiment.sources
        for name in sorted({t.case.dataset for t in plan.trials}):
            try:
                registry.dataset(name, sources).ensure(plan.experiment.protocol.data_dir, True, None)
            except DatasetError as exc:
                _fail(str(exc))
        run_id = runner.create_run(store, plan, command=command_line, environment=env.fingerprint())
        console.print(f"run {run_id}: {len(plan.trials)} trials, {len(plan.skipped)} skipped cells -> {_db_text(db)}")
        _print_skipped([(s.cell, s.reason) for s in plan.skipped])
        _design_note(plan)
        _print_samplers(store.samplers(run_id))
        p = plan.experiment.protocol
        if p.idle_baseline > 0:
            from dlbench.samplers import parse_names

            console.print(f"measuring idle power for {p.idle_baseline:g} s ...")
            power = runner.measure_idle(
                store, run_id, p.idle_baseline, parse_names(p.samplers), p.sample_interval or None
            )
            console.print(
                "idle power: "
                + (
                    ", ".join(f"{k} {v:.2f} W" for k, v in power.items())
                    or "no energy counter available, nothing to subtract"
                )
            )
    except KeyboardInterrupt as exc:
        if run_id is None and store is not None:
            # The signal may have landed inside create_run after its commit (seen once in
            # the fault suite: SIGTERM 0.84 s into a run said "nothing was stored" over a
            # stored run).
            run_id = store.committed_run()
        if run_id is None or store is None:
            _exit_on_signal(exc, "nothing was stored")
        store.finish_run(run_id, "interrupted")
        _exit_on_signal(
            exc,
            f"run {run_id} is stored, no trial ran yet. Resume with: dlbench run --resume {run_id} "
            f"--db {shlex.quote(_db_text(db))}",
        )
    _execute_and_report(store, run_id, db, sources, preface, executor, plan.experiment.protocol.profile_traces)


def _say_unnamed_traces(store: Any, run_id: int, named: str) -> None:
    """One line when a resumed run stored a profile-trace folder that is not named now:
    a path read from a database is never written to unless the user names it again."""
    from dlbench.trialspec import same_folder

    for row in store.trials(run_id, statuses=("pending", "running", "interrupted")):
        try:
            stored = json.loads(row["protocol_json"]).get("profile_traces")
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
) -> None:
    """Execute (or resume) run_id, print its report, exit 1 when a trial did not end ok or oom.
    `traces`: the profile-trace folder named in this invocation (a stored one is not obeyed)."""
    counts = _execute(store, run_id, db, sources, executor, traces)
    try:
        _print_report(store, run_id, preface=preface(store, run_id) if callable(preface) else preface)
    except KeyboardInterrupt as exc:  # SIGTERM too (runner.Terminated): the run itself is complete
        _exit_on_signal(
            exc,
            f"while printing the report; run {run_id} is finished and stored: "
            f"dlbench report --run {run_id} --db {shlex.quote(_db_text(db))}",
        )
    console.print("trials: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    # An out-of-memory cell is a result of a sweep (its gap is data); a failed,
    # timed-out or interrupted trial is not, and makes the exit status 1; so does a
    # part of a trial that failed (a profile), though its timed measurements stand.
    if any(status not in ("ok", "oom") for status in counts) or _parts_failed(store, run_id):
        raise typer.Exit(1)


def _parts_failed(store: Any, run_id: int) -> bool:
    from dlbench.report.model import Manifest, failed_parts, failed_samplers

    trials = store.trials(run_id)
    manifests = [
        Manifest(t["id"], t["block"], "", t["status"], json.loads(t["manifest_json"] or "{}"), "") for t in trials
    ]
    lines = failed_parts(manifests) + failed_samplers(trials)
    for line in lines:
        err_console.print(printable(line), highlight=False, soft_wrap=True)
    return bool(lines)


def _exit_on_signal(exc: KeyboardInterrupt, message: str) -> NoReturn:
    """One line for Ctrl-C, SIGTERM or SIGHUP (runner.Terminated), and exit 128 + the signal's number."""
    from dlbench.runner import Terminated

    name = str(exc) if isinstance(exc, Terminated) else "interrupted"
    err_console.print(f"{name}: {message}", highlight=False)
    raise typer.Exit(128 + (exc.signum if isinstance(exc, Terminated) else 2))


def _named_sources(model: str | None, dataset: str | None) -> dict[str, str]:
    """The user's own models and datasets named by reference in --model / --dataset
    (plain names need no source), for the commands that execute stored runs."""
    from dlbench import registry

    sources: dict[str, str] = {}
    for kind, given in (("model", model), ("dataset", dataset)):
        for text in _split(given) or []:
            if not registry.is_reference(kind, text):
                continue
            try:
                name, ref = registry.resolve(kind, text)
            except registry.RegistryError as exc:
                _fail(f"--{kind} {text}: {exc}")
            if ref is not None:
                sources[f"{kind}:{name}"] = ref
    return sources


def _execute(
    store, run_id: int, db: Path, sources: dict[str, str], executor: Any = None, traces: str = ""
) -> dict[str, int]:
    """Execute (or resume) a run with a progress bar. Ctrl-C, SIGTERM and SIGHUP stop
    the worker, mark the run interrupted and exit 128 + the signal's number with the
    command that resumes it; a run executed by another live process is refused."""
    from dlbench import runner
    from dlbench.executors import ExecutorError
    from dlbench.store import StoreError

    named = "".join(f" --{key.partition(':')[0]} {shlex.quote(ref)}" for key, ref in sorted(sources.items()))
    resume = f"dlbench run --resume {run_id} --db {shlex.quote(_db_text(db))}{named}{_executor_flags_text(executor)}"
    # Everything from here on is inside the handler: a Ctrl-C that lands in the progress
    # bar's import (tens of ms on a loaded machine) reached click, which exits 1 with
    # "Aborted!" instead of 130 with the resume command (seen once in the fault suite).
    try:
        runner.raise_on_termination()
        from dlbench.progress import RunProgress

        runner.check_sources(store, run_id, sources)
        with RunProgress(console, store, run_id) as progress:
            return runner.execute_run(
                store, run_id, on_event=progress.on_event, sources=sources, executor=executor, traces=traces
            )
    except runner.SourcesMissing as exc:
        _fail(str(exc))
    except ExecutorError as exc:
        _fail(f"{exc}; run {run_id} keeps what was stored. Resume with: {resume}")
    except KeyboardInterrupt as exc:
        _exit_on_signal(exc, f"finished trials are stored. Resume with: {resume}")
    except runner.RunBusy as exc:
        _fail(str(exc), code=EXIT_BUSY)
    except StoreError as exc:
        _fail(f"{exc}: {resume}", code=1)
    raise AssertionError("unreachable")


def _command_line(ctx: typer.Context, **resolved: Any) -> str:
    """The invocation, rebuilt from the parsed parameters (sys.argv is not the
    command when dlbench is driven as a library or under a test runner): stored with
    the run, it must run again as typed. `resolved`: parameters whose typed value
    means something else later, given as what they meant now (explain's "the
    latest run" is, once stored, the explain run itself)."""
    # The command's whole path under the program (`study run`, not `run`); the root's
    # own name is whatever started the program (python -m, a test runner): dlbench.
    path: list[str] = []
    level: Any = ctx
    while getattr(level, "parent", None) is not None:
        path.insert(0, level.info_name or "")
        level = level.parent
    words = ["dlbench", *(path or [ctx.info_name or "run"])]
    declared = {p.name: p for p in getattr(getattr(ctx, "command", None), "params", ())}
    positional = len(words)
    for name, value in {**ctx.params, **resolved}.items():
        if value is None:
            continue
        param = declared.get(name)
        # typer brings its own copy of click: parameters are told apart by kind, not class.
        kind = getattr(param, "param_type_name", None)
        if kind == "argument" or (param is None and name == "file"):  # FILE of run, RUN of explain
            words.insert(positional, str(value))
            positional += 1
            continue
        # The flag as declared (--format for the parameter fmt), not the parameter's name.
        flag = next((o for o in param.opts if o.startswith("--")), None) if param is not None else None
        flag = flag or f"--{name.replace('_', '-')}"
        if isinstance(value, (list, tuple)):  # a repeatable option: the flag once per value, none if empty
            for item in value:
                words += [flag, str(item)]
        elif isinstance(value, bool) and getattr(param, "is_flag", False):
            # An on/off pair (--params/--no-params) names its off side; a plain flag is left out when off.
            off = next((o for o in getattr(param, "secondary_opts", ()) if o.startswith("--")), None)
            words += [flag] if value else [off] if off else []
        elif value != "":
            words += [flag, str(value)]
    return shlex.join(words)


def _print_samplers(rows) -> None:
    from dlbench.report.tables import samplers_table

    _show(samplers_table(rows))


def _print_skipped(rows) -> None:
    from dlbench.report.tables import skipped_table

    table = skipped_table(rows)
    if table is not None:
        _show(table)


def _design_note(plan: Any) -> None:
    """Say before anything runs when the design cannot reach a verdict, and the smallest that can."""
    from dlbench.analysis.design import check

    d = check(plan)
    if d is None or d.decidable:
        return
    if d.one_process:
        text = (
            f"note: this design gives ratios but no verdict: each case runs in one process, and repeats inside "
            f"one process share its state (a test on them compares two processes, not two codes). Smallest "
            f"design that decides: --trials {d.trials_needed} (independent processes paired by block; "
            f"{d.members} frameworks/variants per comparison set, {d.family} Holm-adjusted comparison"
            f"{'s' if d.family > 1 else ''})."
        )
    else:
        test = (
            "Wilcoxon signed-rank test (trial medians paired by block)"
            if d.paired
            else "Mann-Whitney test (trial medians)"
        )
        text = (
            f"warning: this design cannot reach a verdict: {d.members} frameworks/variants per comparison set give "
            f"{d.family} Holm-adjusted comparison{'s' if d.family > 1 else ''}, and with {d.n} trials per case the "
            f"exact {test} "
            f"cannot go below p = {d.smallest_p:.3g} >= {d.alpha:g}, however large the difference. Smallest "
            f"design that can: --trials {d.trials_needed}."
        )
    console.print(
        text,
        highlight=False,
        soft_wrap=False,
    )


BAND_OPT = Annotated[
    float,
    typer.Option(
        "--band",
        help="Band of no meaningful difference, a fraction (0.02 = ±2%): the same for every verdict printed.",
    ),
]
ALPHA_OPT = Annotated[float, typer.Option("--alpha", help="Significance level, family-wise (Holm).")]


def _check_criteria(band: float, alpha: float) -> None:
    if not 0 < band < 1 or not 0 < alpha < 1:
        _fail(f"--band {band} and --alpha {alpha} must lie strictly between 0 and 1 (e.g. --band 0.02 --alpha 0.05)")


def _print_report(
    store, run_id: int, details: bool = False, preface: Any = None, band: float = BAND, alpha: float = ALPHA
) -> None:
    """The run's report on the console: the answer, one row per case, latency, failures;
    with details every table of the written formats; `preface` (a study's paper vs this
    run) first."""
    from dlbench.report.console import print_report
    from dlbench.report.model import build_report

    report = build_report(store, run_id, hypotheses=False, band=band, alpha=alpha)
    report.preface = preface
    print_report(console, report, details)


# The dry run of `run`: the same function, so the same flags and the same planning; it
# stops before anything is opened, stored or run (`dry` in run).
app.command(
    "plan",
    help="Dry run: the trials that would run, in order, and the skipped cells with reasons. Takes every flag "
    "of run, so a stored command with run -> plan shows that run's plan (--db and where trials run change nothing).",
)(run)


def _print_plan(p: Any) -> None:
    """The trials in order, the skipped cells with reasons, and a warning when the design cannot decide."""
    from dlbench.report.tables import plan_table

    _show(plan_table(p))
    _print_skipped([(s.cell, s.reason) for s in p.skipped])
    _design_note(p)


@app.command("list")
def list_(
    params: Annotated[
        bool,
        typer.Option(
            "--params/--no-params",
            help="Build every model in every installed "
            "framework to show its trainable-parameter count (cached after the "
            "first time).",
        ),
    ] = True,
) -> None:
    """Frameworks (installed versions or why not), models (parameter counts per framework), datasets."""
    from rich.table import Table

    from dlbench import registry
    from dlbench.param_counts import NN_FRAMEWORKS, framework_counts, reference_point

    t = Table(title="frameworks")
    for col in ("name", "variants", "status", "versions"):
        t.add_column(col, overflow="fold")
    installed = {}
    for info in registry.frameworks().values():
        reason = info.unavailable_reason()
        versions = ", ".join(f"{k} {v}" for k, v in info.versions().items() if v != "not installed")
        t.add_row(info.name, ", ".join(info.variants), reason or "installed", versions)
        if reason is None and info.name in NN_FRAMEWORKS:
            installed[info.name] = versions
    console.print(t)
    counts = {}
    if params and installed:
        err_console.print(f"counting parameters in {', '.join(installed)} (built once, then cached) ...")
        counts = framework_counts(installed)
    t = Table(
        title="models: trainable parameters at the input shown, as each framework builds them, "
        "beside the spec's formula and the published count"
    )
    for col in ("name", "input, classes", "formula", *counts, "published", "description", "from"):
        t.add_column(col, overflow="fold")
    for spec in registry.models({}):
        if spec.kind == "classical":
            t.add_row(spec.name, "—", "—", *("—" for _ in counts), "—", spec.description, spec.origin)
            continue
        shape, classes, published = reference_point(spec)
        formula = spec.count(shape, classes) if spec.param_count is not None else None

        def shown(fw: str) -> str:
            got = counts[fw]
            if isinstance(got.get("error"), str):  # the whole framework failed to count
                return f"error: {got['error']}"
            value = got.get(spec.name)
            if value is None:
                return "—"
            if isinstance(value, dict):
                return f"error: {value['error']}"
            return f"{value:,}" + ("" if formula is None or value == formula else " (≠ formula)")

        t.add_row(
            spec.name,
            f"{'x'.join(map(str, shape))}, {classes}",
            f"{formula:,}" if formula is not None else "—",
            *(shown(fw) for fw in counts),
            f"{published:,}" if published else "—",
            spec.description,
            spec.origin,
        )
    console.print(t)
    t = Table(title="datasets")
    for col in ("name", "shape", "classes", "location", "description", "from"):
        t.add_column(col, overflow="fold")
    for data in registry.datasets({}):
        shape, classes = data.shape(None)
        found, searched = data.locate(None)
        if found is not None:
            where = str(found)
        elif searched:
            where = "not found locally (downloaded on first use)"
        else:
            where = "in memory" if data.fixed_shape else "generated in memory"
        t.add_row(data.name, "x".join(map(str, shape)), str(classes), where, data.description, data.origin)
    console.print(t)
    err_console.print(
        "your own: --model PATH.py:NAME or package.module:NAME (see docs/tutorial.md), "
        "--dataset FILE.npz or a directory of IDX files; plugins: entry points dlbench.models, "
        "dlbench.datasets, dlbench.frameworks"
    )


FORMAT = Annotated[
    str,
    typer.Option(
        "--format",
        "-f",
        help="console (default), markdown, latex, html (one "
        "self-contained file with figures) or csv (the summary rows; "
        "`dlbench export` writes every raw value).",
    ),
]


@app.command()
def report(
    run_ids: Annotated[
        list[int] | None,
        typer.Option("--run", help="Run id (default: the latest); repeat it for runs of several machines."),
    ] = None,
    fmt: FORMAT = "console",
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write the report to this file (default: standard output).")
    ] = None,
    figures: Annotated[
        Path | None,
        typer.Option(
            "--figures",
            help="Also write every figure (PNG and SVG) into this directory; Markdown and LaTeX "
            "then show them, linked relative to --out's folder.",
        ),
    ] = None,
    latex_tables: Annotated[
        Path | None,
        typer.Option(
            "--latex-tables",
            help="With --format latex: also write every table as a bare tabular (booktabs) to this "
            "directory, one .tex file each, to \\input in a paper.",
        ),
    ] = None,
    details: Annotated[
        bool,
        typer.Option(
            "--details",
            help="Console: every table (per-metric statistics, "
            "telemetry, verdicts, skipped cells), not only the answer and the "
            "one-row-per-case summary.",
        ),
    ] = False,
    dbs: Annotated[
        list[Path] | None,
        typer.Option("--db", help="SQLite results database; repeat it to set machines side by side."),
    ] = None,
    band: BAND_OPT = BAND,
    alpha: ALPHA_OPT = ALPHA,
) -> None:
    """Report of a stored run, the answer first (who is faster, by how much, is it real), then summary
    tables (n, mean ± sd, median, Q1, Q3), latency, telemetry and verdicts; as console tables, Markdown,
    LaTeX, HTML or CSV. Several --db (or --run) taken on different machines: first a section with one
    column group per machine (nothing pooled), then the first run's report."""
    from dlbench.report.formats import FORMATS
    from dlbench.store import StoreError

    if fmt not in FORMATS:
        _fail(f"--format {fmt!r}: allowed: {', '.join(FORMATS)}")
    if fmt == "console" and out is not None:
        _fail("--out needs a written format (markdown, latex, html or csv); console output goes to the terminal")
    if latex_tables is not None and fmt != "latex":
        _fail(f"--latex-tables writes LaTeX tables: it needs --format latex (got --format {fmt})")
    _check_criteria(band, alpha)
    # The flags are checked first: a bad flag is named before any database is opened.
    paths = dbs or [Path("dlbench.db")]
    if out is not None:
        _check_output(out, list(paths))
    picked = _collect_runs(paths, list(run_ids or []), lambda store: [store.run(None)["id"]])
    preface = _machines_preface(picked) if len(picked) > 1 else None
    run_id = picked[0][1]
    store = picked[0][0]
    try:
        row = store.run(run_id)
    except StoreError as exc:
        _fail(str(exc))
    made: list[Any] = []
    # A document on standard output keeps stdout for itself: messages go to stderr.
    say = err_console if fmt != "console" and out is None else console
    if figures is not None:
        from dlbench.report.plots import make_figures

        try:
            figures.mkdir(parents=True, exist_ok=True)
            made = make_figures(store, row["id"], figures)
        except OSError as exc:
            _fail(f"cannot write figures to {figures}: {exc}")
        say.print(
            f"wrote {len(made)} figures (PNG and SVG) to {figures}: " + ", ".join(f.name for f in made), highlight=False
        )
    if fmt == "console":
        console.print(f"command: {row['command']}", highlight=False)
        _print_report(store, row["id"], details, preface=preface, band=band, alpha=alpha)
        return
    from dlbench.report.formats import render

    base = (out.parent if out is not None else Path.cwd()) if made else None
    text = render(store, row["id"], fmt, made, base, preface=preface, band=band, alpha=alpha)
    if latex_tables is not None:
        from dlbench.report.latex import bare_tables
        from dlbench.report.model import build_report

        try:
            latex_tables.mkdir(parents=True, exist_ok=True)
            written = bare_tables(build_report(store, row["id"], band=band, alpha=alpha))
            for name, body in written:
                _write_output(latex_tables / name, body, list(paths))
        except OSError as exc:
            _fail(f"cannot write LaTeX tables to {latex_tables}: {exc}")
        say.print(f"wrote {len(written)} bare LaTeX tables to {latex_tables}", highlight=False)
    if out is None:
        sys.stdout.write(text)  # not rich: its markup and wrapping would alter the document
        return
    _write_output(out, text, list(paths))
    console.print(f"wrote the {fmt} report of run {row['id']} to {out}", highlight=False)


def _collect_runs(paths: list[Path], ids: list[int], default) -> list[tuple[Any, int]]:
    """(store, run id) for each --db and --run: one database with several --run, several
    databases with one --run each (or none: `default(store)` picks), read-only."""
    from dlbench.store import StoreError

    if len(paths) > 1 and len(ids) > 1 and len(ids) != len(paths):
        _fail(f"--run given {len(ids)} times for {len(paths)} --db: give one --run per --db, or none")
    picked: list[tuple[Any, int]] = []
    for i, path in enumerate(paths):
        store = _open_store(path, readonly=True)
        wanted = ids if len(paths) == 1 else ([ids[i]] if ids else [])
        try:
            for rid in wanted or default(store):
                store.run(rid)
                picked.append((store, rid))
        except StoreError as exc:
            _fail(str(exc) if len(paths) == 1 else f"{path}: {exc}")
    return picked


def _machines_preface(picked: list[tuple[Any, int]]):
    from dlbench.report import machines
    from dlbench.results import Results

    runs = []
    for store, rid in picked:
        row = store.run(rid)
        runs.append(
            machines.MachineRun(
                rid, str(store.path), json.loads(row["environment_json"] or "{}"), Results.of_store(store).summary(rid)
            )
        )
    preface = machines.build(runs)
    preface.lines.append(f"The report below is run {picked[0][1]}'s, of {picked[0][0].path} (the first machine).")
    return preface


@app.command()
def runs(
    run_id: Annotated[
        int | None, typer.Option("--run", help="List this run's trials and where each one ran instead.")
    ] = None,
    db: DB = Path("dlbench.db"),
) -> None:
    """The runs stored in the database, and where their trials ran (--run ID: each trial)."""
    from dlbench.report.tables import placements_table, runs_table
    from dlbench.store import StoreError

    store = _open_store(db, readonly=True)
    if run_id is None:
        _show(runs_table(store.runs()))
        return
    try:
        store.run(run_id)
    except StoreError as exc:
        _fail(str(exc))
    _show(placements_table(store.trials(run_id, retired=True)))


@app.command()
def export(
    out: Annotated[Path, typer.Argument(help="File to write (.csv, .json or .parquet).")],
    run_id: Annotated[int | None, typer.Option("--run", help="Run id (default: the latest).")] = None,
    fmt: Annotated[
        str | None,
        typer.Option("--format", "-f", help="csv, json or parquet (default: from the file's suffix, else csv)."),
    ] = None,
    db: DB = Path("dlbench.db"),
) -> None:
    """Every measurement of a run, one row per value, every factor of its case as a column (docs/schema.md)."""
    from dlbench.store import StoreError

    formats = ("csv", "json", "parquet")  # dlbench.results.FORMATS, without importing pandas before it is needed
    suffix = out.suffix.lstrip(".").lower()
    fmt = fmt.lower() if fmt is not None else suffix if suffix in formats else "csv"
    if fmt not in formats:
        _fail(f"--format {fmt!r}: allowed: {', '.join(formats)}")

    # The destination is checked before the database is opened: a bad path fails
    # with one line and leaves no trace (not even a new, empty database file).
    if "\0" in str(out):
        _fail(f"export {str(out)!r}: a file name cannot contain a NUL character")
    if out.is_dir():
        _fail(f"export {out}: is a directory; give the CSV file to write, e.g. {out / 'run.csv'}")
    if not out.parent.is_dir():
        _fail(f"export {out}: no directory {out.parent} to write into (create it first)")
    from dlbench import outputs

    try:
        outputs.check(out, [db])
    except outputs.OutputRefused as exc:
        _fail(f"export {exc}")
    if run_id is not None and not 1 <= run_id < 2**63:
        _fail(f"--run {run_id}: a run id is a positive integer (see dlbench runs)")
    if not db.is_file() and not _is_url(db):  # exporting reads a database; it never creates an empty one
        _fail(f"--db {db}: no such database file (give the --db that dlbench run wrote)")
    store = _open_store(db, readonly=True)
    try:
        row = store.run(run_id)
    except StoreError as exc:
        _fail(str(exc))
    from dlbench import results

    store.close()
    data = results.load(db)
    frame = data.measurements(row["id"])
    data.close()
    try:
        # Written beside `out` and renamed into place: a full disk leaves the old file whole.
        outputs.write_with(out, lambda tmp: results.export(frame, tmp, fmt), [db])
    except outputs.OutputRefused as exc:
        _fail(f"export {exc}")
    except OSError as exc:
        _fail(f"export {out}: cannot write: {exc.strerror or exc} (the previous file, if any, is unchanged)")
    console.print(f"wrote {len(frame)} measurements of run {row['id']} to {out} ({fmt})")


def _resolve_run(ref: str, db: Path, readonly: bool = False):
    """'3' -> run 3 in --db; 'other.db' -> its latest run; 'other.db:3' -> run 3 there.
    readonly: opened read-only (compare); extend writes into the runs it resolves."""
    from dlbench.store import StoreError

    path, run_id = db, None
    if ref.isdigit():
        run_id = int(ref)
    else:
        name, _, rid = ref.rpartition(":") if ref.rpartition(":")[2].isdigit() else (ref, "", "")
        path, run_id = Path(name), (int(rid) if rid else None)
        if not path.exists():
            _fail(f"{ref}: no such database file {path} (give a run id, FILE.db or FILE.db:RUN)")
    store = _open_store(path, readonly=readonly)
    try:
        row = store.run(run_id)
    except StoreError as exc:
        _fail(str(exc))
    return store, row


@app.command()
def compare(
    a: Annotated[str, typer.Argument(help="Baseline: a run id in --db, FILE.db (its latest run) or FILE.db:RUN.")],
    b: Annotated[str, typer.Argument(help="Candidate, in the same forms.")],
    threshold: Annotated[
        float,
        typer.Option(
            "--band",
            "--threshold",
            help="The band of no meaningful difference (fraction, the same for every verdict dlbench prints): "
            "a significant slowdown beyond it is a regression.",
        ),
    ] = BAND,
    alpha: Annotated[float, typer.Option(help="Significance level (family-wise).")] = ALPHA,
    quantile: Annotated[
        float,
        typer.Option(
            help="Which quantile of the trial values to compare: 0.5 the median; a low one (0.1: needs 20 trials "
            "a run) the undisturbed speed on a machine whose speed comes and goes."
        ),
    ] = 0.5,
    allow_missing: Annotated[
        bool,
        typer.Option(
            "--allow-missing",
            help="Exit 0 even when a case has no values on one side (its trials all failed or "
            "timed out); by default that exits 3, so that a CI gate never passes on no data.",
        ),
    ] = False,
    db: DB = Path("dlbench.db"),
) -> None:
    """Run vs run: per case ratio B/A with CI and verdict (paired by block when the runs took turns, as
    `dlbench extend A B` runs them). Exit status: 1 on a significant regression; 3 when a case has no values
    on one side (unless --allow-missing); 2 on bad input."""
    from dlbench.analysis.comparisons import run_vs_run, setting_changes
    from dlbench.analysis.stats import min_trials
    from dlbench.report.drift import drift_notes
    from dlbench.report.verdict_tables import compare_table

    if not 0 < threshold < 1 or not 0 < alpha < 1:
        _fail(f"--band {threshold} and --alpha {alpha} must lie strictly between 0 and 1")
    if not 0 < quantile < 1:
        _fail(
            f"--quantile {quantile} must lie strictly between 0 and 1 (0.5: the median; 0.1: the 10th "
            "percentile); the minimum (0) has no bootstrap CI"
        )
    sa, ra = _resolve_run(a, db, readonly=True)
    sb, rb = _resolve_run(b, db, readonly=True)
    if ra["id"] == rb["id"] and _same_database(sa.path, sb.path):
        _fail(f"{a} and {b} are the same run ({sb.path}, run {rb['id']}): a run compared with itself says nothing")
    a_trials, b_trials = sa.trials(ra["id"]), sb.trials(rb["id"])
    diffs = run_vs_run(
        a_trials,
        sa.measurements(ra["id"]),
        b_trials,
        sb.measurements(rb["id"]),
        threshold=threshold,
        alpha=alpha,
        quantile=quantile,
    )
    if not diffs:
        _fail(f"runs {a} and {b} share no case (same framework, model, data and settings)")
    _show(compare_table(diffs, f"A ({a})", f"B ({b})", threshold, quantile, alpha))
    regressions = [d for d in diffs if d.regression]
    missing = [d for d in diffs if d.comparison is None]
    single = [
        d for d in diffs if d.comparison is not None and not (d.comparison.independent and d.comparison.interleaved)
    ]
    console.print(
        f"{len(diffs)} comparisons, {len(regressions)} regressions, {len(missing)} without values on one side",
        highlight=False,
    )
    if single:
        console.print(
            f"no verdict for {len(single)} comparison(s): "
            + (
                "a case ran in one process on a side, and a test on one process's repeats compares two processes, "
                "not two codes"
                if any(d.comparison is not None and not d.comparison.independent for d in single)
                else "the runs were taken one after the other, so their difference holds the machine's drift "
                "between them"
            )
            + f". `dlbench extend {a} {b} --blocks N` runs both in turns, one process per block, and decides "
            f"with {min_trials(alpha)} or more blocks a run.",
            highlight=False,
        )
    env_a, env_b = (json.loads(r["environment_json"] or "{}") for r in (ra, rb))
    for note in drift_notes(diffs, env_a, env_b, setting_changes(a_trials, b_trials)):
        console.print(note, highlight=False)
    if regressions:
        raise typer.Exit(1)
    if missing and not allow_missing:
        err_console.print(
            f"error: {len(missing)} of {len(diffs)} comparisons have no values on one side (every "
            "trial of that case failed, timed out or was interrupted): nothing was compared there. "
            "Exit 3; pass --allow-missing to accept that.",
            highlight=False,
        )
        raise typer.Exit(EXIT_MISSING)


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
    from dlbench import runner, trialspec
    from dlbench.protocol_settings import MAX_TRIALS

    if not 1 <= blocks <= MAX_TRIALS:
        _fail(f"--blocks {blocks}: must be at least 1 and at most {MAX_TRIALS} (the most trials a case may have)")
    trusted = _trusted_interpreters(python or [])
    sources = _named_sources(model, dataset)
    targets, seen = [], set()
    for ref in refs:
        store, row = _resolve_run(ref, db)
        where = (str(Path(store.path).resolve()), row["id"])
        if where in seen:
            _fail(f"{ref}: run {row['id']} of {store.path} is named twice")
        seen.add(where)
        recorded = json.loads(row["environment_json"] or "{}").get("python_executable") or sys.executable
        interpreter = trusted.get(_real(str(recorded)))
        if interpreter is None:
            if not Path(str(recorded)).exists():
                _fail(
                    f"{ref}: run {row['id']} ran under {recorded}, which does not exist here; its blocks must "
                    "run under the interpreter (and framework versions) it was recorded with"
                )
            _fail(
                f"{ref}: run {row['id']} recorded the interpreter {recorded}, which is not this dlbench's "
                f"({sys.executable}); dlbench runs no program a database names. If you trust it, name it: "
                f"--python {shlex.quote(str(recorded))}"
            )
        targets.append(runner.Target(store, row["id"], trialspec.worker_command(interpreter), sources))
    names = {id(t): ref for t, ref in zip(targets, refs)}

    def on_block(target, block, done):
        console.print(
            f"block {done}/{blocks}: {names[id(target)]} (run {target.run_id}) block {block} done", highlight=False
        )

    from dlbench.store import StoreError

    runner.raise_on_termination()
    try:
        counts = runner.extend_runs(targets, blocks, on_block=on_block)
    except KeyboardInterrupt as exc:
        for t in targets:
            t.store.mark_interrupted(t.run_id)
        _exit_on_signal(exc, "finished trials are stored. Finish with dlbench run --resume RUN")
    except runner.RunBusy as exc:
        _fail(str(exc), code=EXIT_BUSY)
    except runner.SourcesMissing as exc:
        _fail(str(exc))
    except StoreError as exc:
        _fail(str(exc), code=1)
    for ref, t, c in zip(refs, targets, counts):
        console.print(f"{ref} (run {t.run_id}): " + ", ".join(f"{v} {k}" for k, v in c.items()), highlight=False)
    if len(refs) == 2:
        console.print(f"compare them with: dlbench compare {refs[0]} {refs[1]}", highlight=False)
    if any(status not in ("ok", "oom") for c in counts for status in c):
        raise typer.Exit(1)


def _real(path: str) -> str:
    return str(Path(path).resolve())


def _trusted_interpreters(named: list[str]) -> dict[str, str]:
    """Resolved path -> the path to run: this dlbench's interpreter and those the user named."""
    trusted = {_real(sys.executable): sys.executable}
    for path in named:
        if not Path(path).is_file() or not os.access(path, os.X_OK):
            _fail(f"--python {path}: not an executable file")
        trusted[_real(path)] = path
    return trusted


@app.command()
def check(
    model: Annotated[str, typer.Argument(help="A model name, or your own: PATH.py:NAME or package.module:NAME.")],
    framework: ListOpt = None,
    input_shape: Annotated[
        str | None, typer.Option(help="One sample's shape, e.g. 28x28x1 (default: the model's own, else 28x28x1).")
    ] = None,
    classes: Annotated[int | None, typer.Option(help="Output classes (default: the dataset's, else 10).")] = None,
    dataset: Annotated[
        str | None,
        typer.Option(help="Take the sample shape and classes from this dataset: a name, or your own .npz / IDX dir."),
    ] = None,
    option: OptionOpt = None,
) -> None:
    """Conformance: is MODEL the same network in every framework? Parameter counts, output shapes, loss falls on
    a fixed batch, same seed same losses, and logits after copying one framework's weights into the others.
    Exits 1 when a check fails or the implementations are not the same network."""
    from dlbench import config, conformance, registry
    from dlbench.datasets import DatasetError

    if dataset is not None and "," in dataset:
        _fail(f"--dataset {dataset!r}: check takes one dataset")
    sources = _named_sources(model, dataset)
    name = next((k.partition(":")[2] for k in sources if k.startswith("model:")), model)
    try:
        spec = registry.model(name, sources)
    except registry.RegistryError as exc:
        _fail(str(exc))
    shape: tuple[int, ...] | None = None
    if dataset is not None:
        if input_shape is not None:
            _fail(f"--input-shape with --dataset {dataset}: the dataset decides the shape; give one of them")
        data_name = next((k.partition(":")[2] for k in sources if k.startswith("dataset:")), dataset)
        try:
            data_shape, data_classes = registry.dataset(data_name, sources).shape(None)
        except (registry.RegistryError, DatasetError) as exc:
            _fail(f"--dataset {dataset}: {exc}")
        shape = tuple(data_shape)
        classes = data_classes if classes is None else classes
    if input_shape is not None:
        try:
            shape = tuple(int(d) for d in input_shape.lower().split("x"))
            if not all(d > 0 for d in shape):
                raise ValueError
        except ValueError:
            _fail(f"--input-shape {input_shape!r}: expected positive integers joined by x, e.g. 28x28x1 or 128")
    if shape is not None and (reason := spec.check_input(shape)):
        given = f"--dataset {dataset}" if dataset is not None else f"--input-shape {input_shape}"
        _fail(f"{given}: {name} {reason}")
    classes = 10 if classes is None else classes
    if classes < 2:
        _fail(f"--classes {classes}: a classifier needs at least 2 classes")
    try:
        options = config.parse_option_flags(option or [], sources=sources).get(name, {})
    except config.ConfigError as exc:
        _fail(str(exc))
    frameworks = tuple(_split(framework) or ("torch", "tensorflow", "jax"))
    for fw in frameworks:
        if fw not in registry.frameworks():
            _fail(f"--framework {fw}: unknown framework; allowed: {', '.join(registry.frameworks())}")
    err_console.print(f"checking {name} in {', '.join(frameworks)} (one process each) ...")
    report = conformance.check(name, sources, frameworks=frameworks, shape=shape, classes=classes, options=options)
    for fw, why in report.skipped.items():
        console.print(f"skipped {fw}: {why}", highlight=False)
    for f in report.findings:
        console.print(f"{'ok  ' if f.ok else 'FAIL'} {f.check}: {f.detail}", highlight=False)
    console.print(report.verdict(), highlight=False)
    if not report.ok:
        raise typer.Exit(1)


study_app = typer.Typer(
    help="The five seed papers' experiments as built-in studies: list, show, run, and report them beside the paper.",
    no_args_is_help=True,
)
app.add_typer(study_app, name="study")
ScaleOpt = Annotated[
    str, typer.Option(help="smoke (seconds, CI), quick (the design's shape, minutes on a 2-core CPU) or paper.")
]


def _study(name: str):
    from dlbench import studies
    from dlbench.config import ConfigError

    try:
        return studies.load(name), studies.load_facts(name)
    except ConfigError as exc:
        _fail(str(exc))


def _study_plan(study, scale: str, device: str, matrix: dict[str, list[Any] | None], protocol: dict[str, Any]):
    from dlbench import config
    from dlbench.config_toml import resolved
    from dlbench.plan import expand

    try:
        data = study.experiment_data(scale)
        data.setdefault("protocol", {})["device"] = device
        exp = config.from_dict(data, f"study {study.name} ({scale})")
        given = {k: v for k, v in matrix.items() if v is not None}
        exp = config.override(exp, given, protocol)
    except config.ConfigError as exc:
        _fail(str(exc))
    return expand(resolved(exp, False))


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
def study_show(name: Annotated[str, typer.Argument(help="A study name (dlbench study list).")]) -> None:
    """What the paper did, how the study maps it, the open choices it made, and each scale's plan."""
    from dlbench import studies

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
    for scale in studies.SCALES:
        plan = _study_plan(study, scale, "cpu", {}, {})
        p = plan.experiment.protocol
        console.print(
            f"scale {scale}: {len(plan.trials)} trials, {len(plan.skipped)} skipped cells; "
            f"{p.repeats} repeats + {p.warmup} warm-up per trial",
            highlight=False,
        )
        changes = study.scales[scale].changes if scale != "paper" else ("the paper's design as stated",)
        for change in changes:
            console.print(f"  - {change}", highlight=False)
    console.print(f"the paper's design in words: {_studies_dir()}/{name}/paper.md", highlight=False)


def _studies_dir() -> str:
    from importlib import resources

    return str(resources.files("dlbench.studies"))


@study_app.command("run")
def study_run(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="A study name (dlbench study list).")],
    scale: ScaleOpt = "quick",
    device: Annotated[str, typer.Option(help="cpu or cuda.")] = "cpu",
    framework: ListOpt = None,
    model: ListOpt = None,
    batch_size: ListOpt = None,
    input_shape: ShapeOpt = None,
    runtime: RuntimeOpt = None,
    repeats: Annotated[int | None, typer.Option(help="Measured repeats per trial (the scale's by default).")] = None,
    trials: Annotated[
        int | None,
        typer.Option(
            help="Trials per case, each a fresh process in interleaved blocks (the scale's by default): a verdict "
            "needs 6 or more for two frameworks."
        ),
    ] = None,
    data_dir: Annotated[str | None, typer.Option(help="Directory searched first for dataset files.")] = None,
    executor: ExecutorOpt = None,
    ray_address: RayAddressOpt = None,
    slurm_partition: SlurmPartitionOpt = None,
    slurm_gpus: SlurmGpusOpt = None,
    slurm_time: SlurmTimeOpt = None,
    slurm_option: SlurmOptionOpt = None,
    slurm_folder: SlurmFolderOpt = None,
    db: DB = Path("dlbench.db"),
) -> None:
    """Run a study at a scale; the report starts with the paper's numbers beside this run's."""
    from dlbench import runner

    dry = ctx.info_name == "plan"  # `study plan`: this command's dry run, as `plan` is run's
    if not dry:
        runner.raise_on_termination()
    study, facts = _study(name)
    matrix = {
        "framework": _split(framework),
        "model": _split(model),
        "batch_size": _split(batch_size, int, "--batch-size"),
        "input_shape": _split(input_shape, int, "--input-shape"),
        "runtime": _split(runtime),
    }
    protocol = {"repeats": repeats, "trials": trials, "data_dir": data_dir}
    plan = _study_plan(study, scale, device, matrix, protocol)
    if dry:
        _print_plan(plan)
        return

    def preface(store, run_id: int):
        return _study_preface(study, facts, [(store, run_id)])

    flags = _executor_flags(executor, ray_address, slurm_partition, slurm_gpus, slurm_time, slurm_option, slurm_folder)
    _start_and_run(
        plan, db, _command_line(ctx), preface=preface, executor=_executor_settings(plan.experiment.executor, flags)
    )


study_app.command(
    "plan",
    help="Dry run of study run: the trials it would run, in order, and the skipped cells with reasons; "
    "the same flags, so a stored study command with run -> plan shows that run's plan.",
)(study_run)


def _study_runs(store, study) -> list[dict]:
    prefix = f"study {study.name} v"
    return [r for r in store.runs() if str(r["name"]).startswith(prefix)]


def _study_preface(study, facts, runs: list[tuple[Any, int]]):
    """The paper vs this run section for one or more (store, run id), one machine each."""
    from dlbench.env import machine_label
    from dlbench.report import study_section
    from dlbench.results import Results
    from dlbench.studies import paper_vs_run

    machines: list[paper_vs_run.Machine] = []
    scales: list[str] = []
    for store, run_id in runs:
        results = Results.of_store(store)
        row = store.run(run_id)
        scales.append(str(row["name"]).rsplit(" ", 1)[-1])
        fingerprint = json.loads(row["environment_json"] or "{}")
        label = machine_label(fingerprint)
        if any(m.label == label for m in machines):
            label += f" (run {run_id})"

        def compare(a: str, b: str, metric: str, results=results, run_id=run_id):
            return results.compare(a, b, metric=metric, run=run_id)

        machines.append(
            paper_vs_run.Machine(
                label, run_id, results.summary(run_id), compare, fingerprint, results.measurements(run_id)
            )
        )
    comparison = paper_vs_run.compare(study, facts, machines)
    scale = scales[0] if len(set(scales)) == 1 else "/".join(scales)
    changes = study.scales[scales[0]].changes if scales[0] in study.scales else ()
    preface = study_section.build(study, facts, comparison, scale, changes)
    if len(runs) > 1:
        preface.lines.append(
            f"{len(runs)} machines, one column group each, nothing pooled across them; the report below is "
            f"run {runs[0][1]}'s (the first machine's)."
        )
    return preface


@study_app.command("report")
def study_report(
    name: Annotated[str, typer.Argument(help="A study name (dlbench study list).")],
    run_ids: Annotated[
        list[int] | None,
        typer.Option("--run", help="Run id (default: the latest run of the study in each --db); repeat for several."),
    ] = None,
    dbs: Annotated[
        list[Path] | None,
        typer.Option("--db", help="Results database; repeat to put runs from several machines side by side."),
    ] = None,
    fmt: FORMAT = "console",
    out: Annotated[Path | None, typer.Option("--out", "-o", help="Write the report to this file.")] = None,
    details: Annotated[bool, typer.Option("--details", help="Console: every table of the run's report.")] = False,
) -> None:
    """The paper vs this run (every number of the paper beside ours, framework ratios and their direction,
    the paper's claims checked; one column group per machine), then the run's own report."""
    from dlbench.report.formats import FORMATS

    if fmt not in FORMATS or fmt in ("csv",):
        _fail(f"--format {fmt!r}: allowed: {', '.join(f for f in FORMATS if f != 'csv')}")
    if fmt == "console" and out is not None:
        _fail("--out needs a written format (markdown, latex or html); console output goes to the terminal")
    study, facts = _study(name)
    paths = dbs or [Path("dlbench.db")]
    if out is not None:
        _check_output(out, list(paths))

    def latest_of_study(store) -> list[int]:
        found = _study_runs(store, study)
        if not found:
            _fail(f"{store.path}: no run of study {name}; run one with: dlbench study run {name} --db {store.path}")
        return [max(r["id"] for r in found)]

    runs = _collect_runs(paths, list(run_ids or []), latest_of_study)
    preface = _study_preface(study, facts, runs)
    store, first = runs[0]
    if fmt == "console":
        _print_report(store, first, details, preface=preface)
        return
    from dlbench.report.formats import render

    text = render(store, first, fmt, preface=preface)
    if out is None:
        sys.stdout.write(text)
    else:
        _write_output(out, text, list(paths))
        err_console.print(f"wrote {out}")


@app.command("env")
def env_() -> None:
    """This machine's fingerprint and which telemetry samplers can measure here (and why not)."""
    from dlbench import samplers
    from dlbench.env import fingerprint

    console.print_json(json.dumps(fingerprint(), default=str))
    _print_samplers(samplers.availability())


def main() -> None:
    """The console script. A store error that no command turned into its own message
    (damage that appears after the database passed its check on opening, a device
    that fails mid-read) still ends in one line and exit 1, never a traceback."""
    import sqlite3

    from dlbench.store import StoreError

    try:
        app()
    except (StoreError, sqlite3.Error) as exc:
        from rich.text import Text

        hint = (
            ""
            if isinstance(exc, StoreError)
            else (
                " (the database file may be damaged: `sqlite3 FILE 'PRAGMA integrity_check'` tells; "
                "nothing more was written)"
            )
        )
        err_console.print(Text.assemble(("error: ", "bold red"), f"{exc}{hint}"), highlight=False, soft_wrap=True)
        raise SystemExit(1) from None


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
        _fail(f"--format {fmt}: explain writes console, markdown or html")
    _check_criteria(band, alpha)
    if (case is None) != (vs is None):
        _fail("--case and --vs go together (or leave both out to explain every comparison set)")
    for name, value, low in (("--blocks", blocks, 2), ("--repeats", repeats, 1), ("--warmup", warmup, 0)):
        if not low <= value <= 100:
            _fail(f"{name} {value}: allowed {low}..100" + (" (a CI needs two blocks)" if name == "--blocks" else ""))
    if not 0 <= profile_steps <= MAX_PROFILE_STEPS:
        _fail(f"--profile-steps {profile_steps}: allowed 0..{MAX_PROFILE_STEPS}")
    if not 1 <= profile_calls <= MAX_PROFILE_CALLS:
        _fail(f"--profile-calls {profile_calls}: allowed 1..{MAX_PROFILE_CALLS}")
    if fmt == "console" and out is not None:
        _fail("--out needs a written format (markdown or html); console output goes to the terminal")
    if out is not None:
        _check_output(out, [db])
    store = _open_store(db, readonly=dry_run)
    if show is not None:
        _explain_report(store, show, fmt, out, band, alpha)
        return
    try:
        source = store.run(run_id)
    except StoreError as exc:
        _fail(str(exc))
    trials = store.trials(source["id"])
    cases = {t["case_key"]: case_from_dict(json.loads(t["case_json"])) for t in trials}
    b_trials = trials
    if vs_run is not None:
        if vs is None:
            _fail("--vs-run names where --vs is found: give --case and --vs too")
        try:
            b_trials = store.trials(store.run(vs_run)["id"])
        except StoreError as exc:
            _fail(str(exc))
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
                _fail(
                    f"run {source['id']}: no two cases of one comparison set have step times; "
                    "name them with --case/--vs"
                )
    except ablation.AblationError as exc:
        _fail(f"run {source['id']}: {exc}")
    # Your own model or data is imported (to check the toggles, then in the workers) only
    # when named again now; checked before the explain run is created: a refusal leaves
    # no pending run behind.
    sources = _named_sources(model, dataset)
    try:
        for run_of_cases, side in ((source["id"], 0), (vs_run if vs_run is not None else source["id"], 1)):
            uses = {(kind, getattr(two[side], kind)) for two in chosen for kind in ("model", "dataset")}
            runner.check_uses(store, store.run(run_of_cases)["id"], uses, sources)
        pairs = [ablation.pair_for(a, b, cores, toggled, sources) for a, b in chosen]
    except runner.SourcesMissing as exc:
        _fail(str(exc))
    except ablation.AblationError as exc:
        _fail(f"run {source['id']}: {exc}")
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
        _print_plan(plan)
        return
    # The run explained, by id: "the latest run" would be, once this one is stored, this one.
    command = _command_line(ctx, run_id=source["id"])
    explain_id = runner.create_run(store, plan, command=command, environment=env.fingerprint())
    console.print(
        f"explain run {explain_id}: {len(pairs)} pair(s), {len(plan.cases)} cases x {blocks} blocks "
        f"= {len(plan.trials)} trials -> {_db_text(db)}"
    )
    _print_pairs(pairs)
    counts = _execute(store, explain_id, db, sources, traces=str(traces) if traces else "")
    _explain_report(store, explain_id, fmt, out, band, alpha)
    console.print("trials: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    if any(status not in ("ok", "oom") for status in counts) or _parts_failed(store, explain_id):
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
        _fail(str(exc))
    trials = store.trials(run_id)
    cases = {t["case_key"]: case_from_dict(json.loads(t["case_json"])) for t in trials}
    experiment = json.loads(run["experiment_json"] or "{}")
    try:
        pairs = ablation.pairs_from(experiment.get("description", ""), cases)
    except ablation.AblationError as exc:
        _fail(f"run {run_id}: {exc}")
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
        _write_output(out, text, [store.path])
        console.print(f"wrote {out}", highlight=False)
