"""A bidirectional GRU over multichannel series, classify: (L, C) -> logits (README.md)."""

import dlbench

HIDDEN = 16

MODEL = dlbench.Model(
    name="bigru",
    description="bidirectional GRU over time, last step of both directions, dense",
    builders={"torch": "bigru_torch:build", "tensorflow": "bigru_tensorflow:build", "jax": "bigru_jax:build"},
    input_kind="series",
    task="classify",
    options={"hidden": HIDDEN},
    tiny_options={"hidden": 8},
)
