"""`dsconv` in Keras 3 (TensorFlow backend): channels-last (N, H, W, C) input, logits out.

dlbench passes kernel_initializer / bias_initializer for its init scheme; when it
passes None, nothing is given and Keras' own defaults apply.
"""

from __future__ import annotations

from typing import Any

import keras

BN = {"epsilon": 1e-5, "momentum": 0.9}  # Keras' momentum is torch's 1 - momentum


def build(
    input_shape: tuple[int, int, int],
    num_classes: int,
    kernel_initializer: Any = None,
    bias_initializer: Any = None,
    width: int = 32,
) -> keras.Model:
    kernel = {"kernel_initializer": kernel_initializer} if kernel_initializer is not None else {}
    depthwise = {"depthwise_initializer": kernel_initializer} if kernel_initializer is not None else {}
    bias = {"bias_initializer": bias_initializer} if bias_initializer is not None else {}

    def conv_bn_relu(x: Any, filters: int, size: int, name: str) -> Any:
        x = keras.layers.Conv2D(filters, size, padding="same", use_bias=False, name=name, **kernel)(x)
        x = keras.layers.BatchNormalization(name=f"{name}_bn", **BN)(x)
        return keras.layers.ReLU()(x)

    def separable(x: Any, filters: int, name: str) -> Any:
        # One pixel of zeros on every side, as torch's padding=1: Keras' "same" at stride 2
        # pads only the bottom and right of an even-sized input (a different network).
        x = keras.layers.ZeroPadding2D(1)(x)
        dw = keras.layers.DepthwiseConv2D(3, strides=2, use_bias=False, name=f"{name}_dw", **depthwise)
        x = dw(x)
        x = keras.layers.BatchNormalization(name=f"{name}_dw_bn", **BN)(x)
        x = keras.layers.ReLU()(x)
        return conv_bn_relu(x, filters, 1, f"{name}_pw")

    inputs = keras.Input(shape=input_shape)
    x = conv_bn_relu(inputs, width, 3, "stem")
    x = separable(x, 2 * width, "block1")
    x = separable(x, 4 * width, "block2")
    x = keras.layers.GlobalAveragePooling2D()(x)
    logits = keras.layers.Dense(num_classes, name="classifier", **kernel, **bias)(x)
    return keras.Model(inputs, logits, name="dsconv")
