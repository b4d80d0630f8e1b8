"""Does dlbench add overhead to what it measures? dlbench vs hand-written scripts.

For each framework, `dlbench run` (LeNet-5, Fashion-MNIST, 1 epoch, batch 100,
plain SGD 0.01, glorot-uniform) and the matching hand-written script in
benchmarks/standalone/ train the same network under the same protocol (fresh
model per repeat, one untimed step, one timed epoch, same threads and CPU
affinity). Runs are interleaved in rounds, in ABBA order (round 0: dlbench then
standalone, round 1: standalone then dlbench, ...), so that slow drifts of a
shared machine fall on both sides alike.

Per framework it prints the median measured epoch time of each side and the ratio
dlbench / standalone per round (one process a side: the process is the unit of
evidence), their median with a distribution-free 95% interval (order statistics;
6 rounds or more), and a verdict against the target, within +/-2%: PASS when the whole
interval lies inside the band, FAIL when it lies wholly outside, UNDECIDED otherwise.
For reference it also prints the ratio of the pooled repeats' medians with a bootstrap
over repeats (too narrow: repeats of one process are not independent) and the ratio of
the fastest epochs.

Accuracy is held to the plain script as time is: after each measured repeat's epoch
both sides evaluate top-1 accuracy on the whole Fashion-MNIST test split (untimed;
dlbench's `accuracy` phase, the script's own idiomatic evaluation). Per framework it
prints an accuracy row and a final-training-loss row: each side's median, the
per-round DIFFERENCE dlbench - standalone (median of the round's repeats on each side;
accuracy in percentage points), their median with the same distribution-free interval,
and a verdict against a stated tolerance (accuracy within +/-1 point, loss within
+/-0.02). Both sides seed repeat r of a process with seed + r (dlbench's repeat_seed
in block 0; the scripts likewise), and round k starts at seed + k * (warm-up +
repeats) (--round-seeds distinct, the default), so the rounds are independent draws of
seed variance while each measured repeat is paired with the other side's repeat of the
same seed: same seed, same initial weights, same batches. The per-seed table and the
largest |difference| over seeds say whether the two trainings are the same computation
(differences at float-rounding level) or not; a gap between the sides' medians with
per-seed differences near zero is seed variance, not the harness.
dlbench runs with `--runtime defaults` (nothing imposed: glibc's own malloc
thresholds, each framework's inter-op pool, tf.data autotuning on), as the plain
scripts do; `--runtime all` measures what the settings dlbench can impose cost or
gain against the same scripts.

This process imports no framework (standard library + numpy, and dlbench.store
to read the results database, which is sqlite3 only); every measurement runs in
a child process.

    .venv/bin/python benchmarks/harness_vs_standalone.py --train-samples 12000 --repeats 3 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
STANDALONE = ROOT / "benchmarks" / "standalone"
FRAMEWORKS = ("torch", "tensorflow", "jax")
TOLERANCE = 0.02  # the target: dlbench's median within +/-2% of the standalone median
ACCURACY_TOLERANCE = 1.0  # accuracy points: dlbench's test accuracy within +/-1 point of the script's
LOSS_TOLERANCE = 0.02  # final epoch's mean training loss (nats) within +/-0.02 of the script's


def default_threads() -> int:
    """Physical cores among the CPUs this process may use (dlbench's default is
    physical cores); read from sysfs so that no psutil is needed."""
    allowed = sorted(os.sched_getaffinity(0))
    cores = set()
    for cpu in allowed:
        topo = Path(f"/sys/devices/system/cpu/cpu{cpu}/topology")
        try:
            cores.add((topo / "physical_package_id").read_text().strip() + ":" + (topo / "core_id").read_text().strip())
        except OSError:
            return len(allowed)
    return len(cores) or len(allowed)


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--frameworks", default=",".join(FRAMEWORKS), help="comma-separated subset of " + ", ".join(FRAMEWORKS)
    )
    p.add_argument(
        "--train-samples", type=int, default=0, help="first N training samples (0 = all 60,000: 600 steps per epoch)"
    )
    p.add_argument("--repeats", type=int, default=5, help="measured repeats per process")
    p.add_argument("--warmup", type=int, default=1, help="warm-up repeats per process (not counted)")
    p.add_argument("--rounds", type=int, default=2, help="interleaved rounds (ABBA order)")
    p.add_argument("--threads", type=int, help="threads for both sides (default: physical cores)")
    p.add_argument(
        "--cpus",
        help="comma-separated CPU ids both sides run on (children inherit this "
        "process's affinity and pin to its first --threads CPUs); default: all allowed",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--round-seeds",
        choices=("distinct", "same"),
        default="distinct",
        help="distinct (default): round k starts at seed + k * (warmup + repeats), so the rounds sample "
        "seed variance; same: every round uses seeds seed .. seed + warmup + repeats - 1 (replications)",
    )
    p.add_argument(
        "--runtime",
        default="defaults",
        help="dlbench's --runtime for its side (defaults: nothing imposed, as the scripts run; all: every "
        "runtime setting dlbench can impose)",
    )
    p.add_argument(
        "--python",
        default=str(ROOT / ".venv" / "bin" / "python")
        if (ROOT / ".venv" / "bin" / "python").exists()
        else sys.executable,
        help="interpreter with dlbench and the frameworks installed",
    )
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per child process")
    p.add_argument("--json", type=Path, help="also write every raw time here")
    args = p.parse_args()
    if args.cpus:
        # Before --threads' default matters: on a shared box, pick cores the neighbours
        # are not pinned to (dlbench workers pin to the *first* allowed cores).
        os.sched_setaffinity(0, {int(c) for c in args.cpus.split(",")})
    if args.threads is None:
        args.threads = default_threads()
    args.frameworks = [f.strip() for f in args.frameworks.split(",") if f.strip()]
    unknown = set(args.frameworks) - set(FRAMEWORKS)
    if unknown:
        p.error(f"unknown framework(s) {', '.join(sorted(unknown))}; choose from {', '.join(FRAMEWORKS)}")
    return args


def _run(cmd: list[str], timeout: float) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd)} exited with {proc.returncode}\n"
            f"stdout tail:\n{proc.stdout[-3000:]}\nstderr tail:\n{proc.stderr[-3000:]}"
        )
    return proc.stdout


def round_seed(args: argparse.Namespace, rnd: int) -> int:
    """The --seed both sides of round `rnd` get: repeat r of the round then runs on seed + r."""
    return args.seed + (rnd * (args.warmup + args.repeats) if args.round_seeds == "distinct" else 0)


def measured_seeds(seed: int, warmup: int, repeats: int) -> list[int]:
    """The seeds of a process's measured repeats, in order: seed + r for r = warmup .. warmup +
    repeats - 1 (dlbench's repeat_seed in block 0; the scripts' seed + repeat)."""
    return [seed + r for r in range(warmup, warmup + repeats)]


def run_dlbench(fw: str, args: argparse.Namespace, workdir: Path, tag: str, seed: int) -> dict[str, Any]:
    """One `dlbench run` (one worker process); its measured train times, final epoch losses
    and test accuracies, per repeat in repeat order, from the database."""
    from dlbench.store import Store  # sqlite3 only: no framework is imported here

    db = workdir / f"{tag}.db"
    cmd = [
        args.python,
        "-m",
        "dlbench",
        "run",
        "--framework",
        fw,
        "--model",
        "lenet5",
        "--dataset",
        "fashion-mnist",
        "--epochs",
        "1",
        "--batch-size",
        "100",
        "--optimizer",
        "sgd",
        "--lr",
        "0.01",
        "--init",
        "glorot-uniform",
        "--repeats",
        str(args.repeats),
        "--warmup",
        str(args.warmup),
        "--trials",
        "1",  # one process, as the script is one: the rounds interleave the processes
        "--latency-batches",
        "0",
        "--threads",
        str(args.threads),
        "--seed",
        str(seed),
        "--runtime",
        args.runtime,
        "--db",
        str(db),
    ]
    if args.train_samples:
        cmd += ["--train-samples", str(args.train_samples)]
    _run(cmd, args.timeout)
    with Store(db) as store:
        run_id = store.run()["id"]
        rows = [r for r in store.measurements(run_id) if not r["warmup"]]
    return dlbench_values(rows, args.repeats, str(db))


def dlbench_values(rows: list[dict[str, Any]], repeats: int, where: str = "database") -> dict[str, Any]:
    """Per measured repeat, in repeat order: the train time, the last epoch's training loss
    (the train phase's `loss`, one per epoch, seq = epoch) and the test accuracy (the
    accuracy phase's `accuracy`, top-1 over the whole test split)."""
    by_repeat: dict[int, dict[str, Any]] = {}
    for r in rows:
        if r["repeat"] is None:  # the process' own rows (import, setup, data load time)
            continue
        key = (r["phase"], r["metric"])
        slot = by_repeat.setdefault(int(r["repeat"]), {})
        if key == ("train", "time"):
            slot["time"] = r["value"]
        elif key == ("train", "loss"):
            seq = r["seq"] if r["seq"] is not None else 0
            if seq >= slot.get("loss_seq", -1):
                slot["loss"], slot["loss_seq"] = r["value"], seq
        elif key == ("accuracy", "accuracy"):
            slot["accuracy"] = r["value"]
    ordered = [by_repeat[k] for k in sorted(by_repeat) if "time" in by_repeat[k]]
    if len(ordered) != repeats:
        raise RuntimeError(f"{where}: expected {repeats} measured train times, found {len(ordered)}")
    for name in ("loss", "accuracy"):
        if any(name not in slot for slot in ordered):
            raise RuntimeError(f"{where}: a measured repeat has no {name}")
    return {
        "train_times": [slot["time"] for slot in ordered],
        "train_losses": [slot["loss"] for slot in ordered],
        "test_accuracies": [slot["accuracy"] for slot in ordered],
    }


def run_standalone(fw: str, args: argparse.Namespace, seed: int) -> dict[str, Any]:
    script = STANDALONE / f"{fw}_lenet5.py"
    cmd = [
        args.python,
        str(script),
        "--repeats",
        str(args.repeats),
        "--warmup",
        str(args.warmup),
        "--threads",
        str(args.threads),
        "--seed",
        str(seed),
        "--train-samples",
        str(args.train_samples),
    ]
    out = _run(cmd, args.timeout)
    lines = [ln for ln in out.splitlines() if ln.startswith("{")]
    if not lines:
        raise RuntimeError(f"{script.name} printed no JSON line; stdout tail:\n{out[-2000:]}")
    result = json.loads(lines[-1])
    for key in ("train_times", "train_losses", "test_accuracies"):
        if len(result.get(key, ())) != args.repeats:
            raise RuntimeError(f"{script.name}: expected {args.repeats} {key}, got {result.get(key)}")
    return result


def bootstrap_ratio(a: np.ndarray, b: np.ndarray, rng: np.random.Generator, n: int = 5000) -> tuple[float, float]:
    """95% percentile interval of median(a)/median(b), resampling each side's repeats on
    its own: repeats pooled over processes, printed for reference only (the repeats of one
    process share its placement and machine phase, so this interval is too narrow)."""
    ra = np.median(rng.choice(a, (n, a.size)), axis=1)
    rb = np.median(rng.choice(b, (n, b.size)), axis=1)
    lo, hi = np.percentile(ra / rb, [2.5, 97.5])
    return float(lo), float(hi)


def median_interval(values: list[float], level: float = 0.95) -> tuple[float, float] | None:
    """Distribution-free interval for the median of `values`: the order statistics
    x_(k) and x_(n+1-k) with the largest k whose coverage, 1 - 2 P(Binomial(n, 1/2) < k),
    is at least `level`. None when even the extremes do not reach it (n < 6 at 95%)."""
    n = len(values)
    x = sorted(values)
    k_best = None
    below = 0.0  # P(B < k), B ~ Binomial(n, 1/2)
    for k in range(1, n // 2 + 1):
        below += math.comb(n, k - 1) / 2**n
        if 1 - 2 * below >= level:
            k_best = k
        else:
            break
    if k_best is None:
        return None
    return x[k_best - 1], x[n - k_best]


def band_verdict(
    ci: tuple[float, float] | None,
    rounds: int,
    band: tuple[float, float],
    above: str = "above the band",
    below: str = "below the band",
) -> str:
    """Within the band only when the whole interval is; outside only when the whole interval
    is; otherwise undecided, with what would decide it."""
    lo_band, hi_band = band
    if ci is None:
        return f"UNDECIDED ({rounds} rounds: a 95% interval needs 6)"
    if lo_band <= ci[0] and ci[1] <= hi_band:
        return "PASS"
    if ci[0] > hi_band:
        return f"FAIL ({above})"
    if ci[1] < lo_band:
        return f"FAIL ({below})"
    return "UNDECIDED (interval crosses the band: add rounds)"


def verdict(ci: tuple[float, float] | None, rounds: int) -> str:
    """The time verdict: the ratio dlbench / standalone within 1 +/- TOLERANCE."""
    return band_verdict(ci, rounds, (1 - TOLERANCE, 1 + TOLERANCE), "dlbench slower", "dlbench faster")


def round_differences(rounds: list[dict[str, dict[str, Any]]], key: str, scale: float = 1.0) -> list[float]:
    """Per round: scale * (median of dlbench's repeats - median of the script's repeats) of
    `key`. One process a side per round, so these are the independent paired values."""
    return [scale * float(np.median(r["dlbench"][key]) - np.median(r["standalone"][key])) for r in rounds]


def quality_summary(
    rounds: list[dict[str, dict[str, Any]]],
    key: str,
    tolerance: float,
    scale: float = 1.0,
    above: str = "dlbench higher",
    below: str = "dlbench lower",
) -> dict[str, Any]:
    """A quality row (accuracy or loss): each side's median over all measured repeats, the
    per-round differences dlbench - standalone, their median and distribution-free 95%
    interval, and the verdict against +/- tolerance (all in units of `scale` * value).
    Also the per-seed pairs (each measured repeat against the other side's repeat of the
    same round and index, which ran on the same seed) and the largest |difference|."""
    a = [scale * v for r in rounds for v in r["dlbench"][key]]
    b = [scale * v for r in rounds for v in r["standalone"][key]]
    diffs = round_differences(rounds, key, scale)
    ci = median_interval(diffs)
    pairs = []
    for r in rounds:
        seeds = r["dlbench"].get("seeds") or [None] * len(r["dlbench"][key])
        for seed, x, y in zip(seeds, r["dlbench"][key], r["standalone"][key]):
            pairs.append({"seed": seed, "dlbench": scale * x, "standalone": scale * y, "diff": scale * (x - y)})
    return {
        "dlbench_median": float(np.median(a)),
        "standalone_median": float(np.median(b)),
        "diff": float(np.median(diffs)),
        "ci95": ci,
        "round_diffs": diffs,
        "tolerance": tolerance,
        "verdict": band_verdict(ci, len(diffs), (-tolerance, tolerance), above, below),
        "per_seed": pairs,
        "max_abs_seed_diff": max(abs(p["diff"]) for p in pairs),
    }


def summarize(fw: str, rounds: list[dict[str, dict[str, Any]]], rng: np.random.Generator) -> dict[str, Any]:
    a = np.array([t for r in rounds for t in r["dlbench"]["train_times"]])
    b = np.array([t for r in rounds for t in r["standalone"]["train_times"]])
    per_round = [
        float(np.median(r["dlbench"]["train_times"]) / np.median(r["standalone"]["train_times"])) for r in rounds
    ]
    # The process is the unit: each round holds one process a side, taken in turns (ABBA),
    # so the per-round ratios are the independent, paired values the verdict rests on.
    ratio = float(np.median(per_round))
    ci = median_interval(per_round)
    pooled = float(np.median(a) / np.median(b))
    pooled_ci = bootstrap_ratio(a, b, rng)
    # Interference from other processes only ever adds time, so the ratio of the
    # fastest epochs is the least noisy view of the harness' own cost.
    min_ratio = float(a.min() / b.min())

    def iqr_rel(x: np.ndarray) -> float:
        q1, q3 = np.percentile(x, [25, 75])
        return float((q3 - q1) / np.median(x))

    return {
        "framework": fw,
        "dlbench_median": float(np.median(a)),
        "standalone_median": float(np.median(b)),
        "dlbench_iqr_rel": iqr_rel(a),
        "standalone_iqr_rel": iqr_rel(b),
        "ratio": ratio,
        "ci95": ci,
        "pooled_ratio": pooled,
        "pooled_ci95": pooled_ci,
        "min_ratio": min_ratio,
        "round_ratios": per_round,
        "verdict": verdict(ci, len(per_round)),
        "dlbench_loss": float(np.mean([x for r in rounds for x in r["dlbench"]["train_losses"]])),
        "standalone_loss": float(np.mean([x for r in rounds for x in r["standalone"]["train_losses"]])),
        "accuracy": quality_summary(
            rounds, "test_accuracies", ACCURACY_TOLERANCE, 100.0, "dlbench more accurate", "dlbench less accurate"
        ),
        "loss": quality_summary(
            rounds, "train_losses", LOSS_TOLERANCE, 1.0, "dlbench loss higher", "dlbench loss lower"
        ),
    }


def _shown(ci: tuple[float, float] | None) -> str:
    return "none" if ci is None else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def print_summary(s: dict[str, Any]) -> None:
    rr = ", ".join(f"{x:.3f}" for x in s["round_ratios"])
    print(
        f"  {s['framework']}: dlbench median {s['dlbench_median']:.3f} s (IQR/median {s['dlbench_iqr_rel']:.1%}), "
        f"standalone median {s['standalone_median']:.3f} s (IQR/median {s['standalone_iqr_rel']:.1%})\n"
        f"  ratio dlbench/standalone, median of the per-round ratios {s['ratio']:.3f}, 95% CI {_shown(s['ci95'])} "
        f"(order statistics of {len(s['round_ratios'])} rounds) -> {s['verdict']}\n"
        f"  per-round ratios [{rr}]; for reference: ratio of the pooled repeats' medians {s['pooled_ratio']:.3f}, "
        f"bootstrap over repeats {_shown(s['pooled_ci95'])}, ratio of minimums {s['min_ratio']:.3f}\n"
        f"  mean epoch loss: dlbench {s['dlbench_loss']:.4f}, standalone {s['standalone_loss']:.4f} "
        "(same work: should be close)",
        flush=True,
    )
    for name, unit, fmt in (("accuracy", " points", "{:.2f}"), ("loss", "", "{:.4f}")):
        q = s[name]
        ci = "none" if q["ci95"] is None else f"[{fmt.format(q['ci95'][0])}, {fmt.format(q['ci95'][1])}]"
        rd = ", ".join(fmt.format(x) for x in q["round_diffs"])
        what = "test accuracy %" if name == "accuracy" else "final training loss"
        print(
            f"  {what}: dlbench median {fmt.format(q['dlbench_median'])}, standalone median "
            f"{fmt.format(q['standalone_median'])}; difference dlbench - standalone, median of the per-round "
            f"differences {fmt.format(q['diff'])}{unit}, 95% CI {ci} -> {q['verdict']} "
            f"(tolerance +/-{fmt.format(q['tolerance'])}{unit}); per-round differences [{rd}]"
        )
        seeds = "; ".join(
            f"seed {p['seed']}: {fmt.format(p['dlbench'])} vs {fmt.format(p['standalone'])} ({fmt.format(p['diff'])})"
            for p in q["per_seed"]
        )
        print(
            f"    same seed, dlbench vs standalone (difference): {seeds}; "
            f"max |difference| over seeds {q['max_abs_seed_diff']:.3g}{unit}",
            flush=True,
        )


def print_table(summaries: list[dict[str, Any]], args: argparse.Namespace) -> None:
    steps = (args.train_samples or 60000) // 100
    print(
        f"\nLeNet-5, Fashion-MNIST, {steps} steps/epoch, batch 100, SGD 0.01, {args.threads} threads, "
        f"{args.rounds} rounds x {args.repeats} repeats (+{args.warmup} warm-up) per side; dlbench --runtime "
        f"{args.runtime}; target +/-{TOLERANCE:.0%}"
    )
    header = (
        f"{'framework':<11} {'dlbench s':>10} {'standalone s':>13} {'ratio':>7} {'95% CI':>15} "
        f"{'round ratios':>22} {'min ratio':>9}  verdict"
    )
    print(header)
    print("-" * len(header))
    for s in summaries:
        ci = _shown(s["ci95"])
        rr = " ".join(f"{x:.3f}" for x in s["round_ratios"][:4]) + (" ..." if len(s["round_ratios"]) > 4 else "")
        print(
            f"{s['framework']:<11} {s['dlbench_median']:>10.3f} {s['standalone_median']:>13.3f} "
            f"{s['ratio']:>7.3f} {ci:>15} {rr:>22} {s['min_ratio']:>9.3f}  {s['verdict']}"
        )
    print(
        f"\naccuracy (top-1 %, whole test split; tolerance +/-{ACCURACY_TOLERANCE:g} points) and final training "
        f"loss (tolerance +/-{LOSS_TOLERANCE:g}); diff = median of the per-round differences dlbench - standalone; "
        "max |seed diff| = largest difference between the two sides' repeats of the same seed"
    )
    header = (
        f"{'framework':<11} {'row':<9} {'dlbench':>8} {'standalone':>10} {'diff':>8} {'95% CI':>18} "
        f"{'max |seed diff|':>15}  verdict"
    )
    print(header)
    print("-" * len(header))
    for s in summaries:
        for name, fmt in (("accuracy", "{:.2f}"), ("loss", "{:.4f}")):
            q = s[name]
            ci = "none" if q["ci95"] is None else f"[{fmt.format(q['ci95'][0])}, {fmt.format(q['ci95'][1])}]"
            print(
                f"{s['framework']:<11} {name:<9} {fmt.format(q['dlbench_median']):>8} "
                f"{fmt.format(q['standalone_median']):>10} {fmt.format(q['diff']):>8} {ci:>18} "
                f"{q['max_abs_seed_diff']:>15.3g}  {q['verdict']}"
            )


def main() -> int:
    args = parse_args()
    rng = np.random.default_rng(12345)
    results: dict[str, list[dict[str, dict[str, Any]]]] = {fw: [] for fw in args.frameworks}
    print(
        f"threads {args.threads}, cpus {sorted(os.sched_getaffinity(0))}, python {args.python}, "
        f"load average at start {os.getloadavg()}",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="dlbench_vs_standalone_") as tmp:
        for rnd in range(args.rounds):
            order = ("dlbench", "standalone") if rnd % 2 == 0 else ("standalone", "dlbench")
            seed = round_seed(args, rnd)
            for fw in args.frameworks:
                entry: dict[str, dict[str, Any]] = {}
                for side in order:
                    load = os.getloadavg()[0]
                    t0 = time.monotonic()
                    entry[side] = (
                        run_dlbench(fw, args, Path(tmp), f"{fw}_{rnd}", seed)
                        if side == "dlbench"
                        else run_standalone(fw, args, seed)
                    )
                    entry[side]["seeds"] = measured_seeds(seed, args.warmup, args.repeats)
                    entry[side]["load_before"] = load
                    entry[side]["wall_s"] = time.monotonic() - t0
                    times = " ".join(f"{t:.3f}" for t in entry[side]["train_times"])
                    accs = " ".join(f"{100 * a:.2f}" for a in entry[side]["test_accuracies"])
                    losses = " ".join(f"{v:.4f}" for v in entry[side]["train_losses"])
                    print(
                        f"round {rnd} {fw:<10} {side:<10} train times [{times}] s, test accuracy [{accs}] %, "
                        f"final loss [{losses}], seeds {entry[side]['seeds']} "
                        f"(process {entry[side]['wall_s']:.0f} s, load avg before {load:.2f})",
                        flush=True,
                    )
                results[fw].append(entry)

    print("\nper framework:")
    summaries = []
    for fw in args.frameworks:
        summaries.append(summarize(fw, results[fw], rng))
        print_summary(summaries[-1])
    print_table(summaries, args)
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
                    "results": results,
                    "summaries": summaries,
                },
                indent=1,
            )
        )
    verdicts = [v for s in summaries for v in (s["verdict"], s["accuracy"]["verdict"], s["loss"]["verdict"])]
    return 0 if all(v.startswith("PASS") for v in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
