"""Synthetic data: random images and labels generated in memory.

The dummy-data design of the seed study 001: uniform [0, 1) float32 images of a
chosen shape and uniformly random labels. It measures speed without any file
I/O or download and lets the image size vary freely; accuracy on it means
nothing (labels are random), which is the point. Generated from
``np.random.default_rng(seed)`` so a trial's data is reproducible from its seed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dlbench.datasets.arrays import Arrays, ArraySplit

NAME = "synthetic"


def _positive_int(value: object) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool) and value > 0


@dataclass(frozen=True)
class SyntheticOptions:
    """Shape (H, W, C), class count and split sizes of a synthetic dataset."""

    shape: tuple[int, int, int] = (28, 28, 1)
    classes: int = 10
    train_size: int = 6000
    test_size: int = 1000

    def __post_init__(self) -> None:
        shape = tuple(self.shape) if isinstance(self.shape, list | tuple) else self.shape
        if not (isinstance(shape, tuple) and len(shape) == 3 and all(map(_positive_int, shape))):
            raise ValueError(f"synthetic shape must be three positive integers (H, W, C), "
                             f"got {self.shape!r}")
        # A list from TOML becomes a tuple so that the options stay hashable.
        object.__setattr__(self, "shape", tuple(int(s) for s in shape))
        if not isinstance(self.classes, int | np.integer) or isinstance(self.classes, bool) \
                or self.classes < 2:
            raise ValueError(f"synthetic classes must be an integer >= 2, got {self.classes!r}")
        for field in ("train_size", "test_size"):
            value = getattr(self, field)
            if not _positive_int(value):
                raise ValueError(f"synthetic {field} must be a positive integer, got {value!r}")
        for field in ("classes", "train_size", "test_size"):  # numpy ints -> int
            object.__setattr__(self, field, int(getattr(self, field)))


def load(options: SyntheticOptions | None = None, seed: int = 0) -> Arrays:
    """Random train and test splits for ``options`` (defaults when None), from ``seed``."""
    opts = options if options is not None else SyntheticOptions()
    rng = np.random.default_rng(seed)

    def split(n: int) -> ArraySplit:
        x = rng.random((n, *opts.shape), dtype=np.float32)
        y = rng.integers(0, opts.classes, size=n, dtype=np.int64)
        return ArraySplit(x, y)

    train = split(opts.train_size)
    test = split(opts.test_size)
    return Arrays(NAME, train, test, opts.classes)
