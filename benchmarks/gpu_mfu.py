"""MFU of a stored run: achieved training FLOP/s over the device's dense peak, per case.

Reads a dlbench database: each trial's FLOPs per training step (counted by the torch
adapter, `train_flops_per_step` in its manifest), its device name and precision, and
every measured (non-warm-up) repeat's train time and step count. Per case it prints
the median achieved TFLOP/s, the peak it is divided by (dlbench.analysis.mfu, the
datasheet's dense figure for that device and precision) and the MFU, or why there
is none (no count, or a device not in the table).

    python benchmarks/gpu_mfu.py --db campaign.db --run 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))


def main() -> int:
    from dlbench.analysis.mfu import utilization
    from dlbench.store import Store

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--db", type=Path, required=True)
    p.add_argument("--run", type=int, help="run id (default: the latest)")
    args = p.parse_args()
    if not args.db.exists():
        p.error(f"--db {args.db}: no such file")
    rows_out = []
    with Store(args.db) as store:
        run = store.run(args.run) if args.run else store.run()
        trials = {t["id"]: t for t in store.trials(run["id"])}
        per_trial: dict[int, dict[str, list[float]]] = {}
        for m in store.measurements(run["id"]):
            if m["phase"] == "train" and not m["warmup"] and m["metric"] in ("time", "steps"):
                per_trial.setdefault(m["trial_id"], {}).setdefault(m["metric"], []).append(m["value"])
    print(f"run {run['id']}: MFU = counted FLOPs per step x steps / train time / dense peak")
    print(f"{'case':<44} {'GFLOP/step':>10} {'ms/step':>8} {'TFLOP/s':>8} {'peak':>7} {'MFU':>6}  device")
    for tid, trial in sorted(trials.items()):
        manifest = json.loads(trial["manifest_json"] or "{}")
        case = json.loads(trial["case_json"] or "{}")
        precision = case.get("precision", "float32")
        label = f"{trial['framework']}:{trial['variant']} {trial['model']} b{trial['batch_size']} {precision}"
        if trial["status"] != "ok":
            print(f"{label:<44} trial {trial['status']}: {(trial['error'] or '')[:80]}")
            continue
        flops = manifest.get("train_flops_per_step")
        got = per_trial.get(tid, {})
        if not flops:
            print(f"{label:<44} no FLOP count: {manifest.get('train_flops_note', 'the adapter does not count FLOPs')}")
            continue
        if not got.get("time"):
            print(f"{label:<44} no measured train time")
            continue
        per_step = [t / s for t, s in zip(got["time"], got["steps"])]
        step_s = statistics.median(per_step)
        u = utilization(flops, 1, step_s, manifest.get("device_name", "?"), precision)
        peak = f"{u.peak_tflops:g}" if u.peak_tflops else "-"
        mfu = f"{u.mfu:.1%}" if u.mfu is not None else "-"
        rate = f"{flops / 1e9:>10.1f} {1e3 * step_s:>8.2f} {u.achieved_tflops:>8.2f}"
        print(f"{label:<44} {rate} {peak:>7} {mfu:>6}  {u.note}")
        rows_out.append({"case": label, "flops_per_step": flops, "step_s": step_s, **u.__dict__})
    return 0 if rows_out else 1


if __name__ == "__main__":
    sys.exit(main())
