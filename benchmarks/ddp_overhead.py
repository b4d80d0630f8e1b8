"""Does dlbench's DDP path add overhead? dlbench vs a plain torchrun DDP script.

Both sides train the same LeNet-5 (or MLP) with DistributedDataParallel over gloo,
2 ranks of 1 thread each, on 6000 random 28x28x1 samples, global batch 100 (50 per
rank), plain SGD 0.01, glorot-uniform init, one untimed warm-up step, then
`--steps` timed steps. dlbench: `dlbench run --strategy ddp --world-size 2`
(its own launcher, train time = the slowest rank's); the other side:
`python -m torch.distributed.run --standalone --nproc-per-node 2
benchmarks/standalone/torch_ddp.py` (torchrun itself; time of rank 0, whose steps
wait for rank 1 at every all-reduce). Rounds are interleaved in ABBA order so
that a drifting machine slows both sides alike.

Printed: each side's median step time per round, the ratio dlbench / standalone
(ratio of medians over rounds) with the range of per-round ratios, and the
verdict against the target: within +/-5%.

    .venv/bin/python benchmarks/ddp_overhead.py --rounds 4 --model lenet5
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv" / "bin" / "python").exists() else sys.executable
TOLERANCE = 0.05


def dlbench_step_times(model: str, steps: int, repeats: int, tmp: Path, warmup: int) -> list[float]:
    db = tmp / f"ddp-{os.getpid()}-{len(list(tmp.iterdir()))}.db"
    cmd = [PYTHON, "-m", "dlbench", "run", "--framework", "torch", "--model", model, "--dataset", "synthetic"]
    cmd += ["--strategy", "ddp", "--world-size", "2", "--threads", "1", "--batch-size", "100"]
    cmd += ["--optimizer", "sgd", "--lr", "0.01", "--init", "glorot-uniform", "--steps", str(steps)]
    cmd += ["--repeats", str(repeats), "--warmup", str(warmup), "--samplers", "none", "--db", str(db)]
    subprocess.run(cmd, check=True, capture_output=True, cwd=tmp, timeout=1200)
    with sqlite3.connect(db) as con:
        rows = con.execute(
            "SELECT value FROM measurements WHERE phase='train' AND metric='time' AND warmup=0 AND seq IS NULL"
        ).fetchall()
    return [v / steps for (v,) in rows]


def standalone_step_times(model: str, steps: int, repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        cmd = [PYTHON, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
        cmd += [str(ROOT / "benchmarks" / "standalone" / "torch_ddp.py"), "--model", model, "--batch", "100"]
        cmd += ["--steps", str(steps), "--threads", "1", "--lr", "0.01"]
        env = {**os.environ, "OMP_NUM_THREADS": "1"}
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1200)
        line = next((x for x in done.stdout.splitlines() if x.startswith("{")), None)
        if line is None:
            # torchrun's own error file names the failing rank; show its tail, not a traceback of ours.
            sys.exit(f"standalone DDP script failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
        if done.returncode != 0:
            # Rank 0 printed its result, so the timed steps were complete; torch 2.13's gloo
            # ranks sometimes abort after that ("terminate called without an active
            # exception"). Say so, and keep the measurement.
            tail = [x for x in done.stderr.splitlines() if "terminate" in x or "Signal" in x][-1:]
            print(f"  note: torchrun exited {done.returncode} after the result was printed: {' '.join(tail)}")
        out.append(float(json.loads(line)["step_time"]))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=("lenet5", "mlp"), default="lenet5")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--repeats", type=int, default=3, help="timed repeats (dlbench) / runs (standalone) per round")
    p.add_argument("--rounds", type=int, default=4, help="interleaved rounds, ABBA order")
    p.add_argument(
        "--warmup",
        type=int,
        default=1,
        help="dlbench's warm-up repeats (the standalone script warms up with one step only)",
    )
    args = p.parse_args()
    print(
        f"DDP, torch, {args.model}, 2 ranks x 1 thread, global batch 100, {args.steps} steps; "
        f"{os.cpu_count()} CPUs here"
    )
    ratios, ours, theirs = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            sides = ["dlbench", "standalone"] if r % 2 == 0 else ["standalone", "dlbench"]
            got = {}
            for side in sides:
                if side == "dlbench":
                    got[side] = statistics.median(
                        dlbench_step_times(args.model, args.steps, args.repeats, Path(tmp), args.warmup)
                    )
                else:
                    got[side] = statistics.median(standalone_step_times(args.model, args.steps, args.repeats))
            ours.append(got["dlbench"])
            theirs.append(got["standalone"])
            ratios.append(got["dlbench"] / got["standalone"])
            print(
                f"round {r} ({' then '.join(sides)}): dlbench {got['dlbench'] * 1e3:.2f} ms/step, "
                f"standalone {got['standalone'] * 1e3:.2f} ms/step, ratio {ratios[-1]:.3f}"
            )
    ratio = statistics.median(ours) / statistics.median(theirs)
    verdict = "within" if abs(ratio - 1) <= TOLERANCE else "OUTSIDE"
    print(
        f"median step time: dlbench {statistics.median(ours) * 1e3:.2f} ms, standalone "
        f"{statistics.median(theirs) * 1e3:.2f} ms; ratio {ratio:.3f} (per-round {min(ratios):.3f}-{max(ratios):.3f}); "
        f"{verdict} the +/-{TOLERANCE:.0%} target"
    )


if __name__ == "__main__":
    main()
