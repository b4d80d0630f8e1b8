"""The local executor: each trial in a fresh worker process on this machine, one after another.

Unlike a cluster executor, whose events come back when its task or job ends, a local
trial's events are stored as they arrive (the parent reads the worker's stdout), so it
hands each trial back to the parent's `run_here` callback (runner.execute_trial)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dlbench.executors.base import Handlers, RemoteTrial


class LocalExecutor:
    name = "local"

    def __init__(self, settings: Any = None) -> None:
        self.notes: list[str] = []

    def run(self, trials: Sequence[RemoteTrial], handlers: Handlers) -> None:
        for trial in trials:
            handlers.run_here(trial)
