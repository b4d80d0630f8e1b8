"""`mobilenet_v2`: torchvision's MobileNetV2 (Sandler et al. 2018), framework-neutral spec.

Layers (NHWC, C = the dataset's channels):
- stem: conv 3x3 stride 2, padding 1 each side, C -> make_divisible(32 * width), no bias,
  batch norm, ReLU6;
- 17 inverted-residual blocks from the (expand t, out c, repeats n, stride s) table
  (1,16,1,1) (6,24,2,2) (6,32,3,2) (6,64,4,2) (6,96,3,1) (6,160,3,2) (6,320,1,1),
  out = make_divisible(c * width), repeats ceil(n * depth); only a stage's first block
  has stride s. A block: [1x1 conv in -> round(in * t), BN, ReLU6, when t != 1] ->
  depthwise 3x3 conv (stride, padding 1 each side), BN, ReLU6 -> 1x1 conv -> out, BN
  (linear bottleneck); identity shortcut when stride 1 and in == out;
- head: 1x1 conv -> make_divisible(1280 * max(1, width)), BN, ReLU6 -> global average
  pool -> dropout 0.2 -> dense classes (logits).
Convs before a batch norm have no bias. Batch norm: epsilon 1e-5, momentum 0.1 in
torch's convention (0.9 in Keras/Flax), as torchvision's default BatchNorm2d.
keras.applications.MobileNetV2 uses epsilon 1e-3 and momentum 0.999: its trainable
count is the same (3,504,872 at 224x224x3, 1000 classes; the test asserts it) but we
follow torchvision. Stride-2 convs pad 1 on each side in every framework (Keras'
"same" would pad 0 before / 1 after on even inputs, shifting the sampling grid).

`depth_mult` is ours (torchvision has only width): repeats ceil(n * depth_mult), so
1.0 is the published network and small values give one block per stage for CI.
`bn_momentum` (Keras/Flax convention, default 0.9) exists for the CI configuration: the
conformance suite evaluates with running statistics after only 64 Adam steps, and at
0.9 they lag the fast-moving weights through ~20 stacked batch norms (measured in
torch, tiny MobileNetV2 at 64x64: 66% accuracy with batch statistics, 27% with the
running ones; 67% with momentum 0.5). It changes no parameter count.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from dlbench.models.spec import FRACTION, MULTIPLIER, ModelSpec, Shape, batchnorm_params, conv_params, dense_params

# (expand ratio t, output channels c, repeats n, first stride s): the paper's Table 2.
SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))
STEM = 32
LAST = 1280
DROPOUT = 0.2
BN_EPSILON = 1e-5
BN_MOMENTUM = 0.9  # Keras/Flax convention: running = 0.9 * running + 0.1 * batch (torch 0.1)
# CI configurations only (see the module docstring): running statistics that follow 64 Adam steps.
TINY_BN_MOMENTUM = 0.5


def make_divisible(value: float, divisor: int = 8, min_value: int | None = None) -> int:
    """Round a channel count to a multiple of `divisor`, never below 90% of `value`
    (the rule MobileNet and EfficientNet use to scale widths)."""
    min_value = divisor if min_value is None else min_value
    rounded = max(min_value, int(value + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * value else rounded


class Block(NamedTuple):
    expand: int
    inp: int
    out: int
    stride: int

    @property
    def hidden(self) -> int:
        return int(round(self.inp * self.expand))

    @property
    def residual(self) -> bool:
        return self.stride == 1 and self.inp == self.out


def stem_channels(width_mult: float) -> int:
    return make_divisible(STEM * width_mult)


def last_channels(width_mult: float) -> int:
    return make_divisible(LAST * max(1.0, width_mult))


def blocks(width_mult: float = 1.0, depth_mult: float = 1.0) -> list[Block]:
    """The inverted-residual blocks in order, for every framework to build from."""
    out: list[Block] = []
    inp = stem_channels(width_mult)
    for t, c, n, s in SETTINGS:
        channels = make_divisible(c * width_mult)
        for i in range(int(math.ceil(n * depth_mult))):
            out.append(Block(t, inp, channels, s if i == 0 else 1))
            inp = channels
    return out


def _conv_bn(in_ch: int, out_ch: int, kernel: int, groups: int = 1) -> int:
    return conv_params(in_ch, out_ch, kernel, bias=False, groups=groups) + batchnorm_params(out_ch)


def param_count(shape: Shape, classes: int, width_mult: float, depth_mult: float, bn_momentum: float) -> int:
    total = _conv_bn(shape[2], stem_channels(width_mult), 3)
    for b in blocks(width_mult, depth_mult):
        if b.expand != 1:
            total += _conv_bn(b.inp, b.hidden, 1)
        total += _conv_bn(b.hidden, b.hidden, 3, groups=b.hidden) + _conv_bn(b.hidden, b.out, 1)
    last = last_channels(width_mult)
    total += _conv_bn(blocks(width_mult, depth_mult)[-1].out, last, 1)
    return total + dense_params(last, classes)


def check_input(shape: Shape) -> str | None:
    # Every conv is padded, so any size works; the channel axis must exist.
    return None if len(shape) == 3 else f"mobilenet_v2 needs (H, W, C) images; got shape {shape}"


SPEC = ModelSpec(
    name="mobilenet_v2",
    description="MobileNetV2 (torchvision): 17 inverted-residual blocks, ReLU6, dropout .2",
    kind="nn",
    frameworks=("torch", "tensorflow", "jax"),
    param_count=param_count,
    check_input=check_input,
    reference_counts={((224, 224, 3), 1000): 3_504_872},
    reference_source="torchvision.models.mobilenet_v2 (num_params 3,504,872); "
    "keras.applications.MobileNetV2 trainable count is the same",
    options={"width_mult": 1.0, "depth_mult": 1.0, "bn_momentum": BN_MOMENTUM},
    tiny_options={"width_mult": 0.5, "depth_mult": 0.1, "bn_momentum": TINY_BN_MOMENTUM},
    option_ranges={"width_mult": MULTIPLIER, "depth_mult": MULTIPLIER, "bn_momentum": FRACTION},
    tiny_shape=(64, 64, 3),
    keras_application="MobileNetV2",
)
