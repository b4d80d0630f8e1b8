"""`mobilenet_v2` in Keras 3 (functional API, NHWC), built from the block table in
`dlbench.models.mobilenet_v2`.

Stride-2 convs get an explicit ZeroPadding2D((k-1)/2) and "valid" padding: Keras'
"same" pads 0 before and 1 after on even inputs, torch pads 1 on both sides, and the
two grids would sample different pixels. Stride-1 "same" is symmetric for odd kernels.
Depthwise convs are DepthwiseConv2D, whose kernel initializer is `depthwise_initializer`.
"""

from __future__ import annotations

from typing import Any

import keras

from dlbench.models.mlp.tensorflow import init_kwargs
from dlbench.models.mobilenet_v2 import BN_EPSILON, BN_MOMENTUM, DROPOUT, SPEC, blocks, last_channels, stem_channels

layers = keras.layers


def conv_bn(
    x: Any,
    filters: int,
    kernel: int,
    init: dict[str, Any],
    stride: int = 1,
    depthwise: bool = False,
    act: str | None = "relu6",
    eps: float = BN_EPSILON,
    momentum: float = BN_MOMENTUM,
) -> Any:
    """Conv (no bias, torch-style symmetric padding) -> batch norm -> optional activation."""
    padding = "same"
    if stride > 1 and kernel > 1:
        x = layers.ZeroPadding2D((kernel - 1) // 2)(x)
        padding = "valid"
    if depthwise:
        dw_init = {"depthwise_initializer": init["kernel_initializer"]} if "kernel_initializer" in init else {}
        x = layers.DepthwiseConv2D(kernel, stride, padding=padding, use_bias=False, **dw_init)(x)
    else:
        kernel_init = {k: v for k, v in init.items() if k == "kernel_initializer"}
        x = layers.Conv2D(filters, kernel, stride, padding=padding, use_bias=False, **kernel_init)(x)
    x = layers.BatchNormalization(momentum=momentum, epsilon=eps)(x)
    return layers.Activation(act)(x) if act else x


def build(
    input_shape: tuple[int, int, int],
    num_classes: int,
    kernel_initializer: Any = None,
    bias_initializer: Any = None,
    width_mult: float = 1.0,
    depth_mult: float = 1.0,
    bn_momentum: float = BN_MOMENTUM,
) -> keras.Model:
    reason = SPEC.check_input(input_shape)
    if reason:
        raise ValueError(reason)
    init = init_kwargs(kernel_initializer, bias_initializer)
    m = bn_momentum
    inputs = keras.Input(shape=input_shape, name="image")
    x = conv_bn(inputs, stem_channels(width_mult), 3, init, stride=2, momentum=m)
    for b in blocks(width_mult, depth_mult):
        y = conv_bn(x, b.hidden, 1, init, momentum=m) if b.expand != 1 else x
        y = conv_bn(y, b.hidden, 3, init, stride=b.stride, depthwise=True, momentum=m)
        y = conv_bn(y, b.out, 1, init, act=None, momentum=m)  # linear bottleneck
        x = layers.Add()([x, y]) if b.residual else y
    x = conv_bn(x, last_channels(width_mult), 1, init, momentum=m)
    x = layers.GlobalAveragePooling2D()(x)
    x = layers.Dropout(DROPOUT)(x)
    logits = layers.Dense(num_classes, name="classifier", **init)(x)
    return keras.Model(inputs, logits, name="mobilenet_v2")
