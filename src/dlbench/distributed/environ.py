"""The environment each rank process starts with, per framework and strategy.

Set before the framework is imported, because some of it is read at import or
at the first device query: XLA_FLAGS (JAX's host device count), TF_CONFIG
(MultiWorkerMirroredStrategy's cluster), torch's env:// rendezvous variables
(the contract torchrun sets: MASTER_ADDR, MASTER_PORT, RANK, LOCAL_RANK,
WORLD_SIZE, LOCAL_WORLD_SIZE, OMP_NUM_THREADS). Everything here is on
127.0.0.1: a loopback-only machine has no other interface, and gloo would
otherwise pick the interface of the host name, which may not exist.
"""

from __future__ import annotations

import json

from dlbench.distributed import DistContext

HOST_DEVICE_FLAG = "--xla_force_host_platform_device_count"


def _with_xla_flag(existing: str, flag: str, value: int) -> str:
    kept = [f for f in existing.split() if not f.startswith(flag + "=")]
    return " ".join([*kept, f"{flag}={value}"])


# Strategies' environments (named by Strategy.environment): (ctx, inherited) -> variables.


def torch_rendezvous(ctx: DistContext, inherited: dict[str, str]) -> dict[str, str]:
    """torch's env:// rendezvous, the contract torchrun sets."""
    host, _, port = ctx.coordinator.rpartition(":")
    return {
        "MASTER_ADDR": host,
        "MASTER_PORT": port,
        "RANK": str(ctx.rank),
        "LOCAL_RANK": str(ctx.rank),
        "WORLD_SIZE": str(ctx.processes),
        "LOCAL_WORLD_SIZE": str(ctx.processes),
        "GLOO_SOCKET_IFNAME": "lo",
    }


def tf_config(ctx: DistContext, inherited: dict[str, str]) -> dict[str, str]:
    """MultiWorkerMirroredStrategy's cluster: every worker's address, this one's index."""
    return {
        "TF_CONFIG": json.dumps(
            {"cluster": {"worker": list(ctx.workers)}, "task": {"type": "worker", "index": ctx.rank}}
        )
    }


def xla_host_devices(ctx: DistContext, inherited: dict[str, str]) -> dict[str, str]:
    """On a CPU, as many XLA host devices as the process holds replicas."""
    if ctx.device != "cpu":
        return {}
    return {"XLA_FLAGS": _with_xla_flag(inherited.get("XLA_FLAGS", ""), HOST_DEVICE_FLAG, ctx.local_replicas)}
