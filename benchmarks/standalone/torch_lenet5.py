"""Hand-written PyTorch LeNet-5 training loop: the reference dlbench's torch adapter is held to.

No dlbench code except the (untimed) data loading. Written the way a PyTorch user
chasing speed writes it on a CPU: the whole training split preloaded as one NCHW
tensor, a per-epoch `torch.randperm` for the shuffle, index-gathered batches (no
DataLoader), the loss summed on the device and read once per epoch.

Protocol (the same as dlbench's): for each of W+R repeats build a fresh model
(seed + repeat), run one untimed step, restore the initial weights, then time one
epoch, then (untimed) test accuracy over the whole test split: eval mode, no_grad,
argmax of the logits. Prints one JSON line:
{"framework": "torch", "train_times": [...], "train_losses": [...], "test_accuracies": [...], ...}.

    python benchmarks/standalone/torch_lenet5.py --train-samples 12000 --repeats 3
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import time


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--train-samples", type=int, default=0, help="first N training samples (0 = all)")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batch-size", type=int, default=100)
    p.add_argument("--lr", type=float, default=0.01)
    return p.parse_args()


def main() -> None:
    args = parse_args()
    # Pin before torch starts its OpenMP pool, to the same cores dlbench's worker uses.
    os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[: args.threads])

    import torch
    import torch.nn.functional as F
    from torch import nn

    from dlbench.datasets import load

    torch.set_num_threads(args.threads)
    data = load("fashion-mnist")
    n = args.train_samples or len(data.train.y)
    x = torch.from_numpy(data.train.x[:n]).permute(0, 3, 1, 2).contiguous()  # NHWC -> NCHW, once
    y = torch.from_numpy(data.train.y[:n])
    b = args.batch_size
    steps = n // b  # the partial last batch is dropped
    x_test = torch.from_numpy(data.test.x).permute(0, 3, 1, 2).contiguous()
    y_test = torch.from_numpy(data.test.y)

    def build() -> nn.Module:
        model = nn.Sequential(
            nn.Conv2d(1, 6, 5, padding=2),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(6, 16, 5),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(16 * 5 * 5, 120),
            nn.ReLU(),
            nn.Linear(120, 84),
            nn.ReLU(),
            nn.Linear(84, 10),
        )
        for m in model.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.xavier_uniform_(m.weight)
                nn.init.zeros_(m.bias)
        return model

    def step(model: nn.Module, opt: torch.optim.Optimizer, xb: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        return loss.detach()

    def test_accuracy(model: nn.Module) -> float:
        model.eval()
        with torch.no_grad():
            logits = torch.cat([model(x_test[i : i + b]) for i in range(0, len(y_test), b)])
        return (logits.argmax(dim=1) == y_test).float().mean().item()

    times, losses, accuracies = [], [], []
    for repeat in range(args.warmup + args.repeats):
        torch.manual_seed(args.seed + repeat)
        model = build()
        model.train()
        # Untimed first step (oneDNN primitive creation, allocator warm-up), then
        # back to the initial weights and a fresh optimizer.
        initial = copy.deepcopy(model.state_dict())
        step(model, torch.optim.SGD(model.parameters(), lr=args.lr), x[:b], y[:b])
        model.load_state_dict(initial)
        opt = torch.optim.SGD(model.parameters(), lr=args.lr)
        gen = torch.Generator().manual_seed(args.seed + repeat)

        t0 = time.perf_counter_ns()
        order = torch.randperm(n, generator=gen)
        total = torch.zeros(())
        for i in range(steps):
            idx = order[i * b : (i + 1) * b]
            total += step(model, opt, x[idx], y[idx])
        mean_loss = total.item() / steps  # host read; torch CPU is synchronous anyway
        elapsed = (time.perf_counter_ns() - t0) / 1e9
        if repeat >= args.warmup:
            times.append(elapsed)
            losses.append(mean_loss)
            accuracies.append(test_accuracy(model))  # untimed

    print(
        json.dumps(
            {
                "framework": "torch",
                "train_times": times,
                "train_losses": losses,
                "test_accuracies": accuracies,
                "steps_per_epoch": steps,
                "threads": torch.get_num_threads(),
                "cpu_affinity": sorted(os.sched_getaffinity(0)),
                "version": torch.__version__,
            }
        )
    )


if __name__ == "__main__":
    main()
