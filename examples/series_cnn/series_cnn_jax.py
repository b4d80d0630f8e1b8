"""`series_cnn` in Flax linen: channels-last (N, L, C) input, logits out.

dlbench passes kernel_init / bias_init for its init scheme; when it passes None,
Flax's own defaults apply.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from flax import linen as nn

KERNEL = 5


class SeriesCNN(nn.Module):
    num_classes: int
    width: int
    kernel_init: Any = None
    bias_init: Any = None

    @nn.compact
    def __call__(self, x: jnp.ndarray, deterministic: bool = True) -> jnp.ndarray:
        init = {"kernel_init": self.kernel_init} if self.kernel_init is not None else {}
        if self.bias_init is not None:
            init["bias_init"] = self.bias_init
        x = nn.relu(nn.Conv(self.width, (KERNEL,), padding="SAME", name="conv1", **init)(x))
        x = nn.max_pool(x, (2,), strides=(2,))
        x = nn.relu(nn.Conv(2 * self.width, (KERNEL,), padding="SAME", name="conv2", **init)(x))
        return nn.Dense(self.num_classes, name="classifier", **init)(x.mean(axis=1))


def build(
    input_shape: tuple[int, int], num_classes: int, kernel_init: Any = None, bias_init: Any = None, width: int = 16
) -> nn.Module:
    return SeriesCNN(num_classes, width, kernel_init, bias_init)
