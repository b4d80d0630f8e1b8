"""`series_cnn`: a 1-D CNN on multichannel time series, as your own model.

The framework-neutral half of the example (see docs/tutorial.md): what dlbench must
know before it imports any framework. The network, for (L, C) series, channels last
as stored (torch's builder receives (N, C, L)):

    conv1:  1-D conv, C -> width, kernel 5, 'same' padding; ReLU; max pool 2
    conv2:  1-D conv, width -> 2*width, kernel 5, 'same' padding; ReLU
    head:   global average pooling over time; dense 2*width -> classes (logits)

The builders are in series_cnn_torch.py, series_cnn_tensorflow.py and
series_cnn_jax.py, imported only by the worker that runs that framework. The data:
`python data.py signals.npz` writes a learnable dataset stored channels-first,
(N, C, L), with layout="NCL" in the file.
"""

import dlbench

WIDTH = 16
KERNEL = 5


def param_count(input_shape: tuple[int, int], num_classes: int, width: int = WIDTH) -> int:
    """Trainable parameters, by hand: two kernels with their biases, the classifier."""
    channels = input_shape[1]
    conv1 = KERNEL * channels * width + width
    conv2 = KERNEL * width * 2 * width + 2 * width
    return conv1 + conv2 + 2 * width * num_classes + num_classes


MODEL = dlbench.Model(
    name="series_cnn",
    description="1-D CNN: two convolutions over time, global pooling, dense",
    builders={
        "torch": "series_cnn_torch:build",
        "tensorflow": "series_cnn_tensorflow:build",
        "jax": "series_cnn_jax:build",
    },
    input_kind="series",
    task="classify",
    options={"width": WIDTH},
    param_count=param_count,
    tiny_options={"width": 4},
)
