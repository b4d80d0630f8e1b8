"""`regression_mlp`: a multilayer perceptron that predicts K float targets, as your own model.

The network, for (F,) feature vectors: dense F -> hidden, ReLU, dense hidden -> K
(no activation: the outputs are the predictions). Trained on the mean squared
error; dlbench reports the test MSE as its quality (lower is better). The
builders' second argument is K, the number of targets per sample.
`python data.py housing.npz` writes a learnable dataset: y = x W + noise.
"""

import dlbench

HIDDEN = 32


def param_count(input_shape: tuple[int], targets: int, hidden: int = HIDDEN) -> int:
    features = input_shape[0]
    return features * hidden + hidden + hidden * targets + targets


MODEL = dlbench.Model(
    name="regression_mlp",
    description="MLP regressor: dense, ReLU, dense to K targets",
    builders={
        "torch": "regression_mlp_torch:build",
        "tensorflow": "regression_mlp_tensorflow:build",
        "jax": "regression_mlp_jax:build",
    },
    input_kind="features",
    task="regress",
    loss="mse",
    options={"hidden": HIDDEN},
    param_count=param_count,
    tiny_options={"hidden": 8},
)
