"""scikit-learn's digits: 1,797 real 8x8 handwritten digits, shipped inside scikit-learn.

The smallest real dataset available offline, for quick runs and tests. Pixel
values are integers 0..16, so images are divided by 16 to land in [0, 1].
scikit-learn has no train/test split for it, so a fixed stratified 80/20 split
is used: every framework and every trial sees the same 1,437 training and 360
test samples, whatever the trial seed.

The split is the one scikit-learn 1.9.1's ``train_test_split(test_size=0.2,
stratify=y, random_state=0)`` draws, kept in ``digits_split.npy`` (the training
rows in their order, then the test rows), and the data are read from
scikit-learn's own file (``sklearn/datasets/data/digits.csv.gz``) without
importing scikit-learn: importing it took 1.4 s of each worker's start, more
than a digits epoch. Where that file is not the one the split was drawn for
(its SHA-256 differs: another scikit-learn release changed it), the split is
drawn by scikit-learn as before.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import io
from pathlib import Path

import numpy as np

from dlbench.datasets.arrays import Arrays, ArraySplit
from dlbench.datasets.fetch import DatasetNotFound

NAME = "digits"
SHAPE = (8, 8, 1)
CLASSES = 10
TEST_FRACTION = 0.2
SPLIT_SEED = 0
TRAIN_SIZE = 1437
_MAX_PIXEL = 16.0  # load_digits() pixels are counts of 0..16 set bits per 4x4 block
# SHA-256 of the decompressed digits.csv.gz the shipped split was drawn on (scikit-learn 1.9.1).
DATA_SHA256 = "6ebb3d2fee246a4e99363262ddf8a00a3c41bee6014c373ed9d9216ba7f651b8"
SPLIT_FILE = Path(__file__).with_name("digits_split.npy")


def _missing_sklearn_message() -> str:
    return (
        "dataset 'digits' needs scikit-learn (it ships the data): "
        "pip install 'dlbench[sklearn]' or pip install scikit-learn"
    )


def _data_file() -> Path:
    """scikit-learn's digits.csv.gz, found without importing scikit-learn."""
    spec = importlib.util.find_spec("sklearn")
    if spec is None or not spec.submodule_search_locations:
        raise DatasetNotFound(_missing_sklearn_message())
    return Path(list(spec.submodule_search_locations)[0]) / "datasets" / "data" / "digits.csv.gz"


def ensure() -> None:
    """Check, without importing it, that scikit-learn (which holds the data) is installed."""
    _data_file()


def _read(path: Path) -> tuple[np.ndarray, bytes]:
    """The file's rows (64 pixels, then the label; float64, as load_digits reads them) and its bytes."""
    try:
        raw = gzip.decompress(path.read_bytes())
    except (OSError, EOFError) as exc:
        raise DatasetNotFound(f"dataset 'digits': cannot read {path}: {exc}") from exc
    return np.loadtxt(io.BytesIO(raw), delimiter=","), raw


def _sklearn_split(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, ...]:
    try:
        from sklearn.model_selection import train_test_split
    except ImportError as exc:
        raise DatasetNotFound(_missing_sklearn_message()) from exc
    return tuple(train_test_split(x, y, test_size=TEST_FRACTION, stratify=y, random_state=SPLIT_SEED))


def load() -> Arrays:
    """The digits as float32 NHWC images in [0, 1] and int64 labels, split 80/20."""
    data, raw = _read(_data_file())
    x = (data[:, :-1] / _MAX_PIXEL).astype(np.float32).reshape(-1, *SHAPE)
    y = data[:, -1].astype(np.int64)
    if hashlib.sha256(raw).hexdigest() == DATA_SHA256:
        order = np.load(SPLIT_FILE, allow_pickle=False).astype(np.intp)
        train, test = order[:TRAIN_SIZE], order[TRAIN_SIZE:]
        x_train, x_test, y_train, y_test = x[train], x[test], y[train], y[test]
    else:
        x_train, x_test, y_train, y_test = _sklearn_split(x, y)
    return Arrays(
        NAME,
        ArraySplit(np.ascontiguousarray(x_train), np.ascontiguousarray(y_train)),
        ArraySplit(np.ascontiguousarray(x_test), np.ascontiguousarray(y_test)),
        CLASSES,
    )
