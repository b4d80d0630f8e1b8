"""Hand-written PyTorch training steps (LeNet-5 or ResNet-50): the reference dlbench's torch step time is held to.

No dlbench code at all: the networks are written out here and the data is synthetic
(numpy, uniform [0, 1) images, random labels), moved to the device once as one NCHW
tensor before any timing. The loop is the one dlbench's torch adapter runs
(TorchTrainer.first_step / train): per-epoch `torch.randperm` from a seeded CPU
generator, moved to the device; batches are index gathers of the preloaded tensor
(no DataLoader); the partial last batch is dropped; epochs are cycled until
`--steps` optimizer steps are done; the loss is summed on the device and read once.
float32 means float32 (TF32 off for cuBLAS and cuDNN), cudnn.benchmark on for cuda.

Protocol: for each of W+R repeats r, build a fresh model (torch.manual_seed(seed + r);
Glorot-uniform conv/linear kernels, zero biases, BN scale 1 / shift 0), plain SGD
(no momentum); variant "compile": torch._dynamo.reset() then torch.compile(model)
(default mode, inductor). One untimed step on the first batch (compilation, cuDNN
autotuning), then the initial weights and a fresh optimizer state are restored.
Then `--steps` steps are timed, ending with the host read of the summed loss and
torch.cuda.synchronize(). With --unsynced the wall clock is also read right after the
Python loop returns (no sync, no host read): the wrong way, reported beside the right one.
Prints one JSON line: {"framework": "torch", "train_times": [...], "step_times": [...], ...}.

    python benchmarks/standalone/steps_torch.py --model resnet50 --variant compile --device cuda --unsynced
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=("lenet5", "resnet50"), default="lenet5")
    p.add_argument("--variant", choices=("eager", "compile"), default="eager")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--steps", type=int, default=30, help="timed optimizer steps per repeat")
    p.add_argument("--train-size", type=int, default=640, help="synthetic training samples")
    p.add_argument("--input-size", type=int, default=None, help="square image side (default 28 lenet5, 224 resnet50)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--unsynced", action="store_true", help="also report the time read without any sync")
    args = p.parse_args()
    if args.input_size is None:
        args.input_size = 28 if args.model == "lenet5" else 224
    if args.batch_size > args.train_size:
        p.error(f"--batch-size {args.batch_size} exceeds --train-size {args.train_size}")
    return args


def main() -> None:
    args = parse_args()

    import numpy as np
    import torch
    import torch.nn.functional as F
    from torch import nn

    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit(f"steps_torch.py: --device cuda but torch.cuda.is_available() is False (torch {torch.__version__})")
    device = torch.device(args.device)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    torch.backends.cudnn.benchmark = device.type == "cuda"

    # -- networks (the same layers as dlbench's zoo: models/lenet5, models/_resnet) --------

    class LeNet5(nn.Module):
        def __init__(self, channels: int, size: int, classes: int) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(channels, 6, 5, padding=2)
            self.conv2 = nn.Conv2d(6, 16, 5)
            side = ((size + 4 - 4) // 2 - 4) // 2  # conv pad 2, pool 2, conv valid, pool 2
            self.fc1 = nn.Linear(16 * side * side, 120)
            self.fc2 = nn.Linear(120, 84)
            self.fc3 = nn.Linear(84, classes)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = F.max_pool2d(F.relu(self.conv1(x)), 2)
            x = F.max_pool2d(F.relu(self.conv2(x)), 2)
            x = torch.flatten(x, 1)
            x = F.relu(self.fc1(x))
            x = F.relu(self.fc2(x))
            return self.fc3(x)

    def conv(cin: int, cout: int, k: int, stride: int = 1) -> nn.Conv2d:
        return nn.Conv2d(cin, cout, k, stride=stride, padding=k // 2, bias=False)

    def bn(c: int) -> nn.BatchNorm2d:
        return nn.BatchNorm2d(c, eps=1e-5, momentum=0.1)

    class Bottleneck(nn.Module):
        def __init__(self, cin: int, planes: int, stride: int) -> None:
            super().__init__()
            cout = planes * 4
            self.conv1, self.bn1 = conv(cin, planes, 1), bn(planes)
            self.conv2, self.bn2 = conv(planes, planes, 3, stride), bn(planes)  # v1.5: stride on the 3x3
            self.conv3, self.bn3 = conv(planes, cout, 1), bn(cout)
            self.downsample = (
                nn.Sequential(conv(cin, cout, 1, stride), bn(cout)) if stride != 1 or cin != cout else None
            )

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            identity = x if self.downsample is None else self.downsample(x)
            out = F.relu(self.bn1(self.conv1(x)))
            out = F.relu(self.bn2(self.conv2(out)))
            out = self.bn3(self.conv3(out))
            return F.relu(out + identity)

    class ResNet50(nn.Module):
        def __init__(self, channels: int, classes: int) -> None:
            super().__init__()
            self.conv1, self.bn1 = conv(channels, 64, 7, 2), bn(64)
            self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
            cin, stages = 64, []
            for i, count in enumerate((3, 4, 6, 3)):
                planes = 64 * 2**i
                blocks = []
                for j in range(count):
                    blocks.append(Bottleneck(cin, planes, 2 if i > 0 and j == 0 else 1))
                    cin = planes * 4
                stages.append(nn.Sequential(*blocks))
            self.layers = nn.Sequential(*stages)
            self.fc = nn.Linear(cin, classes)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = self.maxpool(F.relu(self.bn1(self.conv1(x))))
            x = self.layers(x)
            return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))

    def build(seed: int) -> nn.Module:
        torch.manual_seed(seed)
        channels = 1 if args.model == "lenet5" else 3
        if args.model == "lenet5":
            model = LeNet5(channels, args.input_size, args.classes)
        else:
            model = ResNet50(channels, args.classes)
        for m in model.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.xavier_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
        return model.to(device)  # initialized on the CPU, then moved: the same weights on every device

    # -- data: synthetic, on the device once ------------------------------------------------

    rng = np.random.default_rng(args.seed)
    channels = 1 if args.model == "lenet5" else 3
    x_np = rng.random((args.train_size, args.input_size, args.input_size, channels), dtype=np.float32)
    y_np = rng.integers(0, args.classes, args.train_size)
    x = torch.from_numpy(x_np).permute(0, 3, 1, 2).contiguous().to(device)  # NHWC -> NCHW, once
    y = torch.from_numpy(y_np).to(torch.int64).to(device)
    n, b = args.train_size, args.batch_size
    per_epoch = n // b  # the partial last batch is dropped

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    times, unsynced, first_steps, losses, param_count = [], [], [], [], 0
    for repeat in range(args.warmup + args.repeats):
        seed = args.seed + repeat
        model = build(seed)
        param_count = sum(p.numel() for p in model.parameters() if p.requires_grad)
        forward = model
        if args.variant == "compile":
            torch._dynamo.reset()  # every repeat traces and compiles anew, as dlbench's builds do
            forward = torch.compile(model, mode="default", backend="inductor")
        opt = torch.optim.SGD(model.parameters(), lr=args.lr)

        def step(xb: torch.Tensor, yb: torch.Tensor, forward=forward, opt=opt) -> torch.Tensor:
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(forward(xb), yb)
            loss.backward()
            opt.step()
            return loss.detach()

        # Untimed first step (compilation, cuDNN autotuning), then back to the built state.
        model.train()
        initial = copy.deepcopy(model.state_dict())  # BN running statistics included
        optim_state = copy.deepcopy(opt.state_dict())
        t0 = time.perf_counter()
        step(x[:b], y[:b])
        sync()
        first_steps.append(time.perf_counter() - t0)
        model.load_state_dict(initial)  # in place: the compiled module keeps the same parameters
        opt.load_state_dict(optim_state)
        generator = torch.Generator().manual_seed(seed)

        t0 = time.perf_counter()
        model.train()
        total = torch.zeros((), device=device)
        remaining = args.steps
        while remaining > 0:
            epoch_steps = min(per_epoch, remaining)
            order = torch.randperm(n, generator=generator).to(device)
            for i in range(epoch_steps):
                idx = order[i * b : (i + 1) * b]
                total += step(x[idx], y[idx])  # summed on the device: no host read per step
            remaining -= epoch_steps
        t_unsynced = time.perf_counter()  # the wrong way: GPU work may still be queued
        mean_loss = total.item() / args.steps
        sync()
        elapsed = time.perf_counter() - t0
        if repeat >= args.warmup:
            times.append(elapsed)
            unsynced.append(t_unsynced - t0)
            losses.append(mean_loss)

    out = {
        "framework": "torch",
        "variant": args.variant,
        "model": args.model,
        "device": args.device,
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "train_times": times,
        "step_times": [t / args.steps for t in times],
    }
    if args.unsynced:
        out["unsynced_times"] = unsynced
    out.update(
        {
            "first_step_times": first_steps[args.warmup :],
            "steps": args.steps,
            "batch_size": b,
            "train_size": n,
            "input_size": args.input_size,
            "param_count": param_count,
            "train_losses": losses,
            "version": torch.__version__,
        }
    )
    print(json.dumps(out))


if __name__ == "__main__":
    main()
