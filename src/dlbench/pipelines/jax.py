"""The JAX augmentation pipeline: one jitted function per batch, ``vmap`` of ``lax.dynamic_slice``.

The epoch's draws are put on the device once per epoch, cut into
``(steps, B)``; each batch is then one call of a compiled function that picks
row ``step`` of them, gathers the images, pads with ``jnp.pad``, crops every
sample with ``jax.vmap(lax.dynamic_slice)``, mirrors with ``jnp.where`` and
normalizes. ``step`` is a traced argument, so the function compiles once per
(data shape, batch size), not once per step. Calls are dispatched
asynchronously: the batches are ready when a consumer (or
``block_until_ready``) needs them.

Labels come out int32: JAX's default integer type while 64-bit mode is off.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dlbench.pipelines.params import EpochParams, check_params, check_stats, describe


@partial(jax.jit, static_argnames=("pad",))
def _augment(
    x: jax.Array,
    y: jax.Array,
    perm: jax.Array,
    dy: jax.Array,
    dx: jax.Array,
    flip: jax.Array,
    step: jax.Array,
    mean: jax.Array,
    std: jax.Array,
    *,
    pad: int,
) -> tuple[jax.Array, jax.Array]:
    _, h, w, c = x.shape
    idx = perm[step]
    padded = jnp.pad(x[idx], ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    crop = jax.vmap(lambda img, a, b: lax.dynamic_slice(img, (a, b, 0), (h, w, c)))(padded, dy[step], dx[step])
    crop = jnp.where(flip[step][:, None, None, None], crop[:, :, ::-1, :], crop)
    return (crop - mean) / std, y[idx]


@jax.jit
def _normalize(x: jax.Array, mean: jax.Array, std: jax.Array) -> jax.Array:
    return (x - mean) / std


class Augmenter:
    """Random crop (zero padding ``pad``) + horizontal flip + normalization on NHWC jax Arrays."""

    name = "jax"

    def __init__(
        self,
        mean: np.ndarray | list[float],
        std: np.ndarray | list[float],
        pad: int = 4,
        device: jax.Device | None = None,
    ) -> None:
        m, s = check_stats(mean, std)
        self.pad = pad
        self.device = device if device is not None else jax.devices()[0]
        self._mean = jax.device_put(m, self.device)  # (C,): broadcasts over channels-last
        self._std = jax.device_put(s, self.device)

    def prepare(self, x: np.ndarray, y: np.ndarray) -> tuple[jax.Array, jax.Array]:
        """NHWC numpy -> float32 images and int32 labels on the device (once, before timing)."""
        return (
            jax.device_put(np.asarray(x, dtype=np.float32), self.device),
            jax.device_put(np.asarray(y, dtype=np.int32), self.device),
        )

    def normalize(self, x: jax.Array) -> jax.Array:
        """``(x - mean) / std`` per channel, without augmentation (test data)."""
        return _normalize(x, self._mean, self._std)

    def epoch_batches(
        self, x: jax.Array, y: jax.Array, params: EpochParams, batch_size: int
    ) -> Iterator[tuple[jax.Array, jax.Array]]:
        """The epoch's full batches ``(xb (B, H, W, C), yb (B,))``, in epoch order."""
        check_params(params, int(x.shape[0]), self.pad)
        steps = params.steps(batch_size)
        used = steps * batch_size

        def put(a: np.ndarray, dtype: type) -> jax.Array:
            return jax.device_put(a[:used].astype(dtype).reshape(steps, batch_size), self.device)

        perm, dy, dx = put(params.perm, np.int32), put(params.dy, np.int32), put(params.dx, np.int32)
        flip = put(params.flip, np.bool_)
        for step in range(steps):
            yield _augment(x, y, perm, dy, dx, flip, step, self._mean, self._std, pad=self.pad)

    def settings(self) -> dict[str, object]:
        """What this pipeline does, for the fairness manifest."""
        return describe(
            self.name,
            np.asarray(self._mean),
            np.asarray(self._std),
            self.pad,
            jax=jax.__version__,
            device=str(self.device),
            implementation="one jitted call per batch: take, jnp.pad, vmap(lax."
            "dynamic_slice), jnp.where(flip, crop[:, :, ::-1]), normalize",
        )
