"""The numpy augmentation pipeline: the reference every framework's pipeline must match.

Per batch: gather the batch's images (``x[perm[k:k+B]]``) into the interior of
a zero-padded buffer (padded once, reused), take every sample's crop with one
fancy-indexing gather of whole pixel-row windows, normalize in place, and
mirror the flipped samples with one masked assignment. No per-sample Python.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from dlbench.pipelines.params import EpochParams, check_params, check_stats, describe


class Augmenter:
    """Random crop (zero padding ``pad``) + horizontal flip + normalization, on NHWC numpy arrays.

    ``mean`` and ``std`` are per-channel statistics of the training split
    (``params.channel_stats``).
    """

    name = "numpy"

    def __init__(self, mean: np.ndarray | list[float], std: np.ndarray | list[float], pad: int = 4) -> None:
        self.mean, self.std = check_stats(mean, std)
        self.pad = pad

    def prepare(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The dataset as this pipeline holds it: C-contiguous float32 NHWC, int64 labels."""
        return np.ascontiguousarray(x, dtype=np.float32), np.ascontiguousarray(y, dtype=np.int64)

    def normalize(self, x: np.ndarray) -> np.ndarray:
        """``(x - mean) / std`` per channel, without augmentation (test data)."""
        return (x - self.mean) / self.std

    def epoch_batches(
        self, x: np.ndarray, y: np.ndarray, params: EpochParams, batch_size: int
    ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The epoch's full batches ``(xb (B, H, W, C) float32, yb (B,))``, in epoch order."""
        n, h, w, c = x.shape
        check_params(params, n, self.pad)
        p = self.pad
        # One padded buffer reused by every batch: its border stays zero, only
        # the interior is overwritten.
        padded = np.zeros((batch_size, h + 2 * p, w + 2 * p, c), dtype=np.float32)
        # Each padded pixel row as one vector of (W + 2p) * C floats, and every
        # window of W * C of them (a view): a crop is then H gathered windows,
        # each a contiguous copy. Gathering single pixels instead (one index per
        # element) measured 4x slower.
        row_windows = sliding_window_view(padded.reshape(batch_size, h + 2 * p, -1), w * c, axis=2)
        sample = np.arange(batch_size)[:, None]
        row_offsets = np.arange(h)
        # Normalizing rows of W * C values against tiled statistics keeps numpy's
        # inner loop long; broadcasting a (C,) vector makes it C elements long.
        mean, std = np.tile(self.mean, w), np.tile(self.std, w)
        for step in range(params.steps(batch_size)):
            sl = slice(step * batch_size, (step + 1) * batch_size)
            idx = params.perm[sl]
            padded[:, p : p + h, p : p + w] = x[idx]
            rows = params.dy[sl, None] + row_offsets  # (B, H)
            xb = row_windows[sample, rows, (params.dx[sl] * c)[:, None]]  # (B, H, W * C), a copy
            xb -= mean
            xb /= std
            xb = xb.reshape(batch_size, h, w, c)
            flip = params.flip[sl]
            xb[flip] = xb[flip, :, ::-1]  # mirror the selected samples' columns
            yield xb, y[idx]

    def settings(self) -> dict[str, object]:
        """What this pipeline does, for the fairness manifest."""
        return describe(
            self.name,
            self.mean,
            self.std,
            self.pad,
            numpy=np.__version__,
            implementation="per batch: gather into a reused zero-padded buffer, one "
            "fancy-indexing gather of row windows, normalize in place, "
            "masked flip",
        )
