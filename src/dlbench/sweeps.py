"""Batch-size sweeps read back from the stored summaries (seed 001, Fig. 4).

A sweep is a set of cases that differ only in batch size. For each, this module
reports inference and training throughput per batch size, the batch size with
the highest inference throughput (the fastest per sample), and the largest
batch that ran, beside the smallest one that ran out of memory. A batch size
whose trials ended `oom` is a row of its own with no numbers: a visible gap,
never a zero.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass

from dlbench.report.render import TableData
from dlbench.summary import CaseSummary
from dlbench.tables import case_label


@dataclass(frozen=True)
class SweepPoint:
    batch_size: int
    status: str                       # "ok", or the worst status of the case's trials
    infer_per_sample: float | None    # seconds per sample (1 / median inference throughput)
    train_throughput: float | None    # median samples/s


@dataclass(frozen=True)
class Sweep:
    label: str                        # the case without its batch size
    points: tuple[SweepPoint, ...]    # by batch size

    @property
    def fastest(self) -> SweepPoint | None:
        """The batch size with the lowest inference time per sample."""
        timed = [p for p in self.points if p.infer_per_sample is not None]
        return min(timed, key=lambda p: p.infer_per_sample) if timed else None

    @property
    def largest_ok(self) -> int | None:
        ok = [p.batch_size for p in self.points if p.status == "ok"]
        return max(ok) if ok else None

    @property
    def smallest_oom(self) -> int | None:
        oom = [p.batch_size for p in self.points if p.status == "oom"]
        return min(oom) if oom else None


STATUS_ORDER = ("oom", "timeout", "failed", "interrupted", "running", "pending", "ok")


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
            points.append(SweepPoint(
                s.case["batch_size"], status,
                1.0 / infer.median if status == "ok" and infer is not None and infer.median > 0 else None,
                train.median if status == "ok" and train is not None else None))
        label = case_label({**members[0].case, "batch_size": "*"})
        out.append(Sweep(label, tuple(points)))
    return sorted(out, key=lambda w: w.label)


def _fmt(value: float | None, scale: float = 1.0, spec: str = ".4g") -> str:
    return "—" if value is None else format(value * scale, spec)


def sweep_table(found: list[Sweep]) -> TableData | None:
    """One row per sweep and batch size; the fastest per-sample batch and the largest
    batch that fits are marked, OOM rows carry no numbers."""
    if not found:
        return None
    t = TableData("batch-size sweeps: inference time per sample, training throughput, the fastest "
                  "per-sample batch (*) and the largest batch that fits",
                  ["sweep", "batch", "status", "infer µs/sample", "train samples/s", "note"])
    for w in found:
        fastest = w.fastest
        for p in w.points:
            notes = []
            if fastest is not None and p.batch_size == fastest.batch_size:
                notes.append("* fastest per sample")
            if p.batch_size == w.largest_ok and w.smallest_oom is not None:
                notes.append(f"largest that fits (b{w.smallest_oom} ran out of memory)")
            elif p.batch_size == w.largest_ok:
                notes.append("largest tried; every batch fit")
            t.add_row(w.label, str(p.batch_size), p.status.upper() if p.status == "oom" else p.status,
                      _fmt(p.infer_per_sample, 1e6), _fmt(p.train_throughput), "; ".join(notes))
    return t


def largest_batch_table(found: list[Sweep]) -> TableData | None:
    """Per sweep: the largest batch that ran and the smallest that ran out of memory."""
    if not found:
        return None
    t = TableData("largest batch that fits", ["sweep", "largest ok", "smallest OOM", "fastest per sample"])
    for w in found:
        fastest = w.fastest
        t.add_row(w.label, str(w.largest_ok) if w.largest_ok else "none",
                  str(w.smallest_oom) if w.smallest_oom else "none (no OOM)",
                  f"b{fastest.batch_size}" if fastest else "—")
    return t
