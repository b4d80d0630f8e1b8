"""Flax linen ResNet (NHWC) shared by resnet18/50/152.

Convolutions carry torch's symmetric padding explicitly (k // 2 on each side);
the stem max-pool pads with -inf like torch. BatchNorm uses the running
averages when `deterministic` (evaluation) and batch statistics otherwise,
momentum 0.9 (torch's 0.1), epsilon 1e-5; the adapter threads its
"batch_stats" collection through the training step. Submodule names are
torchvision's state_dict prefixes with "_" for ".".
"""

from __future__ import annotations

from functools import partial

import flax.linen as nn
import jax
import jax.numpy as jnp

from dlbench.models._resnet import BN_EPSILON, BN_MOMENTUM_KERAS, EXPANSION, check_input, stages
from dlbench.models.spec import Shape

DEFAULT_KERNEL_INIT = nn.Conv.kernel_init
DEFAULT_BIAS_INIT = nn.Conv.bias_init


class Block(nn.Module):
    """A basic or bottleneck residual block (the kind is an attribute, so one class serves both)."""

    kind: str
    planes: int
    stride: int
    downsample: bool
    kernel_init: nn.initializers.Initializer = DEFAULT_KERNEL_INIT

    @nn.compact
    def __call__(self, x: jax.Array, deterministic: bool) -> jax.Array:
        bn = partial(nn.BatchNorm, use_running_average=deterministic, momentum=BN_MOMENTUM_KERAS, epsilon=BN_EPSILON)

        def conv(features: int, kernel: int, stride: int, name: str) -> nn.Conv:
            pad = kernel // 2
            return nn.Conv(
                features,
                (kernel, kernel),
                strides=(stride, stride),
                padding=((pad, pad), (pad, pad)),
                use_bias=False,
                kernel_init=self.kernel_init,
                name=name,
            )

        cout = self.planes * EXPANSION[self.kind]
        shortcut = x
        if self.downsample:
            shortcut = bn(name="downsample_1")(conv(cout, 1, self.stride, "downsample_0")(x))
        if self.kind == "basic":
            y = nn.relu(bn(name="bn1")(conv(self.planes, 3, self.stride, "conv1")(x)))
            y = bn(name="bn2")(conv(self.planes, 3, 1, "conv2")(y))
        else:
            y = nn.relu(bn(name="bn1")(conv(self.planes, 1, 1, "conv1")(x)))
            y = nn.relu(bn(name="bn2")(conv(self.planes, 3, self.stride, "conv2")(y)))  # v1.5 stride
            y = bn(name="bn3")(conv(cout, 1, 1, "conv3")(y))
        return nn.relu(y + shortcut)


class ResNet(nn.Module):
    classes: int
    block: str
    blocks: tuple[int, ...]
    width: int
    kernel_init: nn.initializers.Initializer = DEFAULT_KERNEL_INIT
    bias_init: nn.initializers.Initializer = DEFAULT_BIAS_INIT

    @nn.compact
    def __call__(self, x: jax.Array, deterministic: bool = True) -> jax.Array:
        x = nn.Conv(
            self.width,
            (7, 7),
            strides=(2, 2),
            padding=((3, 3), (3, 3)),
            use_bias=False,
            kernel_init=self.kernel_init,
            name="conv1",
        )(x)
        x = nn.BatchNorm(use_running_average=deterministic, momentum=BN_MOMENTUM_KERAS, epsilon=BN_EPSILON, name="bn1")(
            x
        )
        x = nn.max_pool(nn.relu(x), (3, 3), strides=(2, 2), padding=((1, 1), (1, 1)))
        for i, stage in enumerate(stages(self.block, self.blocks, self.width), start=1):
            for j, (_, planes, stride, down) in enumerate(stage):
                x = Block(self.block, planes, stride, down, self.kernel_init, name=f"layer{i}_{j}")(x, deterministic)
        x = jnp.mean(x, axis=(1, 2))
        return nn.Dense(self.classes, kernel_init=self.kernel_init, bias_init=self.bias_init, name="fc")(x)


def build_resnet(
    shape: Shape,
    classes: int,
    block: str,
    blocks: tuple[int, ...],
    width: int,
    *,
    kernel_init: nn.initializers.Initializer = DEFAULT_KERNEL_INIT,
    bias_init: nn.initializers.Initializer = DEFAULT_BIAS_INIT,
) -> ResNet:
    """The ResNet with `block` kind and per-stage `blocks` for NHWC input of `shape`."""
    reason = check_input(shape)
    if reason:
        raise ValueError(reason)
    stages(block, tuple(blocks), width)  # validates now rather than at init
    return ResNet(
        classes=classes, block=block, blocks=tuple(blocks), width=width, kernel_init=kernel_init, bias_init=bias_init
    )
