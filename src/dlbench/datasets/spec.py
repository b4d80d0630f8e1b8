"""What a dataset is to the harness: one object per dataset, built-in or not.

A `DatasetSpec` answers the four questions the harness asks, each at its own
time: `shape` while planning (no file is read for the built-ins), `locate` and
`ensure` in the parent before any trial (find, verify, download), `load` in the
worker (never downloads). Built-in datasets are `DatasetSpec` objects in
`dlbench.datasets.builtin`; an installed package adds one through the
`dlbench.datasets` entry-point group; a user's `.npz` file or IDX directory
becomes one through `dlbench.datasets.files`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dlbench.datasets.arrays import Arrays
    from dlbench.datasets.synthetic import SyntheticOptions

from dlbench.datasets.fetch import ProgressFn

Shape = tuple[int, ...]


def _nothing_to_locate(data_dir: str | None) -> tuple[Path | None, list[Path]]:
    return None, []


def _nothing_to_ensure(data_dir: str | None, download: bool, progress: ProgressFn | None) -> Path | None:
    return None


@dataclass(frozen=True)
class DatasetSpec:
    """One dataset. `shape(synthetic)` gives (sample shape, classes): (H, W, C) for
    images; `synthetic` only matters to the synthetic dataset. `load(data_dir,
    synthetic, seed)` returns the whole dataset as Arrays."""

    name: str
    description: str
    shape: Callable[[SyntheticOptions | None], tuple[Shape, int]]
    load: Callable[[str | None, SyntheticOptions | None, int], Arrays]
    locate: Callable[[str | None], tuple[Path | None, list[Path]]] = _nothing_to_locate
    ensure: Callable[[str | None, bool, ProgressFn | None], Path | None] = _nothing_to_ensure
    # Where it comes from, shown by `dlbench list`: "built-in", "plugin ...", a file path.
    origin: str = "built-in"
    # True for datasets whose size is fixed (every real dataset); the input_shape sweep
    # resizes only the synthetic one.
    fixed_shape: bool = True
    # What its labels are: "classes" (class ids), "next-token" (a token per position)
    # or "values" (regression targets); the synthetic dataset's follow the model.
    targets: str = "classes"
    # targets "heads" (one y per named output, dlbench.heads): (head, what it holds) each.
    head_targets: tuple[tuple[str, str], ...] = ()
    # How a user's file is read (its layout, declared or inferred), shown by plan.
    reading: str = ""

    def describe_shape(self, synthetic: Any = None) -> str:
        from dlbench.datasets.inputs import shown

        shape, classes = self.shape(synthetic)
        return f"{shown(shape)}, {classes} classes"
