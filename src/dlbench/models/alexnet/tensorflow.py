"""`alexnet` in Keras 3 (functional API, NHWC), plus the adaptive average pooling
layer Keras lacks (vgg16 uses it too).

Explicit ZeroPadding2D before the padded convolutions, because torch's padding
2 around an 11x11/4 window is not what Keras' "same" does; the 3x3/1 convs use
"same", which is symmetric at stride 1. Layer names are torchvision's
state_dict prefixes with "_" for ".". Dropout layers take no seed: they draw
from Keras' global RNG, which the adapter seeds before building.
"""

from __future__ import annotations

from typing import Any

import keras

from dlbench.models.alexnet import CONV_INDEX, DROPOUT, FC_INDEX, HIDDEN, POOL, SPEC, WIDTHS, adaptive_pool_weights
from dlbench.models.mlp.tensorflow import init_kwargs


class AdaptiveAveragePooling2D(keras.layers.Layer):
    """torch's AdaptiveAvgPool2d for channels-last input of static spatial size.

    The pooling is linear, so it is two small constant matrices contracted with
    the feature map; when the map already has the output size (AlexNet and VGG
    at 224x224) the layer is the identity and adds no op at all.
    """

    def __init__(self, output_size: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.output_size = output_size

    def call(self, x: Any) -> Any:
        h, w = int(x.shape[1]), int(x.shape[2])
        out = self.output_size
        if (h, w) == (out, out):
            return x
        rows = keras.ops.convert_to_tensor(adaptive_pool_weights(h, out), dtype=x.dtype)
        cols = keras.ops.convert_to_tensor(adaptive_pool_weights(w, out), dtype=x.dtype)
        return keras.ops.einsum("ih,nhwc,jw->nijc", rows, x, cols)

    def compute_output_shape(self, input_shape: tuple[Any, ...]) -> tuple[Any, ...]:
        return (input_shape[0], self.output_size, self.output_size, input_shape[3])

    def get_config(self) -> dict[str, Any]:
        return {**super().get_config(), "output_size": self.output_size}


def build(
    input_shape: tuple[int, int, int],
    num_classes: int,
    kernel_initializer: Any = None,
    bias_initializer: Any = None,
    widths: tuple[int, ...] = WIDTHS,
    hidden: int = HIDDEN,
    dropout: float = DROPOUT,
) -> keras.Model:
    reason = SPEC.check_input(input_shape)
    if reason:
        raise ValueError(reason)
    if len(widths) != 5:
        raise ValueError(f"alexnet takes five conv widths; got {widths}")
    init = init_kwargs(kernel_initializer, bias_initializer)
    layers = keras.layers
    names = [f"features_{i}" for i in CONV_INDEX]
    inputs = keras.Input(shape=input_shape, name="image")
    x = layers.ZeroPadding2D(2, name="features_0_pad")(inputs)
    x = layers.Conv2D(widths[0], 11, strides=4, activation="relu", name=names[0], **init)(x)
    x = layers.MaxPooling2D(3, strides=2, name="features_2")(x)
    x = layers.ZeroPadding2D(2, name="features_3_pad")(x)
    x = layers.Conv2D(widths[1], 5, activation="relu", name=names[1], **init)(x)
    x = layers.MaxPooling2D(3, strides=2, name="features_5")(x)
    for width, name in zip(widths[2:], names[2:]):
        x = layers.Conv2D(width, 3, padding="same", activation="relu", name=name, **init)(x)
    x = layers.MaxPooling2D(3, strides=2, name="features_12")(x)
    x = AdaptiveAveragePooling2D(POOL, name="avgpool")(x)
    x = layers.Flatten(name="flatten")(x)
    x = layers.Dropout(dropout, name="classifier_0")(x)
    x = layers.Dense(hidden, activation="relu", name=f"classifier_{FC_INDEX[0]}", **init)(x)
    x = layers.Dropout(dropout, name="classifier_3")(x)
    x = layers.Dense(hidden, activation="relu", name=f"classifier_{FC_INDEX[1]}", **init)(x)
    logits = layers.Dense(num_classes, name=f"classifier_{FC_INDEX[2]}", **init)(x)
    return keras.Model(inputs, logits, name="alexnet")
