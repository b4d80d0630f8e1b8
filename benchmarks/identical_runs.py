"""`dlbench compare` on two runs of identical code: taken one after the other, or
with their blocks alternating in time.

Two runs of the same command are what `compare` sees when nothing changed. On a
shared machine whose speed drifts (here: 1.5x slow phases lasting seconds, a
different share of them in each 7-minute window), two runs taken one after the
other differ by the drift, which no analysis of the two runs can remove. With
their blocks alternating (A block 1, B block 1, B block 2, A block 2, ...: ABBA)
the drift hits both alike, and what is left is what `compare` is meant to judge.

Designs (`--design`):
  alternate   both runs are created with one block each by `dlbench run`, then
              `dlbench extend A B --blocks BLOCKS-1` adds blocks to A and B in turn
  sequential  `dlbench run --trials BLOCKS` for A, then the same for B
  slowed      as alternate, one `dlbench extend` call per block, but every block of
              B runs beside busy loops (`--busy`, default 1) pinned to the cores the
              workers use: the same code slowed on purpose
  noisy       as slowed, but the busy loops run beside a random half of the block
              numbers in both runs alike: slow phases of the machine that a pair
              shares; printed beside it, what an unpaired analysis would say
  loaded      A/A under load: identical code in turns, a busy loop pinned beside a random
              share of B's blocks only (--load-share, default half; 1: every block), an
              unequal load as on a machine shared with a build,
              the CPU sampler on: compare must give no verdict word (the busy rule:
              dlbench.analysis.busy) where an unguarded test calls B slower
  light       A/A under a load below the busy threshold: a loop that spins 10% of each
              100 ms on the workers' core beside every block of B; what compare says
              when the load is too light to flag
  both        alternate and sequential, one after the other

For each design and each quantile compared (`--quantiles`, default the median and
the 10th percentile) it prints `dlbench compare A B --quantile Q` and the count of
verdicts. Targets (issue 4): identical code, "no meaningful difference" for most
cases and no regression; slowed, a regression and a non-zero exit status.
`--analyse DIR` re-analyses the databases a run kept, running nothing.

    .venv/bin/python benchmarks/identical_runs.py [--design alternate] [--blocks 20] [--keep DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from dlbench.analysis.comparisons import run_vs_run  # noqa: E402
from dlbench.store import Store  # noqa: E402

ALPHA = 0.05  # compare's default alpha: the A/A designs' false-positive target


def dlbench(args, *argv: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, COLUMNS="250")
    return subprocess.run([args.python, "-m", "dlbench", *argv], capture_output=True, text=True, cwd=ROOT, env=env)


def start_run(args, db: Path, trials: int) -> None:
    out = dlbench(
        args,
        "run",
        "--framework",
        args.frameworks,
        "--model",
        args.model,
        "--dataset",
        args.dataset,
        "--epochs",
        str(args.epochs),
        "--repeats",
        str(args.repeats),
        "--warmup",
        "1",
        "--latency-batches",
        "0",
        "--samplers",
        args.samplers,
        "--threads",
        str(args.threads),
        "--trials",
        str(trials),
        "--db",
        str(db),
    )
    if out.returncode != 0:
        raise SystemExit(f"dlbench run failed:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")


def extend(args, *dbs: Path, blocks: int) -> None:
    out = dlbench(args, "extend", *map(str, dbs), "--blocks", str(blocks))
    if out.returncode != 0:
        raise SystemExit(f"dlbench extend failed:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")


def alternate(args, a: Path, b: Path) -> None:
    start_run(args, a, 1)
    start_run(args, b, 1)
    extend(args, a, b, blocks=args.blocks - 1)  # A, B, B, A, ...: neither run is always first


def in_turns(args, a: Path, b: Path, loaded, duty: float = 1.0) -> None:
    """As `alternate`, one `dlbench extend` call per run and block, with busy loops
    (spinning `duty` of the time) beside the blocks for which loaded(block, db) is true."""
    for block in range(args.blocks):
        for db in (a, b) if block % 2 == 0 else (b, a):  # ABBA
            with busy_loops(args.busy if loaded(block, db) else 0, args.threads, duty):
                if block == 0:
                    start_run(args, db, 1)
                else:
                    extend(args, db, blocks=1)
        print(f"  block {block + 1}/{args.blocks} of both runs done", flush=True)


def slowed(args, a: Path, b: Path) -> None:
    in_turns(args, a, b, lambda block, db: db == b)


def noisy(args, a: Path, b: Path) -> None:
    """A slow phase of the machine that falls on both runs' block k: a random half of
    the block numbers (seeded) run beside the busy loops, in A and in B alike."""
    import random

    slow = set(random.Random(args.seed).sample(range(args.blocks), args.blocks // 2))
    print(f"  blocks beside busy loops (both runs): {sorted(slow)}", flush=True)
    in_turns(args, a, b, lambda block, db: block in slow)


def loaded(args, a: Path, b: Path) -> None:
    """Busy loops beside a random share (--load-share, seeded) of B's blocks, none beside A's."""
    import random

    count = max(1, round(args.load_share * args.blocks))
    slow = set(random.Random(args.seed).sample(range(args.blocks), count))
    print(f"  B's blocks beside busy loops: {sorted(slow)}", flush=True)
    in_turns(args, a, b, lambda block, db: db == b and block in slow)


def light(args, a: Path, b: Path) -> None:
    in_turns(args, a, b, lambda block, db: db == b, duty=LIGHT_DUTY)


LIGHT_DUTY = 0.1  # the light design's loop: busy 10 ms of every 100 ms


@contextlib.contextmanager
def busy_loops(n: int, threads: int, duty: float = 1.0):
    """n processes spinning in pure Python on the cores the workers are pinned to (the
    first `threads` allowed CPUs, as dlbench.trial.worker pins itself), busy `duty` of each
    100 ms (1.0: always). Unpinned, the scheduler moved two loops to the other core of
    this 2-core VM and the 1-thread worker slowed by only 6% (torch train time x1.058)."""
    cpus = sorted(os.sched_getaffinity(0))[: max(1, threads)]
    on, off = 0.1 * duty, 0.1 * (1 - duty)
    spin = (
        "while True: pass"
        if duty >= 1.0
        else "import time\nwhile True:\n"
        f"    end = time.perf_counter() + {on!r}\n"
        f"    while time.perf_counter() < end: pass\n    time.sleep({off!r})"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", f"import os; os.sched_setaffinity(0, {{{cpus[i % len(cpus)]}}})\n{spin}"]
        )
        for i in range(n)
    ]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def sequential(args, a: Path, b: Path) -> None:
    start_run(args, a, args.blocks)
    print("  run A done", flush=True)
    start_run(args, b, args.blocks)
    print("  run B done", flush=True)


def verdicts_of(a: Path, b: Path, quantile: float, unpaired: bool = False, busy_verdicts: bool = False) -> Counter:
    """The count of each verdict `dlbench compare a b --quantile Q` shows (default
    threshold); with `unpaired`, what it would show had the runs not taken turns (B's
    trial start times hidden, so the samples are not paired): for contrast; with
    `busy_verdicts`, what it would show without the busy rule (compare --busy-verdicts)."""
    with Store(a) as sa, Store(b) as sb:
        ra, rb = sa.run()["id"], sb.run()["id"]
        b_trials = [dict(t, started_at=None) for t in sb.trials(rb)] if unpaired else sb.trials(rb)
        diffs = run_vs_run(
            sa.trials(ra),
            sa.measurements(ra),
            b_trials,
            sb.measurements(rb),
            quantile=quantile,
            busy_verdicts=busy_verdicts,
        )
    return Counter(
        "regression" if d.regression else (d.comparison.verdict or "no verdict (busy)") if d.comparison else "no values"
        for d in diffs
    )


def busy_shares(db: Path) -> list[float]:
    """Each trial's share of the CPU other processes took (analysis.busy), sorted."""
    from dlbench.analysis.busy import others_share

    with Store(db) as store:
        return sorted(others_share(store.measurements(store.run()["id"], latency=False)).values())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--design",
        choices=("alternate", "sequential", "slowed", "noisy", "loaded", "light", "both"),
        default="alternate",
    )
    ap.add_argument(
        "--busy", type=int, default=1, help="busy loops on the workers' cores beside the loaded blocks (slowed, noisy)"
    )
    ap.add_argument("--seed", type=int, default=0, help="which blocks the noisy and loaded designs load")
    ap.add_argument(
        "--load-share", type=float, default=0.5, help="loaded: the share of B's blocks beside busy loops (1: all)"
    )
    ap.add_argument(
        "--samplers", default=None, help="the runs' --samplers (default: cpu for loaded and light, else none)"
    )
    ap.add_argument("--blocks", type=int, default=20)
    ap.add_argument("--frameworks", default="torch,jax")
    ap.add_argument("--model", default="mlp")
    ap.add_argument("--dataset", default="digits")
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--python", default=str(ROOT / ".venv" / "bin" / "python"))
    ap.add_argument("--quantiles", default="0.5,0.1", help="quantiles to compare, comma-separated")
    ap.add_argument("--keep", type=Path, help="keep the databases in this directory")
    ap.add_argument("--analyse", type=Path, metavar="DIR", help="only compare the databases kept in DIR")
    args = ap.parse_args()

    where = args.analyse or args.keep or Path(tempfile.mkdtemp(prefix="dlbench-identical-"))
    where.mkdir(parents=True, exist_ok=True)
    designs = ("alternate", "sequential") if args.design == "both" else (args.design,)
    if args.samplers is None:  # the busy rule reads the CPU sampler's share of other processes
        args.samplers = "cpu" if args.design in ("loaded", "light") else "none"
    ok = True
    for design in designs:
        a, b = where / f"{design}_a.db", where / f"{design}_b.db"
        if args.analyse:
            if not (a.exists() and b.exists()):
                raise SystemExit(f"--analyse {where}: no {a.name} and {b.name} there (run with --keep first)")
            print(f"{design}: databases in {where}", flush=True)
        else:
            for db in (a, b):
                db.unlink(missing_ok=True)
            print(f"{design}: {args.blocks} blocks per run", flush=True)
            t0 = time.perf_counter()
            designs_by_name = {
                "alternate": alternate,
                "sequential": sequential,
                "slowed": slowed,
                "noisy": noisy,
                "loaded": loaded,
                "light": light,
            }
            designs_by_name[design](args, a, b)
            print(f"{design}: {(time.perf_counter() - t0) / 60:.1f} min", flush=True)
        for q in (float(x) for x in args.quantiles.split(",")):
            out = dlbench(args, "compare", str(a), str(b), "--quantile", str(q))
            print(out.stdout)
            verdicts = verdicts_of(a, b, q)
            total = sum(verdicts.values())
            same = verdicts["no meaningful difference"]
            if design == "slowed":  # the same code slowed on purpose: a regression must gate
                passed = verdicts["regression"] > 0 and out.returncode == 1
            elif design in ("loaded", "light"):  # A/A: a verdict of a difference is a false positive
                claimed = sum(n for v, n in verdicts.items() if v in ("regression", "slower", "faster"))
                passed = claimed <= ALPHA * total and out.returncode == 0
                unguarded = verdicts_of(a, b, q, busy_verdicts=True)
                wrong = sum(n for v, n in unguarded.items() if v in ("regression", "slower", "faster"))
                print(
                    f"  false positives: {claimed}/{total} (target at most alpha {ALPHA}); without the busy "
                    f"rule (--busy-verdicts): {wrong}/{total}, {dict(unguarded)}",
                    flush=True,
                )
                for label, db in (("A", a), ("B", b)):
                    shares = busy_shares(db)
                    print(f"  {label}: other processes' CPU share per trial, %: {[round(x, 1) for x in shares]}")
            else:
                passed = same > total / 2 and out.returncode == 0
            ok &= passed
            print(
                f"{design}, quantile {q}: {same}/{total} no meaningful difference; all verdicts "
                f"{dict(verdicts)}; compare exit {out.returncode}  {'PASS' if passed else 'FAIL'}",
                flush=True,
            )
            if design == "noisy":
                print(f"  for contrast, unpaired: {dict(verdicts_of(a, b, q, unpaired=True))}", flush=True)
            print(flush=True)
    print(f"databases: {where}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
