"""`lenet5` in Flax linen, channels-last (NHWC, Flax's native layout).

conv1 6@5x5 padding 2, ReLU, max-pool 2 -> conv2 16@5x5 valid, ReLU, max-pool 2
-> flatten -> fc1 120 ReLU -> fc2 84 ReLU -> fc3 classes (logits), as
`dlbench.models.lenet5` describes. Initializers are module attributes so the
JAX adapter can choose Glorot-uniform + zeros or Flax's own defaults.
"""

from __future__ import annotations

import flax.linen as nn
import jax

from dlbench.models.lenet5 import PAD, SPEC
from dlbench.models.spec import Shape

# Flax's own defaults (lecun-normal kernels, zero biases), read from the installed Flax.
DEFAULT_KERNEL_INIT = nn.Conv.kernel_init
DEFAULT_BIAS_INIT = nn.Conv.bias_init


class LeNet5(nn.Module):
    classes: int
    kernel_init: nn.initializers.Initializer = DEFAULT_KERNEL_INIT
    bias_init: nn.initializers.Initializer = DEFAULT_BIAS_INIT

    @nn.compact
    def __call__(self, x: jax.Array, deterministic: bool = True) -> jax.Array:
        # `deterministic` is unused (no dropout); every dlbench model takes it so
        # the adapter's steps are one code path for all networks.
        inits = dict(kernel_init=self.kernel_init, bias_init=self.bias_init)
        # Explicit symmetric padding 2 (what "SAME" gives for a 5x5 stride-1 kernel),
        # written out so it reads like the spec and like torch's padding=2.
        x = nn.Conv(6, (5, 5), padding=((PAD, PAD), (PAD, PAD)), name="conv1", **inits)(x)
        x = nn.max_pool(nn.relu(x), (2, 2), strides=(2, 2))
        x = nn.Conv(16, (5, 5), padding="VALID", name="conv2", **inits)(x)
        x = nn.max_pool(nn.relu(x), (2, 2), strides=(2, 2))
        x = x.reshape((x.shape[0], -1))
        x = nn.relu(nn.Dense(120, name="fc1", **inits)(x))
        x = nn.relu(nn.Dense(84, name="fc2", **inits)(x))
        return nn.Dense(self.classes, name="fc3", **inits)(x)


def build(
    shape: Shape,
    classes: int,
    *,
    kernel_init: nn.initializers.Initializer = DEFAULT_KERNEL_INIT,
    bias_init: nn.initializers.Initializer = DEFAULT_BIAS_INIT,
) -> LeNet5:
    """The network for NHWC input of `shape` (H, W, C) and `classes` outputs."""
    reason = SPEC.check_input(shape)
    if reason:
        raise ValueError(reason)
    return LeNet5(classes=classes, kernel_init=kernel_init, bias_init=bias_init)
