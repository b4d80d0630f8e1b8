"""What a framework adapter derives once per prepared dataset for an augmentation pipeline.

The normalization statistics need a host (numpy NHWC) copy of the whole training
split and a pass over it, and the normalized test split is another pass; every
cell trained on the same prepared data would redo both. So each adapter keeps the
result and reuses it while the same data object comes back. The key is the
object's identity, not its contents: comparing the tensors would cost about as
much as recomputing, and a different object (another dataset, or a channels-last
copy) simply derives anew.

Only the framework-neutral part lives here; the adapter supplies its own host
conversion and its own Augmenter and test-set normalization.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dlbench.pipelines.params import ChannelStats, channel_stats


@dataclass(frozen=True)
class Prepared:
    """The pipeline state derived from one data object."""

    native: Any  # the data object it was derived from (compared by identity)
    host: np.ndarray  # its training images, numpy NHWC
    stats: ChannelStats  # their per-channel mean and std
    augmenter: Any  # the framework's own Augmenter, built from `stats`
    normalized: Any  # `native` with its test images normalized


def prepared(
    cached: Prepared | None,
    native: Any,
    to_host: Callable[[], np.ndarray],
    build: Callable[[ChannelStats], tuple[Any, Any]],
) -> Prepared:
    """``cached`` if it was derived from this very ``native`` object, else a new one:
    ``to_host()`` gives the training images as numpy NHWC, ``build(stats)`` the
    framework's Augmenter and ``native`` with normalized test images. Both are
    called only on a miss, as they are the work the cache saves."""
    if cached is not None and cached.native is native:
        return cached
    host = to_host()
    stats = channel_stats(host)
    augmenter, normalized = build(stats)
    return Prepared(native, host, stats, augmenter, normalized)
