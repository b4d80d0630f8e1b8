"""Datasets: names, shapes, finding/fetching files, and loading into ``Arrays``.

The harness calls, in the parent process, ``dataset_shape`` (planning, no file
access for the built-ins) and ``ensure`` (find or download, before any trial);
each worker calls ``load`` (never downloads). Each dataset is a ``DatasetSpec``
that ``dlbench.registry`` finds by name (built-in, installed plugin, or the
user's own file named in this invocation: ``sources``). Only numpy and the standard library are imported
here: the parent must never pull in a deep-learning framework, and
scikit-learn is imported only when the digits are actually loaded.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from dlbench.datasets.arrays import Arrays, ArraySplit
from dlbench.datasets.cifar10 import CifarFormatError
from dlbench.datasets.fetch import ChecksumMismatch, DatasetError, DatasetNotFound, DownloadError, ProgressFn
from dlbench.datasets.idx import IdxFormatError
from dlbench.datasets.spec import DatasetSpec
from dlbench.datasets.synthetic import SyntheticOptions

# {"dataset:<name>": reference} for the user's own data (see dlbench.registry).
Sources = Mapping[str, str]

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


def _spec(name: str, sources: Sources | None) -> DatasetSpec:
    from dlbench import registry

    return registry.dataset(name, sources)


def dataset_shape(
    name: str, synthetic: SyntheticOptions | None = None, sources: Sources | None = None
) -> tuple[tuple[int, ...], int]:
    """(sample shape, classes) of dataset `name`: (H, W, C) for images. Touches no file
    for the built-ins; a user's file is read for its headers and labels."""
    return _spec(name, sources).shape(synthetic)


def locate(name: str, data_dir: str | None = None, sources: Sources | None = None) -> tuple[Path | None, list[Path]]:
    """The directory holding ``name``'s files (or None) and every place searched, in order.

    Datasets without files (digits, synthetic) give ``(None, [])``.
    """
    return _spec(name, sources).locate(data_dir)


def ensure(
    name: str,
    data_dir: str | None = None,
    *,
    download: bool = True,
    progress: ProgressFn | None = None,
    sources: Sources | None = None,
) -> Path | None:
    """Make sure ``name`` can be loaded: find (or download) and verify its files.

    ``progress(file_name, bytes_done, bytes_total_or_None)`` is called while
    downloading. Returns the directory used, or None for datasets without files. Raises
    ``DatasetNotFound`` (listing every place searched and how to get the data)
    or ``ChecksumMismatch`` (a local file that is not the published one); CIFAR-10
    also ``CifarFormatError`` (a batch file that is not whole records).
    """
    return _spec(name, sources).ensure(data_dir, download, progress)


def load(
    name: str,
    data_dir: str | None = None,
    *,
    synthetic: SyntheticOptions | None = None,
    seed: int = 0,
    sources: Sources | None = None,
) -> Arrays:
    """``name`` as in-memory ``Arrays``; never downloads (workers call this).

    ``synthetic`` and ``seed`` only matter for the synthetic dataset; the real
    datasets have fixed splits.
    """
    return _spec(name, sources).load(data_dir, synthetic, seed)
