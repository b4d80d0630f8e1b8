"""`vgg16` in Flax linen (NHWC).

3x3 convolutions with torch's explicit padding 1, 2x2/2 VALID max-pools, the
adaptive average pool of `dlbench.models.alexnet.jax`, then the classifier.
Dropout draws from the "dropout" RNG stream when `deterministic=False`.
Submodule names are torchvision's state_dict prefixes with "_" for ".".
"""

from __future__ import annotations

from functools import partial

import flax.linen as nn
import jax

from dlbench.models.alexnet.jax import DEFAULT_BIAS_INIT, DEFAULT_KERNEL_INIT, adaptive_avg_pool
from dlbench.models.spec import Shape
from dlbench.models.vgg16 import CONVS_PER_STAGE, DROPOUT, FC_INDEX, HIDDEN, POOL, SPEC, WIDTHS, plan


class VGG(nn.Module):
    classes: int
    widths: tuple[int, ...] = WIDTHS
    convs: tuple[int, ...] = CONVS_PER_STAGE
    hidden: int = HIDDEN
    dropout: float = DROPOUT
    kernel_init: nn.initializers.Initializer = DEFAULT_KERNEL_INIT
    bias_init: nn.initializers.Initializer = DEFAULT_BIAS_INIT

    @nn.compact
    def __call__(self, x: jax.Array, deterministic: bool = True) -> jax.Array:
        inits = dict(kernel_init=self.kernel_init, bias_init=self.bias_init)
        for kind, index, filters in plan(self.widths, self.convs):
            if kind == "conv":
                conv = nn.Conv(filters, (3, 3), padding=((1, 1), (1, 1)), name=f"features_{index}", **inits)
                x = nn.relu(conv(x))
            else:
                x = nn.max_pool(x, (2, 2), strides=(2, 2), padding="VALID")
        x = adaptive_avg_pool(x, POOL)
        x = x.reshape((x.shape[0], -1))
        dropout = partial(nn.Dropout, self.dropout, deterministic=deterministic)
        x = dropout()(nn.relu(nn.Dense(self.hidden, name=f"classifier_{FC_INDEX[0]}", **inits)(x)))
        x = dropout()(nn.relu(nn.Dense(self.hidden, name=f"classifier_{FC_INDEX[1]}", **inits)(x)))
        return nn.Dense(self.classes, name=f"classifier_{FC_INDEX[2]}", **inits)(x)


def build(
    shape: Shape,
    classes: int,
    *,
    kernel_init: nn.initializers.Initializer = DEFAULT_KERNEL_INIT,
    bias_init: nn.initializers.Initializer = DEFAULT_BIAS_INIT,
    widths: tuple[int, ...] = WIDTHS,
    convs: tuple[int, ...] = CONVS_PER_STAGE,
    hidden: int = HIDDEN,
    dropout: float = DROPOUT,
) -> VGG:
    """The network for NHWC input of `shape` (H, W, C) and `classes` outputs."""
    reason = SPEC.check_input(shape)
    if reason:
        raise ValueError(reason)
    plan(widths, convs)  # validates the number of stages before Flax defers the error to init
    return VGG(
        classes=classes,
        widths=tuple(widths),
        convs=tuple(convs),
        hidden=hidden,
        dropout=dropout,
        kernel_init=kernel_init,
        bias_init=bias_init,
    )
