"""`transformer` in Flax linen: the network of `dlbench.models.transformer`.

nn.Embed for tokens and positions, nn.LayerNorm(epsilon=1e-12), and post-LN
encoder layers of nn.MultiHeadDotProductAttention (Q, K, V, O with biases,
dropout on the attention weights) and two nn.Dense with exact GELU
(`nn.gelu(approximate=False)`: Flax's default is the tanh approximation,
BERT and the other two frameworks use erf). First-token pooling.

Initializers: a given kernel_init (glorot-uniform) goes to every dense and
attention kernel; DenseGeneral flattens the attention kernels to their
(hidden, hidden) matrix before initializing, so fans are those of a hidden x
hidden map, as in torch and the Keras model. Embeddings U(-0.05, 0.05).
"""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from dlbench.models.lstm.jax import Initializer, dense_kwargs, embed_kwargs
from dlbench.models.transformer import LAYER_NORM_EPS, check_length, config


class EncoderLayer(nn.Module):
    hidden: int
    heads: int
    ff: int
    dropout: float
    inits: dict[str, Any]

    @nn.compact
    def __call__(self, x: jax.Array, deterministic: bool) -> jax.Array:
        attended = nn.MultiHeadDotProductAttention(
            num_heads=self.heads,
            qkv_features=self.hidden,
            out_features=self.hidden,
            dropout_rate=self.dropout,
            name="attention",
            **self.inits,
        )(x, deterministic=deterministic)
        x = nn.LayerNorm(epsilon=LAYER_NORM_EPS, name="norm_a")(
            x + nn.Dropout(self.dropout)(attended, deterministic=deterministic)
        )
        y = nn.gelu(nn.Dense(self.ff, name="ff_a", **self.inits)(x), approximate=False)
        y = nn.Dropout(self.dropout)(y, deterministic=deterministic)
        y = nn.Dense(self.hidden, name="ff_b", **self.inits)(y)
        return nn.LayerNorm(epsilon=LAYER_NORM_EPS, name="norm_b")(
            x + nn.Dropout(self.dropout)(y, deterministic=deterministic)
        )


class TransformerClassifier(nn.Module):
    classes: int
    layers: int
    hidden: int
    heads: int
    ff: int
    vocab: int
    max_len: int
    dropout: float
    kernel_init: Initializer | None = None
    bias_init: Initializer | None = None

    @nn.compact
    def __call__(self, tokens: jax.Array, deterministic: bool = True) -> jax.Array:
        inits = dense_kwargs(self.kernel_init, self.bias_init)
        embed = embed_kwargs(self.kernel_init)
        x = nn.Embed(self.vocab, self.hidden, name="tokens", **embed)(tokens)
        x = x + nn.Embed(self.max_len, self.hidden, name="positions", **embed)(jnp.arange(tokens.shape[1]))
        x = nn.LayerNorm(epsilon=LAYER_NORM_EPS, name="embedding_norm")(x)
        x = nn.Dropout(self.dropout)(x, deterministic=deterministic)
        for i in range(self.layers):
            x = EncoderLayer(self.hidden, self.heads, self.ff, self.dropout, inits, name=f"layer{i + 1}")(
                x, deterministic
            )
        return nn.Dense(self.classes, name="classifier", **inits)(x[:, 0])


def build(
    shape: tuple[int],
    classes: int,
    *,
    kernel_init: Initializer | None = None,
    bias_init: Initializer | None = None,
    **options: Any,
) -> TransformerClassifier:
    cfg = config(options)
    check_length(shape[0], cfg)
    return TransformerClassifier(classes, kernel_init=kernel_init, bias_init=bias_init, **cfg)
