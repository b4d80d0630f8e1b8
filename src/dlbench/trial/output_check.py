"""Does a user's network return what its task needs? One line that says what to change.

A network whose output does not fit its targets fails deep inside a framework's loss
("Target 5 is out of bounds", "shape '[32, 2]' is invalid for input of size 96"). Before a
user's model trains, its worker runs the first network of the trial on two training
samples, through the framework's conformance hooks (the forward `dlbench check` uses:
evaluation mode, the framework's own layout), untimed, and compares the output's shape
with what the task needs. The zoo's networks are checked by the conformance suite.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


class OutputShapeError(RuntimeError):
    """A user's network whose output does not fit its task; the message is one line."""


def expected(task: str, classes: int, sample_shape: tuple[int, ...]) -> tuple[tuple[int, ...], str]:
    """(the output shape for 2 samples, in words) of a task."""
    if task == "regress":
        return (2, classes), f"(N, K) = (2, {classes}): one value per target"
    if task == "next-token":
        return (2, sample_shape[0], classes), f"(N, T, vocab) = (2, {sample_shape[0]}, {classes}) logits"
    return (2, classes), f"(N, classes) = (2, {classes}) logits"


def fits(task: str, shape: tuple[int, ...], want: tuple[int, ...]) -> bool:
    if tuple(shape) == want:
        return True
    # A regression of one target may return (N,): the loss matches it to (N, 1).
    return task == "regress" and want[1] == 1 and tuple(shape) == (2,)


def verifier(spec: Any, framework: str, arrays: Any) -> Callable[[Any], None] | None:
    """A function that raises OutputShapeError when a trainer's network does not fit
    `spec`'s task on `arrays`, or None where there is nothing to check (a zoo model, a
    framework without conformance hooks, a task other than these three)."""
    from dlbench import registry
    from dlbench.datasets import inputs
    from dlbench.frameworks import load

    hooks_path = registry.framework(framework).conformance
    if spec.builtin or hooks_path is None or spec.task not in ("classify", "regress", "next-token", "multi-output"):
        return None
    hooks = load(hooks_path)
    x = inputs.apply(np.ascontiguousarray, inputs.take(arrays.train.x, slice(None, 2)))
    sample = arrays.input_shape
    if spec.heads:  # several named outputs: a dict of them, each of its head's shape
        from dlbench import heads

        def verify_heads(trainer: Any) -> None:
            problem = heads.output_problem(spec, hooks.forward(trainer, x), 2, arrays.num_classes)
            if problem:
                raise OutputShapeError(
                    f"model {spec.name}: the {framework} network {problem}: check the builder's heads and the "
                    "second argument it is given (name -> classes or K)"
                )

        return verify_heads
    want, words = expected(spec.task, int(arrays.num_classes), sample if isinstance(sample, tuple) else (0,))

    def verify(trainer: Any) -> None:
        shape = tuple(int(d) for d in np.shape(hooks.forward(trainer, x)))
        if not fits(spec.task, shape, want):
            raise OutputShapeError(
                f"model {spec.name}: the {framework} network returns {shape} for 2 samples of "
                f"{inputs.shown(sample) if inputs.is_named(sample) else sample}; a {spec.task} model returns {words}: "
                "check the builder's last layer "
                "and the second argument it is given"
            )

    return verify
