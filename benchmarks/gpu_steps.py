"""dlbench's training step time beside hand-written scripts, per framework, on a GPU (or the CPU).

For each model (LeNet-5, ResNet-50 on synthetic images) and each framework variant
(torch eager and compile, TensorFlow graph and XLA, JAX jit), `dlbench run` and the
matching script in benchmarks/standalone/steps_*.py train the same network on the
same shape of data under the same protocol (fresh model per repeat, one untimed
step, then N timed steps ending in a sync; data resident on the device). The two
sides run in turns, in ABBA order (round 0: dlbench then standalone, round 1: the
other way round), each a fresh process, so that drift falls on both alike.

Per case it prints the median step time of each side, the ratio dlbench / standalone
with the per-round ratios, and a verdict against the target (default ±5%). For torch
it also prints what the standalone script read *without* synchronizing the GPU (the
wall clock right after the Python loop returns): the error that dlbench's
synchronization prevents. A framework that is not installed is skipped with that
reason. `--budget` stops starting new pairs once that many seconds have passed, and
the summary covers what was measured.

This process imports no framework; every measurement runs in a child process.

    python benchmarks/gpu_steps.py --device cuda --db steps.db --json steps.json
    python benchmarks/gpu_steps.py --device cpu --size smoke        # the CPU check of the script itself
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
STANDALONE = ROOT / "benchmarks" / "standalone"
VARIANTS = ("torch:eager", "torch:compile", "tensorflow:graph", "tensorflow:xla", "jax:jit")
# model -> size -> (batch, timed steps, training samples, image side)
SIZES: dict[str, dict[str, tuple[int, int, int, int]]] = {
    "lenet5": {"gpu": (256, 200, 2560, 28), "smoke": (16, 3, 64, 28)},
    "resnet50": {"gpu": (64, 30, 640, 224), "smoke": (4, 2, 8, 32)},
}
PACKAGES = {"torch": "torch", "tensorflow": "tensorflow", "jax": "jax"}


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--device", choices=("cpu", "cuda"), default="cuda")
    p.add_argument("--models", default="lenet5,resnet50")
    p.add_argument("--variants", default=",".join(VARIANTS), help="framework:variant, comma list")
    p.add_argument("--size", choices=("gpu", "smoke"), default="gpu", help="batch, steps and data per model")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--tolerance", type=float, default=0.05)
    p.add_argument("--budget", type=float, default=0.0, help="seconds after which no new pair starts (0: none)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per child process")
    p.add_argument("--db", type=Path, help="the dlbench runs' database (default: a temporary one)")
    p.add_argument("--json", type=Path, help="write every raw time here")
    p.add_argument("--python", default=sys.executable)
    args = p.parse_args()
    args.models = [m for m in args.models.split(",") if m]
    args.variants = [v for v in args.variants.split(",") if v]
    bad = [m for m in args.models if m not in SIZES] + [v for v in args.variants if v not in VARIANTS]
    if bad:
        p.error(f"unknown {', '.join(bad)}: models are {', '.join(SIZES)}; variants {', '.join(VARIANTS)}")
    return args


def _run(cmd: list[str], timeout: float) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])} ... exited {proc.returncode}: {(proc.stderr or proc.stdout)[-1500:]}")
    return proc.stdout


def experiment_toml(model: str, variant: str, size: tuple[int, int, int, int], args: argparse.Namespace) -> str:
    batch, steps, train, side = size
    channels = 1 if model == "lenet5" else 3
    return f"""[experiment]
name = "steps-{model}-{variant.replace(":", "-")}"
description = "step time beside benchmarks/standalone/steps_{variant.split(":")[0]}.py"

[matrix]
framework = ["{variant}"]
model = ["{model}"]
dataset = ["synthetic"]
batch_size = [{batch}]
optimizer = ["sgd"]
lr = [0.01]
init = ["glorot-uniform"]

[synthetic]
shape = [{side}, {side}, {channels}]
classes = 10
train_size = {train}
test_size = {batch}

