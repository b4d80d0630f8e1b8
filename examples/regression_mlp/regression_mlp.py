"""`regression_mlp`: an MLP regressor of two named inputs, as your own model.

Numbers and a category: `numeric` (F,) float features and `category` (1,), an integer id
of `categories` kinds. The category goes through an embedding of `embed` values, is
concatenated to the numbers, then dense -> hidden, ReLU, dense -> K targets (no
activation: the outputs are the predictions). The dataset holds x_train_numeric,
x_train_category, x_test_numeric, x_test_category and float y (N, K); every builder
receives the shapes as {"numeric": (F,), "category": (1,)} and its network a dict of
batches by the same names. Trained on the mean squared error; dlbench reports the
test MSE (lower is better). `python data.py sales.npz` writes a learnable dataset.
"""

import dlbench

HIDDEN, CATEGORIES, EMBED = 32, 8, 4


def param_count(
    input_shape: dict[str, tuple[int, ...]], targets: int, hidden: int = HIDDEN, categories: int = CATEGORIES,
    embed: int = EMBED,
) -> int:  # fmt: skip
    features = input_shape["numeric"][0] + input_shape["category"][0] * embed
    return categories * embed + features * hidden + hidden + hidden * targets + targets


MODEL = dlbench.Model(
    name="regression_mlp",
    description="MLP regressor of numbers and an embedded category: dense, ReLU, dense to K targets",
    builders={
        "torch": "regression_mlp_torch:build",
        "tensorflow": "regression_mlp_tensorflow:build",
        "jax": "regression_mlp_jax:build",
    },
    input_kind={"numeric": "features", "category": "tokens"},
    task="regress",
    loss="mse",
    options={"hidden": HIDDEN, "categories": CATEGORIES, "embed": EMBED},
    param_count=param_count,
    tiny_options={"hidden": 8},
)
