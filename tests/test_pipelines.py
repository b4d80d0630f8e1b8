"""The augmentation pipelines: same seed, same batches in every framework; crops and flips right.

A small dataset of uint8-valued images (37 of 32x32x3, batch 8: four full
batches and a dropped remainder of 5) keeps each framework's run tiny. The
numpy pipeline is checked against hand-computed crops, then every other
pipeline against numpy, element by element.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import pytest

from dlbench.pipelines import PIPELINES
from dlbench.pipelines import numpy as np_pipeline
from dlbench.pipelines.params import EpochParams, channel_stats, epoch_params

N, BATCH, SEED = 37, 8, 11
# (module name, extra Augmenter arguments): TensorFlow in both of its orders.
VARIANTS = [("torch", {}), ("tensorflow", {"vectorized": True}), ("tensorflow", {"vectorized": False}), ("jax", {})]
IDS = ["torch", "tensorflow-vectorized", "tensorflow-per-sample", "jax"]


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, size=(N, 32, 32, 3)).astype(np.float32) / np.float32(255)
    return x, rng.integers(0, 10, size=N).astype(np.int64)


def _augmenter(name: str, mean: Any, std: Any, **extra: Any) -> Any:
    return importlib.import_module(f"dlbench.pipelines.{name}").Augmenter(mean, std, **extra)


def _host(t: Any, name: str) -> np.ndarray:
    """A framework tensor as a numpy NHWC (or label) array."""
    a = t.cpu().numpy() if name == "torch" else np.asarray(t)
    return a.transpose(0, 2, 3, 1) if name == "torch" and a.ndim == 4 else a


def _batches(
    aug: Any, name: str, x: np.ndarray, y: np.ndarray, params: EpochParams, batch_size: int = BATCH
) -> list[tuple[np.ndarray, np.ndarray]]:
    xt, yt = aug.prepare(x, y)
    return [(_host(xb, name), _host(yb, name)) for xb, yb in aug.epoch_batches(xt, yt, params, batch_size)]


def _one(dy: int, dx: int, flip: bool, n: int = 1) -> EpochParams:
    return EpochParams(0, 0, 4, np.arange(n), np.full(n, dy), np.full(n, dx), np.full(n, flip))


def test_registry() -> None:
    assert PIPELINES == ("numpy", "torch", "tensorflow", "jax")


def test_epoch_params_deterministic_and_in_range() -> None:
    a, b = epoch_params(SEED, 0, 1000), epoch_params(SEED, 0, 1000)
    for field in ("perm", "dy", "dx", "flip"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    assert sorted(a.perm.tolist()) == list(range(1000))
    assert a.dy.min() == 0 and a.dy.max() == 8 and a.dx.min() == 0 and a.dx.max() == 8
    assert 400 < int(a.flip.sum()) < 600  # p = 0.5
    assert a.steps(300) == 3 and len(a) == 1000
    c, d = epoch_params(SEED, 1, 1000), epoch_params(SEED + 1, 0, 1000)
    for other in (c, d):
        assert not np.array_equal(a.perm, other.perm) and not np.array_equal(a.dy, other.dy)
        assert not np.array_equal(a.flip, other.flip)
    # The stream is numpy's default_rng([seed, epoch]) in the documented order.
    rng = np.random.default_rng([SEED, 0])
    np.testing.assert_array_equal(a.perm, rng.permutation(1000))
    np.testing.assert_array_equal(a.dy, rng.integers(0, 9, size=1000))
    assert epoch_params(SEED, 0, 10, pad=0).dx.tolist() == [0] * 10


def test_channel_stats() -> None:
    rng = np.random.default_rng(1)
    x = (rng.random((50, 6, 5, 3)) * [1, 2, 3] + [0, 5, -1]).astype(np.float32)
    stats = channel_stats(x, chunk=7)  # several chunks and a partial one
    np.testing.assert_allclose(stats.mean, x.astype(np.float64).mean(axis=(0, 1, 2)), rtol=1e-6)
    np.testing.assert_allclose(stats.std, x.astype(np.float64).std(axis=(0, 1, 2)), rtol=1e-5)
    assert stats.mean.dtype == np.float32 and stats.as_dict()["std"][2] == float(stats.std[2])
    with pytest.raises(ValueError, match="constant"):
        channel_stats(np.ones((2, 2, 2, 3), np.float32))


@pytest.mark.parametrize("name,extra", [("numpy", {}), *VARIANTS], ids=["numpy", *IDS])
def test_hand_computed_crops_and_flips(name: str, extra: dict, data: tuple) -> None:
    x = data[0][:1]
    y = np.array([4], dtype=np.int64)
    aug = _augmenter(name, [0.0, 0.0, 0.0], [1.0, 1.0, 1.0], **extra)

    def run(dy: int, dx: int, flip: bool) -> np.ndarray:
        [(xb, yb)] = _batches(aug, name, x, y, _one(dy, dx, flip), batch_size=1)
        assert yb.tolist() == [4]
        return xb[0]

    img = x[0]
    np.testing.assert_array_equal(run(4, 4, False), img)  # centre: the image itself
    np.testing.assert_array_equal(run(4, 4, True), img[:, ::-1])  # flip reverses width
    shifted = run(0, 8, False)  # window starts 4 rows above and 4 columns right of the image
    np.testing.assert_array_equal(shifted[4:, :28], img[:28, 4:])
    assert not shifted[:4].any() and not shifted[:, 28:].any()  # zero padding
    both = run(8, 0, True)  # 4 rows down, 4 columns left, then mirrored
    expected = np.zeros_like(img)
    expected[:28, 4:] = img[4:, :28]
    np.testing.assert_array_equal(both, expected[:, ::-1])


def test_numpy_batches_follow_params(data: tuple) -> None:
    x, y = data
    mean, std = np.array([0.5, 0.4, 0.3], np.float32), np.array([0.2, 0.25, 0.3], np.float32)
    params = epoch_params(SEED, 0, N)
    batches = _batches(np_pipeline.Augmenter(mean, std), "numpy", x, y, params)
    assert len(batches) == N // BATCH  # partial last batch dropped
    k = 13  # a sample in the second batch, checked the slow, obvious way
    padded = np.pad(x[params.perm[k]], ((4, 4), (4, 4), (0, 0)))
    crop = padded[params.dy[k] : params.dy[k] + 32, params.dx[k] : params.dx[k] + 32]
    crop = crop[:, ::-1] if params.flip[k] else crop
    np.testing.assert_allclose(batches[1][0][k - BATCH], (crop - mean) / std, atol=1e-6)
    assert batches[1][1][k - BATCH] == y[params.perm[k]]
    assert batches[0][0].dtype == np.float32 and batches[0][0].shape == (BATCH, 32, 32, 3)


@pytest.mark.parametrize("name,extra", VARIANTS, ids=IDS)
def test_same_seed_same_batches_as_numpy(name: str, extra: dict, data: tuple) -> None:
    x, y = data
    stats = channel_stats(x)
    reference = np_pipeline.Augmenter(stats.mean, stats.std)
    aug = _augmenter(name, stats.mean, stats.std, **extra)
    epochs = []
    for epoch in (0, 1):
        params = epoch_params(SEED, epoch, N)
        want = _batches(reference, "numpy", x, y, params)
        got = _batches(aug, name, x, y, params)
        assert len(got) == len(want) == N // BATCH
        for (gx, gy), (wx, wy) in zip(got, want):
            assert gx.shape == wx.shape and gx.dtype == np.float32
            np.testing.assert_allclose(gx, wx, rtol=0, atol=1e-6)
            np.testing.assert_array_equal(gy, wy)
        epochs.append(np.concatenate([b[0] for b in got]))
    assert not np.allclose(epochs[0], epochs[1])  # a new epoch, new order and new draws


@pytest.mark.parametrize("name", PIPELINES)
def test_normalize(name: str, data: tuple) -> None:
    x, y = data
    stats = channel_stats(x)
    aug = _augmenter(name, stats.mean, stats.std)
    xt, _ = aug.prepare(x, y)
    out = _host(aug.normalize(xt), name)
    np.testing.assert_allclose(out, (x - stats.mean) / stats.std, rtol=0, atol=1e-6)
    # Normalized training data has zero mean and unit std per channel.
    np.testing.assert_allclose(out.astype(np.float64).mean(axis=(0, 1, 2)), 0, atol=1e-5)
    np.testing.assert_allclose(out.astype(np.float64).std(axis=(0, 1, 2)), 1, atol=1e-5)
    settings = aug.settings()
    assert settings["pipeline"] == name and settings["mean"] == stats.as_dict()["mean"]


@pytest.mark.parametrize("name", PIPELINES)
def test_mismatched_params_are_refused(name: str, data: tuple) -> None:
    x, y = data
    aug = _augmenter(name, [0.5] * 3, [0.25] * 3)
    xt, yt = aug.prepare(x, y)
    with pytest.raises(ValueError, match="for 36 samples"):
        list(aug.epoch_batches(xt, yt, epoch_params(0, 0, N - 1), BATCH))
    with pytest.raises(ValueError, match="pad=2"):
        list(aug.epoch_batches(xt, yt, epoch_params(0, 0, N, pad=2), BATCH))
