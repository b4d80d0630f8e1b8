"""`multi_head` in Flax linen: (N, F) in, {"price": (N, K), "kind": (N, classes)} out."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from flax import linen as nn


class MultiHead(nn.Module):
    outputs: dict[str, int]
    hidden: int
    kernel_init: Any = None
    bias_init: Any = None

    @nn.compact
    def __call__(self, x: jnp.ndarray, deterministic: bool = True) -> dict[str, jnp.ndarray]:
        init = {"kernel_init": self.kernel_init} if self.kernel_init is not None else {}
        if self.bias_init is not None:
            init["bias_init"] = self.bias_init
        h = nn.relu(nn.Dense(self.hidden, name="trunk", **init)(x))
        # The heads in the order of their names, as Keras orders a functional model's layers.
        kind = nn.Dense(self.outputs["kind"], name="kind", **init)(h)
        return {"price": nn.Dense(self.outputs["price"], name="price", **init)(h), "kind": kind}


def build(
    input_shape: tuple[int, ...],
    outputs: dict[str, int],
    kernel_init: Any = None,
    bias_init: Any = None,
    hidden: int = 32,
) -> nn.Module:
    return MultiHead(dict(outputs), hidden, kernel_init, bias_init)
