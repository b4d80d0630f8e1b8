"""`dsconv` in Flax linen: channels-last (N, H, W, C) input, logits out.

`deterministic` switches batch norm between batch statistics (training) and
running averages (evaluation); dlbench passes it to every network. kernel_init /
bias_init carry dlbench's init scheme.
"""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax

BN = {"momentum": 0.9, "epsilon": 1e-5}


class DSConv(nn.Module):
    classes: int
    width: int = 32
    kernel_init: Any = nn.linear.default_kernel_init
    bias_init: Any = nn.initializers.zeros_init()

    def conv_bn_relu(self, x: jax.Array, filters: int, size: int, train: bool, stride: int = 1, groups: int = 1) -> Any:
        x = nn.Conv(
            filters,
            (size, size),
            strides=stride,
            # size // 2 zeros on every side, as torch's padding: "SAME" at stride 2 pads
            # only the bottom and right of an even-sized input (a different network).
            padding=[(size // 2, size // 2)] * 2,
            feature_group_count=groups,
            use_bias=False,
            kernel_init=self.kernel_init,
        )(x)
        x = nn.BatchNorm(use_running_average=not train, **BN)(x)
        return nn.relu(x)

    @nn.compact
    def __call__(self, x: jax.Array, deterministic: bool = True) -> jax.Array:
        train = not deterministic
        w = self.width
        x = self.conv_bn_relu(x, w, 3, train)
        for c_in, c_out in ((w, 2 * w), (2 * w, 4 * w)):
            x = self.conv_bn_relu(x, c_in, 3, train, stride=2, groups=c_in)  # depthwise
            x = self.conv_bn_relu(x, c_out, 1, train)  # pointwise
        x = x.mean(axis=(1, 2))  # global average pooling
        return nn.Dense(self.classes, kernel_init=self.kernel_init, bias_init=self.bias_init)(x)


def build(
    input_shape: tuple[int, int, int],
    num_classes: int,
    kernel_init: Any = nn.linear.default_kernel_init,
    bias_init: Any = nn.initializers.zeros_init(),
    width: int = 32,
) -> DSConv:
    return DSConv(classes=num_classes, width=width, kernel_init=kernel_init, bias_init=bias_init)
