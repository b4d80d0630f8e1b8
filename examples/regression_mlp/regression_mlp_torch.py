"""`regression_mlp` in PyTorch: (N, F) in, (N, K) predictions out."""

from __future__ import annotations

from torch import nn


def build(input_shape: tuple[int], targets: int, hidden: int = 32) -> nn.Module:
    return nn.Sequential(nn.Linear(input_shape[0], hidden), nn.ReLU(), nn.Linear(hidden, targets))
