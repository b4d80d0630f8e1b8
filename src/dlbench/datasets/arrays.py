"""The in-memory form in which every dataset reaches a framework.

Images are float32 NHWC in [0, 1] (channels last, the layout every loader
produces); each framework converts once, before any timing, to its preferred
layout. Labels are int64 class indices.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ArraySplit:
    x: np.ndarray  # (N, H, W, C) float32
    y: np.ndarray  # (N,) int64

    def __post_init__(self) -> None:
        if self.x.ndim != 4:
            raise ValueError(f"images must be NHWC (4-d), got shape {self.x.shape}")
        if self.x.dtype != np.float32:
            raise ValueError(f"images must be float32, got {self.x.dtype}")
        if self.y.shape != (self.x.shape[0],):
            raise ValueError(f"labels shape {self.y.shape} does not match {self.x.shape[0]} images")
        if self.y.dtype != np.int64:
            raise ValueError(f"labels must be int64, got {self.y.dtype}")

    def __len__(self) -> int:
        return int(self.x.shape[0])

    def head(self, n: int) -> "ArraySplit":
        """The first n samples (all when n <= 0 or n >= len)."""
        if n <= 0 or n >= len(self):
            return self
        return ArraySplit(self.x[:n], self.y[:n])


@dataclass(frozen=True)
class Arrays:
    name: str
    train: ArraySplit
    test: ArraySplit
    num_classes: int

    @property
    def input_shape(self) -> tuple[int, int, int]:
        """(H, W, C) of one sample."""
        h, w, c = self.train.x.shape[1:]
        return int(h), int(w), int(c)
