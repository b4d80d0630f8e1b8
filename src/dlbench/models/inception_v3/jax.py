"""`inception_v3` in Flax linen (NHWC), built from the branch tables in `dlbench.models.inception_v3`.

Convs carry the spec's explicit symmetric padding; the 3x3 average pool pads 1 and
counts the padding (count_include_pad=True, as torch). Batch norm uses running
statistics when `deterministic` and updates "batch_stats" otherwise.
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

from dlbench.models.inception_v3 import AVG, BN_EPSILON, BN_MOMENTUM, DROPOUT, SPEC, Branch, Conv, Split, blocks, stem
from dlbench.models.mobilenet_v2.jax import DEFAULT_BIAS_INIT, DEFAULT_KERNEL_INIT
from dlbench.models.spec import Shape


class InceptionV3(nn.Module):
    classes: int
    width_mult: float = 1.0
    blocks_a: int = 3
    blocks_c: int = 4
    blocks_e: int = 2
    bn_momentum: float = BN_MOMENTUM
    kernel_init: nn.initializers.Initializer = DEFAULT_KERNEL_INIT
    bias_init: nn.initializers.Initializer = DEFAULT_BIAS_INIT

    def _conv(self, x: jax.Array, c: Conv, deterministic: bool) -> jax.Array:
        x = nn.Conv(
            c.out,
            (c.kh, c.kw),
            strides=c.stride,
            padding=((c.ph, c.ph), (c.pw, c.pw)),
            use_bias=False,
            kernel_init=self.kernel_init,
        )(x)
        x = nn.BatchNorm(use_running_average=deterministic, momentum=self.bn_momentum, epsilon=BN_EPSILON)(x)
        return nn.relu(x)

    def _branch(self, x: jax.Array, steps: Branch, deterministic: bool) -> jax.Array:
        for step in steps:
            if isinstance(step, Conv):
                x = self._conv(x, step, deterministic)
            elif isinstance(step, Split):
                x = jnp.concatenate([self._conv(x, c, deterministic) for c in step.convs], axis=-1)
            elif step == AVG:
                x = nn.avg_pool(x, (3, 3), strides=(1, 1), padding=((1, 1), (1, 1)), count_include_pad=True)
            else:
                x = nn.max_pool(x, (3, 3), strides=(2, 2))
        return x

    @nn.compact
    def __call__(self, x: jax.Array, deterministic: bool = True) -> jax.Array:
        x = self._branch(x, stem(self.width_mult), deterministic)
        for block in blocks(self.width_mult, self.blocks_a, self.blocks_c, self.blocks_e):
            x = jnp.concatenate([self._branch(x, b, deterministic) for b in block], axis=-1)
        x = x.mean(axis=(1, 2))
        x = nn.Dropout(DROPOUT, deterministic=deterministic)(x)
        return nn.Dense(self.classes, kernel_init=self.kernel_init, bias_init=self.bias_init, name="classifier")(x)


def build(
    shape: Shape,
    classes: int,
    *,
    kernel_init: nn.initializers.Initializer = DEFAULT_KERNEL_INIT,
    bias_init: nn.initializers.Initializer = DEFAULT_BIAS_INIT,
    width_mult: float = 1.0,
    blocks_a: int = 3,
    blocks_c: int = 4,
    blocks_e: int = 2,
    bn_momentum: float = BN_MOMENTUM,
) -> InceptionV3:
    reason = SPEC.check_input(shape)
    if reason:
        raise ValueError(reason)
    return InceptionV3(classes, width_mult, blocks_a, blocks_c, blocks_e, bn_momentum, kernel_init, bias_init)
