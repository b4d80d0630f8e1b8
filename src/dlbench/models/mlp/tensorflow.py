"""`mlp` in Keras 3 (TensorFlow backend): Flatten, Dense 128 ReLU, Dense classes.

The same network as the spec in `dlbench.models.mlp` (layer names match it).
Channels-last input of the dataset's own shape; the last layer returns logits
because the loss is `SparseCategoricalCrossentropy(from_logits=True)`.
"""

from __future__ import annotations

from typing import Any

import keras

from dlbench.models.mlp import HIDDEN


def init_kwargs(kernel_initializer: Any, bias_initializer: Any) -> dict[str, Any]:
    """Keyword arguments for a conv or dense layer. An initializer left as None is
    not passed at all, so that the layer really runs on Keras' own default (for the
    "framework-default" setting; Keras' defaults happen to be glorot_uniform/zeros)."""
    kwargs: dict[str, Any] = {}
    if kernel_initializer is not None:
        kwargs["kernel_initializer"] = kernel_initializer
    if bias_initializer is not None:
        kwargs["bias_initializer"] = bias_initializer
    return kwargs


def build(
    input_shape: tuple[int, int, int], num_classes: int, kernel_initializer: Any = None, bias_initializer: Any = None
) -> keras.Model:
    init = init_kwargs(kernel_initializer, bias_initializer)
    inputs = keras.Input(shape=input_shape, name="image")
    x = keras.layers.Flatten(name="flatten")(inputs)
    x = keras.layers.Dense(HIDDEN, activation="relu", name="dense1", **init)(x)
    logits = keras.layers.Dense(num_classes, name="dense2", **init)(x)
    return keras.Model(inputs, logits, name="mlp")
