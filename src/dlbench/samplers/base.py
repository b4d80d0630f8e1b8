"""What every telemetry sampler is: a Protocol and the series it produces.

A sampler runs in the parent process (so it does not compete with the measured
worker), is polled by one timer thread at its own interval, and returns time
series stamped with `time.monotonic_ns()` — the same clock the worker uses for
its phase markers, so the series can be sliced per phase afterwards.

Two kinds of series:
- "gauge": an instantaneous or interval-average reading (utilization %, °C,
  bytes, W). Per phase: mean and max of the points inside the window.
- "counter": a cumulative reading (energy in J, already unwrapped). Per phase:
  the difference of the (interpolated) values at the window's edges.

A sampler never invents a number. When a source is missing or unreadable,
`unavailable()` returns the exact reason, and a metric the hardware does not
support is left out of the series (and listed in `notes`), not filled in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable


@dataclass
class Series:
    name: str  # e.g. "cpu.process_util", "rapl.package-0", "gpu0.power"
    unit: str  # "%", "J", "W", "C", "bytes", "MHz", "bitmask"
    kind: str  # "gauge" or "counter"
    method: str  # how obtained: "polled", "counter", "integrated-power"
    # The source's own refresh period (s): a window shorter than this cannot be
    # measured reliably (NVML energy/power: ~0.1 s; RAPL: ~0.001 s).
    update_period_s: float | None = None
    points: list[tuple[int, float]] = field(default_factory=list)  # (monotonic ns, value)

    def add(self, t_ns: int, value: float) -> None:
        self.points.append((t_ns, float(value)))


@runtime_checkable
class Sampler(Protocol):
    name: str  # short name used by --samplers ("cpu", "rapl", "nvml", "thermal")
    default_interval_s: float  # polling interval suited to the source

    def unavailable(self) -> str | None:
        """None when the sampler can measure on this machine, else the exact reason."""
        ...

    def enable_hint(self) -> str:
        """What would make it available (e.g. "run as root", "install nvidia-ml-py")."""
        ...

    def start(self, pid: int) -> None:
        """Begin a trial whose measured process is `pid` (take a first reading)."""
        ...

    def poll(self, now_ns: int) -> None:
        """Take one reading stamped `now_ns`. Must be cheap and must not raise for
        a transient read error (record it in notes instead)."""
        ...

    def stop(self) -> list[Series]:
        """End the trial: a last reading, then every series collected since start()."""
        ...

    def notes(self) -> list[str]:
        """Metrics this source could not provide on this machine, with the reason."""
        ...
