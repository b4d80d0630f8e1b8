"""Keras 3 ResNet (functional API, NHWC) shared by resnet18/50/152.

Each convolution: `ZeroPadding2D` + valid conv where torch pads a strided
window (7x7/2 stem, 3x3/2), because Keras' "same" pads (0, 1) there on even
inputs; "same" for 3x3/1, which is symmetric. The stem max-pool pads with
zeros, not -inf as torch does: its input is post-ReLU (>= 0), so the result is
identical (keras.applications does the same). BN: epsilon 1e-5, momentum 0.9
(torch's 0.1). Layer names are torchvision's state_dict prefixes with "_"
for ".".
"""

from __future__ import annotations

from typing import Any

import keras

from dlbench.models._resnet import BN_EPSILON, BN_MOMENTUM_KERAS, EXPANSION, check_input, stages
from dlbench.models.mlp.tensorflow import init_kwargs

layers = keras.layers


def _conv_bn(x: Any, filters: int, kernel: int, stride: int, conv_name: str, bn_name: str, init: dict[str, Any]) -> Any:
    """Convolution (no bias) with torch's symmetric padding, then batch norm (no activation)."""
    pad = kernel // 2
    if pad and stride > 1:
        x = layers.ZeroPadding2D(pad, name=f"{conv_name}_pad")(x)
        padding = "valid"
    else:
        padding = "same"  # symmetric at stride 1; a 1x1 kernel pads nothing
    x = layers.Conv2D(filters, kernel, strides=stride, padding=padding, use_bias=False, name=conv_name, **init)(x)
    return layers.BatchNormalization(momentum=BN_MOMENTUM_KERAS, epsilon=BN_EPSILON, name=bn_name)(x)


def _block(x: Any, block: str, planes: int, stride: int, downsample: bool, name: str, init: dict[str, Any]) -> Any:
    if downsample:
        cout = planes * EXPANSION[block]
        shortcut = _conv_bn(x, cout, 1, stride, f"{name}_downsample_0", f"{name}_downsample_1", init)
    else:
        shortcut = x
    if block == "basic":
        y = _conv_bn(x, planes, 3, stride, f"{name}_conv1", f"{name}_bn1", init)
        y = layers.ReLU(name=f"{name}_relu1")(y)
        y = _conv_bn(y, planes, 3, 1, f"{name}_conv2", f"{name}_bn2", init)
    else:
        y = _conv_bn(x, planes, 1, 1, f"{name}_conv1", f"{name}_bn1", init)
        y = layers.ReLU(name=f"{name}_relu1")(y)
        y = _conv_bn(y, planes, 3, stride, f"{name}_conv2", f"{name}_bn2", init)  # v1.5 stride
        y = layers.ReLU(name=f"{name}_relu2")(y)
        y = _conv_bn(y, planes * EXPANSION[block], 1, 1, f"{name}_conv3", f"{name}_bn3", init)
    y = layers.Add(name=f"{name}_add")([y, shortcut])
    return layers.ReLU(name=f"{name}_out")(y)


def build_resnet(
    input_shape: tuple[int, int, int],
    num_classes: int,
    block: str,
    blocks: tuple[int, ...],
    width: int,
    kernel_initializer: Any = None,
    bias_initializer: Any = None,
    name: str = "resnet",
) -> keras.Model:
    """The ResNet with `block` kind and per-stage `blocks` for (H, W, C) inputs."""
    reason = check_input(input_shape)
    if reason:
        raise ValueError(reason)
    init = init_kwargs(kernel_initializer, bias_initializer)
    inputs = keras.Input(shape=input_shape, name="image")
    x = _conv_bn(inputs, width, 7, 2, "conv1", "bn1", init)
    x = layers.ReLU(name="relu")(x)
    x = layers.ZeroPadding2D(1, name="maxpool_pad")(x)
    x = layers.MaxPooling2D(3, strides=2, name="maxpool")(x)
    for i, stage in enumerate(stages(block, tuple(blocks), width), start=1):
        for j, (_, planes, stride, down) in enumerate(stage):
            x = _block(x, block, planes, stride, down, f"layer{i}_{j}", init)
    x = layers.GlobalAveragePooling2D(name="avgpool")(x)
    logits = layers.Dense(num_classes, name="fc", **init)(x)
    return keras.Model(inputs, logits, name=name)
