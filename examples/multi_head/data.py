"""Write a learnable dataset of two named outputs: `python data.py shop.npz`.

x: (N, 8) standard-normal features. Two targets per sample, one per output:
y_price: (N,) floats, a fixed linear map of the features plus a ReLU term and Gaussian
noise (sd 0.1): the best test MSE reachable is about the noise variance, 0.01, and
predicting the mean scores the targets' variance, about 0.55; y_kind: (N,) class ids
0..2, the largest of three fixed linear maps of the features (chance: about 1/3).
"""

from __future__ import annotations

import sys

import numpy as np

FEATURES, KINDS = 8, 3


def write(path: str, train: int = 2048, test: int = 512, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(FEATURES) / np.sqrt(FEATURES)
    kinds = rng.standard_normal((FEATURES, KINDS))

    def split(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        x = rng.standard_normal((n, FEATURES))
        price = x @ w + 0.5 * np.maximum(x[:, 0], 0) + 0.1 * rng.standard_normal(n)
        kind = np.argmax(x @ kinds, axis=1)
        return x.astype(np.float32), price.astype(np.float32), kind.astype(np.int64)

    (x_train, p_train, k_train), (x_test, p_test, k_test) = split(train), split(test)
    np.savez(
        path,
        x_train=x_train, y_train_price=p_train, y_train_kind=k_train,
        x_test=x_test, y_test_price=p_test, y_test_kind=k_test,
    )  # fmt: skip


if __name__ == "__main__":
    write(sys.argv[1] if len(sys.argv) > 1 else "shop.npz")
