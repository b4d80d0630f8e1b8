"""`lstm` in Keras 3 (TensorFlow backend): the network of `dlbench.models.lstm`.

Embedding -> Dropout -> LSTM(return_sequences=True) per layer with Dropout
between layers (what torch's nn.LSTM(dropout=...) does) -> Dropout -> Dense to
the vocabulary. Keras' LSTM has one bias per gate (4H), the spec's convention.

An initializer given by the adapter (the "glorot-uniform" setting) is used
for the LSTM input kernels and dense kernels; the recurrent kernels keep
Keras' orthogonal default, biases are zeros and `unit_forget_bias` is off (the
setting means zero biases everywhere); embeddings get U(-0.05, 0.05), which
is Keras' own Embedding default, written out. Without initializers every
layer runs on Keras' defaults (framework-default).
"""

from __future__ import annotations

from typing import Any

import keras

from dlbench.models.lstm import EMBED_INIT_LIMIT, check_options, resolve_vocab
from dlbench.models.mlp.tensorflow import init_kwargs


def recurrent_init_kwargs(kernel_initializer: Any, bias_initializer: Any) -> dict[str, Any]:
    """Keyword arguments for a Keras LSTM/GRU: the spec's glorot-uniform mode, or nothing (Keras' defaults)."""
    if kernel_initializer is None and bias_initializer is None:
        return {}
    return {
        **init_kwargs(kernel_initializer, bias_initializer),
        "recurrent_initializer": "orthogonal",
        "unit_forget_bias": False,
    }


def embedding_init_kwargs(kernel_initializer: Any) -> dict[str, Any]:
    if kernel_initializer is None:
        return {}
    return {"embeddings_initializer": keras.initializers.RandomUniform(-EMBED_INIT_LIMIT, EMBED_INIT_LIMIT)}


def build(
    input_shape: tuple[int],
    num_classes: int,
    kernel_initializer: Any = None,
    bias_initializer: Any = None,
    *,
    vocab: int | None,
    embed: int,
    hidden: int,
    layers: int,
    dropout: float,
) -> keras.Model:
    check_options(embed, hidden, layers, dropout)
    rnn_init = recurrent_init_kwargs(kernel_initializer, bias_initializer)
    # unit_forget_bias is an LSTM-only argument; recurrent_init_kwargs serves GRUs too.
    inputs = keras.Input(shape=input_shape, dtype="int32", name="tokens")
    x = keras.layers.Embedding(
        resolve_vocab(vocab, num_classes), embed, name="embedding", **embedding_init_kwargs(kernel_initializer)
    )(inputs)
    x = keras.layers.Dropout(dropout, name="drop_in")(x)
    for layer in range(layers):
        x = keras.layers.LSTM(hidden, return_sequences=True, name=f"lstm{layer + 1}", **rnn_init)(x)
        if layer < layers - 1:
            x = keras.layers.Dropout(dropout, name=f"drop{layer + 1}")(x)
    x = keras.layers.Dropout(dropout, name="drop_out")(x)
    logits = keras.layers.Dense(num_classes, name="decoder", **init_kwargs(kernel_initializer, bias_initializer))(x)
    return keras.Model(inputs, logits, name="lstm")
