"""PyTorch implementation of the `lenet5` spec (seed 002's LeNet-5).

conv1 6@5x5 pad 2, ReLU, max-pool 2 -> conv2 16@5x5, ReLU, max-pool 2 ->
flatten -> fc1 120 ReLU -> fc2 84 ReLU -> fc3 logits. Channels-first input;
the padding is part of conv1 so that no framework's data path differs.
Initialization is applied by the adapter, not here.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from dlbench.models.lenet5 import PAD
from dlbench.models.spec import conv_out


def _feature_hw(h: int, w: int) -> tuple[int, int]:
    """Spatial size after conv1 (padded) + pool + conv2 (valid) + pool."""
    return tuple(conv_out(conv_out(n, 5, padding=PAD) // 2, 5) // 2 for n in (h, w))  # type: ignore[return-value]


class LeNet5(nn.Module):
    def __init__(self, input_shape: tuple[int, int, int], num_classes: int) -> None:
        super().__init__()
        h, w, c = input_shape
        fh, fw = _feature_hw(h, w)
        self.conv1 = nn.Conv2d(c, 6, kernel_size=5, padding=PAD)
        self.conv2 = nn.Conv2d(6, 16, kernel_size=5)
        self.flatten = nn.Flatten()
        self.fc1 = nn.Linear(16 * fh * fw, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = self.flatten(x)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def build(input_shape: tuple[int, int, int], num_classes: int) -> nn.Module:
    """The network for (H, W, C) inputs and `num_classes` classes."""
    return LeNet5(input_shape, num_classes)
