"""The executor a run's settings name, found in executor_settings.IMPLEMENTATIONS and
its module imported only then."""

from __future__ import annotations

import importlib

from dlbench.executor_settings import IMPLEMENTATIONS
from dlbench.executors import EXECUTORS, ExecutorError, ExecutorSettings
from dlbench.executors.base import Executor


def make(settings: ExecutorSettings | None = None) -> Executor:
    """The executor for `settings` (None: local)."""
    settings = settings or ExecutorSettings()
    target = IMPLEMENTATIONS.get(settings.name)
    if target is None:
        raise ExecutorError(f"--executor {settings.name!r}: allowed: {', '.join(EXECUTORS)}")
    module, _, name = target.partition(":")
    made: Executor = getattr(importlib.import_module(module), name)(settings)
    return made
