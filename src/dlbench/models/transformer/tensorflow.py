"""`transformer` in Keras 3 (TensorFlow backend): the network of `dlbench.models.transformer`.

Written like the Keras example "Text classification with Transformer": a
TokenAndPositionEmbedding layer (two Embedding sublayers), then encoder
blocks built from keras.layers.MultiHeadAttention, Dropout, LayerNormalization
and Dense, post-LN as torch's nn.TransformerEncoderLayer (the spec spells
the layer out), exact GELU, LayerNorm epsilon 1e-12, first-token pooling.

Initializers under "glorot-uniform": Keras' MultiHeadAttention keeps 3-d
kernels (hidden, heads, head_dim), and Keras' Glorot computes fans of a 3-d
kernel the convolution way (fan_in = hidden * heads), not as the hidden x
hidden projection it is. So the attention kernels get U(+-sqrt(6 / (2 *
hidden))), the Glorot bound of that hidden x hidden dense map, which is what
torch (per Q/K/V chunk) and Flax (DenseGeneral flattens) draw. Embeddings get
U(-0.05, 0.05). Framework-default leaves every layer on Keras' own defaults.
"""

from __future__ import annotations

import math
from typing import Any

import keras

from dlbench.models.lstm.tensorflow import embedding_init_kwargs
from dlbench.models.mlp.tensorflow import init_kwargs
from dlbench.models.transformer import LAYER_NORM_EPS, check_length, config


class TokenAndPositionEmbedding(keras.layers.Layer):
    """Token embedding plus a learned position embedding of the first T positions."""

    def __init__(self, vocab: int, max_len: int, hidden: int, kernel_initializer: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # A fresh initializer per table (embedding_init_kwargs builds one per call).
        self.tokens = keras.layers.Embedding(vocab, hidden, name="tokens", **embedding_init_kwargs(kernel_initializer))
        self.positions = keras.layers.Embedding(
            max_len, hidden, name="positions", **embedding_init_kwargs(kernel_initializer)
        )

    def call(self, tokens: Any) -> Any:
        positions = keras.ops.arange(keras.ops.shape(tokens)[-1])
        return self.tokens(tokens) + self.positions(positions)


def _encoder_layer(
    x: Any,
    i: int,
    *,
    hidden: int,
    heads: int,
    ff: int,
    dropout: float,
    dense_init: dict[str, Any],
    attention_init: dict[str, Any],
) -> Any:
    layers = keras.layers
    attended = layers.MultiHeadAttention(heads, hidden // heads, dropout=dropout, name=f"attn{i}", **attention_init)(
        x, x
    )
    x = layers.LayerNormalization(epsilon=LAYER_NORM_EPS, name=f"norm{i}a")(
        x + layers.Dropout(dropout, name=f"drop{i}a")(attended)
    )
    y = layers.Dense(ff, activation=keras.activations.gelu, name=f"ff{i}a", **dense_init)(x)
    y = layers.Dropout(dropout, name=f"drop{i}ff")(y)
    y = layers.Dense(hidden, name=f"ff{i}b", **dense_init)(y)
    return layers.LayerNormalization(epsilon=LAYER_NORM_EPS, name=f"norm{i}b")(
        x + layers.Dropout(dropout, name=f"drop{i}b")(y)
    )


def build(
    input_shape: tuple[int],
    num_classes: int,
    kernel_initializer: Any = None,
    bias_initializer: Any = None,
    **options: Any,
) -> keras.Model:
    cfg = config(options)
    check_length(input_shape[0], cfg)
    hidden = cfg["hidden"]
    dense_init = init_kwargs(kernel_initializer, bias_initializer)
    attention_init: dict[str, Any] = {}
    if kernel_initializer is not None:
        limit = math.sqrt(6.0 / (hidden + hidden))
        # One instance per layer; MultiHeadAttention clones it (unseeded) for Q, K, V and O.
        attention_init = {
            "kernel_initializer": keras.initializers.RandomUniform(-limit, limit),
            "bias_initializer": bias_initializer or "zeros",
        }
    inputs = keras.Input(shape=input_shape, dtype="int32", name="tokens")
    x = TokenAndPositionEmbedding(cfg["vocab"], cfg["max_len"], hidden, kernel_initializer, name="embedding")(inputs)
    x = keras.layers.LayerNormalization(epsilon=LAYER_NORM_EPS, name="embedding_norm")(x)
    x = keras.layers.Dropout(cfg["dropout"], name="embedding_drop")(x)
    for i in range(cfg["layers"]):
        x = _encoder_layer(
            x,
            i + 1,
            hidden=hidden,
            heads=cfg["heads"],
            ff=cfg["ff"],
            dropout=cfg["dropout"],
            dense_init=dense_init,
            attention_init=attention_init,
        )
    pooled = x[:, 0]  # first-token pooling
    logits = keras.layers.Dense(num_classes, name="classifier", **dense_init)(pooled)
    return keras.Model(inputs, logits, name="transformer")
