"""`bigru` with a planted bug: the Keras version leaves out the ReLU (README.md)."""

import dlbench

HIDDEN = 16

MODEL = dlbench.Model(
    name="bigru_broken",
    description="bidirectional GRU over time, last step of both directions, dense",
    builders={"torch": "bigru_torch:build", "tensorflow": "bigru_tensorflow_broken:build", "jax": "bigru_jax:build"},
    input_kind="series",
    task="classify",
    options={"hidden": HIDDEN},
    tiny_options={"hidden": 8},
)
