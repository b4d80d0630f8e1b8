"""`efficientnet_b4` in Keras 3: the shared EfficientNet (`dlbench.models._efficientnet.tensorflow`)
at B4's coefficients, which arrive as the spec's default options."""

from __future__ import annotations

from typing import Any

import keras

from dlbench.models._efficientnet import tensorflow as efficientnet
from dlbench.models.efficientnet_b4 import SPEC


def build(
    input_shape: tuple[int, int, int],
    num_classes: int,
    kernel_initializer: Any = None,
    bias_initializer: Any = None,
    **options: float,
) -> keras.Model:
    return efficientnet.build(
        input_shape,
        num_classes,
        SPEC.name,
        kernel_initializer=kernel_initializer,
        bias_initializer=bias_initializer,
        **SPEC.resolve_options(options),
    )
