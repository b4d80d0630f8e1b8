"""EfficientNet in Keras 3 (functional API, NHWC), shared by `efficientnet_b0` and
`efficientnet_b4`: built from the block list in `dlbench.models._efficientnet`.

Padding as in torch (see `dlbench.models.mobilenet_v2.tensorflow.conv_bn`). Stochastic
depth is keras.applications' idiom: Dropout with noise_shape (batch, 1, 1, 1) drops a
sample's whole residual branch and scales survivors by 1 / (1 - rate), in training only.
"""

from __future__ import annotations

from typing import Any

import keras

from dlbench.models._efficientnet import BN_EPSILON, blocks, check_input, head_channels, stem_channels
from dlbench.models.mlp.tensorflow import init_kwargs
from dlbench.models.mobilenet_v2.tensorflow import conv_bn

layers = keras.layers


def _conv_bn(
    x: Any,
    filters: int,
    kernel: int,
    init: dict[str, Any],
    momentum: float,
    stride: int = 1,
    depthwise: bool = False,
    act: str | None = "silu",
) -> Any:
    return conv_bn(x, filters, kernel, init, stride, depthwise, act, eps=BN_EPSILON, momentum=momentum)


def _squeeze_excite(x: Any, channels: int, squeeze: int, init: dict[str, Any]) -> Any:
    s = layers.GlobalAveragePooling2D(keepdims=True)(x)
    s = layers.Conv2D(squeeze, 1, activation="silu", **init)(s)
    s = layers.Conv2D(channels, 1, activation="sigmoid", **init)(s)
    return layers.Multiply()([x, s])


def build(
    input_shape: tuple[int, int, int],
    num_classes: int,
    name: str,
    *,
    kernel_initializer: Any = None,
    bias_initializer: Any = None,
    width_mult: float,
    depth_mult: float,
    dropout: float,
    stochastic_depth: float,
    bn_momentum: float,
) -> keras.Model:
    reason = check_input(input_shape)
    if reason:
        raise ValueError(reason)
    init = init_kwargs(kernel_initializer, bias_initializer)
    m = bn_momentum
    inputs = keras.Input(shape=input_shape, name="image")
    x = _conv_bn(inputs, stem_channels(width_mult), 3, init, m, stride=2)
    for b in blocks(width_mult, depth_mult, stochastic_depth):
        e = b.expanded
        y = _conv_bn(x, e, 1, init, m) if e != b.inp else x
        y = _conv_bn(y, e, b.kernel, init, m, stride=b.stride, depthwise=True)
        y = _squeeze_excite(y, e, b.squeeze, init)
        y = _conv_bn(y, b.out, 1, init, m, act=None)
        if b.residual:
            if b.drop_rate > 0:
                y = layers.Dropout(b.drop_rate, noise_shape=(None, 1, 1, 1))(y)
            y = layers.Add()([x, y])
        x = y
    x = _conv_bn(x, head_channels(width_mult), 1, init, m)
    x = layers.GlobalAveragePooling2D()(x)
    x = layers.Dropout(dropout)(x)
    logits = layers.Dense(num_classes, name="classifier", **init)(x)
    return keras.Model(inputs, logits, name=name)
