"""Write token sequences from a random Markov chain: `python data.py markov.npz`.

Each token has one favoured successor, taken with probability 0.8, else a uniform
draw: the best possible next-token accuracy is about 0.8 + 0.2 / vocab and the
lowest perplexity about exp(H) with H the chain's entropy per step (about 2.0
for vocab 32). x = s[:T] and y = s[1:T+1], both (N, T) int64.
"""

from __future__ import annotations

import sys

import numpy as np

VOCAB, LENGTH, FOLLOW = 32, 16, 0.8


def write(path: str, train: int = 1024, test: int = 256, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    successor = rng.permutation(VOCAB)

    def split(n: int) -> tuple[np.ndarray, np.ndarray]:
        s = np.empty((n, LENGTH + 1), dtype=np.int64)
        s[:, 0] = rng.integers(0, VOCAB, n)
        for i in range(LENGTH):
            follow = rng.random(n) < FOLLOW
            s[:, i + 1] = np.where(follow, successor[s[:, i]], rng.integers(0, VOCAB, n))
        return s[:, :LENGTH], s[:, 1:]

    (x_train, y_train), (x_test, y_test) = split(train), split(test)
    np.savez(path, x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test)


if __name__ == "__main__":
    write(sys.argv[1] if len(sys.argv) > 1 else "markov.npz")
