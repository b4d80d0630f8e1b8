"""`dsconv` in PyTorch: channels-first (N, C, H, W) input, logits out.

dlbench initializes every Conv2d and Linear itself (its init scheme), so the
builder does not; batch norms start at scale 1, shift 0 as in every framework.
"""

from __future__ import annotations

import torch
from torch import nn

BN = {"eps": 1e-5, "momentum": 0.1}


def conv_bn_relu(c_in: int, c_out: int, kernel: int, stride: int = 1, groups: int = 1) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, kernel, stride=stride, padding=kernel // 2, groups=groups, bias=False),
        nn.BatchNorm2d(c_out, **BN),
        nn.ReLU(),
    )


def separable(c_in: int, c_out: int) -> nn.Sequential:
    """Depthwise 3x3 (stride 2, one filter per channel), then pointwise 1x1."""
    return nn.Sequential(conv_bn_relu(c_in, c_in, 3, stride=2, groups=c_in), conv_bn_relu(c_in, c_out, 1))


class DSConv(nn.Module):
    def __init__(self, channels: int, num_classes: int, width: int) -> None:
        super().__init__()
        self.stem = conv_bn_relu(channels, width, 3)
        self.block1 = separable(width, 2 * width)
        self.block2 = separable(2 * width, 4 * width)
        self.classifier = nn.Linear(4 * width, num_classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.block2(self.block1(self.stem(x)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x).mean(dim=(2, 3)))  # global average pooling


def build(input_shape: tuple[int, int, int], num_classes: int, width: int = 32) -> nn.Module:
    return DSConv(input_shape[2], num_classes, width)
