"""Live progress of a run (rich): one unit per repeat, so the ETA moves as work is done.

The runner reports events through a callback; this module only draws them. Off a
terminal (a log, a CI job) no bar is drawn: rich would leave its last frame, cut at the
width, in the log; the line per finished trial is printed either way. A trial is named
by what sets it apart from the run's other cases (the settings they share are printed
once, in the report's "settings shared by every case").
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from dlbench.cases import case_label, stored_case
from dlbench.terminal import drop_shared, duration


class RunProgress:
    def __init__(self, console: Console, store, run_id: int) -> None:
        self.console = console
        self.store = store
        self.run_id = run_id
        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("repeats"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=console,
            transient=False,
            disable=not console.is_terminal,
            # No 10 Hz refresh thread: a parent that wakes up while the
            # worker runs steals cycles from OpenMP thread pools (torch
            # spin-waits), so the bar is redrawn only on events.
            auto_refresh=False,
        )
        self.task: TaskID | None = None
        self.trial_units = 0
        self.done_in_trial = 0
        self.cluster_counts: tuple[int, int, int] | None = None
        self.names: dict[str, str] = {}  # full case label -> the words that tell it apart
        self.said_per_trial = False  # what a trial's time covers: said on the first line only

    def _name(self, case: Any) -> str:
        label = case_label(case)
        return self.names.get(label, label)

    def __enter__(self) -> RunProgress:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.progress.__exit__(*exc)

    def _bar(self) -> TaskID:
        # Every event but run_start comes after it, and run_start creates the bar.
        assert self.task is not None, "progress event before run_start"
        return self.task

    def on_event(self, kind: str, **info: Any) -> None:
        if kind == "run_start":
            pending = [t for t in self.store.trials(self.run_id) if t.status in ("pending", "running", "interrupted")]
            units = sum(t.protocol["warmup"] + t.protocol["repeats"] for t in pending)
            labels = sorted({case_label(stored_case(t.case)) for t in self.store.trials(self.run_id)})
            self.names = dict(zip(labels, drop_shared(labels)))
            if self.task is None:
                self.task = self.progress.add_task(f"run {self.run_id}", total=units)
            else:  # adaptive mode: a new block of trials extends the bar
                done = self.progress.tasks[0].completed
                self.progress.update(self._bar(), total=done + units)
            self.progress.refresh()
        elif kind == "trial_start":
            case = info["case"]
            self.done_in_trial = 0
            row = next(t for t in self.store.trials(self.run_id) if t.id == info["trial_id"])
            proto = row.protocol
            self.trial_units = proto["warmup"] + proto["repeats"]
            self.progress.update(self._bar(), description=self._name(case))
            self.progress.refresh()
        elif kind == "worker_event":
            event = info["event"]
            if event.get("event") == "measurements" and event.get("repeat") is not None:
                self.done_in_trial += 1
                self.progress.advance(self._bar())
                self.progress.refresh()
        elif kind == "block_added":
            self.progress.console.print(
                f"adaptive: confidence intervals still too wide, adding block {info['block']}", highlight=False
            )
        elif kind == "adaptive_stop":
            self.progress.console.print(f"adaptive: {info['reason']}", highlight=False)
        elif kind == "cluster_progress":
            counts = (info["queued"], info["running"], info["done"])
            if counts != self.cluster_counts:  # the executor polls; draw only a change
                self.cluster_counts = counts
                self.progress.update(
                    self._bar(), description=f"trials: {counts[0]} queued, {counts[1]} running, {counts[2]} done"
                )
                self.progress.refresh()
        elif kind == "executor_note":
            self.progress.console.print(info["note"], highlight=False)
        elif kind == "trial_end":
            outcome = info["outcome"]
            # A trial that stopped early still uses up its share of the bar.
            self.progress.advance(self._bar(), max(0, self.trial_units - self.done_in_trial))
            self.progress.refresh()
            style = "green" if outcome.status == "ok" else "red"
            said, self.said_per_trial = self.said_per_trial, True
            first_line = (outcome.error or "").splitlines()[0][:150] if outcome.error else ""
            self.progress.console.print(
                Text.assemble(
                    (f"{outcome.status:>7}", style),
                    f" {self._name(info['case'])}  {duration(outcome.wall_s)}",
                    "" if said else " (the whole trial, start to end)",
                    f"  {first_line}" if first_line else "",
                ),
                highlight=False,
            )
