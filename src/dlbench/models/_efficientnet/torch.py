"""EfficientNet in PyTorch (NCHW), shared by `efficientnet_b0` and `efficientnet_b4`:
built from the block list in `dlbench.models._efficientnet`.

Depthwise convs are nn.Conv2d(groups=channels) padded (k-1)/2 on each side.
Stochastic depth is written out (torch has no layer for it): in training, each
sample's residual branch is kept with probability 1 - p and scaled by 1 / (1 - p).
"""

from __future__ import annotations

import torch
from torch import nn

from dlbench.models._efficientnet import BN_EPSILON, MBConv, blocks, check_input, head_channels, stem_channels
from dlbench.models.mobilenet_v2.torch import conv_bn


class StochasticDepth(nn.Module):
    """Drops the whole residual branch per sample with probability `rate` (training only)."""

    def __init__(self, rate: float) -> None:
        super().__init__()
        self.rate = rate

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.rate == 0.0:
            return x
        keep = 1.0 - self.rate
        mask = torch.empty((x.shape[0], 1, 1, 1), dtype=x.dtype, device=x.device).bernoulli_(keep)
        return x * mask / keep

    def extra_repr(self) -> str:
        return f"rate={self.rate}"


class SqueezeExcitation(nn.Module):
    def __init__(self, channels: int, squeeze: int) -> None:
        super().__init__()
        self.reduce = nn.Conv2d(channels, squeeze, 1)
        self.expand = nn.Conv2d(squeeze, channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = x.mean(dim=(2, 3), keepdim=True)
        return x * torch.sigmoid(self.expand(nn.functional.silu(self.reduce(s))))


class MBConvBlock(nn.Module):
    def __init__(self, b: MBConv, momentum: float) -> None:
        super().__init__()
        e = b.expanded
        layers: list[nn.Module] = [_conv_bn(b.inp, e, 1, momentum)] if e != b.inp else []
        layers += [
            _conv_bn(e, e, b.kernel, momentum, b.stride, groups=e),
            SqueezeExcitation(e, b.squeeze),
            _conv_bn(e, b.out, 1, momentum, act=None),
        ]
        self.body = nn.Sequential(*layers)
        self.residual = b.residual
        self.drop = StochasticDepth(b.drop_rate) if b.residual else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.body(x)
        return x + self.drop(y) if self.residual else y


def _conv_bn(
    in_ch: int,
    out_ch: int,
    kernel: int,
    momentum: float,
    stride: int = 1,
    groups: int = 1,
    act: type[nn.Module] | None = nn.SiLU,
) -> nn.Sequential:
    return conv_bn(in_ch, out_ch, kernel, stride, groups, act, eps=BN_EPSILON, momentum=momentum)


class EfficientNet(nn.Module):
    def __init__(
        self,
        in_channels: int,
        num_classes: int,
        width_mult: float,
        depth_mult: float,
        dropout: float,
        stochastic_depth: float,
        bn_momentum: float,
    ) -> None:
        super().__init__()
        table = blocks(width_mult, depth_mult, stochastic_depth)
        head = head_channels(width_mult)
        self.features = nn.Sequential(
            _conv_bn(in_channels, stem_channels(width_mult), 3, bn_momentum, stride=2),
            *(MBConvBlock(b, bn_momentum) for b in table),
            _conv_bn(table[-1].out, head, 1, bn_momentum),
        )
        self.classifier = nn.Sequential(nn.Dropout(dropout), nn.Linear(head, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x).mean(dim=(2, 3)))


def build(
    input_shape: tuple[int, int, int],
    num_classes: int,
    *,
    width_mult: float,
    depth_mult: float,
    dropout: float,
    stochastic_depth: float,
    bn_momentum: float,
) -> nn.Module:
    reason = check_input(input_shape)
    if reason:
        raise ValueError(reason)
    return EfficientNet(input_shape[2], num_classes, width_mult, depth_mult, dropout, stochastic_depth, bn_momentum)
