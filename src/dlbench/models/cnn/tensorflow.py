"""`cnn` in Keras 3 (TensorFlow backend): the Keras mnist_convnet example's network,
as specified in `dlbench.models.cnn`.

Dropout layers take no explicit seed: they draw theirs from Keras' global RNG,
which the adapter seeds with `keras.utils.set_random_seed(settings.seed)`
before building, so the dropout masks are reproducible per seed.
"""

from __future__ import annotations

from typing import Any

import keras

from dlbench.models.cnn import DROPOUT_CONV, DROPOUT_DENSE
from dlbench.models.mlp.tensorflow import init_kwargs


def build(
    input_shape: tuple[int, int, int], num_classes: int, kernel_initializer: Any = None, bias_initializer: Any = None
) -> keras.Model:
    init = init_kwargs(kernel_initializer, bias_initializer)
    layers = keras.layers
    inputs = keras.Input(shape=input_shape, name="image")
    x = layers.Conv2D(32, 3, activation="relu", name="conv1", **init)(inputs)
    x = layers.Conv2D(64, 3, activation="relu", name="conv2", **init)(x)
    x = layers.MaxPooling2D(2, name="pool")(x)
    x = layers.Dropout(DROPOUT_CONV, name="dropout1")(x)
    x = layers.Flatten(name="flatten")(x)
    x = layers.Dense(128, activation="relu", name="fc1", **init)(x)
    x = layers.Dropout(DROPOUT_DENSE, name="dropout2")(x)
    logits = layers.Dense(num_classes, name="fc2", **init)(x)
    return keras.Model(inputs, logits, name="cnn")
