"""Datasets: names, shapes, finding/fetching files, and loading into ``Arrays``.

The harness calls, in the parent process, ``dataset_shape`` (planning, no file
access) and ``ensure`` (find or download, before any trial); each worker calls
``load`` (never downloads). Only numpy and the standard library are imported
here: the parent must never pull in a deep-learning framework, and
scikit-learn is imported only when the digits are actually loaded.
"""

from __future__ import annotations

from pathlib import Path

from dlbench.datasets import cifar10, digits, mnist
from dlbench.datasets.arrays import Arrays, ArraySplit
from dlbench.datasets.cifar10 import CifarFormatError
from dlbench.datasets.fetch import ChecksumMismatch, DatasetError, DatasetNotFound, DownloadError, ProgressFn
from dlbench.datasets.idx import IdxFormatError
from dlbench.datasets.synthetic import SyntheticOptions
from dlbench.datasets.synthetic import load as _load_synthetic  # `synthetic` is a parameter name

__all__ = [
    "DATASET_NAMES",
    "Arrays",
    "ArraySplit",
    "ChecksumMismatch",
    "CifarFormatError",
    "DatasetError",
    "DatasetNotFound",
    "DownloadError",
    "IdxFormatError",
    "SyntheticOptions",
    "dataset_shape",
    "ensure",
    "load",
    "locate",
]

DATASET_NAMES = ("digits", "mnist", "fashion-mnist", "cifar10", "synthetic")


def _check_name(name: str) -> None:
    if name not in DATASET_NAMES:
        raise KeyError(f"unknown dataset {name!r}; allowed: {', '.join(DATASET_NAMES)}")


def dataset_shape(name: str, synthetic: SyntheticOptions | None = None) -> tuple[tuple[int, ...], int]:
    """(H, W, C) of one image and the number of classes; touches no file."""
    _check_name(name)
    if name == "synthetic":
        opts = synthetic if synthetic is not None else SyntheticOptions()
        return opts.shape, opts.classes
    if name == "digits":
        return digits.SHAPE, digits.CLASSES
    if name in cifar10.SPECS:
        return cifar10.SHAPE, cifar10.CLASSES
    return mnist.SHAPE, mnist.CLASSES


def locate(name: str, data_dir: str | None = None) -> tuple[Path | None, list[Path]]:
    """The directory holding ``name``'s files (or None) and every place searched, in order.

    Datasets without files (digits, synthetic) give ``(None, [])``.
    """
    _check_name(name)
    if name in mnist.SPECS:
        return mnist.locate(mnist.SPECS[name], data_dir)
    if name in cifar10.SPECS:
        return cifar10.locate(cifar10.SPECS[name], data_dir)
    return None, []


def ensure(
    name: str, data_dir: str | None = None, *, download: bool = True, progress: ProgressFn | None = None
) -> Path | None:
    """Make sure ``name`` can be loaded: find (or download) and verify its files.

    ``progress(file_name, bytes_done, bytes_total_or_None)`` is called while
    downloading. Returns the directory used, or None for datasets without files. Raises
    ``DatasetNotFound`` (listing every place searched and how to get the data)
    or ``ChecksumMismatch`` (a local file that is not the published one); CIFAR-10
    also ``CifarFormatError`` (a batch file that is not whole records).
    """
    _check_name(name)
    if name in mnist.SPECS:
        return mnist.ensure(mnist.SPECS[name], data_dir, download=download, progress=progress)
    if name in cifar10.SPECS:
        return cifar10.ensure(cifar10.SPECS[name], data_dir, download=download, progress=progress)
    if name == "digits":
        digits.ensure()
    return None


def load(name: str, data_dir: str | None = None, *, synthetic: SyntheticOptions | None = None, seed: int = 0) -> Arrays:
    """``name`` as in-memory ``Arrays``; never downloads (workers call this).

    ``synthetic`` and ``seed`` only matter for the synthetic dataset; the real
    datasets have fixed splits.
    """
    _check_name(name)
    if name in mnist.SPECS:
        return mnist.load(mnist.SPECS[name], data_dir)
    if name in cifar10.SPECS:
        return cifar10.load(cifar10.SPECS[name], data_dir)
    if name == "digits":
        return digits.load()
    return _load_synthetic(synthetic, seed)
