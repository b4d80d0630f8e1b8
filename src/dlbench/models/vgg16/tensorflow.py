"""`vgg16` in Keras 3 (functional API, NHWC).

The 3x3/1 convolutions use padding "same" (symmetric at stride 1, so torch's
padding 1); pools are 2x2/2 valid. The adaptive average pool is alexnet's
Keras layer. Layer names are torchvision's state_dict prefixes with "_" for
".". Dropout draws from Keras' global RNG, which the adapter seeds.
"""

from __future__ import annotations

from typing import Any

import keras

from dlbench.models.alexnet.tensorflow import AdaptiveAveragePooling2D
from dlbench.models.mlp.tensorflow import init_kwargs
from dlbench.models.vgg16 import CONVS_PER_STAGE, DROPOUT, FC_INDEX, HIDDEN, POOL, SPEC, WIDTHS, plan


def build(
    input_shape: tuple[int, int, int],
    num_classes: int,
    kernel_initializer: Any = None,
    bias_initializer: Any = None,
    widths: tuple[int, ...] = WIDTHS,
    convs: tuple[int, ...] = CONVS_PER_STAGE,
    hidden: int = HIDDEN,
    dropout: float = DROPOUT,
) -> keras.Model:
    reason = SPEC.check_input(input_shape)
    if reason:
        raise ValueError(reason)
    init = init_kwargs(kernel_initializer, bias_initializer)
    layers = keras.layers
    inputs = keras.Input(shape=input_shape, name="image")
    x = inputs
    for kind, index, filters in plan(widths, convs):
        if kind == "conv":
            x = layers.Conv2D(filters, 3, padding="same", activation="relu", name=f"features_{index}", **init)(x)
        else:
            x = layers.MaxPooling2D(2, strides=2, name=f"features_{index}")(x)
    x = AdaptiveAveragePooling2D(POOL, name="avgpool")(x)
    x = layers.Flatten(name="flatten")(x)
    x = layers.Dense(hidden, activation="relu", name=f"classifier_{FC_INDEX[0]}", **init)(x)
    x = layers.Dropout(dropout, name="classifier_2")(x)
    x = layers.Dense(hidden, activation="relu", name=f"classifier_{FC_INDEX[1]}", **init)(x)
    x = layers.Dropout(dropout, name="classifier_5")(x)
    logits = layers.Dense(num_classes, name=f"classifier_{FC_INDEX[2]}", **init)(x)
    return keras.Model(inputs, logits, name="vgg16")
