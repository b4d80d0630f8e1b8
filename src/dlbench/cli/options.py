"""Option groups declared once and shared by run, plan, study run and study plan.

Three groups: the matrix (one comma-list flag per factor, and --option), the protocol
(one flag per setting of dlbench.protocol_settings, its help and type read from the
declaration) and the executor. `@with_groups(MATRIX, PROTOCOL, EXECUTOR)` adds a group's
flags to a command and hands the command one dict per group, so that a flag is declared
in one place and every command that takes the group takes all of it.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from dlbench.cli import complete
from dlbench.cli.common import fail, split_values

ListOpt = Annotated[str | None, typer.Option(help="Comma-separated values; each value is a matrix factor level.")]
ShapeOpt = Annotated[
    str | None,
    typer.Option(
        help="Input sizes to sweep, comma-separated: the side of square "
        "synthetic images or a sequence length (0 = the dataset's own)."
    ),
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
OptionOpt = Annotated[
    list[str] | None, typer.Option(help="A model option, MODEL.OPTION=VALUE (repeatable), e.g. lstm.hidden=650.")
]


# Where trials run (dlbench.executors): `run` and `study run` take the same options.
ExecutorOpt = Annotated[
    str | None,
    typer.Option(
        "--executor",
        help="Where each trial's worker runs: local (default), ray or slurm. A run resumes with any executor.",
        autocompletion=complete.one_of(complete.executors),
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


def executor_flag_values(
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


def executor_settings(base: Any, flags: dict[str, Any]) -> Any:
    """The experiment file's [executor] table (base; None: local) with the flags given over it."""
    from dataclasses import asdict

    from dlbench.executors import ExecutorError, ExecutorSettings, parse_settings

    given = {k: v for k, v in flags.items() if v is not None}
    try:
        parse_settings("command line", given, flags=True)  # the flags alone first: errors name the flag
        merged = {k: v for k, v in asdict(base or ExecutorSettings()).items() if v is not None} | given
        return parse_settings("command line", merged, flags=True)
    except ExecutorError as exc:
        fail(str(exc))


F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Group:
    """Flags a command takes together: `name` is the keyword its values arrive under,
    `collect` turns the flags' values (None: not given) into that value."""

    name: str
    params: tuple[inspect.Parameter, ...]
    collect: Callable[[dict[str, Any]], Any]


def _option(name: str, annotation: Any) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation)


# The matrix factors' flags: comma lists, cast to the factor's type (dlbench.config.FACTORS).
_FACTOR_FLAGS: tuple[tuple[str, Any, Any], ...] = (
    ("framework", ListOpt, str),
    ("model", ListOpt, str),
    ("dataset", ListOpt, str),
    ("batch_size", ListOpt, int),
    ("init", ListOpt, str),
    ("optimizer", ListOpt, str),
    ("lr", ListOpt, float),
    ("input_shape", ShapeOpt, int),
    ("precision", PrecisionOpt, str),
    ("layout", LayoutOpt, str),
    ("pipeline", PipelineOpt, str),
    ("runtime", RuntimeOpt, str),
    ("strategy", StrategyOpt, str),
    ("world_size", WorldSizeOpt, int),
)


def completing(annotation: Any, callback: Callable[..., Any]) -> Any:
    """`annotation` (Annotated[..., typer.Option(...)]) with its option completing values by
    `callback` (dlbench.cli.complete): the same flag and help, one declaration."""
    import copy
    from typing import get_args

    from typer.models import OptionInfo

    kind, *meta = get_args(annotation)
    info = copy.copy(next(m for m in meta if isinstance(m, OptionInfo)))
    info.autocompletion = callback
    return Annotated[kind, info]


def _factor_completion(factor: str) -> Callable[[str], list[str]]:
    """Completes a factor flag's comma list from its levels (complete.factor_levels), looked
    up only when a shell completes."""

    def levels() -> Any:
        found = complete.factor_levels(factor)
        return found() if found is not None else ()

    return complete.comma_list(levels)


