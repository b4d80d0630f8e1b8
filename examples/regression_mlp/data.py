"""Write a learnable regression dataset of two named inputs: `python data.py sales.npz`.

numeric: (N, 6) standard-normal features; category: (N, 1) integer ids of 8 kinds;
y: (N, 2) float targets, a fixed linear map of the numbers, a ReLU term, an offset per
category and Gaussian noise (sd 0.1). The best test MSE reachable is about the noise
variance, 0.01; predicting the mean scores the targets' variance, about 2.
"""

from __future__ import annotations

import sys

import numpy as np

FEATURES, CATEGORIES, TARGETS = 6, 8, 2


def write(path: str, train: int = 2048, test: int = 512, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((FEATURES, TARGETS)) / np.sqrt(FEATURES)
    offset = rng.standard_normal((CATEGORIES, TARGETS))

    def split(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        numeric = rng.standard_normal((n, FEATURES))
        category = rng.integers(0, CATEGORIES, (n, 1))
        y = numeric @ w + 0.5 * np.maximum(numeric[:, :TARGETS], 0) + offset[category[:, 0]]
        y += 0.1 * rng.standard_normal((n, TARGETS))
        return numeric.astype(np.float32), category.astype(np.int64), y.astype(np.float32)

    (n_train, c_train, y_train), (n_test, c_test, y_test) = split(train), split(test)
    np.savez(
        path,
        x_train_numeric=n_train, x_train_category=c_train, y_train=y_train,
        x_test_numeric=n_test, x_test_category=c_test, y_test=y_test,
    )  # fmt: skip


if __name__ == "__main__":
    write(sys.argv[1] if len(sys.argv) > 1 else "sales.npz")
