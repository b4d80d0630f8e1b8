"""`deepspeech2` in Flax linen: the network of `dlbench.models.deepspeech2`.

(N, T, F) -> (N, T, F, 1); nn.Conv with the spec's explicit paddings, no bias;
nn.BatchNorm(use_running_average=deterministic, momentum 0.9, epsilon 1e-5);
clip to [0, 20]; frames flattened to (N, T', F2 * C); nn.Bidirectional over
two nn.RNN of the fused cells in `dlbench.models.lstm.jax` (outputs
concatenated, Flax's default merge); nn.Dense to the alphabet.
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

from dlbench.models.deepspeech2 import BN_DECAY, BN_EPS, CLIP, CONV1, CONV2, check_options
from dlbench.models.lstm.jax import Initializer, cell, dense_kwargs


class DeepSpeech2(nn.Module):
    classes: int
    rnn: str
    rnn_layers: int
    hidden: int
    conv_channels: int
    kernel_init: Initializer | None = None
    bias_init: Initializer | None = None

    @nn.compact
    def __call__(self, x: jax.Array, deterministic: bool = True) -> jax.Array:
        x = x[..., None]
        conv_init = {} if self.kernel_init is None else {"kernel_init": self.kernel_init}
        for i, conv in enumerate((CONV1, CONV2), start=1):
            pt, pf = conv["padding"]
            x = nn.Conv(
                self.conv_channels,
                conv["kernel"],
                strides=conv["stride"],
                padding=((pt, pt), (pf, pf)),
                use_bias=False,
                name=f"conv{i}",
                **conv_init,
            )(x)
            x = nn.BatchNorm(use_running_average=deterministic, momentum=BN_DECAY, epsilon=BN_EPS, name=f"bn{i}")(x)
            x = jnp.clip(x, 0.0, CLIP)
        n, t, f, c = x.shape
        x = x.reshape(n, t, f * c)
        for i in range(self.rnn_layers):
            # The two RNNs are created here, so their parameters sit under these names.
            x = nn.Bidirectional(
                nn.RNN(cell(self.rnn, self.hidden, self.kernel_init, self.bias_init), name=f"rnn{i + 1}_forward"),
                nn.RNN(cell(self.rnn, self.hidden, self.kernel_init, self.bias_init), name=f"rnn{i + 1}_backward"),
            )(x)
        return nn.Dense(self.classes, name="fc", **dense_kwargs(self.kernel_init, self.bias_init))(x)


def build(
    shape: tuple[int, int],
    classes: int,
    *,
    kernel_init: Initializer | None = None,
    bias_init: Initializer | None = None,
    rnn: str,
    rnn_layers: int,
    hidden: int,
    conv_channels: int,
) -> DeepSpeech2:
    check_options(rnn, rnn_layers, hidden, conv_channels)
    return DeepSpeech2(classes, rnn, rnn_layers, hidden, conv_channels, kernel_init=kernel_init, bias_init=bias_init)
