"""`inception_v3`: torchvision's Inception v3 (Szegedy et al. 2016) without the auxiliary
classifier, framework-neutral spec.

Every conv is a "basic conv": conv (no bias) -> batch norm (scale and shift, epsilon
1e-3, momentum 0.1 in torch's convention = 0.9 in Keras/Flax) -> ReLU. Layers, NHWC:
- stem: 32@3x3 s2, 32@3x3, 64@3x3 pad 1, max-pool 3 s2, 80@1x1, 192@3x3, max-pool 3 s2;
- Mixed_5b/5c/5d (A, pool features 32/64/64): branches 64@1x1 | 48@1x1, 64@5x5 |
  64@1x1, 96@3x3, 96@3x3 | avg-pool 3 s1 pad 1, pool-features@1x1;
- Mixed_6a (B): 384@3x3 s2 | 64@1x1, 96@3x3, 96@3x3 s2 | max-pool 3 s2;
- Mixed_6b..6e (C, c7 = 128/160/160/192): 192@1x1 | c7@1x1, c7@1x7, 192@7x1 |
  c7@1x1, c7@7x1, c7@1x7, c7@7x1, 192@1x7 | avg-pool, 192@1x1;
- Mixed_7a (D): 192@1x1, 320@3x3 s2 | 192@1x1, 192@1x7, 192@7x1, 192@3x3 s2 | max-pool;
- Mixed_7b/7c (E): 320@1x1 | 384@1x1 then (384@1x3 and 384@3x1) | 448@1x1, 384@3x3 then
  (384@1x3 and 384@3x1) | avg-pool, 192@1x1;
- global average pool -> dropout 0.5 -> dense classes (logits).
Branch outputs are concatenated on the channel axis in the order listed. Stride-1 convs
are padded to keep the size (symmetric: kernels are odd), stride-2 convs and max-pools
are unpadded, and the 3x3 average pools pad 1 and count the padding in the mean
(torch's count_include_pad=True; Keras' "same" pooling would exclude it, so the Keras
code pads explicitly). The smallest input is 75x75.

Why Inception v3 and not GoogLeNet: keras.applications has Inception v3 (not GoogLeNet),
so our count is checked against a second published implementation; and GoogLeNet is no
simpler to keep identical (the same branch-and-concatenate structure, also with
auxiliary classifiers in torchvision). With the branch tables below as data, each
framework's code is one interpreter of ~60 lines.

Counts at 299x299x3, 1000 classes: torchvision's inception_v3 has 27,161,264 with its
auxiliary classifier (conv 128@1x1 + conv 768@5x5 + dense: 3,326,696), so 23,834,568
without it (ours: the aux head only adds a training loss, it is not part of the network
that classifies). keras.applications.InceptionV3 has no aux head and batch norms with
scale=False: 23,817,352 trainable, exactly the 17,216 batch-norm channels (one gamma
each) fewer. Both differences are asserted by the tests.

Options: `width_mult` scales every conv's filters (round, at least 1); `blocks_a`,
`blocks_c`, `blocks_e` keep the first k of the A, C and E groups. Defaults are the full
network; the CI configuration keeps one of each at a quarter of the width (an eighth
learned too slowly: 37-49% on the suite's digits vs 66-86% at a quarter). `bn_momentum`
(default 0.9, Keras/Flax convention) is 0.5 in the CI configuration, for the reason
`dlbench.models.mobilenet_v2` gives.
"""

from __future__ import annotations

from typing import NamedTuple

from dlbench.models.mobilenet_v2 import TINY_BN_MOMENTUM
from dlbench.models.spec import FRACTION, MULTIPLIER, ModelSpec, OptionRange, Shape, batchnorm_params, dense_params

BN_EPSILON = 1e-3
BN_MOMENTUM = 0.9  # Keras/Flax convention (torch 0.1)
DROPOUT = 0.5


class Conv(NamedTuple):
    """A basic conv: `out` filters of kh x kw, stride, symmetric padding (ph, pw)."""

    out: int
    kh: int
    kw: int
    stride: int = 1
    ph: int = 0
    pw: int = 0


class Pool(NamedTuple):
    """3x3 pooling: "max" (stride 2, no padding) or "avg" (stride 1, padding 1, counted)."""

    kind: str


class Split(NamedTuple):
    """Convs applied side by side to the same input and concatenated (Inception E)."""

    convs: tuple[Conv, ...]


Step = Conv | Pool | Split
Branch = tuple[Step, ...]
MAX, AVG = Pool("max"), Pool("avg")


