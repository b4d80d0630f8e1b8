"""Shared ResNet description for `resnet18`, `resnet50` and `resnet152` (not a model itself:
the leading underscore keeps it out of the registry).

torchvision's ResNet (He et al. 2015) with the v1.5 bottleneck:
stem: conv 7x7/2 pad 3 (no bias), BN, ReLU, max-pool 3x3/2 pad 1 ->
stages i = 0..3 with `width * 2**i` planes and `blocks[i]` blocks, the first
block of stages 1..3 striding 2 -> global average pool -> fc classes.
- basic block (resnet18/34): conv 3x3/s, BN, ReLU, conv 3x3, BN; expansion 1.
- bottleneck (resnet50/101/152): conv 1x1, BN, ReLU, conv 3x3/s, BN, ReLU,
  conv 1x1 to 4x planes, BN; expansion 4. v1.5: the stride sits on the 3x3
  conv (the original v1, and Keras' ResNet50, put it on the first 1x1).
- shortcut: identity, or conv 1x1/s (no bias) + BN ("downsample") when the
  stride or the channel count changes; add, then ReLU.
Every convolution is followed by BN and has no bias. BN: epsilon 1e-5,
running-average momentum 0.1 in torch's convention (0.9 in Keras' and Flax's);
scale 1, shift 0; no zero-init of the last BN's scale (torchvision's default).
The weights are left to each framework's initializer (torchvision's own
kaiming-normal conv init is not reproduced: "framework-default" means the
framework's layer defaults, "glorot-uniform" the adapters' matched init).

Padding: torch pads 3x3/2 and 7x7/2 convolutions symmetrically; Keras'
"same" at stride 2 pads (0, 1) on even inputs, so the Keras code pads
explicitly there. Names follow torchvision's state_dict ("layer1.0.conv1",
"layer2.0.downsample.0"; "layer1_0_conv1" in Keras and Flax).

keras.applications.ResNet50/ResNet152 are ResNet v1 with a bias on every
convolution (and BN epsilon 1.001e-5): their trainable count exceeds
torchvision's by exactly the number of convolution output channels,
`conv_bias_count`. The stride placement changes no count.
"""

from __future__ import annotations

from dlbench.models.spec import DEPTH, ModelSpec, Shape, batchnorm_params, conv_params, dense_params

BLOCKS = ("basic", "bottleneck")
EXPANSION = {"basic": 1, "bottleneck": 4}
WIDTH = 64
BN_EPSILON = 1e-5
BN_MOMENTUM_TORCH = 0.1  # weight of the new batch statistic
BN_MOMENTUM_KERAS = 1.0 - BN_MOMENTUM_TORCH  # weight of the old running average (Keras, Flax)


def stages(block: str, blocks: tuple[int, ...], width: int) -> list[list[tuple[int, int, int, bool]]]:
    """Per stage, per block: (in_channels, planes, stride, has_downsample)."""
    if block not in BLOCKS:
        raise ValueError(f"block must be one of {BLOCKS}; got {block!r}")
    if not blocks or min(blocks) < 1:
        raise ValueError(f"every stage needs at least one block; got {blocks}")
    expansion = EXPANSION[block]
    channels = width
    out: list[list[tuple[int, int, int, bool]]] = []
    for i, count in enumerate(blocks):
        planes = width * 2**i
        stage = []
        for j in range(count):
            stride = 2 if (i > 0 and j == 0) else 1
            stage.append((channels, planes, stride, stride != 1 or channels != planes * expansion))
            channels = planes * expansion
        out.append(stage)
    return out


def _convs(block: str, blocks: tuple[int, ...], width: int, in_channels: int) -> list[tuple[int, int, int]]:
    """Every convolution as (in_channels, out_channels, kernel); each is followed by a BN."""
    convs = [(in_channels, width, 7)]
    e = EXPANSION[block]
    for stage in stages(block, blocks, width):
        for cin, planes, _, down in stage:
            if block == "basic":
                convs += [(cin, planes, 3), (planes, planes, 3)]
            else:
                convs += [(cin, planes, 1), (planes, planes, 3), (planes, planes * e, 1)]
            if down:
                convs.append((cin, planes * e, 1))
    return convs


def param_count(shape: Shape, classes: int, block: str, blocks: tuple[int, ...], width: int) -> int:
    convs = _convs(block, blocks, width, shape[2])
    features = width * 2 ** (len(blocks) - 1) * EXPANSION[block]
    return sum(conv_params(i, o, k, bias=False) + batchnorm_params(o) for i, o, k in convs) + dense_params(
        features, classes
    )


def conv_bias_count(shape: Shape, block: str, blocks: tuple[int, ...], width: int = WIDTH) -> int:
    """Parameters a bias on every convolution would add (Keras' ResNet v1 has them)."""
    return sum(o for _, o, _ in _convs(block, blocks, width, shape[2]))


def check_input(shape: Shape) -> str | None:
    # Every downsampling layer pads, so any image of at least 1x1 gives a 1x1 map or more.
    if len(shape) != 3 or min(shape) < 1:
        return f"resnet takes (H, W, C) images; got shape {shape}"
    return None


def make_spec(
    name: str,
    block: str,
    blocks: tuple[int, ...],
    reference: int,
    tiny_blocks: tuple[int, ...],
    keras_application: str | None,
) -> ModelSpec:
    """The spec of one ResNet depth: its block kind is fixed, `blocks` and `width` are options."""

    def count(shape: Shape, classes: int, blocks: tuple[int, ...] = blocks, width: int = WIDTH) -> int:
        return param_count(shape, classes, block, blocks, width)

    depth = {"basic": 2, "bottleneck": 3}[block] * sum(blocks) + 2
    return ModelSpec(
        name=name,
        description=f"ResNet-{depth} v1.5 (torchvision): {block} blocks {blocks}, BN eps 1e-5, global avg-pool, fc",
        kind="nn",
        frameworks=("torch", "tensorflow", "jax"),
        param_count=count,
        check_input=check_input,
        reference_counts={((224, 224, 3), 1000): reference},
        reference_source=f"torchvision.models.{name} (He et al. 2015; v1.5 stride placement)",
        options={"blocks": blocks, "width": WIDTH},
        tiny_options={"blocks": tiny_blocks, "width": 8},
        option_ranges={"blocks": DEPTH},
        keras_application=keras_application,
    )
