"""Where a trial's worker runs: this machine (local, the default), a Ray cluster, or Slurm.

Every executor keeps the local guarantees: one fresh worker process per trial
(dlbench.trial.launch, on whichever machine runs it), the parent as the only writer
of the store, resume from the store whatever executor started the run, and a
status for every trial (an engine's failure becomes the trial's failure, with the
engine's reason). A cluster executor returns each trial's events when its task or
job finishes; the parent replays them into the store (runner.EventRecorder).

The settings live in dlbench.executor_settings (the experiment file reads them, and
re-exported here); executors.base holds what the runner and the executors share.
Nothing imports Ray or submitit until a run asks for that executor.
"""

from dlbench.executor_settings import (
    EXECUTORS,
    FLAGS,
    ExecutorError,
    ExecutorSettings,
    local_placement,
    parse_settings,
)

__all__ = ["EXECUTORS", "FLAGS", "ExecutorError", "ExecutorSettings", "local_placement", "parse_settings"]
