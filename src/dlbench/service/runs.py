"""Starting a run: the experiment, its plan, its data, the stored run, the idle baseline, execution.

The command line (cli.running) and the Python API (dlbench.api) call these functions, so
that both store the same run from the same experiment: the same validation, the same
plan, the idle baseline measured in both (it once was only in the command line).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dlbench.service import ServiceError

if TYPE_CHECKING:
    from dlbench.config import Experiment
    from dlbench.plan import Plan
    from dlbench.store import Store


def experiment(
    source: str | Path | Mapping[str, Any] | None,
    matrix: Mapping[str, Sequence[Any] | None] | None = None,
    protocol: Mapping[str, Any] | None = None,
    model_options: Mapping[str, Mapping[str, Any]] | None = None,
    where: str = "command line",
    source_name: str = "<dict>",
) -> Experiment:
    """The experiment that runs: a file, a dict with the file's structure or the embedded
    default (None), with matrix factors and protocol settings applied over it as the
    command's flags are (None: not given). What is stored and reported is what runs: the
    file and the settings merged (config_toml.resolved). Raises config.ConfigError."""
    from dlbench import config
    from dlbench.config_toml import resolved

    if source is None:
        exp = config.default()
    elif isinstance(source, Mapping):
        exp = config.from_dict(dict(source), source_name)
    else:
        exp = config.load(Path(source))
    given = {k: list(v) for k, v in (matrix or {}).items() if v is not None}
    settings = {k: v for k, v in (protocol or {}).items() if v is not None}
    options = {k: dict(v) for k, v in (model_options or {}).items()}
    exp = config.override(exp, given, settings, where=where, model_options=options)
    return resolved(exp, bool(given or settings or options))


def plan(exp: Experiment) -> Plan:
    from dlbench.plan import expand

    return expand(exp)


def check_runnable(plan: Plan) -> None:
    """Refuse a plan whose every cell was skipped (the reasons in the message)."""
    if not plan.trials:
        reasons = "; ".join(sorted({s.reason for s in plan.skipped})) or "the matrix is empty"
        raise ServiceError(f"nothing to run: every cell was skipped ({reasons})")


def check_executor(settings: Any) -> None:
    """Refuse an executor whose engine is not installed (Ray, submitit), before a run is
    stored: a missing extra leaves no interrupted run behind. None: local."""
    from dlbench.executor_settings import missing_engine

    why = missing_engine(settings.name) if settings is not None else None
    if why:
        raise ServiceError(why)


def ensure_data(plan: Plan) -> None:
    """Every dataset the trials use, in place (downloaded where allowed) before a run is stored."""
    from dlbench import registry
    from dlbench.datasets import DatasetError

    for name in sorted({t.case.dataset for t in plan.trials}):
        try:
            registry.dataset(name, plan.experiment.sources).ensure(plan.experiment.protocol.data_dir, True, None)
        except DatasetError as exc:
            raise ServiceError(str(exc)) from None


@dataclass(frozen=True)
class Started:
    """A stored run, before its trials: its id, and the idle power measured (None: not asked)."""

    run_id: int
    idle_power: dict[str, float] | None


def start_run(
    store: Store,
    plan: Plan,
    command: str,
    *,
    on_created: Callable[[int], None] | None = None,
    on_idle: Callable[[float], None] | None = None,
) -> Started:
    """Store the run and its pending trials, then measure the idle baseline when the
    protocol asks for one (`on_created(run_id)` and `on_idle(seconds)` let a caller say so)."""
    from dlbench import env, runner
    from dlbench.conformance.record import for_sources

    environment = env.fingerprint()
    # The last `dlbench check` of each user model's current code on this machine (or that
    # there is none), kept with the run so that its report says it wherever it travels.
    checks = for_sources(plan.experiment.sources)
    if checks:
        environment["model_checks"] = checks
    run_id = runner.create_run(store, plan, command=command, environment=environment)
    if on_created is not None:
        on_created(run_id)
    p = plan.experiment.protocol
    if p.idle_baseline <= 0:
        return Started(run_id, None)
    from dlbench.samplers import parse_names

    if on_idle is not None:
        on_idle(p.idle_baseline)
    power = runner.measure_idle(store, run_id, p.idle_baseline, parse_names(p.samplers), p.sample_interval or None)
    return Started(run_id, power)


def run(
    exp: Experiment,
    db: str | Path,
    command: str,
    *,
    executor: Any = None,
    on_event: Callable[..., None] | None = None,
) -> int:
    """Plan, check, prepare, store and execute `exp` into `db`; the run id (what dlbench.run does)."""
    from dlbench import runner
    from dlbench.store import Store

    p = plan(exp)
    check_runnable(p)
    check_executor(executor if executor is not None else exp.executor)
    ensure_data(p)
    store = Store(Path(db))
    try:
        run_id = start_run(store, p, command).run_id
        runner.execute_run(
            store,
            run_id,
            on_event=on_event,
            sources=exp.sources,
            executor=executor,
            traces=exp.protocol.profile_traces,
        )
        return run_id
    finally:
        store.close()


@dataclass(frozen=True)
class Redone:
    """The blocks of a stored run planned again because a trial in them ran on a busy machine."""

    blocks: tuple[int, ...]
    trials: int  # trials retired (every finished member of those blocks)
    worst: float  # the largest share of the CPU other processes took in one of them, %


def redo_busy(store: Store, run_id: int) -> Redone:
    """Plan again every block of `run_id` that holds a trial measured on a busy machine
    (dlbench.analysis.busy): its trials are kept, retired, and their cases run again in
    the same block order on the next resume. The busy trials' values leave the analysis
    with the rest of their block, so that every pair stays two processes of one moment."""
    from dlbench.analysis.busy import BUSY_THRESHOLD, busy_trials

    busy = busy_trials(store.measurements(run_id, latency=False))
    block_of = {t.id: t.block for t in store.trials(run_id)}
    blocks = tuple(sorted({block_of[t] for t in busy if t in block_of}))
    why = f"a trial of this block ran on a busy machine (other processes took {BUSY_THRESHOLD:.0f}% or more of the CPU)"
    retired = store.retire_blocks(run_id, blocks, why)
    return Redone(blocks, retired, max(busy.values(), default=0.0))


def estimate(store: Store, plan: Plan) -> Any:
    """About how long `plan` will take (dlbench.studies.estimate.RunEstimate; None: not
    known): from the finished trials of the same cases in `store`, this machine's own
    measurement, else from the project's smoke runs."""
    from collections import defaultdict

    from dlbench.studies.estimate import estimate_run

    earlier: dict[tuple[str, int, int], list[float]] = defaultdict(list)
    for t in store.ok_trials_of(t.case.key for t in plan.trials):
        if t.wall_s:
            earlier[(t.case_key, int(t.protocol.get("repeats", 0)), int(t.protocol.get("warmup", 0)))].append(
                float(t.wall_s)
            )
    return estimate_run(plan, dict(earlier))
