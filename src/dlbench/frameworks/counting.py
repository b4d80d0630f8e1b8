"""Trainable-parameter counts of a model as each built-in framework builds it, without
allocating weights where the framework allows it: torch builds on the "meta" device,
JAX traces `init` with `jax.eval_shape`; Keras has no such mode and builds for real.

Each function is a framework's `param_counter` (dlbench.frameworks.FrameworkInfo),
called by `python -m dlbench.param_counts FRAMEWORK` in a process of its own.
"""

from __future__ import annotations

import os
from typing import Any

from dlbench.models.spec import ModelSpec, Shape


def torch_count(spec: ModelSpec, shape: Shape, classes: int, options: dict[str, Any]) -> int:
    import torch

    build = spec.builder("torch")
    with torch.device("meta"):  # shapes only: no memory, no initialization
        model = build(shape, classes, **options)
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def flax_count(spec: ModelSpec, shape: Shape, classes: int, options: dict[str, Any]) -> int:
    # Shapes only, on the CPU: never start a GPU backend for this (read at jax's import).
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    import jax.numpy as jnp

    model = spec.builder("jax")(shape, classes, **options)
    dtype = jnp.int32 if spec.input_kind == "tokens" else jnp.float32
    dummy = jax.ShapeDtypeStruct((1, *shape), dtype)
    variables = jax.eval_shape(lambda key, x: model.init({"params": key}, x), jax.random.key(0), dummy)
    return sum(int(leaf.size) for leaf in jax.tree.leaves(variables["params"]))


def keras_count(spec: ModelSpec, shape: Shape, classes: int, options: dict[str, Any]) -> int:
    import keras
    import numpy as np

    model = spec.builder("tensorflow")(shape, classes, **options)
    count = int(sum(np.prod(v.shape) for v in model.trainable_weights))
    keras.backend.clear_session()  # free the weights before the next model
    return count
