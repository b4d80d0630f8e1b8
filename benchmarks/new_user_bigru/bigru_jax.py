"""`bigru` in jax, as a new user writes it from docs/tutorial.md."""

from typing import Any

from flax import linen as nn


class BiGRU(nn.Module):
    classes: int
    hidden: int
    kernel_init: Any = None
    bias_init: Any = None

    @nn.compact
    def __call__(self, x, deterministic=True):
        fwd = nn.RNN(nn.GRUCell(self.hidden))
        bwd = nn.RNN(nn.GRUCell(self.hidden))
        x = nn.Bidirectional(fwd, bwd, name="gru")(x)
        x = nn.relu(x.mean(axis=1))
        init = {"kernel_init": self.kernel_init} if self.kernel_init is not None else {}
        if self.bias_init is not None:
            init["bias_init"] = self.bias_init
        return nn.Dense(self.classes, name="head", **init)(x)


def build(input_shape, num_classes, kernel_init=None, bias_init=None, hidden=16):
    return BiGRU(num_classes, hidden, kernel_init, bias_init)
