"""Model registry: name -> framework-neutral spec. Implementations live beside
each spec as `dlbench.models.<name>.<framework>` and are imported only by workers."""

from __future__ import annotations

import importlib

from dlbench.models.spec import ModelSpec

MODEL_NAMES = (
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
    if name not in MODEL_NAMES:
        raise KeyError(f"unknown model {name!r}; known models: {', '.join(MODEL_NAMES)}")
    return importlib.import_module(f"dlbench.models.{name}").SPEC


def all_specs() -> list[ModelSpec]:
    return [get_spec(n) for n in MODEL_NAMES]
