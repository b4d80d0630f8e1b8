"""A model's input x: one array, or several named ones (a dict name -> array).

A user's model may take several inputs (numbers and a category id, an image and its
metadata): its dataset holds `x_train_<name>` and `x_test_<name>` for each, and the
network receives a dict name -> batch. These helpers treat both forms alike, on numpy
arrays and on any framework's tensors (they only index, slice and map), so that the
adapters keep one code path; on a single array each is the plain operation.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

# An input's name: what the dataset's keys and the network's dict use.
NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")


def is_named(x: Any) -> bool:
    return isinstance(x, Mapping)


def apply(fn: Callable[[Any], Any], x: Any) -> Any:
    """fn on the array, or on each named input (the same names, in order)."""
    return {name: fn(value) for name, value in x.items()} if is_named(x) else fn(x)


def take(x: Any, index: Any) -> Any:
    """x[index] of every input: a batch by rows, a slice, an index tensor."""
    return apply(lambda a: a[index], x)


def rows(x: Any) -> int:
    """The number of samples (every named input holds as many)."""
    first = next(iter(x.values())) if is_named(x) else x
    return int(first.shape[0])


def sample_shape(x: Any) -> Any:
    """One sample's shape: a tuple, or name -> tuple for named inputs."""
    return apply(lambda a: tuple(int(d) for d in a.shape[1:]), x)


def shown(shape: Any) -> str:
    """A sample shape in words: "28x28x1", or "numeric 6; category 1" for named inputs."""
    if is_named(shape):
        return "; ".join(f"{name} {'x'.join(map(str, s))}" for name, s in shape.items())
    return "x".join(map(str, shape))
