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

from dlbench.models.spec import TASK_LOSSES, ModelSpec, OptionRange, Shape


def network_frameworks() -> tuple[str, ...]:
    """The frameworks that build a model's network from its builder
    (FrameworkInfo.networks), an installed plugin's too: those a builder may be for."""
    from dlbench import registry

    return tuple(name for name, info in registry.frameworks().items() if info.networks)


# What a user's model may take and do (the zoo's CTC task needs data made for it).
# input kind -> (dimensions per sample, their names, channels last as stored).
USER_INPUTS = {
    "image": (3, "(H, W, C)"),
    "series": (2, "(L, C)"),
    "volume": (4, "(D, H, W, C)"),
    "tokens": (1, "(T,)"),
    "features": (1, "(F,)"),
}
USER_INPUT_KINDS = tuple(USER_INPUTS)
USER_TASKS = ("classify", "regress", "next-token")
USER_LOSSES = tuple(dict.fromkeys(loss for task in USER_TASKS for loss in TASK_LOSSES[task]))
HEADS_TASK = "multi-output"  # dlbench.heads.TASK (not imported: numpy stays out of the parent's import)
HEAD_TASKS = ("classify", "regress")
NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")
MODULE_ATTR = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")


def _shown(shape: Any) -> str:
    from dlbench.datasets.inputs import shown

    return shown(shape)


def _layout_hint(kind: str, shape: Shape) -> str:
    """What to change when the data's samples have another rank than the model takes."""
    if kind == "series" and len(shape) == 3 and shape[-1] == 1:
        return (
            "; a .npz array (N, L, C) is read as greyscale images unless the file says otherwise: "
            "save it with layout='NLC' (or 'NCL'), e.g. numpy.savez(path, ..., layout='NLC')"
        )
    if kind == "image" and len(shape) == 2:
        return "; for (L, C) series give the model input_kind='series'"
    if kind == "volume" and len(shape) == 3:
        return "; a volume's samples are (D, H, W, C): save the array as (N, D, H, W, C) or with layout='NCDHW'"
    return ""


def _named_check(kinds: Mapping[str, str], input_shape: Mapping[str, Shape] | None) -> Callable[[Any], str | None]:
    """The check of a model of several named inputs: the data's names, each input's rank."""
    each = {name: _input_check(kind, (input_shape or {}).get(name)) for name, kind in kinds.items()}

    def check(shape: Any) -> str | None:
        if not isinstance(shape, Mapping):
            return (
                f"takes named inputs {', '.join(kinds)}; the data gives one input ({_shown(shape)}): save "
                f"x_train_<name> and x_test_<name> for each ({', '.join(kinds)}) in the .npz"
            )
        if set(shape) != set(kinds):
            return f"takes named inputs {', '.join(kinds)}; the data's are {', '.join(shape)}"
        for name, reason in ((n, each[n](shape[n])) for n in kinds):
            if reason:
                return f"input {name} {reason}"
        return None

    return check


def _input_check(kind: str, input_shape: Shape | None) -> Callable[[Any], str | None]:
    rank, names = USER_INPUTS[kind]

    def check(shape: Any) -> str | None:
        if isinstance(shape, Mapping):
            return f"takes one {kind} input; the data has named inputs {', '.join(shape)}"
        if len(shape) != rank:
            return f"takes {kind} input, {names} per sample; the data gives {_shown(shape)}{_layout_hint(kind, shape)}"
        if input_shape is not None and tuple(shape) != tuple(input_shape):
            return f"takes {_shown(input_shape)} input; the data gives {_shown(shape)}"
        return None

    return check


def _check_array_name(said: str, role: str, name: object, array: str) -> None:
    """A named input or output becomes the dataset arrays <array>_train_<name> and <array>_test_<name>, so its name
    must be a plain identifier; anything else is a ValueError that names it and the rule."""
    from dlbench.datasets.inputs import NAME

    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise ValueError(
            f"{said}: {role} name {name!r}: a lowercase letter, then lowercase letters, digits or _ "
            f"(the dataset's arrays are {array}_train_<name>, {array}_test_<name>)"
        )


