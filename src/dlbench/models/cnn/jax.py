"""`cnn` in Flax linen, channels-last (NHWC, Flax's native layout).

conv1 32@3x3 valid, ReLU -> conv2 64@3x3 valid, ReLU -> max-pool 2 ->
dropout .25 -> flatten -> fc1 128 ReLU -> dropout .5 -> fc2 classes (logits),
as `dlbench.models.cnn` describes. Dropout draws from the "dropout" RNG stream
when `deterministic=False` (training) and is the identity otherwise.
Initializers are module attributes so the JAX adapter can choose
Glorot-uniform + zeros or Flax's own defaults.
"""

from __future__ import annotations

import flax.linen as nn
import jax

from dlbench.models.cnn import DROPOUT_CONV, DROPOUT_DENSE, SPEC
from dlbench.models.spec import Shape

# Flax's own defaults (lecun-normal kernels, zero biases), read from the installed Flax.
DEFAULT_KERNEL_INIT = nn.Conv.kernel_init
DEFAULT_BIAS_INIT = nn.Conv.bias_init


class CNN(nn.Module):
    classes: int
    kernel_init: nn.initializers.Initializer = DEFAULT_KERNEL_INIT
    bias_init: nn.initializers.Initializer = DEFAULT_BIAS_INIT

    @nn.compact
    def __call__(self, x: jax.Array, deterministic: bool = True) -> jax.Array:
        inits = dict(kernel_init=self.kernel_init, bias_init=self.bias_init)
        x = nn.relu(nn.Conv(32, (3, 3), padding="VALID", name="conv1", **inits)(x))
        x = nn.relu(nn.Conv(64, (3, 3), padding="VALID", name="conv2", **inits)(x))
        x = nn.max_pool(x, (2, 2), strides=(2, 2))
        x = nn.Dropout(DROPOUT_CONV, deterministic=deterministic)(x)
        x = x.reshape((x.shape[0], -1))
        x = nn.relu(nn.Dense(128, name="fc1", **inits)(x))
        x = nn.Dropout(DROPOUT_DENSE, deterministic=deterministic)(x)
        return nn.Dense(self.classes, name="fc2", **inits)(x)


def build(
    shape: Shape,
    classes: int,
    *,
    kernel_init: nn.initializers.Initializer = DEFAULT_KERNEL_INIT,
    bias_init: nn.initializers.Initializer = DEFAULT_BIAS_INIT,
) -> CNN:
    """The network for NHWC input of `shape` (H, W, C) and `classes` outputs."""
    reason = SPEC.check_input(shape)
    if reason:
        raise ValueError(reason)
    return CNN(classes=classes, kernel_init=kernel_init, bias_init=bias_init)
