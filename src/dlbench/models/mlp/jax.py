"""`mlp` in Flax linen: flatten -> dense1 (128, ReLU) -> dense2 (classes, logits).

The same network as `dlbench.models.mlp` describes; the JAX adapter
(`dlbench.frameworks.jax`) builds it with `build()` and initializes it on an
NHWC batch. Initializers are module attributes so that the adapter can choose
Glorot-uniform + zeros or keep Flax's own defaults (lecun-normal + zeros).
"""

from __future__ import annotations

import flax.linen as nn
import jax

from dlbench.models.mlp import HIDDEN, SPEC
from dlbench.models.spec import Shape

# Flax's own defaults, taken from flax.linen.Dense so "framework-default" is
# whatever the installed Flax does, not our copy of it.
DEFAULT_KERNEL_INIT = nn.Dense.kernel_init
DEFAULT_BIAS_INIT = nn.Dense.bias_init


class MLP(nn.Module):
    classes: int
    kernel_init: nn.initializers.Initializer = DEFAULT_KERNEL_INIT
    bias_init: nn.initializers.Initializer = DEFAULT_BIAS_INIT

    @nn.compact
    def __call__(self, x: jax.Array, deterministic: bool = True) -> jax.Array:
        # `deterministic` is unused (no dropout) but every dlbench model takes it,
        # so the adapter's train/eval steps are the same code for every network.
        dense = lambda units, name: nn.Dense(units, kernel_init=self.kernel_init, bias_init=self.bias_init, name=name)
        x = x.reshape((x.shape[0], -1))
        x = nn.relu(dense(HIDDEN, "dense1")(x))
        return dense(self.classes, "dense2")(x)


def build(
    shape: Shape,
    classes: int,
    *,
    kernel_init: nn.initializers.Initializer = DEFAULT_KERNEL_INIT,
    bias_init: nn.initializers.Initializer = DEFAULT_BIAS_INIT,
) -> MLP:
    """The network for NHWC input of `shape` (H, W, C) and `classes` outputs."""
    reason = SPEC.check_input(shape)
    if reason:
        raise ValueError(reason)
    return MLP(classes=classes, kernel_init=kernel_init, bias_init=bias_init)
