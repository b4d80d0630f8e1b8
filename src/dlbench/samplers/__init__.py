"""Telemetry samplers: which exist, whether each can measure here, and why not.

Samplers are created by name, lazily (the NVML bindings are imported only when
the nvml sampler is asked for). `availability()` is what `dlbench env` prints
and what every run stores: nothing fails because a sensor is missing.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from dlbench.samplers.base import Sampler, Series

SAMPLERS: dict[str, str] = {
    "cpu": "dlbench.samplers.cpu:CpuSampler",
    "rapl": "dlbench.samplers.rapl:RaplSampler",
    "thermal": "dlbench.samplers.thermal:ThermalSampler",
    "nvml": "dlbench.samplers.nvml:NvmlSampler",
}
# Measured inside the worker rather than polled: per-phase peak resident memory
# (VmHWM, reset at each phase start) and the framework's device-memory peak.
WORKER_MEMORY = "memory"
ALL = (*SAMPLERS, WORKER_MEMORY)


@dataclass(frozen=True)
class Availability:
    name: str
    reason: str | None  # None: available
    hint: str
    interval_s: float | None

    @property
    def available(self) -> bool:
        return self.reason is None


def create(name: str) -> Sampler:
    module, _, attr = SAMPLERS[name].partition(":")
    return getattr(importlib.import_module(module), attr)()


def parse_names(text: str | None) -> tuple[str, ...]:
    """`--samplers` value -> names; "all" (default) or "none" or a comma list."""
    if text is None or text.strip() == "all":
        return ALL
    if text.strip() == "none":
        return ()
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    unknown = [n for n in names if n not in ALL]
    if unknown:
        raise ValueError(f"--samplers: unknown sampler(s) {', '.join(unknown)}; allowed: {', '.join(ALL)}, all, none")
    return names


def worker_memory_reason() -> str | None:
    from pathlib import Path

    if not Path("/proc/self/status").exists():
        return "no /proc/self/status: peak resident memory per phase needs Linux"
    if not Path("/proc/self/clear_refs").exists():
        return "no /proc/self/clear_refs: VmHWM cannot be reset per phase (whole-trial peak only)"
    return None


def availability(names: tuple[str, ...] = ALL, interval_s: float | None = None) -> list[Availability]:
    out = []
    for name in names:
        if name == WORKER_MEMORY:
            out.append(Availability(name, worker_memory_reason(), "Linux with /proc", None))
            continue
        try:
            sampler = create(name)
            reason = sampler.unavailable()
            hint = sampler.enable_hint()
            interval = interval_s or sampler.default_interval_s
        except Exception as exc:  # noqa: BLE001 - a broken optional dependency is a reason, not a crash
            reason, hint, interval = f"cannot load the {name} sampler: {type(exc).__name__}: {exc}", "", None
        out.append(Availability(name, reason, hint, interval))
    return out


def active(names: tuple[str, ...], interval_s: float | None = None) -> list[tuple[Sampler, float]]:
    """Fresh sampler objects for the available polled samplers among `names`."""
    out = []
    for name in names:
        if name == WORKER_MEMORY:
            continue
        try:
            sampler = create(name)
        except Exception:  # noqa: BLE001 - reported by availability()
            continue
        if sampler.unavailable() is None:
            out.append((sampler, interval_s or sampler.default_interval_s))
    return out


__all__ = ["ALL", "Availability", "Sampler", "Series", "active", "availability", "create", "parse_names"]
