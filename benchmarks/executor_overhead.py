"""How much time does each cluster executor add per trial, over the local one?

The same small run (the numpy reference MLP on digits, one repeat, K trials, each a
fresh worker process) is executed through the runner with the local executor and
with each executor named, in turns (ABBA order over rounds: the machine's drift hits
every side alike), each run into its own database. Per executor it prints the
median wall time per trial, the extra time per trial over local (the difference of
the run times divided by K) per round and its median, and a verdict against the
target: under 1 s per trial. The engine's one-off start (a local Ray cluster) is
timed apart and not counted per trial: a real cluster is already running.

    .venv/bin/python benchmarks/executor_overhead.py --executors ray --rounds 4 --trials 4
    .venv/bin/python benchmarks/executor_overhead.py --executors ray,slurm   # Slurm: sinfo must answer
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from dlbench import config  # noqa: E402  (no framework is imported by the parent)
from dlbench.executors import ExecutorSettings  # noqa: E402
from dlbench.plan import expand  # noqa: E402
from dlbench.runner import run_plan  # noqa: E402
from dlbench.store import Store  # noqa: E402

TARGET_S = 1.0


def plan(trials: int):
    return expand(
        config.parse(
            '[matrix]\nframework = ["numpy"]\nmodel = ["mlp"]\ndataset = ["digits"]\nbatch_size = [32]\n'
            f"[protocol]\ntrials = {trials}\nrepeats = 1\nwarmup = 0\nthreads = 1\nepochs = 1\n"
            'latency_batches = 1\ninfer_min_time = 0\nsamplers = "none"\n',
            "executor_overhead.toml",
        )
    )


def one_run(settings: ExecutorSettings | None, trials: int, folder: Path, tag: str) -> tuple[float, list[float]]:
    """Wall time of the whole run, and each trial's worker wall time."""
    db = folder / f"{tag}.db"
    started = time.perf_counter()
    with Store(db) as store:
        run_id, counts = run_plan(store, plan(trials), command_line=tag, environment={}, executor=settings)
        wall = time.perf_counter() - started
        if counts != {"ok": trials}:
            raise SystemExit(f"{tag}: trials ended {counts}: {[t['error'] for t in store.trials(run_id)]}")
        return wall, [float(t["wall_s"]) for t in store.trials(run_id)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--executors", default="ray", help="comma list of ray, slurm")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--trials", type=int, default=4, help="trials per run")
    ap.add_argument("--ray-address", default=None, help="join this Ray cluster (default: start a local one)")
    ap.add_argument("--slurm-folder", default=None, help="Slurm job folder (default: a temporary one)")
    args = ap.parse_args()
    names = [n.strip() for n in args.executors.split(",") if n.strip()]
    folder = Path(tempfile.mkdtemp(prefix="dlbench-executor-overhead-"))
    settings: dict[str, ExecutorSettings | None] = {"local": None}
    for name in names:
        if name == "ray":
            import ray

            t0 = time.perf_counter()
            if args.ray_address:
                ray.init(address=args.ray_address, logging_level="ERROR", log_to_driver=False)
            else:
                ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
            print(
                f"ray: cluster {'joined' if args.ray_address else 'started'} in {time.perf_counter() - t0:.1f} s "
                "(once per run, not counted per trial)"
            )
            settings["ray"] = ExecutorSettings(name="ray")
        elif name == "slurm":
            settings["slurm"] = ExecutorSettings(name="slurm", slurm_folder=args.slurm_folder or str(folder / "jobs"))
        else:
            raise SystemExit(f"--executors {name!r}: allowed: ray, slurm")
    order = list(settings)
    walls: dict[str, list[float]] = {n: [] for n in order}
    per_trial: dict[str, list[float]] = {n: [] for n in order}
    for r in range(args.rounds):
        for name in order if r % 2 == 0 else order[::-1]:
            wall, trial_walls = one_run(settings[name], args.trials, folder, f"{name}-{r}")
            walls[name].append(wall)
            per_trial[name].extend(trial_walls)
            print(
                f"round {r}: {name:6s} {wall:7.2f} s for {args.trials} trials "
                f"({wall / args.trials:.2f} s per trial; worker {statistics.median(trial_walls):.2f} s)"
            )
    print()
    print(f"{'executor':8s} {'s/trial':>8s} {'worker s':>9s} {'extra s/trial per round':>30s} {'median':>7s}  verdict")
    verdict_ok = True
    for name in order:
        mean = statistics.median(walls[name]) / args.trials
        worker = statistics.median(per_trial[name])
        if name == "local":
            print(f"{name:8s} {mean:8.2f} {worker:9.2f}")
            continue
        extra = [(walls[name][i] - walls["local"][i]) / args.trials for i in range(args.rounds)]
        med = statistics.median(extra)
        ok = med < TARGET_S
        verdict_ok &= ok
        rounds = " ".join(f"{e:+.2f}" for e in extra)
        print(
            f"{name:8s} {mean:8.2f} {worker:9.2f} {rounds:>30s} {med:+7.2f}  "
            f"{'under' if ok else 'OVER'} {TARGET_S:g} s per trial"
        )
    spread = (
        max(statistics.pstdev(w) / statistics.mean(w) for w in walls.values() if len(w) > 1) if args.rounds > 1 else 0
    )
    print(
        f"machine noise: the largest coefficient of variation of a run's wall time over rounds was {100 * spread:.0f}%"
    )
    return 0 if verdict_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
