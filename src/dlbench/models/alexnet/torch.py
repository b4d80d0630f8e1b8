"""PyTorch implementation of `alexnet` (channels-first), as torchvision writes it.

`features` / `avgpool` / `classifier` submodules with torchvision's indices, so
the state_dict keys are torchvision's. Dropout follows `model.train()` /
`model.eval()`. Initialization is the adapter's business, not done here.
"""

from __future__ import annotations

import torch
from torch import nn

from dlbench.models.alexnet import DROPOUT, HIDDEN, POOL, SPEC, WIDTHS


class AlexNet(nn.Module):
    def __init__(
        self, in_channels: int, num_classes: int, widths: tuple[int, ...], hidden: int, dropout: float
    ) -> None:
        super().__init__()
        w1, w2, w3, w4, w5 = widths
        self.features = nn.Sequential(
            nn.Conv2d(in_channels, w1, kernel_size=11, stride=4, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(w1, w2, kernel_size=5, padding=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(w2, w3, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(w3, w4, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(w4, w5, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2),
        )
        self.avgpool = nn.AdaptiveAvgPool2d(POOL)
        self.classifier = nn.Sequential(
            nn.Dropout(dropout),
            nn.Linear(w5 * POOL * POOL, hidden),
            nn.ReLU(inplace=True),
            nn.Dropout(dropout),
            nn.Linear(hidden, hidden),
            nn.ReLU(inplace=True),
            nn.Linear(hidden, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.avgpool(self.features(x))
        return self.classifier(torch.flatten(x, 1))


def build(
    input_shape: tuple[int, int, int],
    num_classes: int,
    widths: tuple[int, ...] = WIDTHS,
    hidden: int = HIDDEN,
    dropout: float = DROPOUT,
) -> nn.Module:
    """The network for (H, W, C) inputs and `num_classes` classes."""
    reason = SPEC.check_input(input_shape)
    if reason:
        raise ValueError(reason)
    if len(widths) != 5:
        raise ValueError(f"alexnet takes five conv widths; got {widths}")
    return AlexNet(input_shape[2], num_classes, tuple(widths), hidden, dropout)
