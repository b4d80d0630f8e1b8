"""The in-memory form in which every dataset reaches a framework.

Three input kinds share one container:

- images: float32 NHWC in [0, 1] (channels last, the layout every loader
  produces); each framework converts once, before any timing, to its
  preferred layout;
- volumes: (N, D, H, W, C) float32, channels last as well;
- token ids: (N, T) int32 or int64, non-negative;
- frames: (N, T, F) float32, T frames of F features: a spectrogram, or a series
  of L steps of C channels (which the model's input kind says: torch's adapter
  hands a series model (N, C, L));
- feature vectors: (N, F) float32 (a user's tabular data);
- named inputs: a dict name -> one of the above, every one with N samples (a user's
  model of several inputs; dlbench.datasets.inputs).

Labels are int64: (N,) class ids; (N, T) next-token targets (one per input
position, non-negative); or (N, L) CTC label sequences padded at the end with
-1 (label ids 1..alphabet-1; 0 is the CTC blank and never a label). Regression
targets are float32 (N, K), finite. Several named outputs: a dict head -> (N,)
int64 class ids or (N, K) float32 targets (dlbench.heads).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dlbench.datasets import inputs

# ndim of x -> the input kind it holds.
INPUT_NDIM = {5: "volume", 4: "image", 2: "tokens", 3: "spectrogram"}


def _check_x(x: np.ndarray) -> None:
    if x.ndim in (4, 5):
        if x.dtype != np.float32:
            raise ValueError(f"{INPUT_NDIM[x.ndim]}s must be float32, got {x.dtype}")
    elif x.ndim == 2:
        if x.dtype == np.float32:
            return  # feature vectors
        if x.dtype not in (np.int32, np.int64):
            raise ValueError(f"token ids (N, T) must be int32 or int64 (feature vectors float32), got {x.dtype}")
        if x.size and int(x.min()) < 0:
            raise ValueError("token ids must be non-negative")
    elif x.ndim == 3:
        if x.dtype != np.float32:
            raise ValueError(f"spectrogram features (N, T, F) must be float32, got {x.dtype}")
    else:
        raise ValueError(
            f"images must be NHWC (4-d), volumes NDHWC (5-d), token ids (N, T) or frames (N, T, F); got shape {x.shape}"
        )


def _check_named(x: dict[str, np.ndarray]) -> None:
    if not x:
        raise ValueError("named inputs: at least one")
    counts = {name: int(a.shape[0]) if a.ndim else 0 for name, a in x.items()}
    if len(set(counts.values())) != 1:
        raise ValueError(f"named inputs hold different numbers of samples: {counts}")
    for name, a in x.items():
        if not inputs.NAME.fullmatch(name):
            raise ValueError(f"input name {name!r}: a lowercase letter, then lowercase letters, digits or _")
        try:
            _check_x(a)
        except ValueError as exc:
            raise ValueError(f"input {name}: {exc}") from None


def _check_heads(n: int, y: dict[str, np.ndarray]) -> None:
    """Targets of several named outputs: per head int64 class ids (N,) or float32 (N, K)."""
    if not y:
        raise ValueError("named outputs: at least one")
    for name, a in y.items():
        if not inputs.NAME.fullmatch(name):
            raise ValueError(f"output name {name!r}: a lowercase letter, then lowercase letters, digits or _")
        if a.shape[:1] != (n,):
            raise ValueError(f"output {name}: targets {a.shape} for {n} samples")
        if a.dtype == np.float32:
            if a.ndim != 2 or not np.all(np.isfinite(a)):
                raise ValueError(f"output {name}: regression targets are finite float32 (N, K), got {a.shape}")
        elif a.dtype != np.int64 or a.ndim != 1:
            raise ValueError(f"output {name}: class ids are int64 (N,), got {a.shape} {a.dtype}")


def _check_y(x: np.ndarray | dict[str, np.ndarray], y: Any) -> None:
    n = inputs.rows(x)
    if inputs.is_named(y):
        _check_heads(n, y)
        return
    if isinstance(x, dict):  # several inputs: one class id per sample, or regression targets
        if y.dtype == np.float32:
            x = np.zeros((n, 1), np.float32)  # the checks below, as for feature vectors
        elif y.ndim != 1 or y.shape[0] != n or y.dtype != np.int64:
            raise ValueError(f"labels {y.shape} {y.dtype}: named inputs take one int64 class id per sample ({n})")
        else:
            return
    if y.dtype == np.float32:  # regression targets, whatever the input
        if y.ndim != 2 or y.shape[0] != n:
            raise ValueError(f"regression targets {y.shape} must be (N, K) for {n} samples")
        if not np.all(np.isfinite(y)):
            raise ValueError("regression targets hold NaN or infinite values")
        return
    if y.ndim not in (1, 2) or y.shape[0] != n or (y.ndim == 2 and x.ndim >= 4):
        raise ValueError(f"labels shape {y.shape} does not match {n} {'images' if x.ndim >= 4 else 'sequences'}")
    if y.dtype != np.int64:
        raise ValueError(f"labels must be int64, got {y.dtype}")
    if y.ndim == 2 and x.ndim == 2 and x.dtype == np.float32:
        raise ValueError(f"labels shape {y.shape}: feature vectors take one class id per sample")
    if y.ndim == 2 and x.ndim == 2 and y.shape[1] != x.shape[1]:
        raise ValueError(f"next-token targets {y.shape} must have one label per input position {x.shape}")
    if y.ndim == 2 and x.ndim == 3 and y.size:
        # CTC targets: ids >= 1, -1 only as trailing padding.
        if int(y.min()) < -1 or np.any(y == 0):
            raise ValueError("CTC label sequences hold ids >= 1 (0 is the blank) padded with -1")
        pad = y < 0
        if np.any(pad[:, :-1] & ~pad[:, 1:]):
            raise ValueError("CTC label padding (-1) must come after every label of its sequence")


@dataclass(frozen=True)
class ArraySplit:
    # (N, H, W, C) | (N, D, H, W, C) float32 | (N, T) int | (N, T, F) | (N, F) float32, or
    # a dict name -> one of them (named inputs)
    x: Any
    # (N,) | (N, T) | (N, L) int64, or (N, K) float32 targets; or a dict head -> (N,)
    # int64 class ids or (N, K) float32 targets (several named outputs, dlbench.heads)
    y: Any

    def __post_init__(self) -> None:
        if inputs.is_named(self.x):
            _check_named(self.x)
        else:
            _check_x(self.x)
        _check_y(self.x, self.y)

    def __len__(self) -> int:
        return inputs.rows(self.x)

    @property
    def input_kind(self) -> str:
        if inputs.is_named(self.x):
            return "named"
        if self.x.ndim == 2 and self.x.dtype == np.float32:
            return "features"
        return INPUT_NDIM[self.x.ndim]

    def head(self, n: int) -> ArraySplit:
        """The first n samples (all when n <= 0 or n >= len)."""
        if n <= 0 or n >= len(self):
            return self
        return ArraySplit(inputs.take(self.x, slice(None, n)), inputs.take(self.y, slice(None, n)))


@dataclass(frozen=True)
class Arrays:
    name: str
    train: ArraySplit
    test: ArraySplit
    # Classes (classify), vocabulary (next-token), alphabet size incl. blank (ctc)
    # or the number of regression targets K (regress); head -> one of these for several
    # named outputs (dlbench.heads).
    num_classes: Any

    @property
    def input_shape(self) -> Any:
        """One sample's shape: (H, W, C), (T,), (T, F), ...; name -> shape for named inputs."""
        return inputs.sample_shape(self.train.x)

    @property
    def input_kind(self) -> str:
        return self.train.input_kind
