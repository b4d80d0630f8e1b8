"""`mobilenet_v2` in PyTorch (NCHW), built from the block table in `dlbench.models.mobilenet_v2`.

Depthwise convs are nn.Conv2d(groups=channels); every conv pads (k-1)/2 on each
side, as torchvision does. Batch norm uses torch's momentum convention (0.1 here is
0.9 in Keras/Flax). Initialization is the adapter's business, not this module's.
"""

from __future__ import annotations

import torch
from torch import nn

from dlbench.models.mobilenet_v2 import (
    BN_EPSILON,
    BN_MOMENTUM,
    DROPOUT,
    SPEC,
    Block,
    blocks,
    last_channels,
    stem_channels,
)


def conv_bn(
    in_ch: int,
    out_ch: int,
    kernel: int,
    stride: int = 1,
    groups: int = 1,
    act: type[nn.Module] | None = nn.ReLU6,
    eps: float = BN_EPSILON,
    momentum: float = BN_MOMENTUM,
) -> nn.Sequential:
    """Conv (no bias, symmetric padding) -> batch norm -> optional activation.
    `momentum` is given in the Keras/Flax convention, as the specs state it."""
    layers: list[nn.Module] = [
        nn.Conv2d(in_ch, out_ch, kernel, stride, padding=(kernel - 1) // 2, groups=groups, bias=False),
        nn.BatchNorm2d(out_ch, eps=eps, momentum=round(1.0 - momentum, 8)),  # 0.1, not 0.0999...
    ]
    if act is not None:
        layers.append(act())
    return nn.Sequential(*layers)


class InvertedResidual(nn.Module):
    def __init__(self, b: Block, momentum: float) -> None:
        super().__init__()
        layers = [conv_bn(b.inp, b.hidden, 1, momentum=momentum)] if b.expand != 1 else []
        layers += [
            conv_bn(b.hidden, b.hidden, 3, b.stride, groups=b.hidden, momentum=momentum),
            conv_bn(b.hidden, b.out, 1, act=None, momentum=momentum),
        ]  # linear bottleneck
        self.body = nn.Sequential(*layers)
        self.residual = b.residual

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.body(x) if self.residual else self.body(x)


class MobileNetV2(nn.Module):
    def __init__(
        self, in_channels: int, num_classes: int, width_mult: float, depth_mult: float, bn_momentum: float
    ) -> None:
        super().__init__()
        table = blocks(width_mult, depth_mult)
        self.features = nn.Sequential(
            conv_bn(in_channels, stem_channels(width_mult), 3, stride=2, momentum=bn_momentum),
            *(InvertedResidual(b, bn_momentum) for b in table),
            conv_bn(table[-1].out, last_channels(width_mult), 1, momentum=bn_momentum),
        )
        self.classifier = nn.Sequential(nn.Dropout(DROPOUT), nn.Linear(last_channels(width_mult), num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x).mean(dim=(2, 3))  # global average pool
        return self.classifier(x)


def build(
    input_shape: tuple[int, int, int],
    num_classes: int,
    width_mult: float = 1.0,
    depth_mult: float = 1.0,
    bn_momentum: float = BN_MOMENTUM,
) -> nn.Module:
    reason = SPEC.check_input(input_shape)
    if reason:
        raise ValueError(reason)
    return MobileNetV2(input_shape[2], num_classes, width_mult, depth_mult, bn_momentum)
