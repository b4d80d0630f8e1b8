"""Hand-written JAX (Flax linen + optax) LeNet-5 training: the reference for dlbench's JAX adapter.

No dlbench code except the (untimed) data loading. Written the way a JAX user writes
a fast loop: data put on the device once, one `jax.jit` train step that takes the
whole training set plus a batch of indices (the gather happens inside XLA, not as
an eager op per step), params / optimizer state / running loss donated, the epoch's
permutation drawn on the device with `jax.random.permutation`, and one
`block_until_ready` at the end of the epoch (dispatch is asynchronous).

Protocol (the same as dlbench's): for each of W+R repeats initialize fresh
parameters (seed + repeat), run one untimed jitted step on copies (compiles once;
later repeats hit jit's cache, as dlbench's do), keep the initial parameters,
then time one epoch, then (untimed) test accuracy over the whole test split: a jitted
apply, argmax of the logits. Prints one JSON line:
{"framework": "jax", "train_times": [...], "train_losses": [...], "test_accuracies": [...], ...}.
"""

from __future__ import annotations

import argparse
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
    # XLA:CPU sizes its thread pool from the affinity mask when the backend starts:
    # pinning before importing jax is the thread setting.
    os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[: args.threads])

    from functools import partial

    import flax.linen as nn
    import jax
    import jax.numpy as jnp
    import optax

    from dlbench.datasets import load

    class LeNet5(nn.Module):
        @nn.compact
        def __call__(self, x: jax.Array) -> jax.Array:
            init = {"kernel_init": nn.initializers.glorot_uniform(), "bias_init": nn.initializers.zeros_init()}
            x = nn.max_pool(nn.relu(nn.Conv(6, (5, 5), padding=((2, 2), (2, 2)), **init)(x)), (2, 2), (2, 2))
            x = nn.max_pool(nn.relu(nn.Conv(16, (5, 5), padding="VALID", **init)(x)), (2, 2), (2, 2))
            x = x.reshape((x.shape[0], -1))
            x = nn.relu(nn.Dense(120, **init)(x))
            x = nn.relu(nn.Dense(84, **init)(x))
            return nn.Dense(10, **init)(x)

    model, tx = LeNet5(), optax.sgd(args.lr)
    data = load("fashion-mnist")
    n = args.train_samples or len(data.train.y)
    b = args.batch_size
    steps = n // b  # the partial last batch is dropped (a second shape would recompile)
    x = jax.device_put(data.train.x[:n])
    y = jax.device_put(data.train.y[:n].astype("int32"))
    x_test = jax.device_put(data.test.x)
    y_test = jax.device_put(data.test.y.astype("int32"))

    @partial(jax.jit, donate_argnums=(0, 1, 2))
    def train_step(params, opt_state, loss_sum, x_all, y_all, idx):
        def loss_fn(p):
            logits = model.apply({"params": p}, x_all[idx])
            return optax.softmax_cross_entropy_with_integer_labels(logits, y_all[idx]).mean()

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss_sum + loss

    @jax.jit
    def epoch_order(key):
        # One (steps, batch) index matrix per epoch; iterating it yields the batches.
        return jax.random.permutation(key, n)[: steps * b].reshape(steps, b)

    @jax.jit
    def correct(params, x_all, y_all):
        # The whole test split in one call: one shape, one compilation.
        return jnp.sum(jnp.argmax(model.apply({"params": params}, x_all), axis=1) == y_all)

    times, losses, accuracies = [], [], []
    for repeat in range(args.warmup + args.repeats):
        init_key, shuffle_key = jax.random.split(jax.random.key(args.seed + repeat))
        params = model.init(init_key, jnp.zeros((1, 28, 28, 1), jnp.float32))["params"]
        opt_state = tx.init(params)
        # Untimed: compile (first repeat) / warm the step on copies, since the step donates its inputs.
        copies = jax.tree.map(jnp.copy, (params, opt_state))
        jax.block_until_ready(train_step(*copies, jnp.zeros(()), x, y, jnp.arange(b)))
        # Also iterate it once: iterating a jax.Array compiles its row split (`unstack`),
        # 0.27 s that would otherwise land in the first timed epoch.
        jax.block_until_ready(list(epoch_order(shuffle_key)))

        t0 = time.perf_counter_ns()
        loss_sum = jnp.zeros(())
        for idx in epoch_order(shuffle_key):
            params, opt_state, loss_sum = train_step(params, opt_state, loss_sum, x, y, idx)
        jax.block_until_ready((params, loss_sum))
        elapsed = (time.perf_counter_ns() - t0) / 1e9
        if repeat >= args.warmup:
            times.append(elapsed)
            losses.append(float(loss_sum) / steps)
            accuracies.append(int(correct(params, x_test, y_test)) / len(data.test.y))  # untimed

    print(
        json.dumps(
            {
                "framework": "jax",
                "train_times": times,
                "train_losses": losses,
                "test_accuracies": accuracies,
                "steps_per_epoch": steps,
                "devices": [str(d) for d in jax.devices()],
                "cpu_affinity": sorted(os.sched_getaffinity(0)),
                "version": f"jax {jax.__version__}",
            }
        )
    )


if __name__ == "__main__":
    main()
