"""Datasets: names, shapes, finding/fetching files, and loading into ``Arrays``.

The harness calls, in the parent process, ``dataset_shape`` (planning, no file
access for the built-ins) and ``ensure`` (find or download, before any trial);
each worker calls ``load`` (never downloads). These functions serve the built-in
datasets (``dlbench.datasets.builtin``); ``dlbench.registry.dataset`` adds
installed plugins and the user's own files, each a ``DatasetSpec`` too. Only numpy and the standard library are imported
here: the parent must never pull in a deep-learning framework, and
scikit-learn is imported only when the digits are actually loaded.
"""

from __future__ import annotations

from pathlib import Path

from dlbench.datasets.arrays import Arrays, ArraySplit
from dlbench.datasets.cifar10 import CifarFormatError
from dlbench.datasets.fetch import ChecksumMismatch, DatasetError, DatasetNotFound, DownloadError, ProgressFn
from dlbench.datasets.idx import IdxFormatError
from dlbench.datasets.spec import DatasetSpec
from dlbench.datasets.synthetic import SyntheticOptions

__all__ = [
    "Arrays",
    "ArraySplit",
    "ChecksumMismatch",
    "CifarFormatError",
    "DatasetError",
    "DatasetNotFound",
    "DatasetSpec",
    "DownloadError",
    "IdxFormatError",
    "SyntheticOptions",
    "dataset_shape",
    "ensure",
    "load",
    "locate",
]


def _spec(name: str) -> DatasetSpec:
    from dlbench.datasets import builtin

    if name not in builtin.ATTRS:
        raise KeyError(f"unknown dataset {name!r}; built-in datasets: {', '.join(builtin.ATTRS)}")
    spec: DatasetSpec = getattr(builtin, builtin.ATTRS[name])
    return spec


def dataset_shape(name: str, synthetic: SyntheticOptions | None = None) -> tuple[tuple[int, ...], int]:
    """(sample shape, classes) of dataset `name`: (H, W, C) for images; touches no file."""
    return _spec(name).shape(synthetic)


def locate(name: str, data_dir: str | None = None) -> tuple[Path | None, list[Path]]:
    """The directory holding ``name``'s files (or None) and every place searched, in order.

    Datasets without files (digits, synthetic) give ``(None, [])``.
    """
    return _spec(name).locate(data_dir)


def ensure(
    name: str,
    data_dir: str | None = None,
    *,
    download: bool = True,
    progress: ProgressFn | None = None,
) -> Path | None:
    """Make sure ``name`` can be loaded: find (or download) and verify its files.

    ``progress(file_name, bytes_done, bytes_total_or_None)`` is called while
    downloading. Returns the directory used, or None for datasets without files. Raises
    ``DatasetNotFound`` (listing every place searched and how to get the data)
    or ``ChecksumMismatch`` (a local file that is not the published one); CIFAR-10
    also ``CifarFormatError`` (a batch file that is not whole records).
    """
    return _spec(name).ensure(data_dir, download, progress)


def load(
    name: str,
    data_dir: str | None = None,
    *,
    synthetic: SyntheticOptions | None = None,
    seed: int = 0,
) -> Arrays:
    """``name`` as in-memory ``Arrays``; never downloads (workers call this).

    ``synthetic`` and ``seed`` only matter for the synthetic dataset; the real
    datasets have fixed splits.
    """
    return _spec(name).load(data_dir, synthetic, seed)
