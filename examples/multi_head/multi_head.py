"""`multi_head`: an MLP with two named outputs, a regression and a classification, as your own model.

Features (F,) in; a shared dense layer of `hidden` units with ReLU; then two heads:
`price`, a dense layer to K regression targets (trained on the mean squared error), and
`kind`, a dense layer to the logits of its classes (cross-entropy). The dataset holds
x_train, x_test and, per output, y_train_price, y_test_price, y_train_kind,
y_test_kind; every builder receives the second argument as {"price": K, "kind":
classes} and its network returns a dict with the same names. The training loss is
price's MSE + 0.5 x kind's cross-entropy; dlbench reports each head's quality: the
test MSE of price (lower is better) and the accuracy of kind. `python data.py shop.npz`
writes a learnable dataset.
"""

import dlbench

HIDDEN = 32


def param_count(input_shape: tuple[int, ...], outputs: dict[str, int], hidden: int = HIDDEN) -> int:
    trunk = input_shape[0] * hidden + hidden
    return trunk + sum(hidden * size + size for size in outputs.values())


MODEL = dlbench.Model(
    name="multi_head",
    description="MLP of two outputs: a shared dense layer, then a regression head and a classification head",
    builders={
        "torch": "multi_head_torch:build",
        "tensorflow": "multi_head_tensorflow:build",
        "jax": "multi_head_jax:build",
    },
    input_kind="features",
    outputs={"price": "regress", "kind": "classify"},
    loss={"price": "mse"},
    loss_weights={"price": 1.0, "kind": 0.5},
    options={"hidden": HIDDEN},
    param_count=param_count,
    tiny_options={"hidden": 8},
)
