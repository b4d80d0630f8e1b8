"""Batch-size sweeps read back from the stored summaries (seed 001, Fig. 4).

A sweep is a set of cases that differ only in batch size. For each, this module
reports inference and training throughput per batch size, the batch size with
the highest inference throughput (the fastest per sample), and the largest
batch that ran, beside the smallest one that ran out of memory. Numbers only:
dlbench.report.sweep_tables lays them out.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass

from dlbench.analysis.summary import CaseSummary
from dlbench.cases import case_label


@dataclass(frozen=True)
class SweepPoint:
    batch_size: int
    status: str  # "ok", or the worst status of the case's trials
    infer_per_sample: float | None  # seconds per sample (1 / median inference throughput)
    train_throughput: float | None  # median samples/s


@dataclass(frozen=True)
class Sweep:
    label: str  # the case without its batch size
    points: tuple[SweepPoint, ...]  # by batch size

    @property
    def fastest(self) -> SweepPoint | None:
        """The batch size with the lowest inference time per sample."""
        timed = [(p.infer_per_sample, p) for p in self.points if p.infer_per_sample is not None]
        return min(timed, key=lambda t: t[0])[1] if timed else None

    @property
    def largest_ok(self) -> int | None:
        ok = [p.batch_size for p in self.points if p.status == "ok"]
        return max(ok) if ok else None

    @property
    def smallest_oom(self) -> int | None:
        oom = [p.batch_size for p in self.points if p.status == "oom"]
        return min(oom) if oom else None


STATUS_ORDER = ("oom", "timeout", "diverged", "failed", "interrupted", "running", "pending", "ok")


def _status(summary: CaseSummary) -> str:
    return next(s for s in STATUS_ORDER if s in summary.statuses) if summary.statuses else "pending"


def sweeps(summaries: list[CaseSummary]) -> list[Sweep]:
    """Every group of two or more cases that differ only in batch size."""
    groups: dict[str, list[CaseSummary]] = defaultdict(list)
    for s in summaries:
        rest = {k: v for k, v in s.case.items() if k != "batch_size"}
        groups[json.dumps(rest, sort_keys=True, default=str)].append(s)
    out = []
    for members in groups.values():
        if len(members) < 2:
            continue
        points = []
        for s in sorted(members, key=lambda m: m.case["batch_size"]):
            infer = s.stats.get(("infer", "throughput"))
            train = s.stats.get(("train", "throughput"))
            status = _status(s)
            points.append(
                SweepPoint(
                    s.case["batch_size"],
                    status,
                    1.0 / infer.median if status == "ok" and infer is not None and infer.median > 0 else None,
                    train.median if status == "ok" and train is not None else None,
                )
            )
        label = case_label({**members[0].case, "batch_size": "*"})
        out.append(Sweep(label, tuple(points)))
    return sorted(out, key=lambda w: w.label)
