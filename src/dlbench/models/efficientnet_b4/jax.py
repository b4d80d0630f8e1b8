"""`efficientnet_b4` in Flax linen: the shared EfficientNet (`dlbench.models._efficientnet.jax`)
at B4's coefficients, which arrive as the spec's default options."""

from __future__ import annotations

import flax.linen as nn

from dlbench.models._efficientnet import jax as efficientnet
from dlbench.models.efficientnet_b4 import SPEC
from dlbench.models.mobilenet_v2.jax import DEFAULT_BIAS_INIT, DEFAULT_KERNEL_INIT
from dlbench.models.spec import Shape


def build(
    shape: Shape,
    classes: int,
    *,
    kernel_init: nn.initializers.Initializer = DEFAULT_KERNEL_INIT,
    bias_init: nn.initializers.Initializer = DEFAULT_BIAS_INIT,
    **options: float,
) -> efficientnet.EfficientNet:
    return efficientnet.build(
        shape, classes, kernel_init=kernel_init, bias_init=bias_init, **SPEC.resolve_options(options)
    )
