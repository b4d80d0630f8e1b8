"""Write a learnable regression dataset: `python data.py housing.npz`.

x: (N, 8) standard-normal features; y: (N, 2) float targets, a fixed linear map of
x plus a ReLU term and Gaussian noise (sd 0.1), so a small MLP beats a linear fit.
The best test MSE reachable is about the noise variance, 0.01.
"""

from __future__ import annotations

import sys

import numpy as np

FEATURES, TARGETS = 8, 2


def write(path: str, train: int = 2048, test: int = 512, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((FEATURES, TARGETS)) / np.sqrt(FEATURES)

    def split(n: int) -> tuple[np.ndarray, np.ndarray]:
        x = rng.standard_normal((n, FEATURES))
        y = x @ w + 0.5 * np.maximum(x[:, :TARGETS], 0) + 0.1 * rng.standard_normal((n, TARGETS))
        return x.astype(np.float32), y.astype(np.float32)

    (x_train, y_train), (x_test, y_test) = split(train), split(test)
    np.savez(path, x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test)


if __name__ == "__main__":
    write(sys.argv[1] if len(sys.argv) > 1 else "housing.npz")
