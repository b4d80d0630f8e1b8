"""`mlp`: the "simple NN" of seed 000 — Flatten, Dense 128 ReLU, Dense classes.

101,770 trainable parameters on 28x28x1 input with 10 classes.
Layers (names used in every implementation): flatten -> dense1 (128, ReLU)
-> dense2 (classes, logits; softmax lives in the loss).
"""

from dlbench.models.spec import ModelSpec, Shape, dense_params

HIDDEN = 128


def param_count(shape: Shape, classes: int) -> int:
    h, w, c = shape
    return dense_params(h * w * c, HIDDEN) + dense_params(HIDDEN, classes)


SPEC = ModelSpec(
    name="mlp",
    description="Flatten, Dense 128 ReLU, Dense classes (seed 000's simple NN)",
    kind="nn",
    frameworks=("torch", "tensorflow", "jax", "numpy"),
    param_count=param_count,
    reference_counts={((28, 28, 1), 10): 101_770},
)
