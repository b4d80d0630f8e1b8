"""A user's own model: the small public spec that `dlbench.Model(...)` makes.

A model that is not in dlbench's zoo is described by what the harness needs to
know without importing a framework (its name, input kind, task, loss, options)
and by one builder per framework the user has. A builder has the signature of
the zoo's builders: `build(input_shape, num_classes, **options)` returning a
`torch.nn.Module` (channels-first images), a Keras model or a Flax linen module
(channels-last); the TensorFlow and JAX builders may also take the init keywords
(`kernel_initializer`/`bias_initializer`, `kernel_init`/`bias_init`) through which
dlbench sets the init scheme. A builder is a callable or a "module:attr" string,
imported only in the worker that runs that framework, so the file that defines the
model can be imported by the parent without importing torch, TensorFlow or JAX.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from dlbench.models.spec import ModelSpec, OptionRange, Shape


def network_frameworks() -> tuple[str, ...]:
    """The frameworks that build a model's network from its builder
    (FrameworkInfo.networks), an installed plugin's too: those a builder may be for."""
    from dlbench import registry

    return tuple(name for name, info in registry.frameworks().items() if info.networks)


# A user's model is a classifier of images, token sequences or feature vectors: the
# zoo's other tasks (next-token, CTC) need data made for them.
USER_INPUT_KINDS = ("image", "tokens", "features")
USER_TASKS = ("classify",)
USER_LOSSES = ("cross-entropy",)
NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")
MODULE_ATTR = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")


def _shown(shape: Shape) -> str:
    return "x".join(map(str, shape))


def _input_check(kind: str, input_shape: Shape | None) -> Callable[[Shape], str | None]:
    ranks = {"image": 3, "tokens": 1, "features": 1}

    def check(shape: Shape) -> str | None:
        if len(shape) != ranks[kind]:
            return f"takes {kind} input ({ranks[kind]} dimensions per sample); the data gives {_shown(shape)}"
        if input_shape is not None and tuple(shape) != tuple(input_shape):
            return f"takes {_shown(input_shape)} input; the data gives {_shown(shape)}"
        return None

    return check


def Model(  # noqa: N802 - a constructor, named like the class it stands for
    name: str,
    builders: Mapping[str, Callable[..., Any] | str],
    *,
    input_kind: str = "image",
    input_shape: Shape | None = None,
    task: str = "classify",
    loss: str = "cross-entropy",
    options: Mapping[str, Any] | None = None,
    option_ranges: Mapping[str, OptionRange] | None = None,
    option_choices: Mapping[str, tuple[Any, ...]] | None = None,
    param_count: Callable[..., int] | None = None,
    tiny_options: Mapping[str, Any] | None = None,
    description: str = "",
) -> ModelSpec:
    """The spec of your own model.

    name: how results name it (letters, digits, _ and -); builders: framework ->
    builder (frameworks without one are skipped with that reason); input_kind:
    "image" (H, W, C), "tokens" (T,) integer ids or "features" (F,); input_shape:
    the one sample shape the model takes (None: any the data has); options: the
    builder's keyword arguments with their defaults (an integer option is a size
    in [1, 2**20] unless option_ranges says otherwise); param_count(input_shape,
    num_classes, **options): your formula, checked against every framework's real
    count by `dlbench check`. Raises ValueError naming what is wrong.
    """
    said = f"dlbench.Model(name={name!r})"
    nn_frameworks = network_frameworks()
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise ValueError(f"{said}: a name is a letter then letters, digits, _ or - (at most 64 characters)")
    if not isinstance(builders, Mapping) or not builders:
        raise ValueError(f"{said}: builders must map at least one of {', '.join(nn_frameworks)} to its builder")
    for framework, builder in builders.items():
        if framework not in nn_frameworks:
            raise ValueError(f"{said}: builders[{framework!r}]: allowed frameworks: {', '.join(nn_frameworks)}")
        if not callable(builder) and not (isinstance(builder, str) and MODULE_ATTR.fullmatch(builder)):
            raise ValueError(
                f"{said}: builders[{framework!r}] = {builder!r}: give a function or a 'module:function' string"
            )
    for what, value, allowed in (
        ("input_kind", input_kind, USER_INPUT_KINDS),
        ("task", task, USER_TASKS),
        ("loss", loss, USER_LOSSES),
    ):
        if value not in allowed:
            raise ValueError(f"{said}: {what} {value!r} is not supported for your own models; allowed: {allowed}")
    if input_shape is not None:
        input_shape = tuple(input_shape)
        if not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in input_shape):
            raise ValueError(f"{said}: input_shape must be positive integers, got {input_shape!r}")
        reason = _input_check(input_kind, None)(input_shape)
        if reason:
            raise ValueError(f"{said}: input_shape {input_shape!r} does not fit input_kind {input_kind!r}: {reason}")
    return ModelSpec(
        name=name,
        description=description or f"your model {name}",
        kind="nn",
        frameworks=tuple(f for f in nn_frameworks if f in builders),
        param_count=param_count,
        check_input=_input_check(input_kind, input_shape),
        options=dict(options or {}),
        tiny_options=dict(tiny_options or {}),
        tiny_shape=input_shape,
        input_kind=input_kind,
        task=task,
        loss=loss,
        option_ranges=dict(option_ranges or {}),
        option_choices=dict(option_choices or {}),
        builders=dict(builders),
        origin="yours",
    )
