"""The node side of a cluster trial: what a Ray task or a Slurm job runs.

It is the local runner's worker handling (dlbench.trial.launch) with the events kept
in a list instead of the store, plus this node's machine fingerprint, so that the
parent can store the trial as if it had run here and say where it ran. It imports
no deep-learning framework: the worker it starts does.
"""

from __future__ import annotations

from typing import Any


def machine() -> dict[str, Any]:
    """The node's hardware in the fields a comparison must not mix (env.fingerprint's)."""
    from dlbench import env

    fp = env.fingerprint()
    keep = ("hostname", "cpu_model", "physical_cores", "logical_cores", "memory_total_bytes", "gpus", "python")
    import os

    # Slurm's name for the node (a block's later jobs are sent to it), when in a job.
    slurm = {"slurm_node": os.environ["SLURMD_NODENAME"]} if os.environ.get("SLURMD_NODENAME") else {}
    return {key: fp.get(key) for key in keep} | {"label": env.machine_label(fp)} | slurm


def omp_num_threads() -> str | None:
    """The parent's OMP_NUM_THREADS (None: unset), handed to the node with each trial."""
    import os

    return os.environ.get("OMP_NUM_THREADS")


def run_trial(spec_json: str, timeout: float, command: list[str] | None = None, parent_omp: str | None = None) -> Any:
    """Run one trial's worker on this node; return a RemoteResult.

    parent_omp: the OMP_NUM_THREADS of the dlbench that submitted the trial. Ray sets
    OMP_NUM_THREADS to a task's CPU request when its driver has none; the worker sets
    its own threads from the case, and a variable the user never set would differ from
    a local run (numpy's BLAS reads it), so it is put back as the parent had it."""
    import os

    from dlbench.executors.base import RemoteResult
    from dlbench.trial.launch import run_worker
    from dlbench.trial.spec import TrialSpec

    spec = TrialSpec.from_json(spec_json)
    env = dict(os.environ)
    env.pop("OMP_NUM_THREADS", None)
    if parent_omp is not None:
        env["OMP_NUM_THREADS"] = parent_omp
    events: list[dict[str, Any]] = []
    ended = run_worker(spec, timeout=timeout, on_event=events.append, command=command, env=env)
    return RemoteResult(events=events, exit=ended, machine=machine())
