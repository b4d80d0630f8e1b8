"""`regression_mlp` in Flax linen: (N, F) in, (N, K) predictions out."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
from flax import linen as nn


class RegressionMLP(nn.Module):
    targets: int
    hidden: int
    kernel_init: Any = None
    bias_init: Any = None

    @nn.compact
    def __call__(self, x: jnp.ndarray, deterministic: bool = True) -> jnp.ndarray:
        init = {"kernel_init": self.kernel_init} if self.kernel_init is not None else {}
        if self.bias_init is not None:
            init["bias_init"] = self.bias_init
        x = nn.relu(nn.Dense(self.hidden, name="hidden", **init)(x))
        return nn.Dense(self.targets, name="out", **init)(x)


def build(
    input_shape: tuple[int], targets: int, kernel_init: Any = None, bias_init: Any = None, hidden: int = 32
) -> nn.Module:
    return RegressionMLP(targets, hidden, kernel_init, bias_init)