def _same(out: int, kh: int, kw: int) -> Conv:
    return Conv(out, kh, kw, 1, (kh - 1) // 2, (kw - 1) // 2)


def stem(w: float) -> Branch:
    s = lambda c: scaled(c, w)  # noqa: E731
    return (
        Conv(s(32), 3, 3, 2),
        Conv(s(32), 3, 3),
        _same(s(64), 3, 3),
        MAX,
        Conv(s(80), 1, 1),
        Conv(s(192), 3, 3),
        MAX,
    )


def scaled(channels: int, width_mult: float) -> int:
    return max(1, int(round(channels * width_mult)))


def blocks(
    width_mult: float = 1.0, blocks_a: int = 3, blocks_c: int = 4, blocks_e: int = 2
) -> list[tuple[Branch, ...]]:
    """The mixed blocks in order; each is a tuple of branches whose outputs are concatenated."""
    s = lambda c: scaled(c, width_mult)  # noqa: E731
    a = [
        (
            (_same(s(64), 1, 1),),
            (_same(s(48), 1, 1), _same(s(64), 5, 5)),
            (_same(s(64), 1, 1), _same(s(96), 3, 3), _same(s(96), 3, 3)),
            (AVG, _same(s(pool), 1, 1)),
        )
        for pool in (32, 64, 64)[:blocks_a]
    ]
    b = [((Conv(s(384), 3, 3, 2),), (_same(s(64), 1, 1), _same(s(96), 3, 3), Conv(s(96), 3, 3, 2)), (MAX,))]
    c = [
        (
            (_same(s(192), 1, 1),),
            (_same(s(c7), 1, 1), _same(s(c7), 1, 7), _same(s(192), 7, 1)),
            (_same(s(c7), 1, 1), _same(s(c7), 7, 1), _same(s(c7), 1, 7), _same(s(c7), 7, 1), _same(s(192), 1, 7)),
            (AVG, _same(s(192), 1, 1)),
        )
        for c7 in (128, 160, 160, 192)[:blocks_c]
    ]
    d = [
        (
            (_same(s(192), 1, 1), Conv(s(320), 3, 3, 2)),
            (_same(s(192), 1, 1), _same(s(192), 1, 7), _same(s(192), 7, 1), Conv(s(192), 3, 3, 2)),
            (MAX,),
        )
    ]
    split = Split((_same(s(384), 1, 3), _same(s(384), 3, 1)))
    e = [
        (
            (_same(s(320), 1, 1),),
            (_same(s(384), 1, 1), split),
            (_same(s(448), 1, 1), _same(s(384), 3, 3), split),
            (AVG, _same(s(192), 1, 1)),
        )
    ] * blocks_e
    out: list[tuple[Branch, ...]] = [*a, *b, *c, *d, *e]
    return out


def step_channels(step: Step, in_ch: int) -> int:
    if isinstance(step, Conv):
        return step.out
    if isinstance(step, Split):
        return sum(conv.out for conv in step.convs)
    return in_ch


def branch_channels(branch: Branch, in_ch: int) -> int:
    for step in branch:
        in_ch = step_channels(step, in_ch)
    return in_ch


def block_channels(block: tuple[Branch, ...], in_ch: int) -> int:
    return sum(branch_channels(branch, in_ch) for branch in block)


def _convs(shape: Shape, options: dict) -> list[tuple[int, Conv]]:
    """(in channels, conv) for every basic conv of the network."""
    found: list[tuple[int, Conv]] = []

    def walk(branch: Branch, ch: int) -> int:
        for step in branch:
            for conv in step.convs if isinstance(step, Split) else (step,) if isinstance(step, Conv) else ():
                found.append((ch, conv))
            ch = step_channels(step, ch)
        return ch

    ch = walk(stem(options["width_mult"]), shape[2])
    for block in blocks(**_structure(options)):
        ch = sum(walk(branch, ch) for branch in block)
    return found


def _structure(options: dict) -> dict:
    """The options that shape the network (all but batch-norm momentum)."""
    return {k: v for k, v in options.items() if k != "bn_momentum"}


def feature_channels(shape: Shape, **options) -> int:
    ch = branch_channels(stem(options["width_mult"]), shape[2])
    for block in blocks(**_structure(options)):
        ch = block_channels(block, ch)
    return ch


def batchnorm_channels(shape: Shape, **options) -> int:
    """Channels over all batch norms: what keras.applications' scale=False leaves out."""
    return sum(conv.out for _, conv in _convs(shape, options))


def param_count(shape: Shape, classes: int, **options) -> int:
    convs = sum(cin * c.out * c.kh * c.kw + batchnorm_params(c.out) for cin, c in _convs(shape, options))
    return convs + dense_params(feature_channels(shape, **options), classes)


def _size(n: int, step: Step) -> int:
    if isinstance(step, Conv):
        return (n + 2 * step.ph - step.kh) // step.stride + 1  # square kernels where it matters
    if step == MAX:
        return (n - 3) // 2 + 1
    return n


def check_input(shape: Shape) -> str | None:
    if len(shape) != 3:
        return f"inception_v3 needs (H, W, C) images; got shape {shape}"
    # Spatial size along the stem and the two reduction blocks (B, D): their max-pool branch.
    for n in shape[:2]:
        for step in stem(1.0) + (Conv(1, 3, 3, 2), Conv(1, 3, 3, 2)):
            n = _size(n, step)
        if n < 1:
            return f"inception_v3 needs input of at least 75x75; got {shape[0]}x{shape[1]}"
    return None


SPEC = ModelSpec(
    name="inception_v3",
    description="Inception v3 (torchvision, no auxiliary classifier): stem, 3xA, B, 4xC, D, 2xE, dropout .5",
    kind="nn",
    frameworks=("torch", "tensorflow", "jax"),
    param_count=param_count,
    check_input=check_input,
    reference_counts={((299, 299, 3), 1000): 23_834_568},
    reference_source="torchvision.models.inception_v3 27,161,264 minus its auxiliary classifier "
    "(3,326,696); keras.applications.InceptionV3 23,817,352 (batch norm without scale)",
    options={"width_mult": 1.0, "blocks_a": 3, "blocks_c": 4, "blocks_e": 2, "bn_momentum": BN_MOMENTUM},
    tiny_options={"width_mult": 0.25, "blocks_a": 1, "blocks_c": 1, "blocks_e": 1, "bn_momentum": TINY_BN_MOMENTUM},
    # blocks_a/c/e keep the first k of each group: at most the group's size.
    option_ranges={
        "width_mult": MULTIPLIER,
        "bn_momentum": FRACTION,
        "blocks_a": OptionRange(int, 1, 3, why="Inception v3 has 3 A blocks"),
        "blocks_c": OptionRange(int, 1, 4, why="Inception v3 has 4 C blocks"),
        "blocks_e": OptionRange(int, 1, 2, why="Inception v3 has 2 E blocks"),
    },
    tiny_shape=(75, 75, 3),
    keras_application="InceptionV3",
)
