"""`lstm` in Flax linen, plus the recurrent cells deepspeech2 shares.

Flax's stock cells keep one (in, H) kernel per gate (LSTMCell,
OptimizedLSTMCell) and its GRUCell has 4H biases, unlike torch's and Keras'
fused layout. The cells here are Flax RNNCellBase cells with that fused
layout: one input kernel (in, gates*H), one recurrent kernel (H, gates*H),
and biases as the spec's convention wants (LSTM: one 4H bias; GRU: input and
recurrent 3H biases, the reset_after / cuDNN form). So parameter counts are
the spec's and Glorot's fans (in, gates*H) and the orthogonal recurrent
matrix are the ones Keras and torch use. Gate arithmetic is Flax's own
LSTMCell / torch's GRU. They run under nn.RNN (a lax.scan) like any Flax cell.

Initializers: given kernel_init (the glorot-uniform setting) goes to input and
dense kernels, recurrent kernels are orthogonal, biases zeros, embeddings
U(-0.05, 0.05); without, Flax's defaults (lecun-normal kernels, orthogonal
recurrent kernels, zero biases, Embed's own normal init).
"""

from __future__ import annotations

from typing import Any, TypeAlias

import flax.linen as nn
import jax
import jax.numpy as jnp

from dlbench.models.lstm import EMBED_INIT_LIMIT, check_options, resolve_vocab

Initializer: TypeAlias = Any  # flax.linen.initializers.Initializer (Flax is typed as Any here)
DEFAULT_KERNEL_INIT = nn.Dense.kernel_init
DEFAULT_BIAS_INIT = nn.Dense.bias_init


def symmetric_uniform(limit: float) -> Initializer:
    """U(-limit, limit) (nn.initializers.uniform draws from [0, scale))."""

    def init(key: jax.Array, shape: Any, dtype: Any = jnp.float32) -> jax.Array:
        return jax.random.uniform(key, shape, dtype, -limit, limit)

    return init


def embed_kwargs(kernel_init: Initializer | None) -> dict[str, Any]:
    return {} if kernel_init is None else {"embedding_init": symmetric_uniform(EMBED_INIT_LIMIT)}


def dense_kwargs(kernel_init: Initializer | None, bias_init: Initializer | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if kernel_init is not None:
        out["kernel_init"] = kernel_init
    if bias_init is not None:
        out["bias_init"] = bias_init
    return out


class FusedLSTMCell(nn.RNNCellBase):
    """LSTM cell with fused gate kernels (i, f, g, o) and one bias per gate."""

    features: int
    kernel_init: Initializer = DEFAULT_KERNEL_INIT
    recurrent_kernel_init: Initializer = nn.initializers.orthogonal()
    bias_init: Initializer = DEFAULT_BIAS_INIT

    @nn.compact
    def __call__(self, carry: tuple[jax.Array, jax.Array], inputs: jax.Array):
        c, h = carry
        z = nn.Dense(4 * self.features, use_bias=False, kernel_init=self.kernel_init, name="input")(inputs) + nn.Dense(
            4 * self.features, kernel_init=self.recurrent_kernel_init, bias_init=self.bias_init, name="recurrent"
        )(h)
        i, f, g, o = jnp.split(z, 4, axis=-1)
        c = nn.sigmoid(f) * c + nn.sigmoid(i) * jnp.tanh(g)
        h = nn.sigmoid(o) * jnp.tanh(c)
        return (c, h), h

    @nn.nowrap
    def initialize_carry(self, rng: jax.Array, input_shape: tuple[int, ...]):
        shape = (*input_shape[:-1], self.features)
        return jnp.zeros(shape, jnp.float32), jnp.zeros(shape, jnp.float32)

    @property
    def num_feature_axes(self) -> int:
        return 1


class FusedGRUCell(nn.RNNCellBase):
    """GRU cell, reset_after form, fused gate kernels (r, z, n), input and recurrent biases (6H)."""

    features: int
    kernel_init: Initializer = DEFAULT_KERNEL_INIT
    recurrent_kernel_init: Initializer = nn.initializers.orthogonal()
    bias_init: Initializer = DEFAULT_BIAS_INIT

    @nn.compact
    def __call__(self, carry: jax.Array, inputs: jax.Array):
        h = carry
        xi = nn.Dense(3 * self.features, kernel_init=self.kernel_init, bias_init=self.bias_init, name="input")(inputs)
        hh = nn.Dense(
            3 * self.features, kernel_init=self.recurrent_kernel_init, bias_init=self.bias_init, name="recurrent"
        )(h)
        xr, xz, xn = jnp.split(xi, 3, axis=-1)
        hr, hz, hn = jnp.split(hh, 3, axis=-1)
        r = nn.sigmoid(xr + hr)
        z = nn.sigmoid(xz + hz)
        n = jnp.tanh(xn + r * hn)
        h = (1.0 - z) * n + z * h
        return h, h

    @nn.nowrap
    def initialize_carry(self, rng: jax.Array, input_shape: tuple[int, ...]):
        return jnp.zeros((*input_shape[:-1], self.features), jnp.float32)

    @property
    def num_feature_axes(self) -> int:
        return 1


def cell(
    kind: str, hidden: int, kernel_init: Initializer | None, bias_init: Initializer | None, name: str | None = None
) -> nn.RNNCellBase:
    cls = FusedLSTMCell if kind == "lstm" else FusedGRUCell
    # parent=None: an unbound cell, adopted by the nn.RNN it is handed to, so its
    # parameters live under that RNN ("<rnn>/cell/..."), as with Flax's own cells.
    return cls(hidden, name=name, parent=None, **dense_kwargs(kernel_init, bias_init))


class LSTMLanguageModel(nn.Module):
    vocab: int
    classes: int
    embed: int
    hidden: int
    layers: int
    dropout: float
    kernel_init: Initializer | None = None
    bias_init: Initializer | None = None

    @nn.compact
    def __call__(self, tokens: jax.Array, deterministic: bool = True) -> jax.Array:
        x = nn.Embed(self.vocab, self.embed, name="embedding", **embed_kwargs(self.kernel_init))(tokens)
        x = nn.Dropout(self.dropout)(x, deterministic=deterministic)
        for layer in range(self.layers):
            x = nn.RNN(cell("lstm", self.hidden, self.kernel_init, self.bias_init), name=f"lstm{layer + 1}")(x)
            if layer < self.layers - 1:
                x = nn.Dropout(self.dropout)(x, deterministic=deterministic)
        x = nn.Dropout(self.dropout)(x, deterministic=deterministic)
        return nn.Dense(self.classes, name="decoder", **dense_kwargs(self.kernel_init, self.bias_init))(x)


def build(
    shape: tuple[int],
    classes: int,
    *,
    kernel_init: Initializer | None = None,
    bias_init: Initializer | None = None,
    vocab: int | None,
    embed: int,
    hidden: int,
    layers: int,
    dropout: float,
) -> LSTMLanguageModel:
    check_options(embed, hidden, layers, dropout)
    return LSTMLanguageModel(
        resolve_vocab(vocab, classes),
        classes,
        embed,
        hidden,
        layers,
        dropout,
        kernel_init=kernel_init,
        bias_init=bias_init,
    )
