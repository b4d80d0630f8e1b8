"""Keras `resnet18`: the shared functional ResNet (`dlbench.models._resnet.tensorflow`)
with basic blocks."""

from __future__ import annotations

from typing import Any

import keras

from dlbench.models._resnet import WIDTH
from dlbench.models._resnet.tensorflow import build_resnet
from dlbench.models.resnet18 import BLOCK, BLOCKS


def build(
    input_shape: tuple[int, int, int],
    num_classes: int,
    kernel_initializer: Any = None,
    bias_initializer: Any = None,
    blocks: tuple[int, ...] = BLOCKS,
    width: int = WIDTH,
) -> keras.Model:
    return build_resnet(
        input_shape,
        num_classes,
        BLOCK,
        blocks,
        width,
        kernel_initializer=kernel_initializer,
        bias_initializer=bias_initializer,
        name="resnet18",
    )
