"""`mobilenet_v2` in Flax linen (NHWC), built from the block table in `dlbench.models.mobilenet_v2`.

Every conv gets explicit symmetric padding ((k-1)/2 on each side, as torch), so stride-2
convs sample the same grid as torch's. Depthwise convs are nn.Conv with
feature_group_count = channels. Batch norm uses the running statistics when
`deterministic` (evaluation) and updates "batch_stats" otherwise; dropout draws from
the "dropout" RNG stream in training.
"""

from __future__ import annotations

from collections.abc import Callable

import flax.linen as nn
import jax

from dlbench.models.mobilenet_v2 import BN_EPSILON, BN_MOMENTUM, DROPOUT, SPEC, blocks, last_channels, stem_channels
from dlbench.models.spec import Shape

DEFAULT_KERNEL_INIT = nn.Conv.kernel_init
DEFAULT_BIAS_INIT = nn.Conv.bias_init
Activation = Callable[[jax.Array], jax.Array] | None


def conv_bn(
    x: jax.Array,
    features: int,
    kernel: int,
    *,
    deterministic: bool,
    kernel_init: nn.initializers.Initializer,
    stride: int = 1,
    groups: int = 1,
    act: Activation = nn.relu6,
    eps: float = BN_EPSILON,
    momentum: float = BN_MOMENTUM,
) -> jax.Array:
    """Conv (no bias, symmetric padding) -> batch norm -> optional activation. Called
    inside a parent's compact __call__, so its layers become the parent's submodules."""
    p = (kernel - 1) // 2
    x = nn.Conv(
        features,
        (kernel, kernel),
        strides=stride,
        padding=((p, p), (p, p)),
        feature_group_count=groups,
        use_bias=False,
        kernel_init=kernel_init,
    )(x)
    x = nn.BatchNorm(use_running_average=deterministic, momentum=momentum, epsilon=eps)(x)
    return act(x) if act is not None else x


class MobileNetV2(nn.Module):
    classes: int
    width_mult: float = 1.0
    depth_mult: float = 1.0
    bn_momentum: float = BN_MOMENTUM
    kernel_init: nn.initializers.Initializer = DEFAULT_KERNEL_INIT
    bias_init: nn.initializers.Initializer = DEFAULT_BIAS_INIT

    @nn.compact
    def __call__(self, x: jax.Array, deterministic: bool = True) -> jax.Array:
        kw = dict(deterministic=deterministic, kernel_init=self.kernel_init, momentum=self.bn_momentum)
        x = conv_bn(x, stem_channels(self.width_mult), 3, stride=2, **kw)
        for b in blocks(self.width_mult, self.depth_mult):
            y = conv_bn(x, b.hidden, 1, **kw) if b.expand != 1 else x
            y = conv_bn(y, b.hidden, 3, stride=b.stride, groups=b.hidden, **kw)
            y = conv_bn(y, b.out, 1, act=None, **kw)  # linear bottleneck
            x = x + y if b.residual else y
        x = conv_bn(x, last_channels(self.width_mult), 1, **kw)
        x = x.mean(axis=(1, 2))  # global average pool
        x = nn.Dropout(DROPOUT, deterministic=deterministic)(x)
        return nn.Dense(self.classes, kernel_init=self.kernel_init, bias_init=self.bias_init, name="classifier")(x)


def build(
    shape: Shape,
    classes: int,
    *,
    kernel_init: nn.initializers.Initializer = DEFAULT_KERNEL_INIT,
    bias_init: nn.initializers.Initializer = DEFAULT_BIAS_INIT,
    width_mult: float = 1.0,
    depth_mult: float = 1.0,
    bn_momentum: float = BN_MOMENTUM,
) -> MobileNetV2:
    reason = SPEC.check_input(shape)
    if reason:
        raise ValueError(reason)
    return MobileNetV2(classes, width_mult, depth_mult, bn_momentum, kernel_init, bias_init)
