"""`multi_head` in PyTorch: (N, F) in, {"price": (N, K), "kind": (N, classes)} out."""

from __future__ import annotations

import torch
from torch import nn


class MultiHead(nn.Module):
    def __init__(self, features: int, hidden: int, outputs: dict[str, int]) -> None:
        super().__init__()
        self.trunk = nn.Linear(features, hidden)
        # The heads in the order of their names, as Keras orders a functional model's
        # layers for a dict of outputs (`dlbench check` copies weights in creation order).
        self.kind = nn.Linear(hidden, outputs["kind"])
        self.price = nn.Linear(hidden, outputs["price"])

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        h = torch.relu(self.trunk(x))
        return {"price": self.price(h), "kind": self.kind(h)}


def build(input_shape: tuple[int, ...], outputs: dict[str, int], hidden: int = 32) -> nn.Module:
    return MultiHead(input_shape[0], hidden, outputs)