def _heads(
    said: str,
    task: str | None,
    outputs: Mapping[str, str] | None,
    loss: str | Mapping[str, str] | None,
    weights: Mapping[str, float] | None,
) -> tuple[dict[str, str], dict[str, str], dict[str, float]]:
    """(head -> task, head -> loss, head -> weight) of a model of several outputs, all
    empty for one output; a declaration that does not fit is a ValueError naming the head."""
    if outputs is None:
        if weights is not None:
            raise ValueError(f"{said}: loss_weights weigh the heads of outputs={{head: task}}; one output here")
        return {}, {}, {}
    if task is not None:
        raise ValueError(f"{said}: give task (one output) or outputs (several heads, each with its task), not both")
    if not isinstance(outputs, Mapping) or not outputs:
        raise ValueError(f"{said}: outputs maps at least one head name to its task ({' or '.join(HEAD_TASKS)})")
    heads: dict[str, str] = {}
    for head, head_task in outputs.items():
        _check_array_name(said, "output", head, "y")
        if head_task not in HEAD_TASKS:
            raise ValueError(f"{said}: output {head}: task {head_task!r}; allowed: {', '.join(HEAD_TASKS)}")
        heads[head] = head_task
    if isinstance(loss, str):
        raise ValueError(
            f"{said}: loss {loss!r}: a model of several outputs takes loss as a mapping head -> loss, e.g. "
            f"{{{next(iter(heads))!r}: {TASK_LOSSES[next(iter(heads.values()))][0]!r}}}"
        )
    given = dict(loss or {})
    for head, head_loss in given.items():
        if head not in heads:
            raise ValueError(f"{said}: loss[{head!r}]: no such output (outputs: {', '.join(heads)})")
        if head_loss not in TASK_LOSSES[heads[head]]:
            raise ValueError(
                f"{said}: output {head}: loss {head_loss!r} does not fit task {heads[head]!r}; "
                f"allowed: {', '.join(TASK_LOSSES[heads[head]])}"
            )
    losses = {head: given.get(head, TASK_LOSSES[head_task][0]) for head, head_task in heads.items()}
    weighed = dict(weights or {})
    for head, weight in weighed.items():
        if head not in heads:
            raise ValueError(f"{said}: loss_weights[{head!r}]: no such output (outputs: {', '.join(heads)})")
        if isinstance(weight, bool) or not isinstance(weight, int | float) or not 0 < weight < float("inf"):
            raise ValueError(f"{said}: output {head}: loss weight {weight!r}; a weight is a positive finite number")
    return heads, losses, {head: float(weighed.get(head, 1.0)) for head in heads}


