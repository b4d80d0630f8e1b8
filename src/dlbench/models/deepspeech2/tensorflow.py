"""`deepspeech2` in Keras 3 (TensorFlow backend): the network of `dlbench.models.deepspeech2`.

Reshape (T, F) -> (T, F, 1); ZeroPadding2D + Conv2D "valid" reproduce the
spec's symmetric paddings exactly ("same" would pad asymmetrically with
stride 2); BatchNormalization(momentum 0.9, epsilon 1e-5: torch's defaults in
Keras' convention) and ReLU(max_value=20). Then Bidirectional(GRU or LSTM,
merge_mode="concat") layers and a Dense to the alphabet. The GRU is Keras'
default reset_after=True form (two bias vectors, 6H, as torch's GRU); the
LSTM has one bias per gate. Initializers: see `dlbench.models.lstm.tensorflow`.
"""

from __future__ import annotations

from typing import Any

import keras

from dlbench.models.deepspeech2 import BN_DECAY, BN_EPS, CLIP, CONV1, CONV2, check_options, front_end_out
from dlbench.models.lstm.tensorflow import recurrent_init_kwargs
from dlbench.models.mlp.tensorflow import init_kwargs


def build(
    input_shape: tuple[int, int],
    num_classes: int,
    kernel_initializer: Any = None,
    bias_initializer: Any = None,
    *,
    rnn: str,
    rnn_layers: int,
    hidden: int,
    conv_channels: int,
) -> keras.Model:
    check_options(rnn, rnn_layers, hidden, conv_channels)
    layers = keras.layers
    t, f = input_shape
    t2, f2 = front_end_out(t, f)
    conv_init = {"kernel_initializer": kernel_initializer} if kernel_initializer is not None else {}
    rnn_init = recurrent_init_kwargs(kernel_initializer, bias_initializer)
    if rnn == "gru":
        rnn_init.pop("unit_forget_bias", None)
    inputs = keras.Input(shape=input_shape, name="spectrogram")
    x = layers.Reshape((t, f, 1), name="add_channel")(inputs)
    for i, conv in enumerate((CONV1, CONV2), start=1):
        (pt, pf) = conv["padding"]
        x = layers.ZeroPadding2D(((pt, pt), (pf, pf)), name=f"pad{i}")(x)
        x = layers.Conv2D(
            conv_channels,
            conv["kernel"],
            strides=conv["stride"],
            padding="valid",
            use_bias=False,
            name=f"conv{i}",
            **conv_init,
        )(x)
        x = layers.BatchNormalization(momentum=BN_DECAY, epsilon=BN_EPS, name=f"bn{i}")(x)
        x = layers.ReLU(max_value=CLIP, name=f"clip{i}")(x)
    x = layers.Reshape((t2, f2 * conv_channels), name="frames")(x)
    cell = layers.GRU if rnn == "gru" else layers.LSTM
    for i in range(rnn_layers):
        x = layers.Bidirectional(
            cell(hidden, return_sequences=True, **rnn_init), merge_mode="concat", name=f"birnn{i + 1}"
        )(x)
    logits = layers.Dense(num_classes, name="fc", **init_kwargs(kernel_initializer, bias_initializer))(x)
    return keras.Model(inputs, logits, name="deepspeech2")
