"""The TensorFlow augmentation pipeline: a ``tf.data`` input pipeline.

The dataset is sliced over the epoch's draws, ``from_tensor_slices((perm, dy,
dx, flip))``; each element's image and label are gathered from the preloaded
tensors (so no per-epoch copy of the whole set is made), then augmented with
``tf.pad`` and ``tf.gather`` / ``tf.slice`` and ``tf.image.flip_left_right``, normalized, batched
(``drop_remainder=True``) and prefetched with ``AUTOTUNE``.

Two orders of the same ops, both in the tf.data guide:

- ``vectorized=True`` (default): ``batch`` then ``map`` — the guide's advice
  for cheap per-element functions ("vectorizing mapping"); the crop is a
  ``tf.gather(..., batch_dims=1)`` of each sample's rows, then of its columns
  (in reverse order for a flipped sample).
- ``vectorized=False``: the textbook ``map`` (one image, ``tf.slice``) with
  ``num_parallel_calls=AUTOTUNE``, then ``batch``.

Both keep the element order (``deterministic=True``), so both equal the numpy
reference. tf.data runs on the host CPU whatever the training device (Keras
copies each batch to the accelerator), so ``prepare`` pins the data there.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from dlbench.pipelines.params import EpochParams, check_params, check_stats, describe


class Augmenter:
    """Random crop (zero padding ``pad``) + horizontal flip + normalization as a tf.data pipeline."""

    name = "tensorflow"

    def __init__(
        self, mean: np.ndarray | list[float], std: np.ndarray | list[float], pad: int = 4, vectorized: bool = True
    ) -> None:
        m, s = check_stats(mean, std)
        self.pad = pad
        self.vectorized = vectorized
        self._mean = tf.constant(m)  # (C,): broadcasts over the channels-last axis
        self._std = tf.constant(s)

    def prepare(self, x: np.ndarray, y: np.ndarray) -> tuple[tf.Tensor, tf.Tensor]:
        """NHWC numpy -> float32 / int64 tensors in host memory, where tf.data works."""
        with tf.device("/CPU:0"):
            return (
                tf.convert_to_tensor(np.asarray(x, dtype=np.float32)),
                tf.convert_to_tensor(np.asarray(y, dtype=np.int64)),
            )

    def normalize(self, x: tf.Tensor) -> tf.Tensor:
        """``(x - mean) / std`` per channel, without augmentation (test data)."""
        return (x - self._mean) / self._std

    def epoch_batches(self, x: tf.Tensor, y: tf.Tensor, params: EpochParams, batch_size: int) -> tf.data.Dataset:
        """A dataset of the epoch's full batches ``(xb (B, H, W, C), yb (B,))``, in epoch order."""
        n, h, w, c = (int(d) for d in x.shape)
        check_params(params, n, self.pad)
        p, mean, std = self.pad, self._mean, self._std
        draws = (params.perm.astype(np.int32), params.dy.astype(np.int32), params.dx.astype(np.int32), params.flip)
        ds = tf.data.Dataset.from_tensor_slices(draws)

        def one(i: tf.Tensor, a: tf.Tensor, b: tf.Tensor, f: tf.Tensor):
            img = tf.pad(tf.gather(x, i), [[p, p], [p, p], [0, 0]])
            img = tf.slice(img, tf.stack([a, b, 0]), [h, w, c])
            img = tf.cond(f, lambda: tf.image.flip_left_right(img), lambda: img)
            return (img - mean) / std, tf.gather(y, i)

        def batch(i: tf.Tensor, a: tf.Tensor, b: tf.Tensor, f: tf.Tensor):
            padded = tf.pad(tf.gather(x, i), [[0, 0], [p, p], [p, p], [0, 0]])
            rows = a[:, None] + tf.range(h)  # (B, H) rows of each sample's window
            cols = b[:, None] + tf.range(w)  # (B, W)
            # A flipped sample reads its window's columns right to left: folding
            # the flip into the gather measured 2x faster than
            # tf.where(f, tf.image.flip_left_right(crop), crop) on the crops.
            cols = tf.where(f[:, None], tf.reverse(cols, [1]), cols)
            crop = tf.gather(padded, rows, axis=1, batch_dims=1)  # (B, H, W + 2p, C)
            crop = tf.gather(crop, cols, axis=2, batch_dims=1)  # (B, H, W, C)
            return (crop - mean) / std, tf.gather(y, i)

        if self.vectorized:
            ds = ds.batch(batch_size, drop_remainder=True)
            ds = ds.map(batch, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        else:
            ds = ds.map(one, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
            ds = ds.batch(batch_size, drop_remainder=True)
        return ds.prefetch(tf.data.AUTOTUNE)

    def settings(self) -> dict[str, object]:
        """What this pipeline does, for the fairness manifest."""
        order = (
            (
                "from_tensor_slices(draws) -> batch(drop_remainder) -> map(gather, pad, "
                "gather rows, gather cols reversed when flipped) -> prefetch(AUTOTUNE)"
            )
            if self.vectorized
            else (
                "from_tensor_slices(draws) -> map(gather, pad, slice, flip_left_right; AUTOTUNE) "
                "-> batch(drop_remainder) -> prefetch(AUTOTUNE)"
            )
        )
        return describe(
            self.name,
            self._mean.numpy(),
            self._std.numpy(),
            self.pad,
            tensorflow=tf.__version__,
            vectorized=self.vectorized,
            implementation=order,
        )
