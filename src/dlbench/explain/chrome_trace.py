"""A recording written as a Chrome trace (Trace Event Format, gzip JSON).

One format for every framework, so that one viewer opens them all: Perfetto
(ui.perfetto.dev) and chrome://tracing read it as is. Each event carries its
dlbench category as the trace's `cat` (the viewers colour and filter by it) and
its scopes as args.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Sequence
from pathlib import Path

from dlbench.explain.categories import Rule, categorize
from dlbench.explain.events import Recording


def write(recording: Recording, rules: Sequence[Rule], path: Path, label: str) -> Path:
    """Write `recording` to `path` (a .json.gz), atomically; returns the path."""
    lanes: dict[str, int] = {}
    trace: list[dict[str, object]] = []
    for e in recording.events:
        tid = lanes.setdefault(e.lane, len(lanes) + 1)
        args: dict[str, object] = {"scopes": list(e.scopes)} if e.scopes else {}
        trace.append(
            {"name": e.name, "cat": categorize(e, rules), "ph": "X", "ts": e.start_us, "dur": e.dur_us, "pid": 1}
            | {"tid": tid, "args": args}
        )
    meta: list[dict[str, object]] = [
        {"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": label}},
        *({"name": "thread_name", "ph": "M", "pid": 1, "tid": t, "args": {"name": lane}} for lane, t in lanes.items()),
    ]
    document = {
        "traceEvents": meta + trace,
        "displayTimeUnit": "ms",
        "otherData": {"source": recording.source, "wall_s": recording.wall_s, "note": recording.note},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + f".{os.getpid()}.partial")
    with gzip.open(partial, "wt", encoding="utf-8") as f:
        json.dump(document, f)
    os.replace(partial, path)
    return path
