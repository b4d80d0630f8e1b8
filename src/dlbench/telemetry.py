"""Slice sampler series by the worker's phase markers into per-phase measurements.

For each (phase, repeat) window [start, end] reported by the worker:

- counter series (energy, J): value(end) - value(start), each edge linearly
  interpolated between the two readings around it. Flagged unreliable when the
  window is shorter than the source's own update period (NVML ~100 ms), and
  left out (with a note) when no reading brackets an edge. With an idle
  baseline, the energy net of idle (J - W_idle x s) is stored beside the gross
  value; J per sample and per epoch follow from the work the phase did.
- gauge series: the time-weighted mean and the max of the readings whose
  interval overlaps the window (each reading covers the time since the one
  before it, which is exactly what utilization deltas measure).

Nothing is extrapolated: a window without a reading yields no value.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from dlbench.samplers.base import Series
from dlbench.store import Measurement

# A utilization computed from CPU-time counters that tick every 10 ms is only
# meaningful over windows of many ticks; shorter windows are flagged.
GAUGE_RESOLUTIONS = 10


@dataclass(frozen=True)
class Window:
    phase: str
    repeat: int
    start_ns: int
    end_ns: int

    @property
    def seconds(self) -> float:
        return (self.end_ns - self.start_ns) / 1e9


def windows(markers: list[dict]) -> list[Window]:
    """Pair start/end markers of the same (phase, repeat)."""
    open_: dict[tuple[str, int], int] = {}
    out = []
    for m in markers:
        key = (m["phase"], m["repeat"])
        if m["edge"] == "start":
            open_[key] = m["t"]
        elif key in open_:
            out.append(Window(key[0], key[1], open_.pop(key), m["t"]))
    return out


def value_at(points: list[tuple[int, float]], t: int) -> float | None:
    """Linear interpolation of a cumulative series at t; None outside the readings."""
    if not points or t < points[0][0] or t > points[-1][0]:
        return None
    times = [p[0] for p in points]
    i = bisect.bisect_left(times, t)
    if times[i] == t:
        return points[i][1]
    (t0, v0), (t1, v1) = points[i - 1], points[i]
    return v0 + (v1 - v0) * (t - t0) / (t1 - t0)


def gauge_stats(points: list[tuple[int, float]], w: Window) -> tuple[float, float] | None:
    """Time-weighted mean and max over the readings whose interval overlaps the window."""
    total = weight = 0.0
    peak = None
    prev_t = None
    for t, v in points:
        lo = prev_t if prev_t is not None else t
        prev_t = t
        overlap = min(t, w.end_ns) - max(lo, w.start_ns)
        inside = w.start_ns <= t <= w.end_ns
        if overlap <= 0 and not inside:
            continue
        wgt = max(overlap, 0)
        total += v * wgt
        weight += wgt
        peak = v if peak is None else max(peak, v)
    if peak is None:
        return None
    mean = total / weight if weight > 0 else peak
    return mean, peak


def phase_measurements(
    series: list[Series],
    wins: list[Window],
    warmup_repeats: int,
    work: dict[tuple[str, int | None], dict[str, float]],
    idle_power_w: dict[str, float] | None = None,
) -> tuple[list[Measurement], list[str]]:
    """Per-phase telemetry rows, and notes on what could not be computed.

    `work[(phase, repeat)]` may hold "samples", "epochs" and "passes" for per-unit energy."""
    rows: list[Measurement] = []
    notes: list[str] = []
    idle_power_w = idle_power_w or {}
    for w in wins:
        warm = w.repeat < warmup_repeats

        def add(metric: str, value: float, unit: str, method: str, flag: str | None = None) -> None:
            rows.append(Measurement(w.repeat, warm, w.phase, metric, value, unit, None, method, flag))

        for s in series:
            if not s.points:
                continue
            if s.kind == "counter":
                a, b = value_at(s.points, w.start_ns), value_at(s.points, w.end_ns)
                if a is None or b is None:
                    notes.append(f"{s.name}: no reading brackets {w.phase} repeat {w.repeat}")
                    continue
                flag = None
                if s.update_period_s and w.seconds < s.update_period_s:
                    flag = (
                        f"unreliable: window {w.seconds * 1e3:.1f} ms is shorter than the source's "
                        f"update period {s.update_period_s * 1e3:.0f} ms"
                    )
                energy = b - a
                add(f"energy:{s.name}", energy, "J", s.method, flag)
                if s.name in idle_power_w:
                    add(
                        f"energy_net:{s.name}",
                        energy - idle_power_w[s.name] * w.seconds,
                        "J",
                        f"{s.method} minus idle baseline",
                        flag,
                    )
                done = work.get((w.phase, w.repeat), {})
                if done.get("samples"):
                    add(f"energy_per_sample:{s.name}", energy / done["samples"], "J/sample", s.method, flag)
                if done.get("epochs"):
                    add(f"energy_per_epoch:{s.name}", energy / done["epochs"], "J/epoch", s.method, flag)
                if done.get("passes"):
                    add(f"energy_per_pass:{s.name}", energy / done["passes"], "J/pass", s.method, flag)
            else:
                stats = gauge_stats(s.points, w)
                if stats is None:
                    continue
                flag = None
                if s.update_period_s and w.seconds < GAUGE_RESOLUTIONS * s.update_period_s:
                    flag = (
                        f"unreliable: window {w.seconds * 1e3:.1f} ms is shorter than "
                        f"{GAUGE_RESOLUTIONS} x the source's resolution ({s.update_period_s * 1e3:.0f} ms)"
                    )
                add(f"{s.name}:mean", stats[0], s.unit, s.method, flag)
                add(f"{s.name}:max", stats[1], s.unit, s.method, flag)
    return rows, notes


def idle_power(series: list[Series], seconds: float) -> dict[str, float]:
    """Mean power (W) of every counter series over an idle baseline window."""
    out = {}
    for s in series:
        if s.kind == "counter" and len(s.points) >= 2:
            (t0, v0), (t1, v1) = s.points[0], s.points[-1]
            if t1 > t0:
                out[s.name] = (v1 - v0) / ((t1 - t0) / 1e9)
    return out
