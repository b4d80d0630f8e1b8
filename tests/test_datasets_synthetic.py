"""Synthetic token and spectrogram data: shapes, dtypes, validation, and that the
structure the models are meant to learn is really there."""

from __future__ import annotations

import numpy as np
import pytest

from dlbench.datasets import ArraySplit
from dlbench.datasets.synthetic import MARKOV_FOLLOW, SyntheticOptions, load


def test_next_token_markov_chain() -> None:
    a = load(SyntheticOptions((20,), 12, 300, 50, "tokens", "next-token"), seed=1)
    assert a.train.x.shape == (300, 20) and a.train.x.dtype == np.int32
    assert a.train.y.shape == (300, 20) and a.train.y.dtype == np.int64
    assert a.input_shape == (20,) and a.num_classes == 12 and a.input_kind == "tokens"
    np.testing.assert_array_equal(a.train.x[:, 1:], a.train.y[:, :-1])  # y is x shifted by one
    # The most frequent successor of each token is followed ~80% of the time.
    pairs = np.stack([a.train.x.ravel(), a.train.y.ravel()], 1)
    counts = np.zeros((12, 12))
    np.add.at(counts, (pairs[:, 0], pairs[:, 1]), 1)
    best = counts.max(1).sum() / counts.sum()
    assert MARKOV_FOLLOW - 0.05 < best < MARKOV_FOLLOW + 0.1
    # Train and test share the chain.
    test_counts = np.zeros((12, 12))
    np.add.at(test_counts, (a.test.x.ravel(), a.test.y.ravel()), 1)
    np.testing.assert_array_equal(counts.argmax(1), test_counts.argmax(1))


def test_token_classification_keywords() -> None:
    a = load(SyntheticOptions((16,), 5, 400, 100, "tokens", "classify", vocab=50), seed=2)
    assert a.train.x.shape == (400, 16) and a.train.y.shape == (400,)
    assert np.all(a.train.x[:, 0] == 0) and a.train.x.max() < 50 and a.train.x[:, 1:].min() >= 1

    # A bag-of-words nearest-class-mean classifier already beats chance by far.
    def bags(x):
        return np.stack([np.bincount(r, minlength=50) for r in x]).astype(float)

    means = np.stack([bags(a.train.x[a.train.y == c]).mean(0) for c in range(5)])
    pred = np.argmax(bags(a.test.x) @ means.T - 0.5 * (means**2).sum(1), 1)
    assert np.mean(pred == a.test.y) > 0.8


def test_ctc_utterances() -> None:
    a = load(SyntheticOptions((64, 10), 7, 200, 40, "spectrogram", "ctc"), seed=3)
    x, y = a.train.x, a.train.y
    assert x.shape == (200, 64, 10) and x.dtype == np.float32
    assert y.shape == (200, 8) and y.dtype == np.int64  # at most T // 8 symbols
    lengths = (y >= 0).sum(1)
    assert lengths.min() >= 4 and lengths.max() == 8
    assert set(np.unique(y[y >= 0])) <= set(range(1, 7))
    assert np.all(np.diff((y < 0).astype(int), axis=1) >= 0)  # padding only at the end


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"shape": (28, 28), "input_kind": "image"}, "three positive integers"),
        ({"shape": (28, 28), "input_kind": "tokens", "task": "next-token"}, "one positive integer"),
        ({"shape": (28,), "input_kind": "spectrogram", "task": "ctc"}, "two positive integers"),
        ({"shape": (4, 10), "input_kind": "spectrogram", "task": "ctc"}, "at least 8 frames"),
        ({"shape": (8,), "input_kind": "tokens", "task": "ctc"}, "supports task"),
        ({"input_kind": "audio"}, "input_kind must be one of"),
        ({"shape": (8,), "input_kind": "tokens", "task": "next-token", "vocab": 11}, "must equal classes"),
        ({"shape": (8,), "input_kind": "tokens", "task": "classify", "vocab": 5}, "vocab > classes"),
        ({"vocab": 100}, "token inputs only"),
    ],
)
def test_options_validated(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        SyntheticOptions(**kwargs)


def test_array_split_checks() -> None:
    tokens = np.zeros((3, 4), np.int32)
    ArraySplit(tokens, np.zeros(3, np.int64))
    ArraySplit(tokens, np.zeros((3, 4), np.int64))
    with pytest.raises(ValueError, match="one label per input position"):
        ArraySplit(tokens, np.zeros((3, 5), np.int64))
    with pytest.raises(ValueError, match="int32 or int64"):
        ArraySplit(tokens.astype(np.float32)[:, :, None][:, :, 0].astype(np.int16), np.zeros(3, np.int64))
    spec = np.zeros((2, 16, 5), np.float32)
    ArraySplit(spec, np.array([[1, 2, -1], [3, -1, -1]], np.int64))
    with pytest.raises(ValueError, match="padding"):
        ArraySplit(spec, np.array([[1, -1, 2], [3, -1, -1]], np.int64))
    with pytest.raises(ValueError, match="0 is the blank"):
        ArraySplit(spec, np.array([[1, 0, -1], [3, -1, -1]], np.int64))
    ArraySplit(np.zeros((2, 3, 4, 5, 6), np.float32), np.zeros(2, np.int64))  # a volume, NDHWC
    with pytest.raises(ValueError, match="NHWC"):
        ArraySplit(np.zeros((2, 3, 4, 5, 6, 7), np.float32), np.zeros(2, np.int64))
    with pytest.raises(ValueError, match="volumes must be float32"):
        ArraySplit(np.zeros((2, 3, 4, 5, 6), np.int64), np.zeros(2, np.int64))
    named = ArraySplit({"a": np.zeros((2, 3), np.float32), "b": np.zeros((2, 4), np.int64)}, np.zeros(2, np.int64))
    assert len(named) == 2 and named.input_kind == "named" and len(named.head(1)) == 1
    with pytest.raises(ValueError, match="named inputs hold different numbers of samples"):
        ArraySplit({"a": np.zeros((2, 3), np.float32), "b": np.zeros((3, 4), np.int64)}, np.zeros(2, np.int64))
