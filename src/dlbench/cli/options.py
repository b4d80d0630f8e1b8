"""Option groups declared once and shared by run, plan, study run and study plan: the matrix, the protocol (derived from
dlbench.protocol_settings) and the executor.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from dlbench.cli.common import fail

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
BatchScopeOpt = Annotated[
    str | None,
    typer.Option(
        help="Is --batch-size the global batch (strong scaling, the default) or each replica's (per-replica: weak)?"
    ),
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
