"""Hand-written JAX (Flax linen + optax) training steps (LeNet-5 or ResNet-50): the reference for dlbench's JAX steps.

No dlbench code at all: the networks are written out here and the data is synthetic
(numpy, uniform [0, 1) images, random labels), put on the device once with
`jax.device_put` before any timing. The loop is the one dlbench's JAX adapter runs
(JaxTrainer.first_step / train): one jitted step that takes params, batch-norm
statistics, optimizer state, the running loss sum (all four donated), a step counter
carried on the device, the whole training set and the epoch's (steps, batch) index
table, and gathers its batch inside XLA; one jitted call per epoch draws the
permutation (`jax.random.permutation` on a key folded with the epoch); the partial
last batch is dropped; epochs are cycled until `--steps` steps are done; the loss sum
is read once at the end. float32 throughout, matmul precision "highest" (no TF32).

Protocol: for each of W+R repeats r, initialize fresh parameters from
jax.random.key(seed + r) (Glorot-uniform kernels, zero biases, BN scale 1 / shift 0;
the jitted `init` compiles once), optax.sgd(lr) (no momentum). One untimed step on
copies of the state (the step donates its inputs; it compiles in the first repeat,
later repeats hit jit's cache, as dlbench's do), then the initial parameters are
used as they are. Then `--steps` steps are timed, ending with block_until_ready on
the final state and the host read of the summed loss. Prints one JSON line:
{"framework": "jax", "train_times": [...], "step_times": [...], ...}.

    python benchmarks/standalone/steps_jax.py --model resnet50 --device cuda
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=("lenet5", "resnet50"), default="lenet5")
    p.add_argument("--variant", choices=("jit",), default="jit")
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
    args = p.parse_args()
    if args.input_size is None:
        args.input_size = 28 if args.model == "lenet5" else 224
    if args.batch_size > args.train_size:
        p.error(f"--batch-size {args.batch_size} exceeds --train-size {args.train_size}")
    return args


def main() -> None:
    args = parse_args()
    if args.device == "cpu":
        # A CPU run on a GPU machine must not start CUDA (nor grab 75% of its memory).
        os.environ.setdefault("JAX_PLATFORMS", "cpu")

    from functools import partial

    import flax.linen as nn
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax

    jax.config.update("jax_enable_x64", False)
    jax.config.update("jax_default_matmul_precision", "highest")
    platform = "gpu" if args.device == "cuda" else "cpu"
    try:
        device = jax.devices(platform)[0]
    except RuntimeError as exc:
        sys.exit(f"steps_jax.py: --device {args.device} but JAX has no {platform} backend ({exc})".splitlines()[0])
    jax.config.update("jax_default_device", device)

    # -- networks (the same layers as dlbench's zoo: models/lenet5, models/_resnet) --------

    kernel_init, bias_init = nn.initializers.glorot_uniform(), nn.initializers.zeros_init()

    class LeNet5(nn.Module):
        classes: int

        @nn.compact
        def __call__(self, x: jax.Array, train: bool = True) -> jax.Array:
            init = {"kernel_init": kernel_init, "bias_init": bias_init}
            x = nn.max_pool(nn.relu(nn.Conv(6, (5, 5), padding=((2, 2), (2, 2)), **init)(x)), (2, 2), (2, 2))
            x = nn.max_pool(nn.relu(nn.Conv(16, (5, 5), padding="VALID", **init)(x)), (2, 2), (2, 2))
            x = x.reshape((x.shape[0], -1))
            x = nn.relu(nn.Dense(120, **init)(x))
            x = nn.relu(nn.Dense(84, **init)(x))
            return nn.Dense(self.classes, **init)(x)

    def conv(features: int, k: int, stride: int = 1) -> nn.Conv:
        p = k // 2  # torch's symmetric padding
        return nn.Conv(
            features, (k, k), (stride, stride), padding=((p, p), (p, p)), use_bias=False, kernel_init=kernel_init
        )

    def bn(train: bool) -> nn.BatchNorm:
        return nn.BatchNorm(use_running_average=not train, momentum=0.9, epsilon=1e-5)

    class Bottleneck(nn.Module):
        planes: int
        stride: int
        downsample: bool

        @nn.compact
        def __call__(self, x: jax.Array, train: bool) -> jax.Array:
            cout = self.planes * 4
            shortcut = bn(train)(conv(cout, 1, self.stride)(x)) if self.downsample else x
            y = nn.relu(bn(train)(conv(self.planes, 1)(x)))
            y = nn.relu(bn(train)(conv(self.planes, 3, self.stride)(y)))  # v1.5: stride on the 3x3
            y = bn(train)(conv(cout, 1)(y))
            return nn.relu(y + shortcut)

    class ResNet50(nn.Module):
        classes: int

        @nn.compact
        def __call__(self, x: jax.Array, train: bool = True) -> jax.Array:
            x = nn.relu(bn(train)(conv(64, 7, 2)(x)))
            x = nn.max_pool(x, (3, 3), strides=(2, 2), padding=((1, 1), (1, 1)))
            cin = 64
            for i, count in enumerate((3, 4, 6, 3)):
                planes = 64 * 2**i
                for j in range(count):
                    stride = 2 if i > 0 and j == 0 else 1
                    x = Bottleneck(planes, stride, stride != 1 or cin != planes * 4)(x, train)
                    cin = planes * 4
            x = jnp.mean(x, axis=(1, 2))
            return nn.Dense(self.classes, kernel_init=kernel_init, bias_init=bias_init)(x)

    model = LeNet5(args.classes) if args.model == "lenet5" else ResNet50(args.classes)
    tx = optax.sgd(args.lr)

    # -- data: synthetic, on the device once ------------------------------------------------

    rng = np.random.default_rng(args.seed)
    channels = 1 if args.model == "lenet5" else 3
    x_np = rng.random((args.train_size, args.input_size, args.input_size, channels), dtype=np.float32)
    y_np = rng.integers(0, args.classes, args.train_size).astype(np.int32)
    x, y = jax.device_put(x_np, device), jax.device_put(y_np, device)
    n, b = args.train_size, args.batch_size
    per_epoch = n // b  # the partial last batch is dropped (a second shape would recompile)

    # -- the compiled functions: built once, reused by every repeat -------------------------

    @jax.jit
    def init(key: jax.Array) -> dict:
        return model.init(key, jnp.zeros((1, args.input_size, args.input_size, channels), jnp.float32), train=False)

    @partial(jax.jit, donate_argnums=(0, 1, 2, 3))
    def train_step(params, stats, opt_state, loss_sum, i, x_all, y_all, table):
        idx = table[i]  # row i of the epoch's index table; the gather is fused into the step

        def loss_fn(p):
            if stats:
                logits, new = model.apply(
                    {"params": p, "batch_stats": stats}, x_all[idx], train=True, mutable=["batch_stats"]
                )
                new_stats = new["batch_stats"]
            else:
                logits, new_stats = model.apply({"params": p}, x_all[idx], train=True), stats
            return optax.softmax_cross_entropy_with_integer_labels(logits, y_all[idx]).mean(), new_stats

        (loss, stats), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), stats, opt_state, loss_sum + loss, i + 1

    @partial(jax.jit, static_argnames=("steps",))
    def epoch_plan(shuffle_key: jax.Array, epoch: jax.Array, *, steps: int):
        """One epoch's (steps, batch) index table, a zero loss sum and a zero step counter."""
        order = jax.random.permutation(jax.random.fold_in(shuffle_key, epoch), n)
        return order[: steps * b].reshape(steps, b), jnp.zeros((), jnp.float32), jnp.zeros((), jnp.int32)

    put = partial(jax.device_put, device=device)  # committed like the step's outputs: one jit cache entry
    times, first_steps, losses, param_count = [], [], [], 0
    for repeat in range(args.warmup + args.repeats):
        init_key, shuffle_key = jax.random.split(jax.random.key(args.seed + repeat))
        variables = dict(init(init_key))
        params = put(variables.pop("params"))
        stats = put(variables.get("batch_stats", {}))
        opt_state = put(tx.init(params))
        shuffle_key = put(shuffle_key)
        jax.block_until_ready((params, stats, opt_state))
        param_count = sum(int(leaf.size) for leaf in jax.tree.leaves(params))

        # Untimed first step on copies (the step donates its inputs): compiles in repeat 0.
        t0 = time.perf_counter()
        copies = jax.tree.map(jnp.copy, (params, stats, opt_state))
        table, zero, i = epoch_plan(shuffle_key, 0, steps=per_epoch)
        jax.block_until_ready(train_step(*copies, zero, i, x, y, table))
        first_steps.append(time.perf_counter() - t0)

        t0 = time.perf_counter()
        loss_sum, done, epoch = None, 0, 0
        while done < args.steps:
            table, zero, i = epoch_plan(shuffle_key, epoch, steps=per_epoch)
            if loss_sum is None:
                loss_sum = zero  # one sum over all the steps
            for _ in range(min(per_epoch, args.steps - done)):
                params, stats, opt_state, loss_sum, i = train_step(params, stats, opt_state, loss_sum, i, x, y, table)
            done += min(per_epoch, args.steps - done)
            epoch += 1
        jax.block_until_ready((params, stats, opt_state, loss_sum))
        mean_loss = float(jax.device_get(loss_sum)) / args.steps
        elapsed = time.perf_counter() - t0
        if repeat >= args.warmup:
            times.append(elapsed)
            losses.append(mean_loss)

    import flax

    print(
        json.dumps(
            {
                "framework": "jax",
                "variant": args.variant,
                "model": args.model,
                "device": args.device,
                "device_name": device.device_kind if platform == "gpu" else "cpu",
                "train_times": times,
                "step_times": [t / args.steps for t in times],
                "first_step_times": first_steps[args.warmup :],
                "steps": args.steps,
                "batch_size": b,
                "train_size": n,
                "input_size": args.input_size,
                "param_count": param_count,
                "train_losses": losses,
                "version": jax.__version__,
                "versions": {"jax": jax.__version__, "flax": flax.__version__, "optax": optax.__version__},
            }
        )
    )


if __name__ == "__main__":
    main()
