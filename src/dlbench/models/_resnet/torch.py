"""PyTorch ResNet (channels-first) shared by resnet18/50/152, written as torchvision
structures it: `conv1`/`bn1`/`maxpool`, `layer1..4` of blocks, `avgpool`, `fc`,
so state_dict keys are torchvision's. BN uses torch's defaults (eps 1e-5,
momentum 0.1) and follows `model.train()` / `model.eval()`.
"""

from __future__ import annotations

import torch
from torch import nn

from dlbench.models._resnet import BN_EPSILON, BN_MOMENTUM_TORCH, EXPANSION, check_input, stages


def _bn(channels: int) -> nn.BatchNorm2d:
    return nn.BatchNorm2d(channels, eps=BN_EPSILON, momentum=BN_MOMENTUM_TORCH)


def _conv(cin: int, cout: int, kernel: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(cin, cout, kernel, stride=stride, padding=kernel // 2, bias=False)


def _downsample(cin: int, cout: int, stride: int, needed: bool) -> nn.Module | None:
    return nn.Sequential(_conv(cin, cout, 1, stride), _bn(cout)) if needed else None


class BasicBlock(nn.Module):
    def __init__(self, cin: int, planes: int, stride: int, downsample: bool) -> None:
        super().__init__()
        self.conv1 = _conv(cin, planes, 3, stride)
        self.bn1 = _bn(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = _conv(planes, planes, 3)
        self.bn2 = _bn(planes)
        self.downsample = _downsample(cin, planes, stride, downsample)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class Bottleneck(nn.Module):
    def __init__(self, cin: int, planes: int, stride: int, downsample: bool) -> None:
        super().__init__()
        cout = planes * EXPANSION["bottleneck"]
        self.conv1 = _conv(cin, planes, 1)
        self.bn1 = _bn(planes)
        self.conv2 = _conv(planes, planes, 3, stride)  # v1.5: the stride is here
        self.bn2 = _bn(planes)
        self.conv3 = _conv(planes, cout, 1)
        self.bn3 = _bn(cout)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = _downsample(cin, cout, stride, downsample)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class ResNet(nn.Module):
    def __init__(self, in_channels: int, num_classes: int, block: str, blocks: tuple[int, ...], width: int) -> None:
        super().__init__()
        block_cls = BasicBlock if block == "basic" else Bottleneck
        self.conv1 = _conv(in_channels, width, 7, stride=2)
        self.bn1 = _bn(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        channels = width
        for i, stage in enumerate(stages(block, blocks, width), start=1):
            self.add_module(f"layer{i}", nn.Sequential(*(block_cls(*row) for row in stage)))
            channels = stage[-1][1] * EXPANSION[block]
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(channels, num_classes)
        self.num_stages = len(blocks)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        for i in range(1, self.num_stages + 1):
            x = getattr(self, f"layer{i}")(x)
        return self.fc(torch.flatten(self.avgpool(x), 1))


def build_resnet(
    input_shape: tuple[int, int, int], num_classes: int, block: str, blocks: tuple[int, ...], width: int
) -> nn.Module:
    """The ResNet with `block` kind and per-stage `blocks` for (H, W, C) inputs."""
    reason = check_input(input_shape)
    if reason:
        raise ValueError(reason)
    return ResNet(input_shape[2], num_classes, block, tuple(blocks), width)
