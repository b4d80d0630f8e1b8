"""One timer thread in the parent that polls every active sampler at its interval.

The thread sleeps on an Event until the next sampler is due (no busy-waiting).
`poll_all()` takes an extra reading from every sampler at once; the runner
calls it when a worker reports a phase edge, so counters (energy) and
interval averages (utilization) have a reading right at each boundary.
A sampler that raises is dropped for the rest of the trial with the error
in its notes, never replaced by a made-up value.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from dlbench.samplers.base import Sampler, Series


@dataclass
class _Entry:
    sampler: Sampler
    interval_s: float
    due_ns: int = 0
    errors: list[str] = field(default_factory=list)
    dead: bool = False


class Poller:
    def __init__(self, samplers: list[tuple[Sampler, float]]) -> None:
        self._entries = [_Entry(s, interval) for s, interval in samplers]
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, pid: int) -> None:
        now = time.monotonic_ns()
        for e in self._entries:
            try:
                e.sampler.start(pid)
            except Exception as exc:  # noqa: BLE001 - a broken sensor must not stop the run
                e.dead = True
                e.errors.append(f"start failed: {type(exc).__name__}: {exc}")
            e.due_ns = now + int(e.interval_s * 1e9)
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="dlbench-poller", daemon=True)
        self._thread.start()

    def _poll(self, e: _Entry, now_ns: int) -> None:
        if e.dead:
            return
        try:
            e.sampler.poll(now_ns)
        except Exception as exc:  # noqa: BLE001
            e.dead = True
            e.errors.append(f"poll failed, sampler stopped: {type(exc).__name__}: {exc}")

    def _run(self) -> None:
        while not self._stop.is_set():
            now = time.monotonic_ns()
            with self._lock:
                for e in self._entries:
                    if now >= e.due_ns:
                        self._poll(e, now)
                        # Keep the grid: a late poll does not shift later ones.
                        while e.due_ns <= now:
                            e.due_ns += int(e.interval_s * 1e9)
                next_due = min((e.due_ns for e in self._entries), default=now + 10**9)
            self._stop.wait(max(0.0, (next_due - time.monotonic_ns()) / 1e9))

    def poll_all(self) -> None:
        with self._lock:
            now = time.monotonic_ns()
            for e in self._entries:
                self._poll(e, now)

    def stop(self) -> tuple[list[Series], dict[str, list[str]]]:
        """Stop the thread, take a last reading; return every series and each sampler's notes."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.poll_all()
        series: list[Series] = []
        notes: dict[str, list[str]] = {}
        for e in self._entries:
            try:
                series.extend(e.sampler.stop())
                notes[e.sampler.name] = [*e.sampler.notes(), *e.errors]
            except Exception as exc:  # noqa: BLE001
                notes[e.sampler.name] = [*e.errors, f"stop failed: {type(exc).__name__}: {exc}"]
        return series, notes
