"""Op names -> categories, and a profiled step's wall time split among them.

The rules are tables (one per framework, in its `profile_<framework>` module):
ordered `Rule`s, the first match wins; a rule matches an op's name, or one of the
ranges that enclose it (`scope`), which is how an `add_` inside torch's
`Optimizer.step` counts as optimizer work and not as elementwise.

Attribution (`attribute`) is by wall time, so that the categories add up to the
step: on each lane an event owns its self time (its interval minus its
children's); at every instant the active lanes share the instant equally; what no
op covers is framework overhead and idle. Runtime activity (an executor
dispatching, a host thread waiting for a device) is in `BACKGROUND`: it is counted
only where no op runs on any lane, so a thread that waits while another computes
does not take half of that computation.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from dlbench.explain.events import OpEvent

# In report order; the label is what a reader sees.
CATEGORY_LABELS: dict[str, str] = {
    "convolution": "convolution",
    "matmul": "matmul / GEMM",
    "elementwise": "elementwise & fused",
    "normalization": "normalization",
    "reduction": "pooling, softmax, loss & reductions",
    "optimizer": "optimizer update",
    "data_movement": "data movement (copies, indexing, host<->device)",
    "compile": "compile / trace",
    "other": "other ops",
    "overhead": "framework overhead & idle",
}
CATEGORIES = tuple(CATEGORY_LABELS)
# Runtime activity rather than an op: counted only where no op runs on any lane.
BACKGROUND = "overhead"


@dataclass(frozen=True)
class Rule:
    pattern: str  # a regular expression, searched (re.search) in the name or a scope
    category: str
    on: str = "name"  # "name" or "scope"
    why: str = ""  # where a mapping is not obvious, the reason

    def __post_init__(self) -> None:
        if self.category not in CATEGORY_LABELS:
            raise ValueError(f"rule {self.pattern!r}: unknown category {self.category!r}")
        if self.on not in ("name", "scope"):
            raise ValueError(f"rule {self.pattern!r}: 'on' must be name or scope, not {self.on!r}")


@lru_cache(maxsize=512)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def categorize(event: OpEvent, rules: Sequence[Rule]) -> str:
    """The category of the first rule that matches; "other" where none does."""
    for rule in rules:
        regex = _compiled(rule.pattern)
        if rule.on == "scope":
            if any(regex.search(s) for s in event.scopes):
                return rule.category
        elif regex.search(event.name):
            return rule.category
    return "other"


@dataclass(frozen=True)
class Breakdown:
    """Seconds per step by category, over `steps` profiled steps of `wall_s` seconds."""

    per_step: dict[str, float]  # every category, overhead included; sums to max(wall, busy) / steps
    steps: int
    wall_s: float
    busy_s: float  # union of op time (BACKGROUND excluded) over the profiled steps
    top_ops: dict[str, list[tuple[str, float]]]  # category -> [(op name, s/step)], largest first
    events: int

    @property
    def step_s(self) -> float:
        return sum(self.per_step.values())


def _self_segments(events: list[tuple[float, float, str]]) -> list[tuple[float, float, str]]:
    """One lane's events (start, end, key) -> (start, end, key) of each one's self
    time: the innermost open event owns each instant. A child that outlives its
    parent (clock rounding) is cut at the parent's end."""
    out: list[tuple[float, float, str]] = []
    stack: list[tuple[float, str]] = []  # (end, key)
    cursor = 0.0
    for start, end, key in sorted(events, key=lambda e: (e[0], -e[1])):
        while stack and stack[-1][0] <= start:
            top_end, top_key = stack.pop()
            if top_end > cursor:
                out.append((cursor, top_end, top_key))
            cursor = max(cursor, top_end)
        if stack and start > cursor:
            out.append((cursor, start, stack[-1][1]))
        cursor = start
        if stack:
            end = min(end, stack[-1][0])
        stack.append((end, key))
    while stack:
        top_end, top_key = stack.pop()
        if top_end > cursor:
            out.append((cursor, top_end, top_key))
        cursor = max(cursor, top_end)
    return out


def attribute(events: Iterable[OpEvent], rules: Sequence[Rule], wall_s: float, steps: int) -> Breakdown:
    """Split `steps` profiled steps of `wall_s` seconds among the categories."""
    steps = max(1, steps)
    lanes: dict[str, list[tuple[float, float, str]]] = defaultdict(list)
    category_of: dict[str, str] = {}
    count = 0
    for e in events:
        if e.dur_us <= 0:
            continue
        count += 1
        category_of.setdefault(e.name + "\x00" + "\x1f".join(e.scopes), categorize(e, rules))
        lanes[e.lane].append((e.start_us, e.end_us, e.name + "\x00" + "\x1f".join(e.scopes)))
    # Boundaries of every lane's self segments: +1 at a start, -1 at an end.
    edges: list[tuple[float, int, str]] = []
    for lane_events in lanes.values():
        for start, end, key in _self_segments(lane_events):
            if end > start:
                edges.append((start, 1, key))
                edges.append((end, -1, key))
    edges.sort(key=lambda e: (e[0], e[1]))
    active: dict[str, int] = defaultdict(int)
    by_key: dict[str, float] = defaultdict(float)
    previous = edges[0][0] if edges else 0.0
    for t, delta, key in edges:
        dt = t - previous
        if dt > 0 and active:
            foreground = [k for k in active if category_of[k] != BACKGROUND]
            owners = foreground or list(active)
            n = sum(active[k] for k in owners)
            for k in owners:
                by_key[k] += dt * active[k] / n
        previous = t
        active[key] += delta
        if active[key] == 0:
            del active[key]
    per_category: dict[str, float] = dict.fromkeys(CATEGORIES, 0.0)
    ops: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for key, us in by_key.items():
        category = category_of[key]
        per_category[category] += us / 1e6
        ops[category][key.split("\x00", 1)[0]] += us / 1e6
    busy = sum(v for c, v in per_category.items() if c != BACKGROUND)
    # Overhead and idle: the profiled wall time no op covered (runtime events there included).
    per_category[BACKGROUND] = max(per_category[BACKGROUND], wall_s - busy)
    top = {
        c: sorted(((name, s / steps) for name, s in named.items()), key=lambda x: -x[1])[:5] for c, named in ops.items()
    }
    return Breakdown(
        per_step={c: v / steps for c, v in per_category.items()},
        steps=steps,
        wall_s=wall_s,
        busy_s=busy,
        top_ops=top,
        events=count,
    )
