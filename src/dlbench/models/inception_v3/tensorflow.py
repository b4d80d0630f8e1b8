"""`inception_v3` in Keras 3 (functional API, NHWC), built from the branch tables in
`dlbench.models.inception_v3`.

Convs pad like torch: none for stride 2, "same" (symmetric, odd kernels) for stride 1.
The 3x3 average pool is ZeroPadding2D(1) + "valid" pooling, so the zeros count in the
mean as in torch; Keras' "same" average pooling (keras.applications' choice) averages
only the real pixels at the border. Batch norm keeps its scale (gamma), unlike
keras.applications.InceptionV3, to match torchvision.

Layers are named after the torch module that holds the same weights (`stem.2.0` is
`stem_2_0`, `mixed.4.branches.2.1.0` is `mixed_4_branches_2_1_0`, the dense layer
`classifier.1` is `classifier_1`), as in alexnet and resnet: a functional model lists
its layers by depth in the graph, not in the order they were built, so in a network
of side-by-side branches only the names line Keras' layers up with torch's
(dlbench.conformance.weights pairs them by name; Flax's creation order is torch's). Measured (2026-11-29, `dlbench check
inception_v3`): with Keras' automatic names the weight copy paired same-shaped convs
of different branches and the logits after it were 0.36 apart from torch's.

The names also keep two builds in one process the same computation. Grappler's
arithmetic optimizer rewrites the sum of a block input's three or four gradients (one
per branch) in an order that follows the nodes' names; automatic names count up across
builds (conv2d_99 in one, conv2d_100 in the next, which sorts before it), and float32
addition is not associative. Measured with automatic names: the third of eight
builds from seed 0 got other gradients for the same weights and batch (none with the
arithmetic optimizer off), and `dlbench check` failed "same seed" (the fifth Adam
step's loss 0.227402 against 0.2274198).
"""

from __future__ import annotations

from typing import Any

import keras

from dlbench.models.inception_v3 import AVG, BN_EPSILON, BN_MOMENTUM, DROPOUT, SPEC, Branch, Conv, Split, blocks, stem
from dlbench.models.mlp.tensorflow import init_kwargs

layers = keras.layers


def _conv(x: Any, c: Conv, init: dict[str, Any], momentum: float, name: str) -> Any:
    """A basic conv named as torch's BasicConv `name`: its conv `name_0`, batch norm `name_1`, ReLU `name_2`."""
    if (c.ph, c.pw) == (0, 0):
        padding = "valid"
    elif c.stride == 1 and (c.ph, c.pw) == ((c.kh - 1) // 2, (c.kw - 1) // 2):
        padding = "same"
    else:
        x = layers.ZeroPadding2D((c.ph, c.pw), name=f"{name}_pad")(x)
        padding = "valid"
    x = layers.Conv2D(c.out, (c.kh, c.kw), c.stride, padding=padding, use_bias=False, name=f"{name}_0", **init)(x)
    x = layers.BatchNormalization(momentum=momentum, epsilon=BN_EPSILON, name=f"{name}_1")(x)
    return layers.Activation("relu", name=f"{name}_2")(x)


def _branch(x: Any, steps: Branch, init: dict[str, Any], momentum: float, name: str) -> Any:
    """The steps of a torch nn.Sequential `name`, step k named `name_k`."""
    for k, step in enumerate(steps):
        at = f"{name}_{k}"
        if isinstance(step, Conv):
            x = _conv(x, step, init, momentum, at)
        elif isinstance(step, Split):
            x = layers.Concatenate(name=at)(
                [_conv(x, c, init, momentum, f"{at}_convs_{i}") for i, c in enumerate(step.convs)]
            )
        elif step == AVG:
            x = layers.AveragePooling2D(3, strides=1, name=at)(layers.ZeroPadding2D(1, name=f"{at}_pad")(x))
        else:
            x = layers.MaxPooling2D(3, strides=2, name=at)(x)
    return x


def build(
    input_shape: tuple[int, int, int],
    num_classes: int,
    kernel_initializer: Any = None,
    bias_initializer: Any = None,
    width_mult: float = 1.0,
    blocks_a: int = 3,
    blocks_c: int = 4,
    blocks_e: int = 2,
    bn_momentum: float = BN_MOMENTUM,
) -> keras.Model:
    reason = SPEC.check_input(input_shape)
    if reason:
        raise ValueError(reason)
    init = init_kwargs(kernel_initializer, bias_initializer)
    conv_init = {k: v for k, v in init.items() if k == "kernel_initializer"}  # convs have no bias
    inputs = keras.Input(shape=input_shape, name="image")
    x = _branch(inputs, stem(width_mult), conv_init, bn_momentum, "stem")
    for i, block in enumerate(blocks(width_mult, blocks_a, blocks_c, blocks_e)):
        x = layers.Concatenate(name=f"mixed_{i}")(
            [_branch(x, b, conv_init, bn_momentum, f"mixed_{i}_branches_{j}") for j, b in enumerate(block)]
        )
    x = layers.GlobalAveragePooling2D(name="avgpool")(x)
    x = layers.Dropout(DROPOUT, name="classifier_0")(x)
    logits = layers.Dense(num_classes, name="classifier_1", **init)(x)
    return keras.Model(inputs, logits, name="inception_v3")
