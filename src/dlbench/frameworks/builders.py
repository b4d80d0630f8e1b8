"""Calling a model's builder: the zoo's and the user's alike.

Every builder takes (input shape, classes, **options). The init scheme reaches a
network through extra keywords (Keras `kernel_initializer`/`bias_initializer`,
Flax `kernel_init`/`bias_init`); the zoo's builders all take them, a user's
builder may not, and then the network keeps its builder's own initialization,
which the fairness manifest says. Imports nothing heavy: each adapter passes
its framework's initializer objects.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any


def accepts(fn: Callable[..., Any], names: tuple[str, ...]) -> bool:
    """True when `fn` can be called with every keyword in `names`."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # a builtin or C callable without a signature: try it
        return True
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return True
    named = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    return all(n in named for n in names)


def model_spec(settings: Any) -> Any:
    """The spec the worker handed over in the settings, else the built-in model's."""
    if settings.spec is not None:
        return settings.spec
    from dlbench.models import get_spec

    return get_spec(settings.model)


class BuilderError(RuntimeError):
    """A user's builder that raised or returned the wrong kind of object; one line."""


def call_builder(
    spec: Any, framework: str, shape: tuple[int, ...], classes: int, options: Mapping[str, Any], init: Mapping[str, Any]
) -> tuple[Any, str | None]:
    """(the built network, a manifest note or None). `init` holds the init keywords for
    the chosen scheme (empty for framework-default); a builder that cannot take them
    builds without them, and the note says the init scheme was not applied."""
    builder = spec.builder(framework)
    note = None
    if init and not accepts(builder, tuple(init)):
        note = f"builder's own ({framework} builder takes no {'/'.join(init)}; the init scheme was not applied)"
        init = {}
    if spec.builtin:
        return builder(shape, classes, **init, **options), note
    try:
        return builder(shape, classes, **init, **options), note
    except Exception as exc:
        where = getattr(builder, "__module__", "?") + "." + getattr(builder, "__qualname__", "build")
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise BuilderError(
            f"model {spec.name}: {framework} builder {where} raised {type(exc).__name__}: {first}"
        ) from exc
