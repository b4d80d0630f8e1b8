"""scikit-learn's digits: 1,797 real 8x8 handwritten digits, shipped inside scikit-learn.

The smallest real dataset available offline, for quick runs and tests. Pixel
values are integers 0..16, so images are divided by 16 to land in [0, 1].
scikit-learn has no train/test split for it, so a fixed stratified 80/20 split
(``random_state=0``) is used: every framework and every trial sees the same
1,437 training and 360 test samples, whatever the trial seed.

scikit-learn is imported only inside the functions: the parent process imports
this package and must stay light.
"""

from __future__ import annotations

import importlib.util

import numpy as np

from dlbench.datasets.arrays import Arrays, ArraySplit
from dlbench.datasets.fetch import DatasetNotFound

NAME = "digits"
SHAPE = (8, 8, 1)
CLASSES = 10
TEST_FRACTION = 0.2
SPLIT_SEED = 0
_MAX_PIXEL = 16.0  # load_digits() pixels are counts of 0..16 set bits per 4x4 block


def _missing_sklearn_message() -> str:
    return (
        "dataset 'digits' needs scikit-learn (it ships the data): "
        "pip install 'dlbench[sklearn]' or pip install scikit-learn"
    )


def ensure() -> None:
    """Check, without importing it, that scikit-learn (which holds the data) is installed."""
    if importlib.util.find_spec("sklearn") is None:
        raise DatasetNotFound(_missing_sklearn_message())


def load() -> Arrays:
    """The digits as float32 NHWC images in [0, 1] and int64 labels, split 80/20."""
    try:
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split
    except ImportError as exc:
        raise DatasetNotFound(_missing_sklearn_message()) from exc

    bunch = load_digits()
    x = (bunch.images / _MAX_PIXEL).astype(np.float32).reshape(-1, *SHAPE)
    y = bunch.target.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=TEST_FRACTION, stratify=y, random_state=SPLIT_SEED
    )
    return Arrays(
        NAME,
        ArraySplit(np.ascontiguousarray(x_train), np.ascontiguousarray(y_train)),
        ArraySplit(np.ascontiguousarray(x_test), np.ascontiguousarray(y_test)),
        CLASSES,
    )
