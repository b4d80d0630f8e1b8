"""What each rank of a multi-process trial gets: its DistContext (context_for) and the
environment its process needs before the framework is imported (rank_environment).

Both ask the frameworks' declarations (how a strategy launches, what its ranks need
set: Strategy.environment, a "module:function" such as
dlbench.distributed.environ:torch_rendezvous) through dlbench.registry; this module sits
above both the frameworks and dlbench.distributed, which only holds what a rank knows.
"""

from __future__ import annotations

from dlbench.distributed import DistContext


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
    from dlbench.registry import multiprocess

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


def rank_environment(framework: str, ctx: DistContext, inherited: dict[str, str]) -> dict[str, str]:
    """Variables to add to (or replace in) `inherited` for this rank's process: the
    thread count, and what the framework's strategy declares (Strategy.environment)."""
    from dlbench import registry
    from dlbench.frameworks import load

    env: dict[str, str] = {"OMP_NUM_THREADS": str(ctx.threads)}
    declared = registry.framework(framework).strategy(ctx.strategy)
    if declared is not None and declared.environment:
        env.update(load(declared.environment)(ctx, inherited))
    return env