def _collect_matrix(values: dict[str, Any]) -> dict[str, Any]:
    """{"matrix": {factor: [values] or None}, "options": ["model.option=value", ...]}"""
    matrix = {name: split_values(values[name], cast, "--" + name.replace("_", "-")) for name, _, cast in _FACTOR_FLAGS}
    return {"matrix": matrix, "options": list(values["option"] or [])}


# The factors whose levels are a fixed list, completed on <Tab> (dlbench.cli.complete).
_COMPLETED = ("framework", "model", "dataset", "init", "optimizer", "precision", "layout", "pipeline", "strategy")
MATRIX = Group(
    "matrix",
    tuple(
        _option(name, completing(annotation, _factor_completion(name)) if name in _COMPLETED else annotation)
        for name, annotation, _ in _FACTOR_FLAGS
    )
    + (_option("option", OptionOpt),),
    _collect_matrix,
)


def protocol_help(name: str) -> str:
    """A protocol setting's help, as declared (dlbench.protocol_settings), for a command
    that takes the setting under its own flag (explain's --repeats)."""
    from dlbench.protocol_settings import Protocol, declared

    return declared(Protocol.__dataclass_fields__[name]).help


def _protocol_params() -> tuple[inspect.Parameter, ...]:
    """One flag per declared protocol setting: --name-with-dashes, its help from the declaration."""
    from dlbench.protocol_settings import Protocol, TrialProtocol, declared

    out = []
    # The training budget and the case's settings first, then how each trial is measured.
    trial = {f.name for f in fields(TrialProtocol)}
    for f in sorted(fields(Protocol), key=lambda f: f.name in trial):
        info = declared(f)
        if not info.flag:
            continue
        text = str(f.type)
        kind: Any = int if "int" in text and "float" not in text else float if "float" in text else str
        out.append(_option(f.name, Annotated[kind | None, typer.Option(help=info.help)]))
    return tuple(out)


PROTOCOL = Group("protocol", _protocol_params(), lambda values: dict(values))


def _collect_executor(values: dict[str, Any]) -> dict[str, Any]:
    return executor_flag_values(
        values["executor"],
        values["ray_address"],
        values["slurm_partition"],
        values["slurm_gpus"],
        values["slurm_time"],
        values["slurm_option"],
        values["slurm_folder"],
    )


EXECUTOR = Group(
    "executor",
    (
        _option("executor", ExecutorOpt),
        _option("ray_address", RayAddressOpt),
        _option("slurm_partition", SlurmPartitionOpt),
        _option("slurm_gpus", SlurmGpusOpt),
        _option("slurm_time", SlurmTimeOpt),
        _option("slurm_option", SlurmOptionOpt),
        _option("slurm_folder", SlurmFolderOpt),
    ),
    _collect_executor,
)


def with_groups(*groups: Group) -> Callable[[F], F]:
    """Give a command every flag of `groups`; it receives each group's collected value
    under the group's name (its own parameters of those names are replaced)."""

    def decorate(func: F) -> F:
        signature = inspect.signature(func, eval_str=True)
        by_name = {g.name: g for g in groups}
        missing = set(by_name) - set(signature.parameters)
        if missing:
            raise TypeError(f"{func.__name__}: no parameter for the groups {sorted(missing)}")
        # Each group's flags stand where the command names the group (the order --help shows);
        # from there on every parameter is keyword-only (typer passes them all by name).
        params: list[inspect.Parameter] = []
        keyword = False
        for p in signature.parameters.values():
            if p.name in by_name:
                keyword = True
                params += by_name[p.name].params
            else:
                params.append(p.replace(kind=inspect.Parameter.KEYWORD_ONLY) if keyword else p)
        names = [p.name for p in params]
        clash = sorted({n for n in names if names.count(n) > 1})
        if clash:
            raise TypeError(f"{func.__name__}: parameters {clash} are also group flags")

        @functools.wraps(func)
        def command(**kwargs: Any) -> Any:
            for g in groups:
                kwargs[g.name] = g.collect({p.name: kwargs.pop(p.name) for p in g.params})
            return func(**kwargs)

        command.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        return command  # type: ignore[return-value]

    return decorate
