"""`vgg16`: VGG-16 (configuration D of Simonyan & Zisserman 2014) as torchvision builds it.

Five stages of 3x3 convolutions (padding 1, bias, ReLU), 2-2-3-3-3 convolutions
of 64-128-256-512-512 filters, each stage closed by a 2x2/2 max-pool ->
adaptive average pool to 7x7 -> flatten -> fc 4096, ReLU, dropout .5 ->
fc 4096, ReLU, dropout .5 -> fc classes (logits). No batch norm.
138,357,544 trainable parameters at 224x224x3 with 1000 classes (torchvision).

keras.applications.VGG16 is the same network (Flatten of the 7x7x512 map, fc1,
fc2, predictions): its trainable count is checked equal to ours. The adaptive
pool (shared with alexnet: `dlbench.models.alexnet.adaptive_pool_weights`) is the
identity at 224x224 and replicates a smaller map, e.g. 1x1 at 32x32 input,
so the count does not depend on the input size.

Options: `widths` (one per stage), `convs` (3x3 convolutions per stage:
(2, 2, 3, 3, 3) is configuration D; torchvision's VGG-11/13/19 are other
tuples), `hidden` (the two fc widths) and `dropout` (torchvision's `dropout`
argument, 0.5). The conformance suite trains one narrow conv per stage at
32x32x3 (the smallest input five pools fit) with dropout 0.1: without batch
norm the 13-conv stack from a Glorot start barely moved in 64 Adam steps on
real MNIST (13-36%, torch), the 5-conv one reaches ~74%. Layer names
follow torchvision's state_dict ("features.0" ... "features.28",
"classifier.0/3/6"; "features_0" in Keras and Flax).
"""

from __future__ import annotations

from dlbench.models.spec import DEPTH, FRACTION, ModelSpec, Shape, conv_params, dense_params

WIDTHS = (64, 128, 256, 512, 512)
CONVS_PER_STAGE = (2, 2, 3, 3, 3)  # configuration D
HIDDEN = 4096
POOL = 7
DROPOUT = 0.5
FC_INDEX = (0, 3, 6)  # torchvision's `classifier` indices of the fc layers


def plan(widths: tuple[int, ...], convs: tuple[int, ...] = CONVS_PER_STAGE) -> list[tuple[str, int, int]]:
    """The `features` stack as (kind, torchvision index, filters) rows, kind "conv"
    or "pool" (filters 0); one index per module, ReLUs counted, as torchvision's."""
    if len(widths) != 5 or len(convs) != 5 or min(convs) < 1:
        raise ValueError(f"vgg16 takes 5 stage widths and 5 conv counts >= 1; got {widths}, {convs}")
    rows: list[tuple[str, int, int]] = []
    index = 0
    for width, count in zip(widths, convs):
        for _ in range(count):
            rows.append(("conv", index, width))
            index += 2  # conv, ReLU
        rows.append(("pool", index, 0))
        index += 1
    return rows


def check_input(shape: Shape) -> str | None:
    if len(shape) != 3:
        return f"vgg16 takes (H, W, C) images; got shape {shape}"
    h, w, _ = shape
    if min(h, w) < 32:  # five 2x2/2 pools need 2**5 pixels
        return f"vgg16 needs input of at least 32x32 (five 2x2 max-pools); got {h}x{w}"
    return None


def param_count(
    shape: Shape,
    classes: int,
    widths: tuple[int, ...] = WIDTHS,
    convs: tuple[int, ...] = CONVS_PER_STAGE,
    hidden: int = HIDDEN,
    dropout: float = DROPOUT,
) -> int:
    total, channels = 0, shape[2]
    for kind, _, filters in plan(widths, convs):
        if kind == "conv":
            total += conv_params(channels, filters, 3)
            channels = filters
    return (
        total
        + dense_params(channels * POOL * POOL, hidden)
        + dense_params(hidden, hidden)
        + dense_params(hidden, classes)
    )


SPEC = ModelSpec(
    name="vgg16",
    description="VGG-16 (config D, no BN): 13 3x3 convs 64-128-256-512-512, adaptive avg-pool 7x7, fc 4096-4096",
    kind="nn",
    frameworks=("torch", "tensorflow", "jax"),
    param_count=param_count,
    check_input=check_input,
    reference_counts={((224, 224, 3), 1000): 138_357_544},
    reference_source="torchvision.models.vgg16 and keras.applications.VGG16 (Simonyan & Zisserman 2014, config D)",
    options={"widths": WIDTHS, "convs": CONVS_PER_STAGE, "hidden": HIDDEN, "dropout": DROPOUT},
    tiny_options={"widths": (8, 16, 32, 32, 32), "convs": (1, 1, 1, 1, 1), "hidden": 128, "dropout": 0.1},
    option_ranges={"convs": DEPTH, "dropout": FRACTION},
    tiny_shape=(32, 32, 3),
    keras_application="VGG16",
)
