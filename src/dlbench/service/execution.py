"""Executing stored runs: a run's pending trials, more blocks taken in turns, and the signals
that stop them. The one road from the command line (and the API) to the runner: cli/ imports
no runner or trial module, it calls these and catches the errors they name.

The errors are the runner's own, named here so that a caller needs no other import:
RunBusy (another live process executes the run), SourcesMissing (a stored run uses a model
or dataset of the user's that was not named again); a SIGTERM or SIGHUP arrives as a
KeyboardInterrupt whose signal `signal_of` reads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dlbench.runner import Target
    from dlbench.store import Store


def errors() -> tuple[type[Exception], type[Exception]]:
    """(RunBusy, SourcesMissing): the runner's errors, for an `except`."""
    from dlbench.runner import RunBusy, SourcesMissing

    return RunBusy, SourcesMissing


def signal_of(exc: BaseException) -> tuple[str, int] | None:
    """(its name, its number) of a SIGTERM or SIGHUP that stopped a run (runner.Terminated);
    None for a Ctrl-C or anything else."""
    from dlbench.runner import Terminated

    return (str(exc), exc.signum) if isinstance(exc, Terminated) else None


def stop_on_signals() -> None:
    """From here on SIGTERM and SIGHUP stop the process as Ctrl-C does (runner.Terminated):
    the worker is stopped, the run marked interrupted, the caller's handler runs."""
    from dlbench.runner import raise_on_termination

    raise_on_termination()


def execute(
    store: Store,
    run_id: int,
    sources: Mapping[str, str],
    executor: Any = None,
    traces: str = "",
    on_event: Callable[..., None] | None = None,
) -> dict[str, int]:
    """Execute (or resume) a stored run's pending trials; each run's count of trials per status.
    Raises SourcesMissing before anything runs when the run uses a model or dataset of the
    user's that `sources` does not name."""
    from dlbench import runner

    runner.check_sources(store, run_id, sources)
    return runner.execute_run(store, run_id, on_event=on_event, sources=dict(sources), executor=executor, traces=traces)


def check_sources(store: Store, run_id: int, sources: Mapping[str, str]) -> None:
    """Raise SourcesMissing when the run uses a model or dataset of the user's that
    `sources` does not name again (before a progress bar or a worker starts)."""
    from dlbench import runner

    runner.check_sources(store, run_id, sources)


def target(store: Store, run_id: int, interpreter: str | None, sources: Mapping[str, str]) -> Target:
    """A stored run to add blocks to, its workers started under `interpreter` (None: this one)."""
    from dlbench.runner import Target
    from dlbench.trial.spec import worker_command

    return Target(store, run_id, worker_command(interpreter), dict(sources))


def extend(targets: Sequence[Target], blocks: int, on_block: Callable[..., None] | None = None) -> list[dict[str, int]]:
    """Add `blocks` blocks to each run, the runs taking turns (runner.extend_runs)."""
    from dlbench.runner import extend_runs

    return extend_runs(targets, blocks, on_block=on_block)


def same_folder(stored: Any, named: str) -> bool:
    """A folder path a run stored is the one named now (trial.spec.same_folder)."""
    from dlbench.trial.spec import same_folder as same

    return same(stored, named)
