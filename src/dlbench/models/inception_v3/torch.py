"""`inception_v3` in PyTorch (NCHW), built from the branch tables in `dlbench.models.inception_v3`.

Each mixed block is a module holding its branches (nn.Sequential of basic convs and
pools); forward concatenates the branch outputs on the channel axis. The 3x3
average pool counts its zero padding (count_include_pad=True, torch's default and
torchvision's behaviour).
"""

from __future__ import annotations

import torch
from torch import nn

from dlbench.models.inception_v3 import (
    AVG,
    BN_EPSILON,
    BN_MOMENTUM,
    DROPOUT,
    SPEC,
    Branch,
    Conv,
    Split,
    Step,
    block_channels,
    blocks,
    branch_channels,
    stem,
    step_channels,
)


class BasicConv(nn.Sequential):
    def __init__(self, in_ch: int, c: Conv, momentum: float) -> None:
        super().__init__(
            nn.Conv2d(in_ch, c.out, (c.kh, c.kw), c.stride, padding=(c.ph, c.pw), bias=False),
            nn.BatchNorm2d(c.out, eps=BN_EPSILON, momentum=round(1.0 - momentum, 8)),  # 0.1, not 0.0999...
            nn.ReLU(),
        )


class SplitConv(nn.Module):
    """Parallel convs on one input, concatenated (Inception E's 1x3 / 3x1 pair)."""

    def __init__(self, in_ch: int, split: Split, momentum: float) -> None:
        super().__init__()
        self.convs = nn.ModuleList(BasicConv(in_ch, c, momentum) for c in split.convs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([conv(x) for conv in self.convs], dim=1)


def _layer(step: Step, in_ch: int, momentum: float) -> nn.Module:
    if isinstance(step, Conv):
        return BasicConv(in_ch, step, momentum)
    if isinstance(step, Split):
        return SplitConv(in_ch, step, momentum)
    if step == AVG:
        return nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=True)
    return nn.MaxPool2d(3, stride=2)


def branch(steps: Branch, in_ch: int, momentum: float) -> nn.Sequential:
    layers = []
    for step in steps:
        layers.append(_layer(step, in_ch, momentum))
        in_ch = step_channels(step, in_ch)
    return nn.Sequential(*layers)


class Mixed(nn.Module):
    def __init__(self, branches: tuple[Branch, ...], in_ch: int, momentum: float) -> None:
        super().__init__()
        self.branches = nn.ModuleList(branch(b, in_ch, momentum) for b in branches)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([b(x) for b in self.branches], dim=1)


class InceptionV3(nn.Module):
    def __init__(
        self, input_shape: tuple[int, int, int], num_classes: int, bn_momentum: float, **options: int | float
    ) -> None:
        super().__init__()
        self.stem = branch(stem(options["width_mult"]), input_shape[2], bn_momentum)
        mixed, ch = [], branch_channels(stem(options["width_mult"]), input_shape[2])
        for block in blocks(**options):  # type: ignore[arg-type]  # width_mult float, the counts int
            mixed.append(Mixed(block, ch, bn_momentum))
            ch = block_channels(block, ch)
        self.mixed = nn.Sequential(*mixed)
        self.classifier = nn.Sequential(nn.Dropout(DROPOUT), nn.Linear(ch, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.mixed(self.stem(x)).mean(dim=(2, 3))  # global average pool
        return self.classifier(x)


def build(
    input_shape: tuple[int, int, int],
    num_classes: int,
    width_mult: float = 1.0,
    blocks_a: int = 3,
    blocks_c: int = 4,
    blocks_e: int = 2,
    bn_momentum: float = BN_MOMENTUM,
) -> nn.Module:
    reason = SPEC.check_input(input_shape)
    if reason:
        raise ValueError(reason)
    return InceptionV3(
        input_shape,
        num_classes,
        bn_momentum,
        width_mult=width_mult,
        blocks_a=blocks_a,
        blocks_c=blocks_c,
        blocks_e=blocks_e,
    )
