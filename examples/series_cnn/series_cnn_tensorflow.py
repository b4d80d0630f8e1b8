"""`series_cnn` in Keras 3: channels-last (N, L, C) input, logits out.

dlbench passes kernel_initializer / bias_initializer for its init scheme; when it
passes None, nothing is given and Keras' own defaults apply.
"""

from __future__ import annotations

from typing import Any

import keras

KERNEL = 5


def build(
    input_shape: tuple[int, int],
    num_classes: int,
    kernel_initializer: Any = None,
    bias_initializer: Any = None,
    width: int = 16,
) -> keras.Model:
    init = {"kernel_initializer": kernel_initializer} if kernel_initializer is not None else {}
    if bias_initializer is not None:
        init["bias_initializer"] = bias_initializer
    inputs = keras.Input(shape=input_shape)
    x = keras.layers.Conv1D(width, KERNEL, padding="same", activation="relu", name="conv1", **init)(inputs)
    x = keras.layers.MaxPooling1D(2)(x)
    x = keras.layers.Conv1D(2 * width, KERNEL, padding="same", activation="relu", name="conv2", **init)(x)
    x = keras.layers.GlobalAveragePooling1D()(x)
    logits = keras.layers.Dense(num_classes, name="classifier", **init)(x)
    return keras.Model(inputs, logits, name="series_cnn")
