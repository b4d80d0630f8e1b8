"""`cnn`: the classic MNIST convnet of PyTorch's examples/mnist and Keras' mnist_convnet.

conv1: 32 filters 3x3 valid, ReLU -> conv2: 64 filters 3x3 valid, ReLU ->
max-pool 2 -> dropout 0.25 -> flatten -> fc1 128 ReLU -> dropout 0.5 ->
fc2 classes (logits). 1,199,882 trainable parameters on 28x28x1, 10 classes.

Flatten order differs between channels-first and channels-last layouts; that
permutes fc1's rows but changes neither the count nor the function class.
"""

from dlbench.models.spec import ModelSpec, Shape, conv_out, conv_params, dense_params

DROPOUT_CONV = 0.25
DROPOUT_DENSE = 0.5


def _feature_hw(shape: Shape) -> tuple[int, int]:
    h, w, _ = shape
    return conv_out(h, 3) - 2, conv_out(w, 3) - 2


def check_input(shape: Shape) -> str | None:
    fh, fw = _feature_hw(shape)
    if fh < 2 or fw < 2:
        h, w, _ = shape
        return f"cnn needs input of at least 6x6 (two 3x3 convolutions and a 2x2 pool); got {h}x{w}"
    return None


def param_count(shape: Shape, classes: int) -> int:
    c = shape[2]
    fh, fw = _feature_hw(shape)
    return (
        conv_params(c, 32, 3)
        + conv_params(32, 64, 3)
        + dense_params(64 * (fh // 2) * (fw // 2), 128)
        + dense_params(128, classes)
    )


SPEC = ModelSpec(
    name="cnn",
    description="conv32 3x3, conv64 3x3, max-pool, dropout .25, dense 128, dropout .5, dense classes",
    kind="nn",
    frameworks=("torch", "tensorflow", "jax"),
    param_count=param_count,
    check_input=check_input,
    reference_counts={((28, 28, 1), 10): 1_199_882},
)
