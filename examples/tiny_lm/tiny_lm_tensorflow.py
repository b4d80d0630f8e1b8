"""`tiny_lm` in Keras 3: (N, T) token ids in, (N, T, vocab) logits out."""

from __future__ import annotations

from typing import Any

import keras

EPS = 1e-5


class PositionEmbedding(keras.layers.Layer):
    """A learned (T, d) table added to the token embeddings."""

    def __init__(self, length: int, dim: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.table = keras.layers.Embedding(length, dim, name="positions")
        self.length = length

    def call(self, h: Any) -> Any:
        return h + self.table(keras.ops.arange(self.length))


def build(
    input_shape: tuple[int],
    vocab: int,
    kernel_initializer: Any = None,
    bias_initializer: Any = None,
    dim: int = 32,
    heads: int = 2,
) -> keras.Model:
    init = {"kernel_initializer": kernel_initializer} if kernel_initializer is not None else {}
    if bias_initializer is not None:
        init["bias_initializer"] = bias_initializer
    (length,) = input_shape
    inputs = keras.Input(shape=input_shape, dtype="int32")
    h = keras.layers.Embedding(vocab, dim, name="tokens")(inputs)
    h = PositionEmbedding(length, dim, name="position")(h)
    a = keras.layers.LayerNormalization(epsilon=EPS, name="norm1")(h)
    attention = keras.layers.MultiHeadAttention(heads, dim // heads, name="attention", **init)
    h = h + attention(a, a, use_causal_mask=True)
    m = keras.layers.LayerNormalization(epsilon=EPS, name="norm2")(h)
    m = keras.layers.Dense(4 * dim, name="up", **init)(m)
    m = keras.layers.Dense(dim, name="down", **init)(keras.activations.gelu(m, approximate=False))
    h = h + m
    h = keras.layers.LayerNormalization(epsilon=EPS, name="norm3")(h)
    return keras.Model(inputs, keras.layers.Dense(vocab, name="head", **init)(h), name="tiny_lm")
