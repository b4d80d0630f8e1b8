"""Write a learnable multichannel time-series dataset: `python data.py signals.npz`.

Each class is a sine of its own frequency in one channel of its own, with random
phase and Gaussian noise in every channel. Stored channels-first, (N, C, L), as
many signal libraries write it, so the file says layout="NCL"; dlbench keeps the
samples as (L, C) and hands torch (N, C, L), Keras and Flax (N, L, C).
"""

from __future__ import annotations

import sys

import numpy as np

LENGTH, CHANNELS, CLASSES = 64, 3, 4


def signals(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    y = rng.integers(0, CLASSES, n)
    t = np.arange(LENGTH) / LENGTH
    phase = rng.uniform(0, 2 * np.pi, n)
    x = 0.5 * rng.standard_normal((n, CHANNELS, LENGTH))
    wave = np.sin(2 * np.pi * (2 + 2 * y)[:, None] * t[None, :] + phase[:, None])
    x[np.arange(n), y % CHANNELS] += wave
    return x.astype(np.float32), y.astype(np.int64)


def write(path: str, train: int = 1024, test: int = 256, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    x_train, y_train = signals(train, rng)
    x_test, y_test = signals(test, rng)
    np.savez(path, x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test, layout="NCL")


if __name__ == "__main__":
    write(sys.argv[1] if len(sys.argv) > 1 else "signals.npz")
