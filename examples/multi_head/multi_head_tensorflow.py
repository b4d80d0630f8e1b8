"""`multi_head` in Keras 3: a functional model whose outputs are a dict by head name."""

from __future__ import annotations

from typing import Any

import keras


def build(
    input_shape: tuple[int, ...],
    outputs: dict[str, int],
    kernel_initializer: Any = None,
    bias_initializer: Any = None,
    hidden: int = 32,
) -> keras.Model:
    init = {"kernel_initializer": kernel_initializer} if kernel_initializer is not None else {}
    if bias_initializer is not None:
        init["bias_initializer"] = bias_initializer
    x = keras.Input(shape=input_shape)
    h = keras.layers.Dense(hidden, activation="relu", name="trunk", **init)(x)
    # Keras orders a functional model's layers by the sorted names of a dict of outputs:
    # the torch and Flax builders create their heads in that order too.
    heads = {
        "kind": keras.layers.Dense(outputs["kind"], name="kind", **init)(h),
        "price": keras.layers.Dense(outputs["price"], name="price", **init)(h),
    }
    return keras.Model(inputs=x, outputs=heads, name="multi_head")
