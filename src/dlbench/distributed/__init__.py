"""Distributed training as a scenario: which strategies exist, and what one rank knows.

A case's `strategy` and `world_size` say how its training is spread:

    single       one process, one device (every framework; world size 1)
    ddp          PyTorch DistributedDataParallel, one process per replica
    dp           PyTorch DataParallel, one process over several GPUs
    mirrored     TensorFlow MirroredStrategy, one process over several devices
                 (logical CPU devices on a CPU)
    multiworker  one process per replica: TensorFlow MultiWorkerMirroredStrategy,
                 JAX with jax.distributed (gloo collectives on a CPU)
    sharded      JAX, one process over several devices (NamedSharding on a mesh;
                 host devices via --xla_force_host_platform_device_count on a CPU)

`world_size` counts data-parallel replicas. Whether the case's batch size is the
global batch (strong scaling: the same work per step at every world size) or the
per-replica batch (weak scaling) is the run's `batch_scope`, recorded with the case.

Which framework has which strategy, the module that implements it and how its
processes are launched are the framework's declarations
(dlbench.frameworks.FrameworkInfo.strategies, a plugin's too), asked through
dlbench.registry (strategies, strategy_module, has_strategy, multiprocess). This module
holds what a rank knows and what every strategy shares; it imports no framework and
nothing above it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

SINGLE = "single"  # one process, one device: every framework's


BATCH_SCOPES = ("global", "per-replica")
# The first steps whose global loss every case of a distributed scenario records
# (single baselines included), so that loss curves can be compared step by step.
LOSS_CURVE_STEPS = 16


@dataclass(frozen=True)
class DistContext:
    """What one process of a distributed trial knows about its place in it.

    `processes` OS processes, each holding `local_replicas` replicas:
    ddp/multiworker: processes = world_size, local_replicas = 1;
    dp/mirrored/sharded: processes = 1, local_replicas = world_size.
    """

    strategy: str
    world_size: int
    rank: int = 0
    processes: int = 1
    local_replicas: int = 1
    # "127.0.0.1:PORT" where rank 0 listens (torch's MASTER_ADDR:MASTER_PORT, JAX's
    # coordinator); "" when the trial is one process.
    coordinator: str = ""
    # TensorFlow multiworker: every process's "127.0.0.1:PORT", in rank order.
    workers: tuple[str, ...] = ()
    threads: int = 1  # intra-op threads of this process
    device: str = "cpu"
    batch_scope: str = "global"

    @property
    def global_rank0(self) -> bool:
        return self.rank == 0

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["workers"] = list(self.workers)
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DistContext:
        values = dict(data)
        values["workers"] = tuple(values.get("workers") or ())
        return cls(**values)


def covered(intervals: list[tuple[float, float]]) -> float:
    """The length of the union of (start, end) intervals: collective events overlap across
    threads and replicas, and their summed durations can exceed the wall time."""
    total, end = 0.0, float("-inf")
    for a, b in sorted(intervals):
        if b > end:
            total += b - max(a, end)
            end = b
    return total


def communication_result(
    source: str, names: dict[str, int], comm_s: float, wall: float, steps: int, **extra: Any
) -> dict[str, Any]:
    """What a trainer's communication(steps) returns, the same for every framework:
    `comm_s` seconds inside the collective events `names` ({event: count}) per local
    replica over `steps` profiled steps of `wall` seconds. No events seen: no share."""
    return {
        "comm_share": comm_s / wall if wall > 0 and names else None,
        "comm_time_per_step": comm_s / steps if names else None,
        "profiler_events": names,
        "profiled_steps": steps,
        "wall_s": wall,
        "source": source,
        **extra,
    }
