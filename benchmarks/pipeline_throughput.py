"""How fast does each augmentation pipeline produce one epoch of CIFAR-10-sized data?

Each pipeline (numpy, torch, tensorflow in its vectorized and per-sample
orders, jax) runs in its own fresh process, pinned to the same CPUs with the
same thread count, on CIFAR-10's training split when it is found (else
synthetic 50,000 x 32x32x3 uint8-valued images; the output says which). Data
preparation (``Augmenter.prepare``) is untimed, as the adapters preload data;
one untimed warm-up epoch absorbs compilation and tf.data tracing; then each
timed epoch is ``epoch_params`` + iterating every full batch until each is
materialized (torch: synchronous on the CPU, ``cuda.synchronize`` on a GPU;
jax: ``block_until_ready`` per batch; tf.data: the iterator hands out finished
tensors). Prints images/second (median over epochs) side by side and each
native pipeline's ratio to numpy.

    .venv/bin/python benchmarks/pipeline_throughput.py --epochs 3 --threads 1
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

# label -> (module, Augmenter keyword arguments)
PIPELINES = {
    "numpy": ("numpy", {}),
    "torch": ("torch", {}),
    "tensorflow": ("tensorflow", {"vectorized": True}),
    "tensorflow-per-sample": ("tensorflow", {"vectorized": False}),
    "jax": ("jax", {}),
}


def _data(n: int, seed: int):
    """(x, y, description): the real CIFAR-10 training split when found, else synthetic."""
    import numpy as np

    from dlbench.datasets import DatasetError, cifar10

    try:
        arrays = cifar10.load(cifar10.CIFAR10)
        x, y, what = arrays.train.x, arrays.train.y, "CIFAR-10 training split"
    except DatasetError:
        rng = np.random.default_rng(seed)
        x = rng.integers(0, 256, size=(n, 32, 32, 3), dtype=np.uint8).astype(np.float32) / np.float32(255)
        y = rng.integers(0, 10, size=n).astype(np.int64)
        what = f"synthetic {n}x32x32x3 uint8-valued images (CIFAR-10 not found locally)"
    return x[:n], y[:n], what


def _limit_threads(threads: int, module: str) -> None:
    """Same CPUs and thread count for every pipeline, set before the framework starts."""
    os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:threads])
    os.environ["OMP_NUM_THREADS"] = str(threads)
    if module == "torch":
        import torch

        torch.set_num_threads(threads)
        torch.set_num_interop_threads(1)
    elif module == "tensorflow":
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)


def run_one(label: str, args: argparse.Namespace) -> dict:
    """Time one pipeline in this process; returns the JSON-able result."""
    module, extra = PIPELINES[label]
    _limit_threads(args.threads, module)
    from dlbench.pipelines.params import channel_stats, epoch_params

    x, y, what = _data(args.samples, args.seed)
    stats = channel_stats(x)
    aug = importlib.import_module(f"dlbench.pipelines.{module}").Augmenter(stats.mean, stats.std, **extra)
    xt, yt = aug.prepare(x, y)
    del x
    if module == "jax":
        import jax

        finish = jax.block_until_ready
    elif module == "torch":
        import torch

        finish = (lambda b: torch.cuda.synchronize()) if xt.is_cuda else (lambda b: b)
    else:
        finish = lambda b: b  # noqa: E731  (numpy and tf.data hand out finished arrays)
    times = []
    for epoch in range(args.epochs + 1):  # epoch 0: untimed warm-up
        start = time.perf_counter()
        params = epoch_params(args.seed, epoch, len(yt), pad=4)
        count = 0
        for batch in aug.epoch_batches(xt, yt, params, args.batch_size):
            finish(batch)
            count += args.batch_size
        if epoch:
            times.append(time.perf_counter() - start)
    return {"pipeline": label, "data": what, "images": count, "times": times, "settings": aug.settings()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pipelines", default=",".join(PIPELINES))
    ap.add_argument("--samples", type=int, default=50_000)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--epochs", type=int, default=3, help="timed epochs (after one warm-up)")
    ap.add_argument("--threads", type=int, default=1, help="CPUs (and threads) for every pipeline")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, help="write the raw results here")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # internal: time one pipeline, print JSON
    args = ap.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one, args)))
        return
    results = []
    for label in args.pipelines.split(","):
        cmd = [
            sys.executable,
            __file__,
            "--one",
            label,
            "--samples",
            str(args.samples),
            "--batch-size",
            str(args.batch_size),
            "--epochs",
            str(args.epochs),
            "--threads",
            str(args.threads),
            "--seed",
            str(args.seed),
        ]
        env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
        out = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if out.returncode != 0:
            raise SystemExit(f"{label} failed:\n{out.stderr[-3000:]}")
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(
        f"data: {results[0]['data']}; batch {args.batch_size}, {args.threads} thread(s), "
        f"{args.epochs} timed epoch(s) after one warm-up, partial batch dropped"
    )
    rates = {r["pipeline"]: r["images"] / statistics.median(r["times"]) for r in results}
    base = rates.get("numpy")
    print(f"{'pipeline':<24}{'images/s':>12}{'epoch s':>10}{'vs numpy':>10}")
    for r in results:
        rate = rates[r["pipeline"]]
        ratio = f"{rate / base:.2f}x" if base else "-"
        print(f"{r['pipeline']:<24}{rate:>12,.0f}{statistics.median(r['times']):>10.3f}{ratio:>10}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
