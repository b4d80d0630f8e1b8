"""Tables of batch-size sweeps (seed 001, Fig. 4): per batch size, and the largest batch that fits.

A batch size whose trials ended `oom` is a row of its own with no numbers: a
visible gap, never a zero.
"""

from __future__ import annotations

from dlbench.analysis.sweeps import Sweep
from dlbench.report.render import TableData


def _fmt(value: float | None, scale: float = 1.0, spec: str = ".4g") -> str:
    return "—" if value is None else format(value * scale, spec)


def sweep_table(found: list[Sweep]) -> TableData | None:
    """One row per sweep and batch size; the fastest per-sample batch and the largest
    batch that fits are marked, OOM rows carry no numbers."""
    if not found:
        return None
    t = TableData(
        "batch-size sweeps: inference time per sample, training throughput, the fastest "
        "per-sample batch (*) and the largest batch that fits",
        ["sweep", "batch", "status", "infer µs/sample", "train samples/s", "note"],
    )
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
            t.add_row(
                w.label,
                str(p.batch_size),
                p.status.upper() if p.status == "oom" else p.status,
                _fmt(p.infer_per_sample, 1e6),
                _fmt(p.train_throughput),
                "; ".join(notes),
            )
    return t


def largest_batch_table(found: list[Sweep]) -> TableData | None:
    """Per sweep: the largest batch that ran and the smallest that ran out of memory."""
    if not found:
        return None
    t = TableData("largest batch that fits", ["sweep", "largest ok", "smallest OOM", "fastest per sample"])
    for w in found:
        fastest = w.fastest
        t.add_row(
            w.label,
            str(w.largest_ok) if w.largest_ok else "none",
            str(w.smallest_oom) if w.smallest_oom else "none (no OOM)",
            f"b{fastest.batch_size}" if fastest else "—",
        )
    return t
