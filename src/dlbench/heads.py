"""Several named outputs (heads) of a user's model: their names, metrics and quality.

A model of several outputs (`dlbench.Model(outputs={"price": "regress", "kind":
"classify"})`) returns a dict name -> output; its dataset holds y_train_<name> and
y_test_<name> for each head, and the builder's second argument is name -> classes
(classify) or K (regress). Training minimizes the weighted sum of the heads'
batch-mean losses, in every framework the same sum. Each head's quality is stored
under phase "accuracy" as "<metric>/<head>" ("accuracy/kind", "mse/price"), the
metric being the one a single-output model of that task stores.

The quality is computed here, on the host, from the outputs and targets as numpy
arrays (float64 sums), so that every framework's figure is the same computation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

# The task of a model of several heads, and the tasks a head may have.
TASK = "multi-output"
HEAD_TASKS = ("classify", "regress")
# What a dataset's y holds when it holds one array per head (DatasetSpec.targets).
TARGETS = "heads"
SEPARATOR = "/"


def metric(base: str, head: str) -> str:
    """The stored metric of one head's quality: "accuracy/kind", "mse/price"."""
    return f"{base}{SEPARATOR}{head}"


def split(name: str) -> tuple[str, str | None]:
    """(base metric, head) of a stored metric name; head None for a model of one output."""
    base, sep, head = name.partition(SEPARATOR)
    return (base, head) if sep and head else (name, None)


def score(task: str, loss: str, output: Any, target: Any) -> float:
    """One head's quality on host arrays: top-1 accuracy (classify), or the mean
    squared / absolute error over every target of every sample (regress)."""
    out, y = np.asarray(output), np.asarray(target)
    if task == "classify":
        return float(np.mean(np.argmax(out, axis=-1) == y)) if len(y) else float("nan")
    error = out.astype(np.float64).reshape(y.shape) - y.astype(np.float64)
    return float(np.mean(np.abs(error)) if loss == "mae" else np.mean(np.square(error)))


def scores(spec: Any, outputs: Mapping[str, Any], targets: Mapping[str, Any]) -> dict[str, float]:
    """head -> quality of a model of several heads (spec.heads, spec.head_losses)."""
    return {
        head: score(task, spec.head_losses[head], outputs[head], targets[head]) for head, task in spec.heads.items()
    }


def concat(batches: Sequence[Mapping[str, Any]]) -> dict[str, np.ndarray]:
    """The per-head outputs of several batches, joined along the samples."""
    if not batches:
        return {}
    return {head: np.concatenate([np.asarray(b[head]) for b in batches]) for head in batches[0]}


def output_problem(spec: Any, output: Any, rows: int, classes: Mapping[str, int]) -> str | None:
    """Why a network's output does not fit its heads (one line's text), or None."""
    if not isinstance(output, Mapping):
        return (
            f"returns one {type(output).__name__}; a model of several outputs returns a dict "
            f"name -> output for each of {', '.join(spec.heads)}"
        )
    if set(output) != set(spec.heads):
        return f"returns outputs {', '.join(map(str, output)) or 'none'}; its heads are {', '.join(spec.heads)}"
    for head, task in spec.heads.items():
        shape = tuple(int(d) for d in output[head].shape)
        want = classes[head]
        if task == "classify" and shape != (rows, want):
            return f"returns {shape} for head {head}; a classify head returns logits (N, classes) = ({rows}, {want})"
        if task == "regress" and (shape[:1] != (rows,) or int(np.prod(shape[1:])) != want):
            return f"returns {shape} for head {head}; a regress head returns (N, K) = ({rows}, {want})"
    return None
