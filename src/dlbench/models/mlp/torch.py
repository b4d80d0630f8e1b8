"""PyTorch implementation of the `mlp` spec: flatten -> dense1 (128, ReLU) -> dense2 (logits).

Takes channels-first (N, C, H, W) float32 batches, the layout the torch adapter
prepares once before timing. Initialization is left to the adapter, which
applies glorot-uniform or keeps torch's default over every Linear/Conv2d.
"""

from __future__ import annotations

import torch
from torch import nn

from dlbench.models.mlp import HIDDEN


class MLP(nn.Module):
    def __init__(self, input_shape: tuple[int, int, int], num_classes: int) -> None:
        super().__init__()
        h, w, c = input_shape
        self.flatten = nn.Flatten()
        self.dense1 = nn.Linear(h * w * c, HIDDEN)
        self.dense2 = nn.Linear(HIDDEN, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Logits only: softmax lives in the loss (F.cross_entropy), as in every framework.
        return self.dense2(torch.relu(self.dense1(self.flatten(x))))


def build(input_shape: tuple[int, int, int], num_classes: int) -> nn.Module:
    """The network for (H, W, C) inputs and `num_classes` classes."""
    return MLP(input_shape, num_classes)