[protocol]
steps = {steps}
repeats = {args.repeats}
warmup = {args.warmup}
trials = 1
latency_batches = 0
infer_min_time = 0.0
samplers = "none"
"""


def run_dlbench(model: str, variant: str, args: argparse.Namespace, db: Path, tmp: Path) -> dict[str, Any]:
    from dlbench.store import Store  # sqlite3 only: no framework is imported here

    size = SIZES[model][args.size]
    toml = tmp / f"{model}-{variant.replace(':', '-')}.toml"
    toml.write_text(experiment_toml(model, variant, size, args))
    _run([args.python, "-m", "dlbench", "run", str(toml), "--device", args.device, "--db", str(db)], args.timeout)
    with Store(db) as store:
        run = store.run()
        rows = [r for r in store.measurements(run["id"]) if r["phase"] == "train" and not r["warmup"]]
    times = [r["value"] for r in rows if r["metric"] == "time"]
    if len(times) != args.repeats:
        raise RuntimeError(f"run {run['id']}: expected {args.repeats} measured train times, found {len(times)}")
    return {"run_id": run["id"], "step_times": [t / size[1] for t in times]}


def run_standalone(model: str, variant: str, args: argparse.Namespace) -> dict[str, Any]:
    fw, var = variant.split(":")
    batch, steps, train, side = SIZES[model][args.size]
    cmd = [args.python, str(STANDALONE / f"steps_{fw}.py"), "--model", model, "--variant", var]
    cmd += ["--device", args.device, "--batch-size", str(batch), "--steps", str(steps), "--train-size", str(train)]
    cmd += ["--input-size", str(side), "--repeats", str(args.repeats), "--warmup", str(args.warmup)]
    if fw == "torch":
        cmd.append("--unsynced")
    lines = [ln for ln in _run(cmd, args.timeout).splitlines() if ln.startswith("{")]
    if not lines:
        raise RuntimeError(f"steps_{fw}.py printed no JSON line")
    out = json.loads(lines[-1])
    result = {"step_times": out["step_times"], "device_name": out.get("device_name"), "version": out.get("version")}
    if "unsynced_times" in out:
        result["unsynced_step_times"] = [t / steps for t in out["unsynced_times"]]
    return result


def summarize(key: str, rounds: list[dict[str, Any]], tolerance: float) -> dict[str, Any]:
    a = [t for r in rounds for t in r["dlbench"]["step_times"]]
    b = [t for r in rounds for t in r["standalone"]["step_times"]]
    per_round = [
        statistics.median(r["dlbench"]["step_times"]) / statistics.median(r["standalone"]["step_times"]) for r in rounds
    ]
    ratio = statistics.median(a) / statistics.median(b)
    s = {
        "case": key,
        "rounds": len(rounds),
        "dlbench_ms": 1e3 * statistics.median(a),
        "standalone_ms": 1e3 * statistics.median(b),
        "ratio": ratio,
        "round_ratios": per_round,
        # Where the ratio lies against the target band: a description of these rounds, not a test.
        "verdict": "within" if abs(ratio - 1) <= tolerance else ("above the band" if ratio > 1 else "below the band"),
    }
    unsynced = [t for r in rounds for t in r["standalone"].get("unsynced_step_times", [])]
    if unsynced:
        s["unsynced_ms"] = 1e3 * statistics.median(unsynced)
        s["unsynced_over_synced"] = statistics.median(unsynced) / statistics.median(b)
    return s


def print_table(summaries: list[dict[str, Any]], args: argparse.Namespace) -> None:
    print(
        f"\nstep time, dlbench / standalone, {args.device}, target ±{args.tolerance:.0%} "
        "(median of every measured repeat)"
    )
    print(f"{'case':<26} {'dlbench ms':>10} {'standalone':>10} {'ratio':>6} {'round ratios':>14}  verdict")
    for s in summaries:
        rr = " ".join(f"{x:.3f}" for x in s["round_ratios"])
        print(
            f"{s['case']:<26} {s['dlbench_ms']:>10.3f} {s['standalone_ms']:>10.3f} {s['ratio']:>6.3f} {rr:>14}  "
            f"{s['verdict']} ({s['rounds']} round{'s' if s['rounds'] != 1 else ''})"
        )
    unsynced = [s for s in summaries if "unsynced_ms" in s]
    if unsynced:
        print("\nwithout synchronization (standalone torch, same repeats: wall clock when the Python loop returns)")
        print(f"{'case':<26} {'synced ms':>10} {'unsynced':>10} {'unsynced/synced':>16}")
        for s in unsynced:
            print(
                f"{s['case']:<26} {s['standalone_ms']:>10.3f} {s['unsynced_ms']:>10.3f} "
                f"{s['unsynced_over_synced']:>16.3f}"
            )


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def measure(
    cases: list[tuple[str, str]],
    args: argparse.Namespace,
    db: Path,
    tmp: Path,
    start: float,
    results: dict[str, list[dict[str, Any]]],
) -> None:
    """Every case's rounds into `results`, written to --json after each pair."""
    # Each case's rounds run back to back (ABBA within the case), so that a budget
    # cut drops whole cases, never the second round of a case already started.
    for model, variant in cases:
        if args.budget and time.monotonic() - start > args.budget:
            print(f"budget of {args.budget:.0f} s spent: {model} {variant} not started", flush=True)
            continue
        key = f"{model} {variant}"
        for rnd in range(args.rounds):
            order = ("dlbench", "standalone") if rnd % 2 == 0 else ("standalone", "dlbench")
            entry: dict[str, Any] = {}
            try:
                for side in order:
                    t0 = time.monotonic()
                    entry[side] = (
                        run_dlbench(model, variant, args, db, tmp)
                        if side == "dlbench"
                        else run_standalone(model, variant, args)
                    )
                    ms = " ".join(f"{1e3 * t:.3f}" for t in entry[side]["step_times"])
                    print(
                        f"round {rnd} {key:<24} {side:<10} step ms [{ms}] (process {time.monotonic() - t0:.0f} s)",
                        flush=True,
                    )
            except (RuntimeError, subprocess.TimeoutExpired) as exc:
                print(f"round {rnd} {key}: FAILED: {str(exc)[-800:]}", flush=True)
                continue
            results.setdefault(key, []).append(entry)
            if args.json:
                args.json.write_text(json.dumps({"results": results}, indent=1))


