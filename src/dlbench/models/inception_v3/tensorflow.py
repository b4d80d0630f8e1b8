"""`inception_v3` in Keras 3 (functional API, NHWC), built from the branch tables in
`dlbench.models.inception_v3`.

Convs pad like torch: none for stride 2, "same" (symmetric, odd kernels) for stride 1.
The 3x3 average pool is ZeroPadding2D(1) + "valid" pooling, so the zeros count in the
mean as in torch; Keras' "same" average pooling (keras.applications' choice) averages
only the real pixels at the border. Batch norm keeps its scale (gamma), unlike
keras.applications.InceptionV3, to match torchvision.
"""

from __future__ import annotations

from typing import Any

import keras

from dlbench.models.inception_v3 import AVG, BN_EPSILON, BN_MOMENTUM, DROPOUT, SPEC, Branch, Conv, Split, blocks, stem
from dlbench.models.mlp.tensorflow import init_kwargs

layers = keras.layers


def _conv(x: Any, c: Conv, init: dict[str, Any], momentum: float) -> Any:
    if (c.ph, c.pw) == (0, 0):
        padding = "valid"
    elif c.stride == 1 and (c.ph, c.pw) == ((c.kh - 1) // 2, (c.kw - 1) // 2):
        padding = "same"
    else:
        x = layers.ZeroPadding2D((c.ph, c.pw))(x)
        padding = "valid"
    x = layers.Conv2D(c.out, (c.kh, c.kw), c.stride, padding=padding, use_bias=False, **init)(x)
    x = layers.BatchNormalization(momentum=momentum, epsilon=BN_EPSILON)(x)
    return layers.Activation("relu")(x)


def _branch(x: Any, steps: Branch, init: dict[str, Any], momentum: float) -> Any:
    for step in steps:
        if isinstance(step, Conv):
            x = _conv(x, step, init, momentum)
        elif isinstance(step, Split):
            x = layers.Concatenate()([_conv(x, c, init, momentum) for c in step.convs])
        elif step == AVG:
            x = layers.AveragePooling2D(3, strides=1)(layers.ZeroPadding2D(1)(x))
        else:
            x = layers.MaxPooling2D(3, strides=2)(x)
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
    x = _branch(inputs, stem(width_mult), conv_init, bn_momentum)
    for i, block in enumerate(blocks(width_mult, blocks_a, blocks_c, blocks_e)):
        x = layers.Concatenate(name=f"mixed{i}")([_branch(x, b, conv_init, bn_momentum) for b in block])
    x = layers.GlobalAveragePooling2D()(x)
    x = layers.Dropout(DROPOUT)(x)
    logits = layers.Dense(num_classes, name="classifier", **init)(x)
    return keras.Model(inputs, logits, name="inception_v3")
