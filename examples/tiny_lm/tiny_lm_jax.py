"""`tiny_lm` in Flax linen: (N, T) int32 token ids in, (N, T, vocab) logits out."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from flax import linen as nn

EPS = 1e-5


class TinyLM(nn.Module):
    length: int
    vocab: int
    dim: int
    heads: int
    kernel_init: Any = None
    bias_init: Any = None

    @nn.compact
    def __call__(self, x: jnp.ndarray, deterministic: bool = True) -> jnp.ndarray:
        init = {"kernel_init": self.kernel_init} if self.kernel_init is not None else {}
        if self.bias_init is not None:
            init["bias_init"] = self.bias_init
        h = nn.Embed(self.vocab, self.dim, name="tokens")(x)
        h = h + nn.Embed(self.length, self.dim, name="positions")(jnp.arange(x.shape[1]))
        a = nn.LayerNorm(epsilon=EPS, name="norm1")(h)
        causal = nn.make_causal_mask(x)
        h = h + nn.MultiHeadDotProductAttention(self.heads, qkv_features=self.dim, name="attention", **init)(
            a, a, mask=causal
        )
        m = nn.Dense(4 * self.dim, name="up", **init)(nn.LayerNorm(epsilon=EPS, name="norm2")(h))
        h = h + nn.Dense(self.dim, name="down", **init)(nn.gelu(m, approximate=False))
        return nn.Dense(self.vocab, name="head", **init)(nn.LayerNorm(epsilon=EPS, name="norm3")(h))


def build(
    input_shape: tuple[int], vocab: int, kernel_init: Any = None, bias_init: Any = None, dim: int = 32, heads: int = 2
) -> nn.Module:
    return TinyLM(input_shape[0], vocab, dim, heads, kernel_init, bias_init)