def main() -> int:
    args = parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    start = time.monotonic()
    results: dict[str, list[dict[str, Any]]] = {}
    skipped: list[str] = []
    with tempfile.TemporaryDirectory(prefix="dlbench_steps_") as tmp_name:
        tmp = Path(tmp_name)
        db = args.db or tmp / "steps.db"
        cases = []
        for variant in args.variants:
            fw = variant.split(":")[0]
            if importlib.util.find_spec(PACKAGES[fw]) is None:
                skipped.append(f"{variant}: not measured: {fw} is not installed in {args.python}")
                continue
            cases += [(model, variant) for model in args.models]
        for line in skipped:
            print(line, flush=True)
        # A time limit from outside (timeout's SIGTERM) ends the loop, not the summary.
        signal.signal(signal.SIGTERM, _interrupt)
        try:
            measure(cases, args, db, tmp, start, results)
        except KeyboardInterrupt:
            print("stopped from outside: the summary covers the cases finished so far", flush=True)
    summaries = [summarize(key, rounds, args.tolerance) for key, rounds in results.items()]
    print_table(summaries, args)
    for line in skipped:
        print(line)
    if args.json:
        args.json.write_text(json.dumps({"skipped": skipped, "results": results, "summaries": summaries}, indent=1))
    return 0 if summaries and all(s["verdict"] == "within" for s in summaries) else 1


if __name__ == "__main__":
    sys.exit(main())
