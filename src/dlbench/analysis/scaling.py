"""Scaling of data-parallel training, read back from a run's measurements.

For every framework:variant and setting (the case without its strategy, world
size and batch scope), the single-process case of the same run at world size 1
is the baseline. For each data-parallel case:

    speed-up            = throughput(N) / throughput(1)
    scaling efficiency  = throughput(N) / (N x throughput(1))

with throughput the GLOBAL samples per second (the launcher sums the ranks'),
medians over the statistical sample (one median per trial, or the measured
repeats), and 95% bootstrap CIs of the ratio of medians (paired by block when
both cases have independent trials in the same blocks). Strong scaling (global
batch fixed) and weak scaling (per-replica batch fixed) use the same formulas;
which one a case measured is its batch scope. Numbers only: dlbench.report.
scaling_tables words and lays them out.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dlbench.analysis import stats
from dlbench.analysis.comparisons import Sample, samples
from dlbench.cases import case_label, stored_case
from dlbench.store.records import trial_record

Rows = Iterable[Mapping[str, Any]]
DISTRIBUTION = ("strategy", "world_size", "batch_scope")


@dataclass(frozen=True)
class ScalingPoint:
    case_key: str
    strategy: str
    world_size: int
    batch_scope: str
    throughput: float | None  # median global samples/s
    speedup: float | None
    speedup_ci: tuple[float, float]
    efficiency: float | None
    efficiency_ci: tuple[float, float]
    rank_step_time: dict[int, float] = field(default_factory=dict)  # rank -> median seconds per step
    comm_share: float | None = None  # median share of a step in collectives (profiled steps)
    status: str = "ok"


@dataclass(frozen=True)
class Scaling:
    framework: str  # framework:variant
    setting: str  # what the points share besides the framework
    baseline_key: str | None
    baseline_throughput: float | None
    points: tuple[ScalingPoint, ...]
    note: str = ""  # why there is no baseline, when there is none

    def best(self) -> ScalingPoint | None:
        """The point with the highest median throughput at the largest world size measured."""
        timed = [p for p in self.points if p.throughput is not None]
        if not timed:
            return None
        largest = max(p.world_size for p in timed)
        return max((p for p in timed if p.world_size == largest), key=lambda p: p.throughput or 0.0)


def _medians_by_seq(trials: Rows, measurements: Rows, metric: str) -> dict[str, dict[int, float]]:
    ok = {t["id"] for t in trials if t["status"] == "ok"}
    values: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for m in measurements:
        if (
            m["phase"] == "train"
            and m["metric"] == metric
            and not m["warmup"]
            and m["trial_id"] in ok
            and m["value"] is not None
            and m["seq"] is not None
        ):
            values[m["case_key"]][int(m["seq"])].append(float(m["value"]))
    return {k: {r: statistics.median(v) for r, v in by.items()} for k, by in values.items()}


def _comm(trials: Rows, measurements: Rows) -> dict[str, float]:
    ok = {t["id"] for t in trials if t["status"] == "ok"}
    values: dict[str, list[float]] = defaultdict(list)
    for m in measurements:
        if m["phase"] == "comm" and m["metric"] == "share" and not m["warmup"] and m["trial_id"] in ok:
            if m["value"] is not None:
                values[m["case_key"]].append(float(m["value"]))
    return {k: statistics.median(v) for k, v in values.items()}


def _ratio(a: Sample, b: Sample) -> tuple[float | None, tuple[float, float]]:
    """Median of a / median of b, with a 95% bootstrap CI."""
    if not a.values or not b.values:
        return None, (math.nan, math.nan)
    med_b = statistics.median(b.values.values())
    if med_b <= 0:
        return None, (math.nan, math.nan)
    point = statistics.median(a.values.values()) / med_b
    shared = sorted(set(a.values) & set(b.values))
    paired = a.independent and b.independent and len(shared) >= 2
    if paired:
        xa = [a.values[k] for k in shared]
        xb = [b.values[k] for k in shared]
    else:
        xa, xb = list(a.values.values()), list(b.values.values())
    return point, stats.ratio_ci(xa, xb, paired=paired)


def _status(trials: list[Mapping[str, Any]]) -> str:
    statuses = {t["status"] for t in trials}
    for s in ("oom", "timeout", "diverged", "failed", "interrupted", "running", "pending"):
        if s in statuses:
            return s
    return "ok"


def scaling(trials: Rows, measurements: Rows) -> list[Scaling]:
    """One Scaling per framework:variant and setting that has a data-parallel case."""
    trials = list(trials)
    measurements = list(measurements)
    cases = {t["case_key"]: stored_case(trial_record(t).case) for t in trials}
    if not any(c.get("strategy", "single") != "single" for c in cases.values()):
        return []
    throughput = samples(trials, measurements, "train", "throughput")
    per_rank = _medians_by_seq(trials, measurements, "rank_step_time")
    comm = _comm(trials, measurements)
    trials_of: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for t in trials:
        trials_of[t["case_key"]].append(t)
    groups: dict[str, list[str]] = defaultdict(list)
    for key, c in cases.items():
        rest = {k: v for k, v in c.items() if k not in DISTRIBUTION}
        groups[json.dumps(rest, sort_keys=True, default=str)].append(key)
    out = []
    for keys in groups.values():
        members = {k: cases[k] for k in keys}
        if all(c.get("strategy", "single") == "single" for c in members.values()):
            continue
        base = next(
            (k for k, c in members.items() if c.get("strategy", "single") == "single" and c.get("world_size", 1) == 1),
            None,
        )
        base_sample = throughput.get(base) if base else None
        base_median = (
            statistics.median(base_sample.values.values()) if base_sample is not None and base_sample.values else None
        )
        points = []
        for k in sorted(keys, key=lambda k: (members[k].get("world_size", 1), members[k].get("strategy", "single"))):
            c = members[k]
            if k == base:
                continue
            world = int(c.get("world_size", 1))
            mine = throughput.get(k)
            median = statistics.median(mine.values.values()) if mine is not None and mine.values else None
            speedup, s_ci = (None, (math.nan, math.nan))
            if mine is not None and base_sample is not None:
                speedup, s_ci = _ratio(mine, base_sample)
            points.append(
                ScalingPoint(
                    case_key=k,
                    strategy=str(c.get("strategy", "single")),
                    world_size=world,
                    batch_scope=str(c.get("batch_scope", "global")),
                    throughput=median,
                    speedup=speedup,
                    speedup_ci=s_ci,
                    efficiency=None if speedup is None else speedup / world,
                    efficiency_ci=(s_ci[0] / world, s_ci[1] / world),
                    rank_step_time=per_rank.get(k, {}),
                    comm_share=comm.get(k),
                    status=_status(trials_of[k]),
                )
            )
        first = members[keys[0]]
        out.append(
            Scaling(
                framework=case_label(first, setting=False).split(" ")[0],
                setting=case_label({**first, "strategy": "single", "world_size": 1}, framework=False),
                baseline_key=base,
                baseline_throughput=base_median,
                points=tuple(points),
                note=""
                if base is not None
                else "no single-process case at world size 1 of this framework and setting in the run: "
                "speed-up and efficiency need one (add --strategy single --world-size 1)",
            )
        )
    return out
