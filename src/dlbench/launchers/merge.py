"""Combine the measurements of a multi-process trial's ranks into one trial's rows.

Data-parallel steps are synchronous: every rank waits for the others at each
gradient all-reduce, so the trial's training time is the slowest rank's, and its
throughput is the SUM of the ranks' (each trains on its own share of every
global batch), never their mean. Rank 0's rows carry what every rank agrees on
(the loss, which is already global; the accuracy of the replicated model; build
and compile times); each rank's own step time and throughput are kept beside
them (`rank_step_time`, `rank_throughput`, seq = rank).
"""

from __future__ import annotations

from typing import Any

Row = dict[str, Any]
# Per-rank figures: every rank's row is kept (seq = rank).
PER_RANK = {"rank_step_time", "rank_throughput", "rank_share"}
# Process-level figures kept for every rank, renamed rank_<metric> with seq = rank.
PER_RANK_PROCESS = {"rendezvous_time", "peak_rss", "import_time"}


def _find(rows: list[Row], phase: str, metric: str) -> Row | None:
    return next((r for r in rows if r["phase"] == phase and r["metric"] == metric and r.get("seq") is None), None)


def merge_repeat(rows_by_rank: dict[int, list[Row]]) -> list[Row]:
    """One repeat's rows from every rank -> the trial's rows for that repeat."""
    ranks = sorted(rows_by_rank)
    base = [dict(r) for r in rows_by_rank[ranks[0]] if r["metric"] not in PER_RANK]
    times = [_find(rows_by_rank[k], "train", "time") for k in ranks]
    throughputs = [_find(rows_by_rank[k], "train", "throughput") for k in ranks]
    for row in base:
        if row["phase"] != "train" or row.get("seq") is not None:
            continue
        if row["metric"] == "time" and all(t is not None and t["value"] is not None for t in times):
            row["value"] = max(t["value"] for t in times if t is not None)
        elif row["metric"] == "throughput":
            values = [t["value"] if t is not None else None for t in throughputs]
            # A rank without a throughput (no time measured) leaves the sum unknown.
            row["value"] = None if any(v is None for v in values) else sum(v for v in values if v is not None)
    for k in ranks:
        base.extend(dict(r) for r in rows_by_rank[k] if r["metric"] in PER_RANK)
    return base


def merge_process(rows_by_rank: dict[int, list[Row]], launch_time: float | None) -> list[Row]:
    """The process-level rows (repeat None): rank 0's, each rank's own rendezvous
    time, import time and peak memory, and the launcher's time from starting the
    ranks to every rank having joined."""
    ranks = sorted(rows_by_rank)
    out = [dict(r) for r in rows_by_rank[ranks[0]]]
    for k in ranks:
        for r in rows_by_rank[k]:
            if r["metric"] in PER_RANK_PROCESS:
                out.append({**r, "metric": f"rank_{r['metric']}", "seq": k})
    if launch_time is not None:
        out.append(
            {
                "repeat": None,
                "warmup": False,
                "phase": "process",
                "metric": "launch_time",
                "value": launch_time,
                "unit": "s",
                "seq": None,
            }
        )
    return out


def merge_manifest(manifests: dict[int, dict[str, Any]], launcher: dict[str, Any]) -> dict[str, Any]:
    """Rank 0's manifest, with what each rank set for itself (pid, threads, cores)."""
    ranks = sorted(manifests)
    out = dict(manifests[ranks[0]]) if ranks else {}
    keys = ("pid", "intra_op_threads", "inter_op_threads", "threads_requested", "cpu_affinity", "process_threads")
    out["ranks"] = [{"rank": k, **{key: manifests[k].get(key) for key in keys if key in manifests[k]}} for k in ranks]
    out["launcher"] = launcher
    return out
