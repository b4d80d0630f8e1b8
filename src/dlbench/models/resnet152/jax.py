"""Flax `resnet152`: the shared linen ResNet (`dlbench.models._resnet.jax`) with bottleneck blocks."""

from __future__ import annotations

import flax.linen as nn

from dlbench.models._resnet import WIDTH
from dlbench.models._resnet.jax import DEFAULT_BIAS_INIT, DEFAULT_KERNEL_INIT, ResNet, build_resnet
from dlbench.models.resnet152 import BLOCK, BLOCKS
from dlbench.models.spec import Shape


def build(
    shape: Shape,
    classes: int,
    *,
    kernel_init: nn.initializers.Initializer = DEFAULT_KERNEL_INIT,
    bias_init: nn.initializers.Initializer = DEFAULT_BIAS_INIT,
    blocks: tuple[int, ...] = BLOCKS,
    width: int = WIDTH,
) -> ResNet:
    return build_resnet(shape, classes, BLOCK, blocks, width, kernel_init=kernel_init, bias_init=bias_init)
