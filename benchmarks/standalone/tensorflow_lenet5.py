"""Hand-written Keras 3 (TensorFlow backend) LeNet-5 training: the reference for dlbench's TF adapter.

No dlbench code except the (untimed) data loading. Written the way the Keras guides
write it: a Sequential model, compile(SGD, SparseCategoricalCrossentropy(from_logits))
and `model.fit` on a tf.data pipeline (shuffle -> batch(drop_remainder) -> prefetch),
verbose 0, no callbacks.

Protocol (the same as dlbench's): for each of W+R repeats build a fresh model
(seed + repeat), run an untimed one-batch `fit` (it traces the very train function
the timed `fit` reuses: a train_on_batch would trace a different one and leave a
retrace inside the timed epoch), restore the initial weights, then time one
`fit` epoch, then (untimed) test accuracy over the whole test split: `model.predict`
on a batched tf.data pipeline, argmax of the logits. Prints one JSON line:
{"framework": "tensorflow", "train_times": [...], "train_losses": [...], "test_accuracies": [...], ...}.
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
    os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[: args.threads])
    os.environ["KERAS_BACKEND"] = "tensorflow"
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

    import keras
    import numpy as np
    import tensorflow as tf
    from keras import layers

    from dlbench.datasets import load

    # Intra-op threads = the oneDNN kernels' threads; inter-op left at TF's default.
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    data = load("fashion-mnist")
    n = args.train_samples or len(data.train.y)
    x, y = data.train.x[:n], data.train.y[:n]
    b = args.batch_size
    test_ds = tf.data.Dataset.from_tensor_slices(data.test.x).batch(b)  # partial last batch kept

    def build() -> keras.Model:
        init = {"kernel_initializer": "glorot_uniform", "bias_initializer": "zeros"}
        model = keras.Sequential(
            [
                keras.Input(shape=(28, 28, 1)),
                layers.Conv2D(6, 5, padding="same", activation="relu", **init),
                layers.MaxPooling2D(2),
                layers.Conv2D(16, 5, activation="relu", **init),
                layers.MaxPooling2D(2),
                layers.Flatten(),
                layers.Dense(120, activation="relu", **init),
                layers.Dense(84, activation="relu", **init),
                layers.Dense(10, **init),
            ]
        )
        # jit_compile=False is what "auto" resolves to on a CPU-only machine; said
        # explicitly so a GPU box does not silently switch to XLA.
        model.compile(
            optimizer=keras.optimizers.SGD(learning_rate=args.lr),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            jit_compile=False,
        )
        return model

    times, losses, accuracies = [], [], []
    for repeat in range(args.warmup + args.repeats):
        keras.utils.set_random_seed(args.seed + repeat)
        model = build()
        train_ds = (
            tf.data.Dataset.from_tensor_slices((x, y))
            .shuffle(n, seed=args.seed + repeat, reshuffle_each_iteration=True)
            .batch(b, drop_remainder=True)
            .prefetch(tf.data.AUTOTUNE)
        )
        one_batch = tf.data.Dataset.from_tensor_slices((x[:b], y[:b])).batch(b, drop_remainder=True)
        initial = model.get_weights()
        model.fit(one_batch, epochs=1, verbose=0)  # traces the train function, untimed
        model.set_weights(initial)
        model.optimizer.iterations.assign(0)  # plain SGD has no other state

        t0 = time.perf_counter_ns()
        history = model.fit(train_ds, epochs=1, verbose=0)
        mean_loss = float(history.history["loss"][-1])  # host values: the epoch has finished
        elapsed = (time.perf_counter_ns() - t0) / 1e9
        if repeat >= args.warmup:
            times.append(elapsed)
            losses.append(mean_loss)
            logits = model.predict(test_ds, verbose=0)  # untimed: the trained model's quality
            accuracies.append(float(np.mean(np.argmax(logits, axis=1) == data.test.y)))

    print(
        json.dumps(
            {
                "framework": "tensorflow",
                "train_times": times,
                "train_losses": losses,
                "test_accuracies": accuracies,
                "steps_per_epoch": n // b,
                "intra_op_threads": tf.config.threading.get_intra_op_parallelism_threads(),
                "inter_op_threads": tf.config.threading.get_inter_op_parallelism_threads(),
                "cpu_affinity": sorted(os.sched_getaffinity(0)),
                "version": f"tensorflow {tf.__version__}, keras {keras.__version__}",
            }
        )
    )


if __name__ == "__main__":
    main()
