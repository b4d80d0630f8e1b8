"""What a framework profiler saw, in one shape for every framework.

Each `profile_<framework>` module turns its profiler's output into `OpEvent`s:
one per executed op (or runtime activity) with its lane (thread or stream), start
and duration on the profiler's own clock. Events on one lane nest (a parent's
interval holds its children's); `categories.attribute` takes each event's self
time from that nesting, so a module passes parents and children alike.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OpEvent:
    name: str  # op, kernel or runtime activity, as the profiler names it
    lane: str  # the thread or stream it ran on
    start_us: float  # microseconds, profiler clock
    dur_us: float
    # Names of the ranges that enclose it on the framework's side, outermost first,
    # where the profiler records them (torch's "Optimizer.step#SGD.step", a JAX
    # name-stack such as "jit(step)/jit(main)/sgd/mul"); rules may match them.
    scopes: tuple[str, ...] = ()

    @property
    def end_us(self) -> float:
        return self.start_us + self.dur_us


@dataclass(frozen=True)
class Recording:
    """One profiled call: the events, the call's wall time, and what recorded them."""

    events: tuple[OpEvent, ...]
    wall_s: float  # the profiled call's own duration (perf_counter inside the profiler's window)
    source: str  # the profiler and its version, e.g. "torch.profiler (torch 2.13.0)"
    note: str = ""  # what this profiler cannot see here, said in the report
