"""The profile phase of a trial: steady-state training steps under the framework's
own profiler, after the timed repeats and apart from them.

Fresh models are built (the first repeat's seed), each given its untimed first
step and then `profile_steps` training steps, as a timed repeat is: `profile_calls`
of them timed without the profiler and as many under it, in turns. Each profiled call is
reduced to seconds per step by category (`dlbench.explain.categories.attribute`); the unprofiled
calls of the same steps say what the profiler itself cost. Rows (phase "profile",
seq = the call):

    <category>           s per step, one row per category (overhead & idle included)
    step_time            s per step, profiled (the categories add up to this)
    unprofiled_step_time s per step, the same steps without the profiler
    busy_time            s per step covered by at least one op
    steps, events        counts

and phase "profile_op", metric "<category>|<op>": the five largest ops of each
category, s per step. Training through the trainer's own train() keeps the data
pipeline, the shuffle and the batch gather inside the profiled steps, as in the
timed ones.
"""

from __future__ import annotations

import importlib
import os
import re
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dlbench.explain import chrome_trace
from dlbench.explain.categories import attribute
from dlbench.store import Measurement

if TYPE_CHECKING:
    from dlbench.plan import Case
    from dlbench.trial.spec import ProtocolSpec


def profilers() -> dict[str, str]:
    """framework -> the module of its profiler, for every framework that declares one
    (FrameworkInfo.profiler; an installed plugin's too)."""
    from dlbench import registry

    return {name: info.profiler for name, info in registry.frameworks().items() if info.profiler}


def profiler_for(framework: str) -> str | None:
    """The module of `framework`'s profiler (`record(train)` and `RULES`), or None."""
    from dlbench import registry

    return registry.framework(framework).profiler


def unsupported_reason(case: Case) -> str | None:
    if profiler_for(case.framework) is None:
        return f"no profiler for framework {case.framework!r} (profiles exist for {', '.join(profilers())})"
    if case.optimizer == "none":
        return "a classical model has no training steps to profile"
    if case.distributed:
        return "distributed trials profile their communication instead (phase comm)"
    return None


def trace_name(case: Case) -> str:
    label = f"{case.framework}-{case.variant}-{case.model}-b{case.batch_size}-{case.key[:10]}-{os.getpid()}"
    return re.sub(r"[^A-Za-z0-9._-]", "_", label) + ".trace.json.gz"


def profile_phase(
    fw: Any, native: Any, case: Case, protocol: ProtocolSpec
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(measurement rows, manifest facts) of the profile phase."""
    from dlbench.trial.phases import settings_for

    reason = unsupported_reason(case)
    if reason is not None:
        return [], {"profile": f"not profiled: {reason}"}
    module = importlib.import_module(str(profiler_for(case.framework)))
    steps = protocol.profile_steps
    settings = replace(settings_for(case, 0), epochs=None, steps=steps)

    def fresh() -> Any:
        trainer = fw.build(native, settings)
        trainer.first_step()
        return trainer

    # Each call trains a fresh model right after its first step, as a timed repeat
    # does, so that both read what the timed repeats read (a second train() call on
    # one trainer is another thing: torch's ResNet-18 steps got 30% faster over its
    # first four calls). Calls without and with the profiler take turns, several of
    # each: one call can be an outlier (Keras' fit() stalled ~300 ms after its last
    # step in about half the ResNet-18 calls, profiled or not: one
    # TFE_DeleteTensorHandle, no op running), and the report takes medians.
    rows: list[Measurement] = []
    recordings: list[tuple[float, Any]] = []
    source = ""
    for call in range(protocol.profile_calls):
        trainer = fresh()
        t0 = time.perf_counter_ns()
        trainer.train()
        unprofiled = (time.perf_counter_ns() - t0) / 1e9
        del trainer
        recording = module.record(fresh().train)
        breakdown = attribute(recording.events, module.RULES, recording.wall_s, steps)
        source = recording.source

        def row(metric: str, value: float, unit: str = "s", phase: str = "profile", how: str | None = source) -> None:
            rows.append(Measurement(None, False, phase, metric, value, unit, call, method=how))

        for category, value in breakdown.per_step.items():
            row(category, value)
        row("step_time", breakdown.step_s)
        row("unprofiled_step_time", unprofiled / steps, how=None)
        row("busy_time", breakdown.busy_s / steps)
        row("steps", float(steps), "count", how=None)
        row("events", float(breakdown.events), "count")
        for category, ops in breakdown.top_ops.items():
            for name, seconds in ops:
                row(f"{category}|{name}", seconds, phase="profile_op")
        recordings.append((breakdown.step_s, recording))
    facts: dict[str, Any] = {"profile": source, "profile_steps": steps, "profile_calls": protocol.profile_calls}
    _, typical = sorted(recordings, key=lambda r: r[0])[len(recordings) // 2]
    if typical.note:
        facts["profile_note"] = typical.note
    if protocol.profile_traces:  # the call of median step time: the typical one
        path = Path(protocol.profile_traces) / trace_name(case)
        facts["profile_trace"] = str(chrome_trace.write(typical, module.RULES, path, trace_name(case)))
    return [asdict(r) for r in rows], facts
