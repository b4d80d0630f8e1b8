"""run, plan and extend: parse the flags, call dlbench.service.runs, print."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from dlbench.cli.app import app
from dlbench.cli.common import (
    DB,
    EXIT_BUSY,
    NamedDatasetOpt,
    NamedModelOpt,
    console,
    db_text,
    design_note,
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
    split_values,
)
from dlbench.cli.options import (
    FILE,
    BatchScopeOpt,
    ExecutorOpt,
    LayoutOpt,
    ListOpt,
    OptionOpt,
    PipelineOpt,
    PrecisionOpt,
    RayAddressOpt,
    RuntimeOpt,
    ShapeOpt,
    SlurmFolderOpt,
    SlurmGpusOpt,
    SlurmOptionOpt,
    SlurmPartitionOpt,
    SlurmTimeOpt,
    StrategyOpt,
    WorldSizeOpt,
    executor_flag_values,
    executor_settings,
)
from dlbench.terminal import printable


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
        fail(str(exc))
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
            "framework": split_values(framework),
            "model": split_values(model),
            "dataset": split_values(dataset),
            "batch_size": split_values(batch_size, int, "--batch-size"),
            "init": split_values(init),
            "optimizer": split_values(optimizer),
            "lr": split_values(lr, float, "--lr"),
            "input_shape": split_values(input_shape, int, "--input-shape"),
            "precision": split_values(precision),
            "layout": split_values(layout),
            "pipeline": split_values(pipeline),
            "strategy": split_values(strategy),
            "world_size": split_values(world_size, int, "--world-size"),
            "runtime": split_values(runtime),
        },
        protocol,
        options,
    )
    return expand(exp)


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

    # `dlbench plan` is this command registered again (below `print_report`): it takes
    # every flag run takes, so a stored run's command with run -> plan prints that run's
    # plan, and a flag run gains cannot be missing from it. It stops at the plan.
    dry = ctx.info_name == "plan"
    if not dry:
        runner.raise_on_termination()
    executor_flags = executor_flag_values(
        executor, ray_address, slurm_partition, slurm_gpus, slurm_time, slurm_option, slurm_folder
    )
    if resume is not None:
        from dlbench.store import StoreError

        if dry:
            fail(f"--resume {resume} finishes a stored run (dlbench run --resume {resume}); there is no plan to print")

        store = open_store(db)
        try:
            store.run(resume)
        except StoreError as exc:
            fail(str(exc))
        # A resumed run imports the user's own model or data only if named again now;
        # it runs on the executor named now (local unless named), whichever started it.
        settings = executor_settings(None, executor_flags)
        _say_unnamed_traces(store, resume, profile_traces or "")
        _execute_and_report(
            store, resume, db, named_sources(model, dataset), executor=settings, traces=profile_traces or ""
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
        exit_on_signal(exc, "nothing was stored")
    if dry:
        print_plan(plan)
        return
    start_and_run(plan, db, invocation(ctx), executor=executor_settings(plan.experiment.executor, executor_flags))


def start_and_run(plan, db: Path, command_line: str, preface: Any = None, executor: Any = None) -> None:
    """Store a new run of `plan` (after its data is in place), execute it and print its
    report (with `preface` first, a study's paper vs this run)."""
    from dlbench import env, registry, runner
    from dlbench.datasets import DatasetError

    run_id = None
    store = None
    try:
        if not plan.trials:
            print_skipped([(s.cell, s.reason) for s in plan.skipped])
            fail("nothing to run: every cell was skipped (reasons above)")
        # Opened after planning, so that a mistake in the command or a bad data
        # file leaves no new database behind; before any download, so that a
        # database that cannot be written is said before minutes are spent.
        store = open_store(db)
        sources = plan.experiment.sources
        for name in sorted({t.case.dataset for t in plan.trials}):
            try:
                registry.dataset(name, sources).ensure(plan.experiment.protocol.data_dir, True, None)
            except DatasetError as exc:
                fail(str(exc))
        run_id = runner.create_run(store, plan, command=command_line, environment=env.fingerprint())
        console.print(f"run {run_id}: {len(plan.trials)} trials, {len(plan.skipped)} skipped cells -> {db_text(db)}")
        print_skipped([(s.cell, s.reason) for s in plan.skipped])
        design_note(plan)
        print_samplers(store.samplers(run_id))
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
            exit_on_signal(exc, "nothing was stored")
        store.finish_run(run_id, "interrupted")
        exit_on_signal(
            exc,
            f"run {run_id} is stored, no trial ran yet. Resume with: dlbench run --resume {run_id} "
            f"--db {shlex.quote(db_text(db))}",
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
    counts = execute(store, run_id, db, sources, executor, traces)
    try:
        print_report(store, run_id, preface=preface(store, run_id) if callable(preface) else preface)
    except KeyboardInterrupt as exc:  # SIGTERM too (runner.Terminated): the run itself is complete
        exit_on_signal(
            exc,
            f"while printing the report; run {run_id} is finished and stored: "
            f"dlbench report --run {run_id} --db {shlex.quote(db_text(db))}",
        )
    console.print("trials: " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
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
    from dlbench import runner, trialspec
    from dlbench.protocol_settings import MAX_TRIALS

    if not 1 <= blocks <= MAX_TRIALS:
        fail(f"--blocks {blocks}: must be at least 1 and at most {MAX_TRIALS} (the most trials a case may have)")
    trusted = _trusted_interpreters(python or [])
    sources = named_sources(model, dataset)
    targets, seen = [], set()
    for ref in refs:
        store, row = resolve_run(ref, db)
        where = (str(Path(store.path).resolve()), row["id"])
        if where in seen:
            fail(f"{ref}: run {row['id']} of {store.path} is named twice")
        seen.add(where)
        recorded = json.loads(row["environment_json"] or "{}").get("python_executable") or sys.executable
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
        exit_on_signal(exc, "finished trials are stored. Finish with dlbench run --resume RUN")
    except runner.RunBusy as exc:
        fail(str(exc), code=EXIT_BUSY)
    except runner.SourcesMissing as exc:
        fail(str(exc))
    except StoreError as exc:
        fail(str(exc), code=1)
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
            fail(f"--python {path}: not an executable file")
        trusted[_real(path)] = path
    return trusted
