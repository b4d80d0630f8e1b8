"""`alexnet` in Flax linen (NHWC), plus the adaptive average pooling Flax lacks
(vgg16 uses it too).

Padding is written explicitly as torch's symmetric pairs; max-pools are VALID
(torch's floor). Dropout draws from the "dropout" RNG stream when
`deterministic=False`. Submodule names are torchvision's state_dict prefixes
with "_" for ".". Initializers are attributes so the adapter can choose
Glorot-uniform + zeros or Flax's own defaults.
"""

from __future__ import annotations

from functools import partial

import flax.linen as nn
import jax
import jax.numpy as jnp

from dlbench.models.alexnet import CONV_INDEX, DROPOUT, FC_INDEX, HIDDEN, POOL, SPEC, WIDTHS, adaptive_pool_weights
from dlbench.models.spec import Shape

DEFAULT_KERNEL_INIT = nn.Conv.kernel_init
DEFAULT_BIAS_INIT = nn.Conv.bias_init


def adaptive_avg_pool(x: jax.Array, out: int) -> jax.Array:
    """torch's AdaptiveAvgPool2d for NHWC `x`: identity when the map is already out x out,
    else the map contracted with the (constant) bin-averaging matrices of both axes."""
    h, w = x.shape[1], x.shape[2]
    if (h, w) == (out, out):
        return x
    rows = jnp.asarray(adaptive_pool_weights(h, out), x.dtype)
    cols = jnp.asarray(adaptive_pool_weights(w, out), x.dtype)
    return jnp.einsum("ih,nhwc,jw->nijc", rows, x, cols)


class AlexNet(nn.Module):
    classes: int
    widths: tuple[int, ...] = WIDTHS
    hidden: int = HIDDEN
    dropout: float = DROPOUT
    kernel_init: nn.initializers.Initializer = DEFAULT_KERNEL_INIT
    bias_init: nn.initializers.Initializer = DEFAULT_BIAS_INIT

    @nn.compact
    def __call__(self, x: jax.Array, deterministic: bool = True) -> jax.Array:
        conv = partial(nn.Conv, kernel_init=self.kernel_init, bias_init=self.bias_init)
        dense = partial(nn.Dense, kernel_init=self.kernel_init, bias_init=self.bias_init)
        pool = partial(nn.max_pool, window_shape=(3, 3), strides=(2, 2), padding="VALID")
        names = [f"features_{i}" for i in CONV_INDEX]
        x = nn.relu(conv(self.widths[0], (11, 11), strides=(4, 4), padding=((2, 2), (2, 2)), name=names[0])(x))
        x = pool(x)
        x = nn.relu(conv(self.widths[1], (5, 5), padding=((2, 2), (2, 2)), name=names[1])(x))
        x = pool(x)
        for width, name in zip(self.widths[2:], names[2:]):
            x = nn.relu(conv(width, (3, 3), padding=((1, 1), (1, 1)), name=name)(x))
        x = pool(x)
        x = adaptive_avg_pool(x, POOL)
        x = x.reshape((x.shape[0], -1))
        x = nn.Dropout(self.dropout, deterministic=deterministic)(x)
        x = nn.relu(dense(self.hidden, name=f"classifier_{FC_INDEX[0]}")(x))
        x = nn.Dropout(self.dropout, deterministic=deterministic)(x)
        x = nn.relu(dense(self.hidden, name=f"classifier_{FC_INDEX[1]}")(x))
        return dense(self.classes, name=f"classifier_{FC_INDEX[2]}")(x)


def build(
    shape: Shape,
    classes: int,
    *,
    kernel_init: nn.initializers.Initializer = DEFAULT_KERNEL_INIT,
    bias_init: nn.initializers.Initializer = DEFAULT_BIAS_INIT,
    widths: tuple[int, ...] = WIDTHS,
    hidden: int = HIDDEN,
    dropout: float = DROPOUT,
) -> AlexNet:
    """The network for NHWC input of `shape` (H, W, C) and `classes` outputs."""
    reason = SPEC.check_input(shape)
    if reason:
        raise ValueError(reason)
    if len(widths) != 5:
        raise ValueError(f"alexnet takes five conv widths; got {widths}")
    return AlexNet(
        classes=classes,
        widths=tuple(widths),
        hidden=hidden,
        dropout=dropout,
        kernel_init=kernel_init,
        bias_init=bias_init,
    )
