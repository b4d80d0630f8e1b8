"""`efficientnet_b0` in PyTorch: the shared EfficientNet (`dlbench.models._efficientnet.torch`)
at B0's coefficients, which arrive as the spec's default options."""

from __future__ import annotations

from torch import nn

from dlbench.models._efficientnet import torch as efficientnet
from dlbench.models.efficientnet_b0 import SPEC


def build(input_shape: tuple[int, int, int], num_classes: int, **options: float) -> nn.Module:
    return efficientnet.build(input_shape, num_classes, **SPEC.resolve_options(options))
