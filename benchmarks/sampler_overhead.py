"""Do the telemetry samplers slow down what they measure?

Runs the same trial with every sampler on and with none, alternating in ABBA
order for N pairs, each run a fresh `dlbench run` into its own database, and
prints per pair the ratio (samplers on / off) of the median measured train
time, then the median ratio over pairs. Target: <= 1.02.

    .venv/bin/python benchmarks/sampler_overhead.py --pairs 5
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from dlbench.store import Store  # noqa: E402  (sqlite3 only; no framework)


def one_run(args, samplers: str, db: Path) -> float:
    cmd = [
        args.python,
        "-m",
        "dlbench",
        "run",
        "--framework",
        args.framework,
        "--model",
        args.model,
        "--dataset",
        args.dataset,
        "--epochs",
        "1",
        "--batch-size",
        str(args.batch_size),
        "--optimizer",
        "sgd",
        "--lr",
        "0.01",
        "--repeats",
        str(args.repeats),
        "--warmup",
        "1",
        "--latency-batches",
        "0",
        "--train-samples",
        str(args.train_samples),
        "--samplers",
        samplers,
        "--db",
        str(db),
    ]
    if args.sample_interval:
        cmd += ["--sample-interval", str(args.sample_interval)]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if out.returncode != 0:
        raise SystemExit(f"dlbench run failed ({samplers}):\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    with Store(db) as store:
        times = [
            m["value"]
            for m in store.measurements(store.run()["id"])
            if m["phase"] == "train" and m["metric"] == "time" and not m["warmup"]
        ]
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--framework", default="torch")
    ap.add_argument("--model", default="lenet5")
    ap.add_argument("--dataset", default="fashion-mnist")
    ap.add_argument("--batch-size", type=int, default=100)
    ap.add_argument("--train-samples", type=int, default=12000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument(
        "--sample-interval",
        type=float,
        default=0.0,
        help="force one polling interval for every sampler (0: each source's default)",
    )
    ap.add_argument("--python", default=str(ROOT / ".venv" / "bin" / "python"))
    args = ap.parse_args()
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        for pair in range(args.pairs):
            order = ("all", "none") if pair % 2 == 0 else ("none", "all")
            t = {s: one_run(args, s, Path(tmp) / f"{pair}_{s}.db") for s in order}
            ratio = t["all"] / t["none"]
            ratios.append(ratio)
            print(
                f"pair {pair + 1}: samplers on {t['all']:.4f} s, off {t['none']:.4f} s, ratio {ratio:.4f}", flush=True
            )
    med = statistics.median(ratios)
    print(
        f"{args.framework} {args.model} {args.train_samples} samples, {args.pairs} pairs: median ratio "
        f"on/off {med:.4f} (min {min(ratios):.4f}, max {max(ratios):.4f}); target <= 1.02: "
        f"{'PASS' if med <= 1.02 else 'FAIL'}"
    )
    sys.exit(0 if med <= 1.02 else 1)


if __name__ == "__main__":
    main()
