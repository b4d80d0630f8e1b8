"""`lenet5` in Keras 3 (TensorFlow backend), the network of `dlbench.models.lenet5`.

conv1 uses padding="same": for a 5x5 kernel with stride 1 that is exactly
padding 2 on every side, the spec's "pad inside the network". Channels-last
input; the last layer returns logits (softmax lives in the loss).
"""

from __future__ import annotations

from typing import Any

import keras

from dlbench.models.mlp.tensorflow import init_kwargs


def build(
    input_shape: tuple[int, int, int], num_classes: int, kernel_initializer: Any = None, bias_initializer: Any = None
) -> keras.Model:
    init = init_kwargs(kernel_initializer, bias_initializer)
    layers = keras.layers
    inputs = keras.Input(shape=input_shape, name="image")
    x = layers.Conv2D(6, 5, padding="same", activation="relu", name="conv1", **init)(inputs)
    x = layers.MaxPooling2D(2, name="pool1")(x)
    x = layers.Conv2D(16, 5, padding="valid", activation="relu", name="conv2", **init)(x)
    x = layers.MaxPooling2D(2, name="pool2")(x)
    x = layers.Flatten(name="flatten")(x)
    x = layers.Dense(120, activation="relu", name="fc1", **init)(x)
    x = layers.Dense(84, activation="relu", name="fc2", **init)(x)
    logits = layers.Dense(num_classes, name="fc3", **init)(x)
    return keras.Model(inputs, logits, name="lenet5")
