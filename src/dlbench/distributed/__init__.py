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
(dlbench.frameworks.FrameworkInfo.strategies, a plugin's too); this module asks
them. It only names things; it imports no framework.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass
from typing import Any

SINGLE = "single"  # one process, one device: every framework's


def _frameworks() -> dict[str, Any]:
    from dlbench import registry

    return registry.frameworks()


def strategies() -> dict[str, tuple[tuple[str, ...], bool]]:
    """Every strategy some framework declares (FrameworkInfo.strategies), "single"
    first, in the frameworks' order -> (the frameworks that have it, () for every
    framework; one process per replica?)."""
    out: dict[str, tuple[tuple[str, ...], bool]] = {SINGLE: ((), False)}
    for name, info in _frameworks().items():
        for s in info.strategies:
            owners, multi = out.get(s.name, ((), s.multiprocess))
            out[s.name] = ((*owners, name), multi)
    return out


class _Declared(Mapping[str, Any]):
    """A read-only view computed from the frameworks' declarations at each use, so that
    an installed plugin's strategies are in it (nothing is read at import)."""

    def __init__(self, compute: Callable[[], dict[str, Any]]) -> None:
        self._compute = compute

    def __getitem__(self, key: str) -> Any:
        return self._compute()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._compute())

    def __len__(self) -> int:
        return len(self._compute())


def _dist_modules() -> dict[str, str]:
    return {name: info.strategies[0].module for name, info in _frameworks().items() if info.strategies}


# strategy -> (frameworks that have it, () for every framework; one process per replica?),
# read from the frameworks' declarations (strategies()).
STRATEGIES: Mapping[str, tuple[tuple[str, ...], bool]] = _Declared(strategies)
# framework -> the module implementing its data-parallel strategies (setup, build,
# shutdown; see dlbench.frameworks.torch_dist), imported only inside a worker. Kept for
# callers that have no strategy at hand; module_for(framework, strategy) is exact.
DIST_MODULES: Mapping[str, str] = _Declared(_dist_modules)


def module_for(framework: str, strategy: str) -> str:
    """The module that implements `framework`'s `strategy` (KeyError if it has none)."""
    from dlbench import registry

    declared = registry.framework(framework).strategy(strategy)
    if declared is None:
        raise KeyError(f"{framework} has no data-parallel strategy {strategy!r}")
    return declared.module


BATCH_SCOPES = ("global", "per-replica")
# The first steps whose global loss every case of a distributed scenario records
# (single baselines included), so that loss curves can be compared step by step.
LOSS_CURVE_STEPS = 16


def has_strategy(framework: str, strategy: str) -> bool:
    from dlbench import registry

    return registry.framework(framework).has_strategy(strategy)


def multiprocess(strategy: str) -> bool:
    """True when the strategy runs one OS process per replica (KeyError: no framework has it)."""
    return strategies()[strategy][1]


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


def context_for(
    strategy: str,
    world_size: int,
    *,
    threads: int,
    device: str,
    batch_scope: str = "global",
    rank: int = 0,
    coordinator: str = "",
    workers: tuple[str, ...] = (),
) -> DistContext:
    """The context of one process of a case. `threads` is per replica: a process
    holding several replicas (dp, mirrored, sharded) gets threads x replicas, so that
    every strategy at world size N has N x threads threads in all."""
    multi = multiprocess(strategy)
    return DistContext(
        strategy=strategy,
        world_size=world_size,
        rank=rank,
        processes=world_size if multi else 1,
        local_replicas=1 if multi else world_size,
        coordinator=coordinator,
        workers=workers,
        threads=threads if multi else threads * world_size,
        device=device,
        batch_scope=batch_scope,
    )


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
