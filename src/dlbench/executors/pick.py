"""The cluster executor a run's settings name, its module imported only then."""

from __future__ import annotations

from dlbench.executors import EXECUTORS, ExecutorError, ExecutorSettings
from dlbench.executors.base import ClusterExecutor


def make(settings: ExecutorSettings) -> ClusterExecutor | None:
    """The cluster executor for `settings`, or None for local (the runner's own loop)."""
    if settings.name == "local":
        return None
    if settings.name == "ray":
        from dlbench.executors.ray_tasks import RayExecutor

        return RayExecutor(settings)
    if settings.name == "slurm":
        from dlbench.executors.slurm_jobs import SlurmExecutor

        return SlurmExecutor(settings)
    raise ExecutorError(f"--executor {settings.name!r}: allowed: {', '.join(EXECUTORS)}")
