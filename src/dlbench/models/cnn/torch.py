"""PyTorch implementation of the `cnn` spec (PyTorch examples/mnist's convnet).

conv1 32@3x3, ReLU -> conv2 64@3x3, ReLU -> max-pool 2 -> dropout .25 ->
flatten -> fc1 128 ReLU -> dropout .5 -> fc2 logits. Channels-first input.
Dropout modules follow `model.train()` / `model.eval()`, so they are active
in training and off in evaluation and inference. Initialization is applied
by the adapter, not here.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from dlbench.models.cnn import DROPOUT_CONV, DROPOUT_DENSE
from dlbench.models.spec import conv_out


class ConvNet(nn.Module):
    def __init__(self, input_shape: tuple[int, int, int], num_classes: int) -> None:
        super().__init__()
        h, w, c = input_shape
        # Two valid 3x3 convolutions, then a 2x2 pool (floor), as in the spec.
        fh, fw = (conv_out(conv_out(n, 3), 3) // 2 for n in (h, w))
        self.conv1 = nn.Conv2d(c, 32, kernel_size=3)
        self.conv2 = nn.Conv2d(32, 64, kernel_size=3)
        self.dropout1 = nn.Dropout(DROPOUT_CONV)
        self.flatten = nn.Flatten()
        self.fc1 = nn.Linear(64 * fh * fw, 128)
        self.dropout2 = nn.Dropout(DROPOUT_DENSE)
        self.fc2 = nn.Linear(128, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = self.dropout1(F.max_pool2d(x, 2))
        x = self.flatten(x)
        x = self.dropout2(F.relu(self.fc1(x)))
        return self.fc2(x)


def build(input_shape: tuple[int, int, int], num_classes: int) -> nn.Module:
    """The network for (H, W, C) inputs and `num_classes` classes."""
    return ConvNet(input_shape, num_classes)
