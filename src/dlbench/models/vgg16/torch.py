"""PyTorch implementation of `vgg16` (channels-first), as torchvision writes it.

`features` / `avgpool` / `classifier` with torchvision's indices, so the
state_dict keys are torchvision's. Dropout follows `model.train()` /
`model.eval()`; initialization is the adapter's business.
"""

from __future__ import annotations

import torch
from torch import nn

from dlbench.models.vgg16 import CONVS_PER_STAGE, DROPOUT, HIDDEN, POOL, SPEC, WIDTHS, plan


class VGG(nn.Module):
    def __init__(
        self,
        in_channels: int,
        num_classes: int,
        widths: tuple[int, ...],
        convs: tuple[int, ...],
        hidden: int,
        dropout: float,
    ) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        channels = in_channels
        for kind, _, filters in plan(widths, convs):
            if kind == "conv":
                layers += [nn.Conv2d(channels, filters, kernel_size=3, padding=1), nn.ReLU(inplace=True)]
                channels = filters
            else:
                layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(POOL)
        self.classifier = nn.Sequential(
            nn.Linear(channels * POOL * POOL, hidden),
            nn.ReLU(inplace=True),
            nn.Dropout(dropout),
            nn.Linear(hidden, hidden),
            nn.ReLU(inplace=True),
            nn.Dropout(dropout),
            nn.Linear(hidden, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.avgpool(self.features(x))
        return self.classifier(torch.flatten(x, 1))


def build(
    input_shape: tuple[int, int, int],
    num_classes: int,
    widths: tuple[int, ...] = WIDTHS,
    convs: tuple[int, ...] = CONVS_PER_STAGE,
    hidden: int = HIDDEN,
    dropout: float = DROPOUT,
) -> nn.Module:
    """The network for (H, W, C) inputs and `num_classes` classes."""
    reason = SPEC.check_input(input_shape)
    if reason:
        raise ValueError(reason)
    return VGG(input_shape[2], num_classes, tuple(widths), tuple(convs), hidden, dropout)
