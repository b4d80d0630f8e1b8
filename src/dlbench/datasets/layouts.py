"""What each axis of a user's sample array means: its layout, declared or inferred.

A layout names the axes of the stored array, N first: "NF" feature vectors, "NT"
token ids, "NLC"/"NCL" series (L steps of C channels), "NHW"/"NHWC"/"NCHW" images,
"NDHWC"/"NCDHW" volumes. dlbench keeps every sample channels last, (L, C), (H, W, C)
or (D, H, W, C), and hands each framework its own layout (torch channels-first,
Keras and Flax channels-last). A `.npz` declares its layout with a string array
`layout` (`numpy.savez(path, ..., layout="NCL")`); without one it is inferred from
the array's rank and dtype, and the inference is said (`inferred`), because a
(N, L, C) series and a (N, H, W) greyscale image look alike.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Layout:
    name: str
    kind: str  # the input kind a model declares for it
    # Axis order that makes the stored array channels last (None: already so).
    to_channels_last: tuple[int, ...] | None = None
    # Append a channel axis of 1 (a greyscale image stored (N, H, W)).
    add_channel: bool = False

    @property
    def rank(self) -> int:
        return len(self.name)


LAYOUTS = {
    layout.name: layout
    for layout in (
        Layout("NF", "features"),
        Layout("NT", "tokens"),
        Layout("NLC", "series"),
        Layout("NCL", "series", (0, 2, 1)),
        Layout("NHW", "image", add_channel=True),
        Layout("NHWC", "image"),
        Layout("NCHW", "image", (0, 2, 3, 1)),
        Layout("NDHWC", "volume"),
        Layout("NCDHW", "volume", (0, 2, 3, 4, 1)),
    )
}
# Rank -> the layout assumed when none is declared (rank 2 by dtype: see infer).
INFERRED = {3: "NHW", 4: "NHWC", 5: "NDHWC"}


class LayoutError(ValueError):
    """A declared layout that is unknown or does not fit the array (one line)."""


def allowed() -> str:
    return ", ".join(LAYOUTS)


def infer(shape: tuple[int, ...], dtype: np.dtype) -> Layout:
    """The layout assumed for an array with no declared layout."""
    if len(shape) == 2:
        return LAYOUTS["NT" if dtype.kind in "iu" else "NF"]
    if len(shape) in INFERRED:
        return LAYOUTS[INFERRED[len(shape)]]
    raise LayoutError(f"{len(shape)} dimensions: a sample array has 2 to 5, N first (layouts: {allowed()})")


def declared(value: np.ndarray, shape: tuple[int, ...], dtype: np.dtype) -> Layout:
    """The layout a `.npz` names in its `layout` array, checked against the array."""
    text = str(value.item()) if value.ndim == 0 and value.dtype.kind in "US" else None
    if text is None:
        raise LayoutError(f"layout must be one string such as 'NLC' (allowed: {allowed()}); got a {value.dtype} array")
    if text not in LAYOUTS:
        raise LayoutError(f"layout {text!r} is not one of {allowed()}")
    layout = LAYOUTS[text]
    if layout.rank != len(shape):
        raise LayoutError(f"layout {text!r} names {layout.rank} axes; the array has {len(shape)}, shape {shape}")
    if layout.kind == "tokens" and dtype.kind not in "iu":
        raise LayoutError(f"layout 'NT' is token ids (integers); the array is {dtype}")
    return layout


def sample_shape(layout: Layout, shape: tuple[int, ...]) -> tuple[int, ...]:
    """One sample's shape, channels last, as dlbench keeps it."""
    if layout.add_channel:
        return (*shape[1:], 1)
    if layout.to_channels_last is not None:
        return tuple(shape[i] for i in layout.to_channels_last[1:])
    return tuple(shape[1:])


def to_channels_last(layout: Layout, x: np.ndarray) -> np.ndarray:
    """The array with its samples channels last (one copy where the axes move)."""
    if layout.add_channel:
        return x[..., None]
    if layout.to_channels_last is not None:
        return np.ascontiguousarray(x.transpose(layout.to_channels_last))
    return x


def describe(layout: Layout, shape: tuple[int, ...], inferred: bool) -> str:
    """One line: how the array is read, e.g. "x (N, 3, 128) read as layout NCL: series
    of 128 steps x 3 channels"."""
    sample = sample_shape(layout, shape)
    size, channels = "x".join(map(str, sample[:-1] or sample)), sample[-1]
    what = {
        "features": f"feature vectors of {sample[0]}",
        "tokens": f"token sequences of {sample[0]}",
        "series": f"series of {size} steps x {channels} channels",
        "image": f"images of {size} x {channels} channels",
        "volume": f"volumes of {size} x {channels} channels",
    }[layout.kind]
    how = "inferred from its rank (declare layout in the .npz to change it)" if inferred else "declared"
    return f"layout {layout.name}, {how}: {what}"
