"""The profile phase of a trial: steady-state training steps under the framework's
own profiler, after the timed repeats and apart from them.

A fresh model is built (the first repeat's seed) and trained for `profile_steps`
steps three times: once to warm up (first-call work, caches, the allocator), once
timed without the profiler, once under it. The last is reduced to seconds per
step by category (`categories.attribute`); the unprofiled run of the same steps
says what the profiler itself cost. Rows (phase "profile"):

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
    from dlbench.trialspec import ProtocolSpec

PROFILERS = {
    "torch": "dlbench.explain.profile_torch",
    "tensorflow": "dlbench.explain.profile_tensorflow",
    "jax": "dlbench.explain.profile_jax",
}


def unsupported_reason(case: Case) -> str | None:
    if case.framework not in PROFILERS:
        return f"no profiler for framework {case.framework!r} (profiles exist for {', '.join(PROFILERS)})"
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
    from dlbench.phases import settings_for

    reason = unsupported_reason(case)
    if reason is not None:
        return [], {"profile": f"not profiled: {reason}"}
    module = importlib.import_module(PROFILERS[case.framework])
    steps = protocol.profile_steps
    trainer = fw.build(native, replace(settings_for(case, 0), epochs=None, steps=steps))
    trainer.first_step()
    trainer.train()
    t0 = time.perf_counter_ns()
    trainer.train()
    unprofiled = (time.perf_counter_ns() - t0) / 1e9
    recording = module.record(trainer.train)
    breakdown = attribute(recording.events, module.RULES, recording.wall_s, steps)
    source = recording.source
    rows = [Measurement(None, False, "profile", c, v, "s", method=source) for c, v in breakdown.per_step.items()]
    rows += [
        Measurement(None, False, "profile", "step_time", breakdown.step_s, "s", method=source),
        Measurement(None, False, "profile", "unprofiled_step_time", unprofiled / steps, "s"),
        Measurement(None, False, "profile", "busy_time", breakdown.busy_s / steps, "s", method=source),
        Measurement(None, False, "profile", "steps", float(steps), "count"),
        Measurement(None, False, "profile", "events", float(breakdown.events), "count", method=source),
    ]
    for category, ops in breakdown.top_ops.items():
        rows += [Measurement(None, False, "profile_op", f"{category}|{name}", s, "s", method=source) for name, s in ops]
    facts: dict[str, Any] = {"profile": source, "profile_steps": steps}
    if recording.note:
        facts["profile_note"] = recording.note
    if protocol.profile_traces:
        path = Path(protocol.profile_traces) / trace_name(case)
        facts["profile_trace"] = str(chrome_trace.write(recording, module.RULES, path, trace_name(case)))
    return [asdict(r) for r in rows], facts
