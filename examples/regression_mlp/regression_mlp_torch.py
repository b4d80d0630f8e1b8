"""`regression_mlp` in PyTorch: {"numeric": (N, F) float, "category": (N, 1) int64} in, (N, K) out."""

from __future__ import annotations

import torch
from torch import nn


class RegressionMLP(nn.Module):
    def __init__(self, features: int, categories: int, embed: int, hidden: int, targets: int) -> None:
        super().__init__()
        self.category = nn.Embedding(categories, embed)
        self.hidden = nn.Linear(features, hidden)
        self.out = nn.Linear(hidden, targets)

    def forward(self, x: dict[str, torch.Tensor]) -> torch.Tensor:
        h = torch.cat([x["numeric"], self.category(x["category"]).flatten(1)], dim=1)
        return self.out(torch.relu(self.hidden(h)))


def build(
    input_shape: dict[str, tuple[int, ...]], targets: int, hidden: int = 32, categories: int = 8, embed: int = 4
) -> nn.Module:
    features = input_shape["numeric"][0] + input_shape["category"][0] * embed
    return RegressionMLP(features, categories, embed, hidden, targets)
