"""PyTorch `resnet152`: the shared torchvision-style ResNet (`dlbench.models._resnet.torch`)
with bottleneck blocks."""

from __future__ import annotations

from torch import nn

from dlbench.models._resnet import WIDTH
from dlbench.models._resnet.torch import build_resnet
from dlbench.models.resnet152 import BLOCK, BLOCKS


def build(
    input_shape: tuple[int, int, int], num_classes: int, blocks: tuple[int, ...] = BLOCKS, width: int = WIDTH
) -> nn.Module:
    return build_resnet(input_shape, num_classes, BLOCK, blocks, width)
