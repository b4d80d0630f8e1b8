"""The model zoo. Each built-in model is a package `dlbench.models.<name>` whose
`__init__` holds its framework-neutral spec (`SPEC`) and whose `<framework>.py`
modules hold the implementations, imported only by workers. Names, plugins and
the user's own models are resolved by `dlbench.registry`; these two functions
are its model half, kept for the callers that only need models."""

from __future__ import annotations

from dlbench.models.spec import ModelSpec


def get_spec(name: str) -> ModelSpec:
    """The spec of model `name` (built-in, installed, or adopted by this worker)."""
    from dlbench import registry

    return registry.model(name)


def all_specs() -> list[ModelSpec]:
    """Every built-in and installed model."""
    from dlbench import registry

    return registry.models({})
