"""Why does a hand-timed PyTorch LeNet-5 step differ from dlbench's? One setting at a time.

dlbench's torch LeNet-5 step (Fashion-MNIST, batch 100, SGD 0.01, 2 threads) was
measured at 10.0-11.7 ms, the same step in a bare script under
torch.utils.benchmark.Timer.blocked_autorange at 11.3-12.6 ms, and a hand-written
epoch loop about 5% slower than dlbench. This benchmark starts from the way dlbench's
worker runs the step and changes one setting per configuration:

    dlbench          worker's settings: affinity pinned to `threads` cores, intra-op
                     threads = threads, one inter-op thread, real data gathered by a
                     per-epoch randperm, perf_counter around a loop of steps
    timer-default    torch.utils.benchmark.Timer(...).blocked_autorange() as a user
                     writes it: Timer's own default num_threads (1)
    timer-threads    the same Timer with num_threads=threads
    unpinned         no CPU affinity (the OS may move the threads between cores)
    interop-default  torch's default inter-op pool instead of one thread
    random-data      torch.rand images instead of the real ones
    fixed-batch      the same batch every step instead of a gathered one
    cold-start       one warm-up step instead of `--warmup` (a fresh script's first steps)
    malloc-fixed     glibc's mmap threshold fixed at 32 MiB and its trim threshold at 64 MiB
                     (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_: where glibc's dynamic
                     threshold ends up), so that large tensors come from the heap from the
                     first step rather than from mmap until glibc has raised the threshold
    malloc-mmap-only the mmap threshold fixed alone: glibc then keeps its 128 KiB trim
                     threshold and returns the heap's top to the kernel at every free

Every configuration runs in a fresh process; configurations take turns round by
round (the order rotates each round) so that the machine's drift falls on all of
them. Printed: each configuration's median ms/step over the rounds, its ratio to
`dlbench` with a bootstrap 95% CI over the rounds' paired ratios, and the range.

    .venv/bin/python benchmarks/torch_step_settings.py --rounds 6
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

CONFIGS = (
    "dlbench",
    "timer-default",
    "timer-threads",
    "unpinned",
    "interop-default",
    "random-data",
    "fixed-batch",
    "cold-start",
    "malloc-fixed",
    "malloc-mmap-only",
)
MMAP_THRESHOLD = str(32 * 2**20)  # glibc's largest on 64-bit: the dynamic threshold's ceiling
TRIM_THRESHOLD = str(64 * 2**20)  # twice the mmap threshold, as glibc sets it when it raises that


def child(config: str, threads: int, steps: int, warmup: int) -> float:
    """ms per step of one configuration, in this (fresh) process."""
    if config != "unpinned":
        os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:threads])
    import torch
    import torch.nn.functional as F

    from dlbench.datasets import load
    from dlbench.models.lenet5 import torch as lenet5

    torch.set_num_threads(threads)
    if config != "interop-default":
        torch.set_num_interop_threads(1)
    torch.manual_seed(0)
    data = load("fashion-mnist")
    x = torch.from_numpy(data.train.x[:12000]).permute(0, 3, 1, 2).contiguous()
    y = torch.from_numpy(data.train.y[:12000])
    if config == "random-data":
        x = torch.rand_like(x)
    # dlbench's own LeNet-5: the network is not what is varied here.
    model = lenet5.build((28, 28, 1), 10)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    b = 100
    order = torch.randperm(x.shape[0])
    position = [0]

    def step() -> None:
        if config == "fixed-batch" or config.startswith("timer"):
            xb, yb = x[:b], y[:b]  # the Timer scripts time one fixed batch
        else:
            i = position[0] % (x.shape[0] // b)
            idx = order[i * b : (i + 1) * b]
            xb, yb = x[idx], y[idx]
            position[0] += 1
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()

    for _ in range(1 if config == "cold-start" else warmup):
        step()
    if config.startswith("timer"):
        from torch.utils.benchmark import Timer

        kwargs = {"num_threads": threads} if config == "timer-threads" else {}
        measured = Timer(stmt="step()", globals={"step": step}, **kwargs).blocked_autorange(min_run_time=steps * 0.011)
        return measured.median * 1e3
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - t0) / steps * 1e3


def bootstrap_ci(ratios: np.ndarray, n: int = 5000) -> tuple[float, float]:
    rng = np.random.default_rng(0)
    idx = rng.integers(0, len(ratios), size=(n, len(ratios)))
    med = np.median(ratios[idx], axis=1)
    return float(np.percentile(med, 2.5)), float(np.percentile(med, 97.5))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--configs", default=",".join(CONFIGS), help="comma list (dlbench is always included)")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps({"ms": child(args.child, args.threads, args.steps, args.warmup)}))
        return
    chosen = tuple(dict.fromkeys(["dlbench", *(c for c in args.configs.split(",") if c)]))
    unknown = [c for c in chosen if c not in CONFIGS]
    if unknown:
        p.error(f"--configs: unknown {unknown[0]!r}; known: {', '.join(CONFIGS)}")
    results: dict[str, list[float]] = {c: [] for c in chosen}
    for r in range(args.rounds):
        order = chosen[r % len(chosen) :] + chosen[: r % len(chosen)]
        for config in order:
            env = dict(os.environ)
            if config.startswith("malloc"):
                env["MALLOC_MMAP_THRESHOLD_"] = MMAP_THRESHOLD
            if config == "malloc-fixed":
                env["MALLOC_TRIM_THRESHOLD_"] = TRIM_THRESHOLD
            out = subprocess.run(
                [sys.executable, __file__, "--child", config]
                + ["--threads", str(args.threads), "--steps", str(args.steps), "--warmup", str(args.warmup)],
                capture_output=True,
                text=True,
                check=True,
                env=env,
            )
            results[config].append(json.loads(out.stdout.strip().splitlines()[-1])["ms"])
        print(f"round {r + 1}: " + ", ".join(f"{c} {results[c][-1]:.2f}" for c in chosen), flush=True)
    base = np.array(results["dlbench"])
    spread = (base.max() - base.min()) / np.median(base)
    print(
        f"\nLeNet-5 step, batch 100, SGD, {args.threads} threads; {args.rounds} rounds; machine noise: "
        f"dlbench's own median ms/step ranged {100 * spread:.0f}% across rounds"
    )
    print(f"{'configuration':18s} {'ms/step':>8s} {'ratio to dlbench':>17s} {'95% CI':>16s} {'range':>14s}")
    for c in chosen:
        v = np.array(results[c])
        ratios = v / base
        lo, hi = bootstrap_ci(ratios)
        print(
            f"{c:18s} {np.median(v):8.2f} {np.median(ratios):17.3f} {f'[{lo:.3f}, {hi:.3f}]':>16s} "
            f"{f'{ratios.min():.2f}-{ratios.max():.2f}':>14s}"
        )


if __name__ == "__main__":
    main()
