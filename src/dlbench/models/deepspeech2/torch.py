"""PyTorch implementation of the `deepspeech2` spec.

Input (N, T, F) float32 spectrograms; the model adds the channel axis itself
(N, 1, T, F) so the data path is the same as in the other frameworks. Conv2d
+ BatchNorm2d + Hardtanh(0, 20) twice (deepspeech.pytorch's front end, no conv
bias), then one multi-layer bidirectional nn.GRU / nn.LSTM (outputs of the two
directions concatenated, torch's own merge), then nn.Linear to the alphabet.
Returns (N, T', classes) logits, batch first; the adapter's CTC loss
transposes to torch's (T', N, C) itself.

LSTM: b_hh frozen at zero (one trainable bias per gate, see
`dlbench.models.lstm`). GRU: torch's b_ih + b_hh (6H), the same layout as
Keras' reset_after GRU and the Flax cell.
"""

from __future__ import annotations

import torch
from torch import nn

from dlbench.models.deepspeech2 import BN_DECAY, BN_EPS, CLIP, CONV1, CONV2, check_options, front_end_out
from dlbench.models.lstm.torch import freeze_recurrent_biases


class DeepSpeech2(nn.Module):
    def __init__(self, features: int, classes: int, rnn: str, rnn_layers: int, hidden: int, conv_channels: int) -> None:
        super().__init__()
        c = conv_channels
        momentum = 1.0 - BN_DECAY  # torch's momentum is the weight of the new batch
        self.conv = nn.Sequential(
            nn.Conv2d(1, c, CONV1["kernel"], stride=CONV1["stride"], padding=CONV1["padding"], bias=False),
            nn.BatchNorm2d(c, eps=BN_EPS, momentum=momentum),
            nn.Hardtanh(0.0, CLIP, inplace=True),
            nn.Conv2d(c, c, CONV2["kernel"], stride=CONV2["stride"], padding=CONV2["padding"], bias=False),
            nn.BatchNorm2d(c, eps=BN_EPS, momentum=momentum),
            nn.Hardtanh(0.0, CLIP, inplace=True),
        )
        _, f2 = front_end_out(1, features)
        cls = nn.GRU if rnn == "gru" else nn.LSTM
        self.rnn = cls(c * f2, hidden, num_layers=rnn_layers, bidirectional=True, batch_first=True)
        if rnn == "lstm":
            freeze_recurrent_biases(self.rnn)
        self.fc = nn.Linear(2 * hidden, classes)

    def forward(self, spectrogram: torch.Tensor) -> torch.Tensor:
        x = self.conv(spectrogram.unsqueeze(1))  # (N, C, T', F2)
        n, c, t, f = x.shape
        x = x.permute(0, 2, 1, 3).reshape(n, t, c * f)  # (N, T', C*F2)
        x, _ = self.rnn(x)
        return self.fc(x)


def build(
    input_shape: tuple[int, int], num_classes: int, *, rnn: str, rnn_layers: int, hidden: int, conv_channels: int
) -> nn.Module:
    """The model for spectrograms of `input_shape` (T, F) and an alphabet of `num_classes` (incl. blank)."""
    check_options(rnn, rnn_layers, hidden, conv_channels)
    return DeepSpeech2(input_shape[1], num_classes, rnn, rnn_layers, hidden, conv_channels)
