"""The host-side part every pipeline shares: per-epoch random draws and normalization stats.

Drawing the augmentation parameters once per epoch with numpy, instead of with
each framework's own RNG, is what makes the pipelines comparable: the same
``(seed, epoch)`` gives the same permutation, crop offsets and flips everywhere,
so a difference in results or speed is a difference in how the work is done,
never in which work. The draws cost a few milliseconds for 50,000 images.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class EpochParams:
    """One epoch's random draws, indexed by *position in the epoch*.

    The k-th sample of the epoch is ``x[perm[k]]``; it is cropped at rows
    ``dy[k] .. dy[k] + H`` and columns ``dx[k] .. dx[k] + W`` of the image padded
    by ``pad`` on each side, then mirrored left-right when ``flip[k]``.
    """

    seed: int
    epoch: int
    pad: int
    perm: np.ndarray  # (N,) int64, a permutation of 0..N-1
    dy: np.ndarray  # (N,) int64 in [0, 2 * pad]
    dx: np.ndarray  # (N,) int64 in [0, 2 * pad]
    flip: np.ndarray  # (N,) bool

    def __len__(self) -> int:
        return int(self.perm.shape[0])

    def steps(self, batch_size: int) -> int:
        """Full batches in the epoch (the partial last batch is dropped)."""
        if batch_size <= 0:
            raise ValueError(f"batch_size must be positive, got {batch_size}")
        return len(self) // batch_size


def epoch_params(seed: int, epoch: int, n: int, pad: int = 4) -> EpochParams:
    """The draws for epoch ``epoch`` of a run seeded with ``seed`` over ``n`` samples.

    ``default_rng([seed, epoch])`` gives every epoch an independent stream that
    can be recreated without replaying earlier epochs. Draw order (part of the
    contract, do not change): permutation, dy, dx, flip.
    """
    if n < 0 or pad < 0:
        raise ValueError(f"need n >= 0 and pad >= 0, got n={n}, pad={pad}")
    rng = np.random.default_rng([seed, epoch])
    perm = rng.permutation(n).astype(np.int64)
    dy = rng.integers(0, 2 * pad + 1, size=n, dtype=np.int64)
    dx = rng.integers(0, 2 * pad + 1, size=n, dtype=np.int64)
    flip = rng.random(n) < 0.5
    return EpochParams(seed, epoch, pad, perm, dy, dx, flip)


@dataclass(frozen=True)
class ChannelStats:
    """Per-channel mean and standard deviation of a training split (float32, shape (C,))."""

    mean: np.ndarray
    std: np.ndarray

    def as_dict(self) -> dict[str, list[float]]:
        """For the manifest: the statistics actually used, as plain floats."""
        return {"mean": [float(v) for v in self.mean], "std": [float(v) for v in self.std]}


def channel_stats(x: np.ndarray, chunk: int = 4096) -> ChannelStats:
    """Mean and population std (ddof=0) per channel of NHWC images ``x``.

    Accumulated in float64 over chunks, so that 50,000 float32 images neither
    lose precision nor need a float64 copy of the whole set.
    """
    if x.ndim != 4:
        raise ValueError(f"images must be NHWC (4-d), got shape {x.shape}")
    channels = x.shape[-1]
    total = np.zeros(channels)
    squares = np.zeros(channels)
    for start in range(0, x.shape[0], chunk):
        part = x[start : start + chunk].reshape(-1, channels).astype(np.float64)
        total += part.sum(axis=0)
        squares += np.square(part).sum(axis=0)
    count = x.shape[0] * x.shape[1] * x.shape[2]
    if count == 0:
        raise ValueError("cannot compute statistics of an empty split")
    mean = total / count
    var = np.maximum(squares / count - mean * mean, 0.0)
    std = np.sqrt(var)
    if np.any(std == 0):
        raise ValueError(f"a channel is constant (std {std.tolist()}): cannot normalize by it")
    return ChannelStats(mean.astype(np.float32), std.astype(np.float32))


def check_stats(mean: np.ndarray | list[float], std: np.ndarray | list[float]) -> tuple[np.ndarray, np.ndarray]:
    """``mean`` and ``std`` as float32 vectors of one length, std positive (for Augmenters)."""
    m = np.asarray(mean, dtype=np.float32).reshape(-1)
    s = np.asarray(std, dtype=np.float32).reshape(-1)
    if m.shape != s.shape:
        raise ValueError(f"mean has {m.size} channels, std {s.size}")
    if np.any(s <= 0):
        raise ValueError(f"std must be positive, got {s.tolist()}")
    return m, s


def describe(pipeline: str, mean: np.ndarray, std: np.ndarray, pad: int, **extra: object) -> dict[str, object]:
    """The manifest entry every Augmenter's ``settings()`` returns (plus its own facts)."""
    return {
        "pipeline": pipeline,
        "augmentation": f"random crop with {pad}-pixel zero padding (before normalization), horizontal flip p=0.5",
        "normalization": "(x - mean) / std per channel",
        "mean": [float(v) for v in mean],
        "std": [float(v) for v in std],
        "pad": pad,
        "random_draws": "numpy default_rng([seed, epoch]) on the host: permutation, dy, dx, flip",
        "partial_batch": "dropped",
        **extra,
    }


def check_params(params: EpochParams, n: int, pad: int) -> None:
    """Refuse draws made for another dataset size or padding (a silent mismatch would crop wrong)."""
    if len(params) != n:
        raise ValueError(f"epoch parameters are for {len(params)} samples, the data has {n}")
    if params.pad != pad:
        raise ValueError(f"epoch parameters were drawn for pad={params.pad}, the Augmenter pads {pad}")