def Model(  # noqa: N802 - a constructor, named like the class it stands for
    name: str,
    builders: Mapping[str, Callable[..., Any] | str],
    *,
    input_kind: str | Mapping[str, str] = "image",
    input_shape: Shape | Mapping[str, Shape] | None = None,
    task: str | None = None,
    outputs: Mapping[str, str] | None = None,
    loss: str | Mapping[str, str] | None = None,
    loss_weights: Mapping[str, float] | None = None,
    losses: Mapping[str, Callable[..., Any] | str] | None = None,
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
    "image" (H, W, C), "series" (L, C), "volume" (D, H, W, C), "tokens" (T,)
    integer ids or "features" (F,), each as stored, channels last (torch's builder
    receives channels-first tensors), or a mapping name -> one of these for several
    named inputs (the dataset's x_train_<name>, x_test_<name>; the builder's first
    argument is then name -> sample shape, and the network receives name -> batch);
    task: "classify" (logits (N, classes) for class ids), "regress" (outputs (N, K)
    for float targets (N, K); the builder's second argument is K; loss "mse" or "mae") or "next-token" (logits (N, T,
    vocab) for token ids; the second argument is the vocabulary); loss: the task's
    (None: cross-entropy, or mse for regress; for regress also the error reported as
    quality); outputs: several named outputs instead of one task, head name -> "classify"
    or "regress" (the dataset's y_train_<name>, y_test_<name>; the builder's second
    argument is then name -> classes or K, and the network returns name -> output);
    loss is then head -> its loss (heads left out take their task's default) and
    loss_weights head -> its weight (default 1) in the training loss, the weighted
    sum of the heads' batch-mean losses; losses: framework -> your own training loss there, a function or
    "module:function" called as loss(outputs, targets) -> the batch's mean in that
    framework's tensors (give one for every framework with a builder: the same
    objective in each is yours to keep); input_shape:
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
    kinds: dict[str, str] = {}
    if isinstance(input_kind, Mapping):  # several named inputs: name -> kind
        kinds = dict(input_kind)
        if not kinds:
            raise ValueError(f"{said}: input_kind as a mapping names at least one input")
        for input_name, kind in kinds.items():
            _check_array_name(said, "input", input_name, "x")
            if kind not in USER_INPUT_KINDS:
                raise ValueError(f"{said}: input {input_name}: kind {kind!r}; allowed: {USER_INPUT_KINDS}")
        input_kind = "named"
    for what, value, allowed in (("input_kind", input_kind, (*USER_INPUT_KINDS, "named")),):
        if value not in allowed:
            raise ValueError(f"{said}: {what} {value!r} is not supported for your own models; allowed: {allowed}")
    heads, head_losses, weights = _heads(said, task, outputs, loss, loss_weights)
    if heads:
        task, loss = HEADS_TASK, TASK_LOSSES[HEADS_TASK][0]
    task = "classify" if task is None else task
    if task not in (*USER_TASKS, HEADS_TASK) or (task == HEADS_TASK and not heads):
        raise ValueError(f"{said}: task {task!r} is not supported for your own models; allowed: {USER_TASKS}")
    if not isinstance(loss, str | None):
        raise ValueError(f"{said}: loss as a mapping head -> loss needs outputs={{head: task}}")
    loss = TASK_LOSSES[task][0] if loss is None else loss
    if loss not in TASK_LOSSES[task]:
        raise ValueError(f"{said}: loss {loss!r} does not fit task {task!r}; allowed: {TASK_LOSSES[task]}")
    given = dict(losses or {})
    for framework, function in given.items():
        if framework not in builders:
            raise ValueError(
                f"{said}: losses[{framework!r}]: no builder for {framework} (builders: {', '.join(builders)})"
            )
        if not callable(function) and not (isinstance(function, str) and MODULE_ATTR.fullmatch(function)):
            raise ValueError(
                f"{said}: losses[{framework!r}] = {function!r}: give a function or a 'module:function' string"
            )
    if given and set(given) != set(builders):
        lacking = sorted(set(builders) - set(given))
        raise ValueError(
            f"{said}: losses given for {', '.join(sorted(given))} but not {', '.join(lacking)}: one framework "
            "training on another objective is not a framework comparison"
        )
    if task == "next-token" and input_kind != "tokens":
        raise ValueError(f"{said}: a next-token model takes input_kind 'tokens', not {input_kind!r}")
    if input_shape is not None:
        shapes = dict(input_shape) if isinstance(input_shape, Mapping) else {"": input_shape}
        for key, one in shapes.items():
            one = tuple(one)
            if not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in one):
                raise ValueError(f"{said}: input_shape{key and ' ' + key} must be positive integers, got {one!r}")
            shapes[key] = one
        input_shape = shapes if kinds else shapes.get("")
        check = _named_check(kinds, None) if kinds else _input_check(input_kind, None)
        reason = check(input_shape)
        if reason:
            raise ValueError(f"{said}: input_shape {input_shape!r} does not fit input_kind {input_kind!r}: {reason}")
    return ModelSpec(
        name=name,
        description=description or f"your model {name}",
        kind="nn",
        frameworks=tuple(f for f in nn_frameworks if f in builders),
        param_count=param_count,
        check_input=(
            _named_check(kinds, input_shape if isinstance(input_shape, Mapping) else None)
            if kinds
            else _input_check(input_kind, input_shape if isinstance(input_shape, tuple) else None)
        ),
        options=dict(options or {}),
        tiny_options=dict(tiny_options or {}),
        tiny_shape=input_shape,
        input_kind=input_kind,
        inputs=kinds,
        task=task,
        loss=loss,
        heads=heads,
        head_losses=head_losses,
        loss_weights=weights,
        option_ranges=dict(option_ranges or {}),
        option_choices=dict(option_choices or {}),
        builders=dict(builders),
        losses=given,
        origin="yours",
    )
