"""`lenet5`: seed 002's LeNet-5.

conv1: 6 filters 5x5, padding 2 (equivalent to padding a 28x28 image by 2 to
32x32, done inside the network so that no framework's data path differs),
ReLU, max-pool 2 -> conv2: 16 filters 5x5 valid, ReLU, max-pool 2 -> flatten
-> fc1 120 ReLU -> fc2 84 ReLU -> fc3 classes (logits).
61,706 trainable parameters on 28x28x1 with 10 classes.

Max pooling and ReLU are the modern rendering used by the Keras and PyTorch
LeNet-5 examples the seed builds on (LeCun 1998 used subsampling + tanh).
"""

from dlbench.models.spec import ModelSpec, Shape, conv_out, conv_params, dense_params

PAD = 2


def _feature_hw(shape: Shape) -> tuple[int, int]:
    h, w, _ = shape
    sizes = []
    for n in (h, w):
        n = conv_out(n, 5, padding=PAD) // 2
        n = conv_out(n, 5) // 2
        sizes.append(n)
    return sizes[0], sizes[1]


def check_input(shape: Shape) -> str | None:
    fh, fw = _feature_hw(shape)
    if fh < 1 or fw < 1:
        h, w, _ = shape
        return f"lenet5 needs input of at least 12x12 (two 5x5 convolutions and two 2x2 pools); got {h}x{w}"
    return None


def param_count(shape: Shape, classes: int) -> int:
    c = shape[2]
    fh, fw = _feature_hw(shape)
    return (
        conv_params(c, 6, 5)
        + conv_params(6, 16, 5)
        + dense_params(16 * fh * fw, 120)
        + dense_params(120, 84)
        + dense_params(84, classes)
    )


SPEC = ModelSpec(
    name="lenet5",
    description="LeNet-5: C6 5x5 (pad 2), pool, C16 5x5, pool, FC120, FC84, FC classes (seed 002)",
    kind="nn",
    frameworks=("torch", "tensorflow", "jax"),
    param_count=param_count,
    check_input=check_input,
    reference_counts={((28, 28, 1), 10): 61_706},
)
