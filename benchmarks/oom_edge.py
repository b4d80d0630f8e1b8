"""The out-of-memory edge of a batch sweep: per batch size, ok or oom, step time and memory peak.

Reads the latest run of a dlbench database (or --run): each case's status by batch
size (dlbench stores a cell that ran out of memory as `oom`, as seed 001's missing
points are), its median training step time and the largest memory peak the worker
recorded. Prints the table and the edge: the largest batch that trained and the
smallest that did not.

    python benchmarks/oom_edge.py --db campaign.db
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))


def main() -> int:
    from dlbench.store import Store

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--db", type=Path, required=True)
    p.add_argument("--run", type=int, help="run id (default: the latest)")
    args = p.parse_args()
    if not args.db.exists():
        p.error(f"--db {args.db}: no such file")
    with Store(args.db) as store:
        run = store.run(args.run) if args.run else store.run()
        trials = store.trials(run["id"])
        rows = store.measurements(run["id"])
    step: dict[int, list[float]] = {}
    peak: dict[int, float] = {}
    for r in rows:
        if r["phase"] != "train" or r["warmup"] or r["value"] is None:
            continue
        if r["metric"] == "time":
            steps = [x["value"] for x in rows if x["trial_id"] == r["trial_id"] and x["metric"] == "steps"]
            step.setdefault(r["batch_size"], []).append(r["value"] / steps[0] if steps else float("nan"))
        elif "memory" in r["metric"] and r["unit"] == "bytes":
            peak[r["batch_size"]] = max(peak.get(r["batch_size"], 0.0), r["value"])
    print(f"run {run['id']} ({run['name']}): training by batch size")
    print(f"{'batch':>6} {'status':>7} {'ms/step':>9} {'samples/s':>10} {'memory peak GiB':>16}")
    fit, failed = [], []
    for t in sorted(trials, key=lambda t: t["batch_size"]):
        b = t["batch_size"]
        ms = 1e3 * statistics.median(step[b]) if step.get(b) else None
        mem = f"{peak[b] / 2**30:.1f}" if b in peak else "-"
        rate = f"{b / ms * 1e3:.0f}" if ms else "-"
        print(f"{b:>6} {t['status']:>7} {(f'{ms:.1f}' if ms else '-'):>9} {rate:>10} {mem:>16}")
        (fit if t["status"] == "ok" else failed).append((b, t["status"]))
    oom = [b for b, s in failed if s == "oom"]
    if fit and oom:
        print(f"out-of-memory edge: batch {max(b for b, _ in fit)} trains, batch {min(oom)} runs out of memory")
    elif fit:
        print(f"no out-of-memory case among the measured batches: the largest that trained is {max(b for b, _ in fit)}")
    # A cell the time limit cut off (interrupted) or never reached (pending) says
    # nothing about memory: it is listed as not measured, never as a failure or a fit.
    unmeasured = [f"{b} ({s})" for b, s in failed if s in ("interrupted", "pending", "retired")]
    other = [f"{b} ({s})" for b, s in failed if s not in ("oom", "interrupted", "pending", "retired")]
    if unmeasured:
        print(f"not measured (stopped or never started): batch {', '.join(unmeasured)}")
    if other:
        print(f"failed for another reason than memory: batch {', '.join(other)}")
    return 0 if fit else 1


if __name__ == "__main__":
    sys.exit(main())
