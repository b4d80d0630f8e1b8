"""`regression_mlp` in Flax linen: a dict of named inputs in, (N, K) predictions out."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from flax import linen as nn


class RegressionMLP(nn.Module):
    targets: int
    hidden: int
    categories: int
    embed: int
    kernel_init: Any = None
    bias_init: Any = None

    @nn.compact
    def __call__(self, x: dict[str, jnp.ndarray], deterministic: bool = True) -> jnp.ndarray:
        init = {"kernel_init": self.kernel_init} if self.kernel_init is not None else {}
        if self.bias_init is not None:
            init["bias_init"] = self.bias_init
        category = nn.Embed(self.categories, self.embed, name="category")(x["category"])
        h = jnp.concatenate([x["numeric"], category.reshape((category.shape[0], -1))], axis=1)
        h = nn.relu(nn.Dense(self.hidden, name="hidden", **init)(h))
        return nn.Dense(self.targets, name="out", **init)(h)


def build(
    input_shape: dict[str, tuple[int, ...]],
    targets: int,
    kernel_init: Any = None,
    bias_init: Any = None,
    hidden: int = 32,
    categories: int = 8,
    embed: int = 4,
) -> nn.Module:
    return RegressionMLP(targets, hidden, categories, embed, kernel_init, bias_init)
