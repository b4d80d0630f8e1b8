"""`regression_mlp` in Keras 3: (N, F) in, (N, K) predictions out."""

from __future__ import annotations

from typing import Any

import keras


def build(
    input_shape: tuple[int],
    targets: int,
    kernel_initializer: Any = None,
    bias_initializer: Any = None,
    hidden: int = 32,
) -> keras.Model:
    init = {"kernel_initializer": kernel_initializer} if kernel_initializer is not None else {}
    if bias_initializer is not None:
        init["bias_initializer"] = bias_initializer
    inputs = keras.Input(shape=input_shape)
    x = keras.layers.Dense(hidden, activation="relu", name="hidden", **init)(inputs)
    return keras.Model(inputs, keras.layers.Dense(targets, name="out", **init)(x), name="regression_mlp")
