"""`dsconv`: a small depthwise-separable CNN (MobileNet's building block), as your own model.

The framework-neutral half of the example in docs/tutorial.md: what dlbench must
know before it imports any framework. The network, for (H, W, C) images:

    stem:    3x3 conv, C -> width, no bias; batch norm; ReLU
    block1:  3x3 depthwise conv, stride 2; BN; ReLU; 1x1 conv, width -> 2*width; BN; ReLU
    block2:  3x3 depthwise conv, stride 2; BN; ReLU; 1x1 conv, 2*width -> 4*width; BN; ReLU
    head:    global average pooling; dense 4*width -> classes (logits)

Batch norm: epsilon 1e-5, momentum 0.1 in torch's convention (0.9 in Keras' and
Flax's), the same in all three. The builders are in dsconv_torch.py,
dsconv_tensorflow.py and dsconv_jax.py, imported only by the worker that runs
that framework.
"""

import dlbench

WIDTH = 32
BN_EPSILON = 1e-5


def param_count(input_shape: tuple[int, int, int], num_classes: int, width: int = WIDTH) -> int:
    """Trainable parameters, by hand: kernels, batch-norm scales and shifts, the classifier."""
    channels = input_shape[2]
    stem = 3 * 3 * channels * width + 2 * width
    blocks = 0
    for c_in, c_out in ((width, 2 * width), (2 * width, 4 * width)):
        blocks += 3 * 3 * c_in + 2 * c_in  # depthwise kernel, its batch norm
        blocks += c_in * c_out + 2 * c_out  # pointwise kernel, its batch norm
    return stem + blocks + 4 * width * num_classes + num_classes


MODEL = dlbench.Model(
    name="dsconv",
    description="depthwise-separable CNN: stem conv, 2 separable blocks, global pooling, dense",
    builders={
        "torch": "dsconv_torch:build",
        "tensorflow": "dsconv_tensorflow:build",
        "jax": "dsconv_jax:build",
    },
    input_kind="image",
    task="classify",
    loss="cross-entropy",
    options={"width": WIDTH},
    param_count=param_count,
)
