"""Runs for the executor tests: a run stopped (Ctrl-C) after its first trial ended,
under a given executor, to be resumed under another."""

from __future__ import annotations

from typing import Any

import pytest

from dlbench.runner import create_run, execute_run
from dlbench.store import Store


def interrupted_after_one_trial(store: Store, plan: Any, executor: Any) -> int:
    """Store a run of `plan`, execute it under `executor` (None: local) until its first
    trial has ended, then interrupt it as Ctrl-C would; returns the run id."""
    run_id = create_run(store, plan, command="test", environment={})

    def stop_after_first(kind: str, **info: Any) -> None:
        if kind == "trial_end":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        execute_run(store, run_id, on_event=stop_after_first, executor=executor)
    assert store.run(run_id)["status"] == "interrupted"
    assert [t["status"] for t in store.trials(run_id)].count("ok") == 1
    return run_id
