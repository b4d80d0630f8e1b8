"""`regression_mlp` in Keras 3: a dict of named inputs in, (N, K) predictions out.

The keras.Input names are the dataset's input names: Keras matches the dict dlbench
passes to them.
"""

from __future__ import annotations

from typing import Any

import keras


def build(
    input_shape: dict[str, tuple[int, ...]],
    targets: int,
    kernel_initializer: Any = None,
    bias_initializer: Any = None,
    hidden: int = 32,
    categories: int = 8,
    embed: int = 4,
) -> keras.Model:
    init = {"kernel_initializer": kernel_initializer} if kernel_initializer is not None else {}
    if bias_initializer is not None:
        init["bias_initializer"] = bias_initializer
    numeric = keras.Input(shape=input_shape["numeric"], name="numeric")
    category = keras.Input(shape=input_shape["category"], dtype="int64", name="category")
    e = keras.layers.Flatten()(keras.layers.Embedding(categories, embed, name="category_embedding")(category))
    h = keras.layers.Concatenate()([numeric, e])
    h = keras.layers.Dense(hidden, activation="relu", name="hidden", **init)(h)
    out = keras.layers.Dense(targets, name="out", **init)(h)
    return keras.Model(inputs={"numeric": numeric, "category": category}, outputs=out, name="regression_mlp")
