"""EfficientNet (Tan & Le 2019) as torchvision builds B0-B4: the shared, framework-neutral
description behind `efficientnet_b0` and `efficientnet_b4` (and any other compound
coefficients). The folder has a leading underscore because it is not a model itself.

Layers (NHWC, C = the dataset's channels), for width w, depth d:
- stem: conv 3x3 stride 2, padding 1 each side, C -> make_divisible(32 w), no bias,
  batch norm, SiLU;
- MBConv stages (expand e, kernel k, first stride s, in, out, repeats n):
  (1,3,1,32,16,1) (6,3,2,16,24,2) (6,5,2,24,40,2) (6,3,2,40,80,3) (6,5,1,80,112,3)
  (6,5,2,112,192,4) (6,3,1,192,320,1); channels make_divisible(c w), repeats ceil(n d).
  A block (in -> out): [1x1 conv -> E = make_divisible(in e), BN, SiLU, when E != in] ->
  depthwise k x k conv (stride, padding (k-1)/2 each side), BN, SiLU -> squeeze-excitation
  (global average pool -> 1x1 conv E -> max(1, in // 4) with bias, SiLU -> 1x1 conv -> E
  with bias, sigmoid -> rescale) -> 1x1 conv -> out, BN (no activation). With stride 1
  and in == out: stochastic depth (whole-sample drop with rate p_i, survivors scaled by
  1 / (1 - p_i), training only) then the identity shortcut. p_i = 0.2 * i / blocks for
  block i = 0, 1, ... counted over the whole network;
- head: 1x1 conv -> 4 x (last stage's out), BN, SiLU -> global average pool ->
  dropout -> dense classes (logits).
Convs before a batch norm have no bias. Batch norm: torchvision's B0-B4 use the default
nn.BatchNorm2d, epsilon 1e-5 and momentum 0.1 (0.9 in Keras/Flax); only its B5-B7 (ported
TF weights) pass epsilon 1e-3, momentum 0.01. We follow B0-B4's.

keras.applications.EfficientNetB0/B4 have the same trainable parameters (same width
rounding, same SE width max(1, int(in * 0.25)), same 4x head): 5,288,548 and 19,341,616
at 1000 classes, asserted by the tests. They differ in things that hold no trainable
parameter: batch norm epsilon 1e-3 / momentum 0.99, a Rescaling + Normalization input
layer (non-trainable statistics), asymmetric stride-2 padding, and dropout rates.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from dlbench.models.mobilenet_v2 import TINY_BN_MOMENTUM, make_divisible
from dlbench.models.spec import FRACTION, MULTIPLIER, ModelSpec, Shape, batchnorm_params, conv_params, dense_params

# (expand ratio, kernel, first stride, in channels, out channels, repeats) at B0.
STAGES = (
    (1, 3, 1, 32, 16, 1),
    (6, 3, 2, 16, 24, 2),
    (6, 5, 2, 24, 40, 2),
    (6, 3, 2, 40, 80, 3),
    (6, 5, 1, 80, 112, 3),
    (6, 5, 2, 112, 192, 4),
    (6, 3, 1, 192, 320, 1),
)
BN_EPSILON = 1e-5
BN_MOMENTUM = 0.9  # Keras/Flax convention (torch 0.1)


class MBConv(NamedTuple):
    expand: int
    kernel: int
    stride: int
    inp: int
    out: int
    drop_rate: float  # stochastic depth rate of this block (used only with the shortcut)

    @property
    def expanded(self) -> int:
        return make_divisible(self.inp * self.expand)

    @property
    def squeeze(self) -> int:
        # From the block's *input* channels, not the expanded ones (torchvision and Keras).
        return max(1, self.inp // 4)

    @property
    def residual(self) -> bool:
        return self.stride == 1 and self.inp == self.out


def stem_channels(width_mult: float) -> int:
    return make_divisible(STAGES[0][3] * width_mult)


def blocks(width_mult: float, depth_mult: float, stochastic_depth: float) -> list[MBConv]:
    """Every MBConv block in order, with its stochastic-depth rate."""
    stages = [
        (e, k, s, make_divisible(i * width_mult), make_divisible(o * width_mult), int(math.ceil(n * depth_mult)))
        for e, k, s, i, o, n in STAGES
    ]
    total = sum(stage[-1] for stage in stages)
    out: list[MBConv] = []
    for e, k, s, inp, oup, n in stages:
        for j in range(n):
            out.append(
                MBConv(e, k, s if j == 0 else 1, inp if j == 0 else oup, oup, stochastic_depth * len(out) / total)
            )
    return out


def head_channels(width_mult: float) -> int:
    return 4 * make_divisible(STAGES[-1][4] * width_mult)


def _conv_bn(in_ch: int, out_ch: int, kernel: int, groups: int = 1) -> int:
    return conv_params(in_ch, out_ch, kernel, bias=False, groups=groups) + batchnorm_params(out_ch)


def param_count(
    shape: Shape,
    classes: int,
    width_mult: float,
    depth_mult: float,
    dropout: float,
    stochastic_depth: float,
    bn_momentum: float,
) -> int:
    total = _conv_bn(shape[2], stem_channels(width_mult), 3)
    for b in blocks(width_mult, depth_mult, stochastic_depth):
        e = b.expanded
        if e != b.inp:
            total += _conv_bn(b.inp, e, 1)
        total += _conv_bn(e, e, b.kernel, groups=e)
        total += conv_params(e, b.squeeze, 1) + conv_params(b.squeeze, e, 1)
        total += _conv_bn(e, b.out, 1)
    head = head_channels(width_mult)
    total += _conv_bn(make_divisible(STAGES[-1][4] * width_mult), head, 1)
    return total + dense_params(head, classes)


def check_input(shape: Shape) -> str | None:
    return None if len(shape) == 3 else f"efficientnet needs (H, W, C) images; got shape {shape}"


def make_spec(
    name: str, width_mult: float, depth_mult: float, dropout: float, resolution: int, reference: int
) -> ModelSpec:
    """The spec of one EfficientNet variant; `resolution` is only the reference input size."""
    return ModelSpec(
        name=name,
        description=f"EfficientNet (torchvision) width {width_mult} depth {depth_mult}: MBConv + SE, "
        f"SiLU, stochastic depth .2, dropout {dropout}",
        kind="nn",
        frameworks=("torch", "tensorflow", "jax"),
        param_count=param_count,
        check_input=check_input,
        reference_counts={((resolution, resolution, 3), 1000): reference},
        reference_source=f"torchvision.models.{name} (num_params {reference:,}); "
        "keras.applications trainable count is the same",
        options={
            "width_mult": width_mult,
            "depth_mult": depth_mult,
            "dropout": dropout,
            "stochastic_depth": 0.2,
            "bn_momentum": BN_MOMENTUM,
        },
        # One block per stage, half of B0's width: the same code, CI-sized; batch-norm
        # momentum as in `dlbench.models.mobilenet_v2` (measured here: 26% -> 83%).
        tiny_options={"width_mult": 0.5, "depth_mult": 0.1, "bn_momentum": TINY_BN_MOMENTUM},
        option_ranges={
            "width_mult": MULTIPLIER,
            "depth_mult": MULTIPLIER,
            "dropout": FRACTION,
            "stochastic_depth": FRACTION,
            "bn_momentum": FRACTION,
        },
        tiny_shape=(32, 32, 3),
        keras_application=f"EfficientNetB{name[-1]}",
    )
