"""What the runner and the cluster executors share: a trial handed to an executor, what
comes back for it, and the parent's callbacks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from dlbench.trial.spec import TrialSpec


@dataclass(frozen=True)
class RemoteTrial:
    """One trial handed to a cluster executor."""

    trial_id: int
    block: int
    spec: TrialSpec
    timeout: float
    command: Sequence[str] | None = None

    @property
    def cpus(self) -> int:
        """Cores the trial's processes use: threads per replica x replicas (0 threads:
        every core of the node, which the engine then cannot share)."""
        return max(1, self.spec.case.threads) * max(1, self.spec.case.world_size)

    @property
    def gpus(self) -> int:
        return self.spec.case.world_size if self.spec.case.device == "cuda" else 0


@dataclass
class RemoteResult:
    """What came back for one trial: the worker's events and exit (trial.launch.WorkerExit),
    or the engine's reason it has none (a lost node, a cancelled job)."""

    events: list[dict[str, Any]] = field(default_factory=list)
    exit: Any = None
    machine: dict[str, Any] = field(default_factory=dict)
    engine_status: str | None = None  # "failed" or "timeout" when the engine ended the trial
    engine_reason: str | None = None


class Handlers(Protocol):
    """The parent's callbacks, called on the parent's thread only (it is the store's one writer)."""

    def run_here(self, trial: RemoteTrial) -> None:
        """Run the trial in a fresh worker on this machine, its events stored as they arrive."""
        ...

    def started(self, trial: RemoteTrial, placement: dict[str, Any]) -> None: ...

    def finished(self, trial: RemoteTrial, result: RemoteResult, placement: dict[str, Any]) -> None: ...

    def progress(self, queued: int, running: int, done: int) -> None: ...


class Executor(Protocol):
    """Where trials run: local (executors.local), ray or slurm, found by name in
    executor_settings.IMPLEMENTATIONS."""

    name: str
    notes: list[str]  # what the run should be told (nodes left out, a node lost)

    def run(self, trials: Sequence[RemoteTrial], handlers: Handlers) -> None:
        """Run every trial, calling handlers.started / finished as the engine reports."""


ClusterExecutor = Executor  # the name before local became an executor too
