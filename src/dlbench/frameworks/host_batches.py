"""Inference batches cut from a host (numpy) array, shared by the numpy and sklearn adapters.

Batches are made contiguous ahead of time so that timed inference calls do no
copying; only full batches are kept (the protocol's partial-batch rule).
"""

from __future__ import annotations

import numpy as np


class HostBatches:
    def __init__(self) -> None:
        self._batches: dict[int, list[np.ndarray]] = {}

    def prepare(self, x: np.ndarray, batch_size: int) -> int:
        full = len(x) // batch_size
        self._batches[batch_size] = [
            np.ascontiguousarray(x[i * batch_size : (i + 1) * batch_size]) for i in range(full)
        ]
        return full

    def get(self, batch_size: int) -> list[np.ndarray]:
        if batch_size not in self._batches:
            raise RuntimeError(f"call prepare_infer({batch_size}) before inference at that batch size")
        return self._batches[batch_size]
