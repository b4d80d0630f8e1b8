"""EfficientNet in Flax linen (NHWC), shared by `efficientnet_b0` and `efficientnet_b4`:
built from the block list in `dlbench.models._efficientnet`.

Padding as in torch (see `dlbench.models.mobilenet_v2.jax.conv_bn`). Stochastic depth
is nn.Dropout broadcast over (H, W, C): one keep/drop draw per sample for the whole
residual branch, survivors scaled by 1 / (1 - rate), identity when deterministic.
"""

from __future__ import annotations

import flax.linen as nn
import jax

from dlbench.models._efficientnet import BN_EPSILON, blocks, check_input, head_channels, stem_channels
from dlbench.models.mobilenet_v2.jax import DEFAULT_BIAS_INIT, DEFAULT_KERNEL_INIT, conv_bn
from dlbench.models.spec import Shape


class EfficientNet(nn.Module):
    classes: int
    width_mult: float
    depth_mult: float
    dropout: float
    stochastic_depth: float
    bn_momentum: float
    kernel_init: nn.initializers.Initializer = DEFAULT_KERNEL_INIT
    bias_init: nn.initializers.Initializer = DEFAULT_BIAS_INIT

    @nn.compact
    def __call__(self, x: jax.Array, deterministic: bool = True) -> jax.Array:
        kw = dict(
            deterministic=deterministic,
            kernel_init=self.kernel_init,
            act=nn.silu,
            eps=BN_EPSILON,
            momentum=self.bn_momentum,
        )
        inits = dict(kernel_init=self.kernel_init, bias_init=self.bias_init)
        x = conv_bn(x, stem_channels(self.width_mult), 3, stride=2, **kw)
        for b in blocks(self.width_mult, self.depth_mult, self.stochastic_depth):
            e = b.expanded
            y = conv_bn(x, e, 1, **kw) if e != b.inp else x
            y = conv_bn(y, e, b.kernel, stride=b.stride, groups=e, **kw)
            # Squeeze-excitation: per-channel gates from the pooled features.
            s = y.mean(axis=(1, 2), keepdims=True)
            s = nn.silu(nn.Conv(b.squeeze, (1, 1), **inits)(s))
            y = y * nn.sigmoid(nn.Conv(e, (1, 1), **inits)(s))
            y = conv_bn(y, b.out, 1, **{**kw, "act": None})
            if b.residual:
                y = nn.Dropout(b.drop_rate, broadcast_dims=(1, 2, 3), deterministic=deterministic)(y)
                y = x + y
            x = y
        x = conv_bn(x, head_channels(self.width_mult), 1, **kw)
        x = x.mean(axis=(1, 2))
        x = nn.Dropout(self.dropout, deterministic=deterministic)(x)
        return nn.Dense(self.classes, name="classifier", **inits)(x)


def build(
    shape: Shape,
    classes: int,
    *,
    kernel_init: nn.initializers.Initializer = DEFAULT_KERNEL_INIT,
    bias_init: nn.initializers.Initializer = DEFAULT_BIAS_INIT,
    width_mult: float,
    depth_mult: float,
    dropout: float,
    stochastic_depth: float,
    bn_momentum: float,
) -> EfficientNet:
    reason = check_input(shape)
    if reason:
        raise ValueError(reason)
    return EfficientNet(classes, width_mult, depth_mult, dropout, stochastic_depth, bn_momentum, kernel_init, bias_init)
