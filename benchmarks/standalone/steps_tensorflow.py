"""Hand-written TensorFlow training steps (LeNet-5 or ResNet-50): the reference for dlbench's TensorFlow step time.

No dlbench code and no Keras: the networks are plain `tf.Variable`s and `tf.nn` ops
(NHWC; fused batch norm), the optimizer is plain SGD written out (`assign_sub`), and
the data is synthetic (numpy, uniform [0, 1) images, random labels), placed on the
device once as tf.constant before any timing. The loop is the one a TF user chasing
speed writes: one `tf.function` step (variant "graph"; "xla": jit_compile=True) that
takes the whole training set and the epoch's (steps, batch) index table, reads its
row through a step counter kept in a device variable, gathers the batch inside the
graph, and adds its loss to a device variable; one `tf.function` per epoch draws the
permutation (stateless, seeded with seed + repeat and the epoch) and resets the
counter; the partial last batch is dropped; epochs are cycled until `--steps` steps
are done; the summed loss is read once at the end. float32 means float32 (TF32 off).

Protocol: for each of W+R repeats r, build a fresh model (Glorot-uniform kernels
drawn from numpy's default_rng(seed + r), zero biases, BN scale 1 / shift 0) and a
fresh tf.function step (traced for that model's variables); one untimed step on the
first batch (tracing, XLA compilation), then the initial weights (BN statistics
included) are restored; plain SGD has no state. Then `--steps` steps are timed,
ending with the host read of the summed loss (a sync). Prints one JSON line:
{"framework": "tensorflow", "train_times": [...], "step_times": [...], ...}.

dlbench's own TF adapter trains with Keras' model.fit on a host tf.data pipeline
(shuffle -> batch -> prefetch); this script is the hand-written lower bound beside it.

    python benchmarks/standalone/steps_tensorflow.py --model resnet50 --variant xla --device cuda
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
    p.add_argument("--variant", choices=("graph", "xla"), default="graph")
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
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

    import numpy as np
    import tensorflow as tf

    if args.device == "cpu":
        tf.config.set_visible_devices([], "GPU")  # no silent GPU use on a cpu run
        dev, device_name = "/CPU:0", "cpu"
    else:
        gpus = tf.config.list_physical_devices("GPU")
        if not gpus:
            sys.exit(f"steps_tensorflow.py: --device cuda but TensorFlow {tf.__version__} sees no GPU")
        dev = "/GPU:0"
        device_name = tf.config.experimental.get_device_details(gpus[0]).get("device_name", gpus[0].name)
    tf.config.experimental.enable_tensor_float_32_execution(False)

    # -- networks (the same layers as dlbench's zoo: models/lenet5, models/_resnet) --------

    class Net:
        """Trainable variables, batch-norm running statistics, and the forward pass."""

        def __init__(self, seed: int) -> None:
            self.rng = np.random.default_rng(seed)
            self.trainable: list[tf.Variable] = []
            self.stats: list[tf.Variable] = []

        def glorot(self, shape: tuple[int, ...], fan_in: int, fan_out: int) -> tf.Variable:
            limit = np.sqrt(6.0 / (fan_in + fan_out))
            v = tf.Variable(self.rng.uniform(-limit, limit, shape).astype(np.float32))
            self.trainable.append(v)
            return v

        def zeros(self, n: int, trainable: bool = True) -> tf.Variable:
            v = tf.Variable(tf.zeros([n]), trainable=trainable)
            (self.trainable if trainable else self.stats).append(v)
            return v

        def ones(self, n: int, trainable: bool = True) -> tf.Variable:
            v = tf.Variable(tf.ones([n]), trainable=trainable)
            (self.trainable if trainable else self.stats).append(v)
            return v

        def conv_w(self, k: int, cin: int, cout: int) -> tf.Variable:  # HWIO
            return self.glorot((k, k, cin, cout), k * k * cin, k * k * cout)

        def dense_w(self, fan_in: int, units: int) -> tuple[tf.Variable, tf.Variable]:
            return self.glorot((fan_in, units), fan_in, units), self.zeros(units)

    def conv2d(x: tf.Tensor, w: tf.Variable, stride: int = 1) -> tf.Tensor:
        p = int(w.shape[0]) // 2  # torch's symmetric padding
        padding = [[0, 0], [p, p], [p, p], [0, 0]] if p else "VALID"
        return tf.nn.conv2d(x, w, stride, padding)

    class LeNet5(Net):
        def __init__(self, seed: int, channels: int, size: int, classes: int) -> None:
            super().__init__(seed)
            side = ((size + 4 - 4) // 2 - 4) // 2  # conv pad 2, pool 2, conv valid, pool 2
            self.c1, self.b1 = self.conv_w(5, channels, 6), self.zeros(6)
            self.c2, self.b2 = self.conv_w(5, 6, 16), self.zeros(16)
            self.fc = [self.dense_w(16 * side * side, 120), self.dense_w(120, 84), self.dense_w(84, classes)]

        def __call__(self, x: tf.Tensor, train: bool) -> tf.Tensor:
            x = tf.nn.max_pool2d(tf.nn.relu(conv2d(x, self.c1) + self.b1), 2, 2, "VALID")
            x = tf.nn.max_pool2d(tf.nn.relu(tf.nn.conv2d(x, self.c2, 1, "VALID") + self.b2), 2, 2, "VALID")
            x = tf.reshape(x, [tf.shape(x)[0], -1])
            for j, (w, bias) in enumerate(self.fc):
                x = tf.matmul(x, w) + bias
                if j < 2:
                    x = tf.nn.relu(x)
            return x

    class ResNet50(Net):
        def __init__(self, seed: int, channels: int, classes: int) -> None:
            super().__init__(seed)
            self.stem = self.conv_bn(7, channels, 64)
            self.blocks = []
            cin = 64
            for i, count in enumerate((3, 4, 6, 3)):
                planes = 64 * 2**i
                for j in range(count):
                    stride = 2 if i > 0 and j == 0 else 1
                    cout = planes * 4
                    down = self.conv_bn(1, cin, cout) if stride != 1 or cin != cout else None
                    convs = [self.conv_bn(1, cin, planes), self.conv_bn(3, planes, planes)]
                    convs.append(self.conv_bn(1, planes, cout))
                    self.blocks.append((stride, convs, down))
                    cin = cout
            self.fc_w, self.fc_b = self.dense_w(cin, classes)

        def conv_bn(self, k: int, cin: int, cout: int) -> tuple:
            # conv (no bias), BN scale, BN shift, BN running mean, BN running variance
            w, gamma, beta = self.conv_w(k, cin, cout), self.ones(cout), self.zeros(cout)
            return w, gamma, beta, self.zeros(cout, trainable=False), self.ones(cout, trainable=False)

        @staticmethod
        def apply(x: tf.Tensor, layer: tuple, stride: int, train: bool) -> tf.Tensor:
            w, gamma, beta, mean, var = layer
            x = conv2d(x, w, stride)
            if not train:
                return tf.nn.batch_normalization(x, mean, var, beta, gamma, 1e-5)
            # Batch statistics; running averages with torch's momentum 0.1 (Keras'/Flax's 0.9).
            y, new_mean, new_var = tf.compat.v1.nn.fused_batch_norm(
                x, gamma, beta, mean=mean, variance=var, epsilon=1e-5, is_training=True, exponential_avg_factor=0.1
            )
            mean.assign(new_mean)
            var.assign(new_var)
            return y

        def __call__(self, x: tf.Tensor, train: bool) -> tf.Tensor:
            x = tf.nn.relu(self.apply(x, self.stem, 2, train))
            # Zero padding equals torch's -inf padding here: the input is post-ReLU (>= 0).
            x = tf.nn.max_pool2d(tf.pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]]), 3, 2, "VALID")
            for stride, (c1, c2, c3), down in self.blocks:
                shortcut = x if down is None else self.apply(x, down, stride, train)
                y = tf.nn.relu(self.apply(x, c1, 1, train))
                y = tf.nn.relu(self.apply(y, c2, stride, train))  # v1.5: stride on the 3x3
                y = self.apply(y, c3, 1, train)
                x = tf.nn.relu(y + shortcut)
            x = tf.reduce_mean(x, axis=[1, 2])
            return tf.matmul(x, self.fc_w) + self.fc_b

    # -- data: synthetic, on the device once ------------------------------------------------

    rng = np.random.default_rng(args.seed)
    channels = 1 if args.model == "lenet5" else 3
    x_np = rng.random((args.train_size, args.input_size, args.input_size, channels), dtype=np.float32)
    y_np = rng.integers(0, args.classes, args.train_size).astype(np.int64)
    n, b = args.train_size, args.batch_size
    per_epoch = n // b  # the partial last batch is dropped (a second shape would retrace / recompile)

    with tf.device(dev):
        x, y = tf.identity(tf.constant(x_np)), tf.identity(tf.constant(y_np))  # identity: copied onto `dev`
        counter = tf.Variable(tf.constant(0, tf.int64))  # the step's row in the epoch's index table
        loss_sum = tf.Variable(0.0)
        first_table = tf.reshape(tf.range(per_epoch * b, dtype=tf.int64), [per_epoch, b])  # row 0: first batch

    @tf.function
    def epoch_plan(seed: tf.Tensor) -> tf.Tensor:
        """One epoch's (steps, batch) index table (a stateless permutation); the counter back to row 0."""
        order = tf.argsort(tf.random.stateless_uniform([n], seed=seed))
        counter.assign(0)
        return tf.reshape(tf.cast(order[: per_epoch * b], tf.int64), [per_epoch, b])

    def make_step(model: Net):
        params = model.trainable

        def step(x_all: tf.Tensor, y_all: tf.Tensor, table: tf.Tensor) -> None:
            idx = tf.gather(table, counter)
            xb, yb = tf.gather(x_all, idx), tf.gather(y_all, idx)
            with tf.GradientTape() as tape:
                logits = model(xb, train=True)
                loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=yb, logits=logits))
            grads = tape.gradient(loss, params)
            updates = [p.assign_sub(args.lr * g) for p, g in zip(params, grads)]  # plain SGD
            with tf.control_dependencies(updates):  # the final loss read waits for the last update too
                counter.assign_add(1)
                loss_sum.assign_add(loss)

        return tf.function(step, jit_compile=args.variant == "xla")

    times, first_steps, losses, param_count = [], [], [], 0
    for repeat in range(args.warmup + args.repeats):
        seed = args.seed + repeat
        with tf.device(dev):
            if args.model == "lenet5":
                model: Net = LeNet5(seed, channels, args.input_size, args.classes)
            else:
                model = ResNet50(seed, channels, args.classes)
        param_count = int(sum(np.prod(v.shape) for v in model.trainable))
        step = make_step(model)

        # Untimed first step on the first batch (tracing, XLA compilation), then back to the built state.
        initial = [v.numpy() for v in model.trainable + model.stats]
        t0 = time.perf_counter()
        counter.assign(0)
        step(x, y, first_table)
        float(loss_sum.numpy())  # host read: the step has finished
        first_steps.append(time.perf_counter() - t0)
        for v, value in zip(model.trainable + model.stats, initial):
            v.assign(value)
        loss_sum.assign(0.0)
        float(loss_sum.numpy())

        t0 = time.perf_counter()
        done, epoch = 0, 0
        while done < args.steps:
            table = epoch_plan(tf.constant([seed, epoch], tf.int64))
            count = min(per_epoch, args.steps - done)
            for _ in range(count):
                step(x, y, table)
            done += count
            epoch += 1
        mean_loss = float(loss_sum.numpy()) / args.steps  # host read: a sync
        elapsed = time.perf_counter() - t0
        if repeat >= args.warmup:
            times.append(elapsed)
            losses.append(mean_loss)

    print(
        json.dumps(
            {
                "framework": "tensorflow",
                "variant": args.variant,
                "model": args.model,
                "device": args.device,
                "device_name": device_name,
                "train_times": times,
                "step_times": [t / args.steps for t in times],
                "first_step_times": first_steps[args.warmup :],
                "steps": args.steps,
                "batch_size": b,
                "train_size": n,
                "input_size": args.input_size,
                "param_count": param_count,
                "train_losses": losses,
                "version": tf.__version__,
            }
        )
    )


if __name__ == "__main__":
    main()
