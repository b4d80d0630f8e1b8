"""A deliberately different network, for `dlbench check`'s negative case: dsconv with
one more pointwise conv + BN + ReLU before pooling, in torch only. Checked against
the TensorFlow and JAX dsconv, it must be named as not the same network."""

from dsconv import WIDTH

import dlbench


def build(input_shape, num_classes, width=WIDTH):
    from dsconv_torch import DSConv, conv_bn_relu
    from torch import nn

    class Wider(DSConv):
        def __init__(self) -> None:
            super().__init__(input_shape[2], num_classes, width)
            self.extra = conv_bn_relu(4 * width, 4 * width, 1)

        def features(self, x):
            return self.extra(super().features(x))

    model: nn.Module = Wider()
    return model


MODEL = dlbench.Model(
    name="dsconv_wider",
    description="dsconv plus one pointwise layer in torch; TensorFlow and JAX as dsconv",
    builders={"torch": build, "tensorflow": "dsconv_tensorflow:build", "jax": "dsconv_jax:build"},
    options={"width": WIDTH},
)
