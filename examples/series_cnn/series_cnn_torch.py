"""`series_cnn` in PyTorch: channels-first (N, C, L) input, logits out."""

from __future__ import annotations

import torch
from torch import nn

KERNEL = 5


class SeriesCNN(nn.Module):
    def __init__(self, channels: int, num_classes: int, width: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv1d(channels, width, KERNEL, padding=KERNEL // 2)
        self.conv2 = nn.Conv1d(width, 2 * width, KERNEL, padding=KERNEL // 2)
        self.classifier = nn.Linear(2 * width, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.max_pool1d(torch.relu(self.conv1(x)), 2)
        x = torch.relu(self.conv2(x))
        return self.classifier(x.mean(dim=2))  # global average pooling over time


def build(input_shape: tuple[int, int], num_classes: int, width: int = 16) -> nn.Module:
    return SeriesCNN(input_shape[1], num_classes, width)
