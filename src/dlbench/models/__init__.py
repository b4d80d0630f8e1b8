"""The model zoo. Each built-in model is a package `dlbench.models.<name>` whose
`__init__` holds its framework-neutral spec (`SPEC`) and whose `<framework>.py`
modules hold the implementations, imported only by workers. `dlbench.registry`
adds installed plugins and the user's own models on top of these names."""

from __future__ import annotations

import importlib

from dlbench.models.spec import ModelSpec

NAMES = (
    "mlp",
    "lenet5",
    "cnn",
    "knn",
    "alexnet",
    "vgg16",
    "resnet18",
    "resnet50",
    "resnet152",
    "lstm",
    "deepspeech2",
    "transformer",
    "mobilenet_v2",
    "efficientnet_b0",
    "efficientnet_b4",
    "inception_v3",
)


def get_spec(name: str) -> ModelSpec:
    """The spec of built-in model `name` (imported on first use)."""
    if name not in NAMES:
        raise KeyError(f"unknown model {name!r}; built-in models: {', '.join(NAMES)}")
    spec: ModelSpec = importlib.import_module(f"dlbench.models.{name}").SPEC
    return spec


def all_specs() -> list[ModelSpec]:
    """Every built-in model."""
    return [get_spec(n) for n in NAMES]
