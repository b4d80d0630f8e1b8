"""A user's own dataset from a path: a `.npz` file or a directory of IDX files.

`.npz`: the arrays x_train, y_train, x_test, y_test, and optionally `layout`, a
string naming the axes of x (dlbench.datasets.layouts: "NLC", "NCL", "NCHW", ...),
read with allow_pickle=False: an object array is refused, never unpickled. A
directory: the four MNIST-named IDX files (train-images-idx3-ubyte,
train-labels-idx1-ubyte, t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte), each
plain or gzipped.

Samples are kept channels last: images (N, H, W) or (N, H, W, C) become float32
NHWC, scaled to [0, 1] when stored as uint8; series (N, L, C) and volumes (N, D,
H, W, C) float32 as they are (channels-first ones transposed once); (N, F) float
arrays are feature vectors; (N, T) integer arrays are token ids. Without a
declared layout a 3-d array is a greyscale image. Targets, by what y holds:
integer class ids (N,) (or whole floats), the class count being the largest
label + 1; next-token targets (N, T) integers beside (N, T) token ids, the
vocabulary the largest id + 1; regression targets float (N,) with any fraction,
or float (N, K), kept float32 (N, K). Several named outputs: y_train_<name> and
y_test_<name> for each head instead of y_train, y_test, each read as above (class
ids or float targets), the class count (or K) per head. Every problem is a UserDataError: one line
naming the file and what is expected.
"""

from __future__ import annotations

import math
import re
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from dlbench.datasets import bounded, inputs, layouts
from dlbench.datasets.arrays import Arrays, ArraySplit
from dlbench.datasets.fetch import DatasetError
from dlbench.datasets.idx import IdxFormatError, idx_shape, read_idx
from dlbench.datasets.spec import DatasetSpec

NPZ_KEYS = ("x_train", "y_train", "x_test", "y_test")
OPTIONAL_KEYS = ("layout",)
# A named input's arrays: x_train_<name>, x_test_<name>, layout_<name> (dlbench.datasets.inputs).
NAMED_KEY = re.compile(r"(x_train|x_test|layout)_([a-z][a-z0-9_]{0,31})")
# A named output's targets (several heads, dlbench.heads): y_train_<name>, y_test_<name>.
HEAD_KEY = re.compile(r"(y_train|y_test)_([a-z][a-z0-9_]{0,31})")
# What a dataset's y holds (DatasetSpec.targets): class ids, next-token ids, or
# regression values.
CLASSES, NEXT_TOKEN, VALUES = "classes", "next-token", "values"
HEADS = "heads"  # one y per named output (dlbench.heads.TARGETS)
IDX_FILES = {
    "x_train": "train-images-idx3-ubyte",
    "y_train": "train-labels-idx1-ubyte",
    "x_test": "t10k-images-idx3-ubyte",
    "y_test": "t10k-labels-idx1-ubyte",
}
T = TypeVar("T")
MAX_CLASSES = 100_000  # a label beyond this is a mistake (an id, a pixel), not a class


class UserDataError(DatasetError):
    """A user's dataset that cannot be used as it is; the message is one line."""


def _check(path: Path, what: str, nbytes: int, compressed: int | None = None) -> None:
    try:
        bounded.check_declared(path, what, nbytes, compressed)
    except bounded.DataLimitError as exc:
        raise UserDataError(str(exc)) from None


def _npz_headers(path: Path) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """(shape, dtype) each array of a .npz declares, from its .npy header, after checking
    the size it declares against its member's real size and the limits
    (dlbench.datasets.bounded): nothing is decompressed past a header."""
    out = {}
    try:
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                key = info.filename.removesuffix(".npy")
                with archive.open(info) as member:
                    version = np.lib.format.read_magic(member)
                    if version == (1, 0):
                        shape, fortran, dtype = np.lib.format.read_array_header_1_0(member)
                    elif version == (2, 0):
                        shape, fortran, dtype = np.lib.format.read_array_header_2_0(member)
                    else:
                        raise UserDataError(
                            f"{path}: array {key!r} has .npy format version {version}; save it with numpy.savez"
                        )
                    header_len = member.tell()
                if dtype.hasobject:
                    raise UserDataError(f"{path}: array {key!r} holds Python objects; save numeric arrays")
                nbytes = math.prod(shape) * dtype.itemsize
                if header_len + nbytes != info.file_size:
                    raise UserDataError(
                        f"{path}: array {key!r} declares shape {shape} of {dtype} ({nbytes} bytes) but its member "
                        f"holds {info.file_size - header_len}; the file is damaged"
                    )
                compressed = info.compress_size if info.compress_type != zipfile.ZIP_STORED else None
                _check(path, f"array {key!r} of shape {shape}", nbytes, compressed)
                out[key] = (tuple(shape), dtype)
    except UserDataError:
        raise
    except ValueError as exc:
        raise UserDataError(
            f"{path}: holds an array header that is not plain numbers ({exc}); save numeric arrays"
        ) from None
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise UserDataError(f"{path}: not a readable .npz file ({exc}); write one with numpy.savez") from None
    return out


def input_names(path: Path, keys: list[str]) -> list[str]:
    """The named inputs of a `.npz` (x_train_<name>, x_test_<name>, layout_<name>), [] for
    one input (x_train, x_test, layout); every other key, or a missing one, is refused."""
    named = sorted({m.group(2) for k in keys if (m := NAMED_KEY.fullmatch(k))})
    if named and any(k in keys for k in ("x_train", "x_test", "layout")):
        raise UserDataError(
            f"{path}: holds x_train and x_train_<name> arrays: either one input (x_train, x_test) or named "
            f"inputs (x_train_<name>, x_test_<name> for each; found names {', '.join(named)})"
        )
    heads = output_names(path, keys)
    xs = [f"x_{s}_{n}" for n in named for s in ("train", "test")] if named else ["x_train", "x_test"]
    ys = [f"y_{s}_{n}" for n in heads for s in ("train", "test")] if heads else ["y_train", "y_test"]
    # One input and one output: the four arrays in their usual order (NPZ_KEYS).
    required = list(NPZ_KEYS) if not named and not heads else [*xs, *ys]
    missing = [k for k in required if k not in keys]
    if missing:
        raise UserDataError(
            f"{path}: no array {missing[0]!r}; a dataset .npz holds exactly {', '.join(required)} "
            f"(found: {', '.join(keys) or 'none'})"
        )
    optional = [f"layout_{n}" for n in named] if named else list(OPTIONAL_KEYS)
    extra = [k for k in keys if k not in [*required, *optional]]
    if extra:
        raise UserDataError(
            f"{path}: unexpected array {extra[0]!r}; allowed: {', '.join(NPZ_KEYS + OPTIONAL_KEYS)}, or "
            "x_train_<name>, x_test_<name> and layout_<name> for each of several named inputs, or "
            "y_train_<name>, y_test_<name> for each of several named outputs"
        )
    return named


def output_names(path: Path, keys: list[str]) -> list[str]:
    """The named outputs (heads) of a `.npz` (y_train_<name>, y_test_<name>), in the
    file's order; [] for one y (y_train, y_test). Both forms at once is refused."""
    heads = list(dict.fromkeys(m.group(2) for k in keys if (m := HEAD_KEY.fullmatch(k))))
    if heads and any(k in keys for k in ("y_train", "y_test")):
        raise UserDataError(
            f"{path}: holds y_train and y_train_<name> arrays: either one output (y_train, y_test) or named "
            f"outputs (y_train_<name>, y_test_<name> for each; found names {', '.join(heads)})"
        )
    return heads


def _npz(path: Path) -> dict[str, np.ndarray]:
    _npz_headers(path)  # sizes checked before anything is decompressed
    try:
        with np.load(path, allow_pickle=False) as data:
            keys = list(data.files)
            input_names(path, keys)
            return {k: data[k] for k in keys}
    except UserDataError:
        raise
    except ValueError as exc:  # an object array needs pickle, which is refused
        raise UserDataError(f"{path}: holds an array that is not plain numbers ({exc}); save numeric arrays") from None
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise UserDataError(f"{path}: not a readable .npz file ({exc}); write one with numpy.savez") from None


def _idx(directory: Path, key: str, read: Callable[[Path], T]) -> T:
    """`read` of the IDX file (plain or .gz) that holds `key` in a dataset directory;
    every problem one UserDataError line."""
    name = IDX_FILES[key]
    found = [p for p in (directory / name, directory / f"{name}.gz") if p.is_file()]
    if not found:
        raise UserDataError(
            f"{directory}: no {name} (or {name}.gz); an IDX dataset directory holds {', '.join(IDX_FILES.values())}"
        )
    try:
        return read(found[0])
    except (IdxFormatError, bounded.DataLimitError, OSError) as exc:
        raise UserDataError(str(exc).splitlines()[0]) from None


def _idx_dir(path: Path) -> dict[str, np.ndarray]:
    return {key: _idx(path, key, read_idx) for key in IDX_FILES}


def _refuse_special(path: Path) -> None:
    """A FIFO or a device would block the read forever (or never end): refused first."""
    if path.exists() and not path.is_dir() and not path.is_file():
        raise UserDataError(f"{path}: is a special file (a FIFO or a device); expected a .npz file or a directory")


def _raw(path: Path) -> dict[str, np.ndarray]:
    _refuse_special(path)
    if not path.exists():
        raise UserDataError(f"{path}: does not exist; expected a .npz file or a directory of IDX files")
    if path.is_dir():
        return _idx_dir(path)
    if path.suffix != ".npz":
        raise UserDataError(f"{path}: not a .npz file or a directory of IDX files")
    return _npz(path)


def _layout(
    path: Path, raw_layout: np.ndarray | None, shape: tuple[int, ...], dtype: np.dtype, suffix: str = ""
) -> layouts.Layout:
    if dtype.kind not in "fiub" or len(shape) < 2:
        raise _not_numbers(path, f"train{suffix}", shape, dtype)
    try:
        if raw_layout is not None:
            return layouts.declared(raw_layout, shape, dtype)
        return layouts.infer(shape, dtype)
    except layouts.LayoutError as exc:
        raise UserDataError(f"{path}: x_train{suffix}: {exc}") from None


def _not_numbers(path: Path, split: str, x: np.ndarray | tuple[int, ...], dtype: np.dtype) -> UserDataError:
    shape = x.shape if isinstance(x, np.ndarray) else x
    if len(shape) == 1 and dtype.kind in "fiub":
        # One number per sample (a station id, one reading): the fix is one reshape, say which.
        what = "one token id" if dtype.kind in "iub" else "one feature"
        return UserDataError(
            f"{path}: x_{split} has shape {shape}, one number per sample; samples are rows: save it as "
            f"x_{split}.reshape(-1, 1), shape ({shape[0]}, 1) ({what} per sample)"
        )
    return UserDataError(
        f"{path}: x_{split} is {dtype} of shape {shape}; expected numbers, one sample per row "
        "((N, H, W[, C]) images, (N, L, C) series with layout 'NLC', (N, F) features or (N, T) token ids)"
    )


def _features(path: Path, split: str, x: np.ndarray, layout: layouts.Layout) -> np.ndarray:
    if x.dtype.kind not in "fiub" or x.ndim < 2:
        raise _not_numbers(path, split, x, x.dtype)
    if x.ndim != layout.rank:
        raise UserDataError(f"{path}: x_{split} has shape {x.shape}; layout {layout.name} names {layout.rank} axes")
    if len(x) == 0:
        raise UserDataError(f"{path}: x_{split} is empty")
    if x.dtype.kind == "f":
        bad = int(np.size(x) - np.count_nonzero(np.isfinite(x)))
        if bad:
            raise UserDataError(f"{path}: x_{split} holds {bad} NaN or infinite values; clean them first")
        limit = float(np.finfo(np.float32).max)
        if x.dtype.itemsize > 4 and x.size and float(np.abs(x).max()) > limit:
            # The frameworks train in float32: a larger float64 would become inf in the cast.
            raise UserDataError(
                f"{path}: x_{split} holds values beyond float32's range (|x| up to {float(np.abs(x).max()):.3g}, "
                f"at most {limit:.3g}); scale them first"
            )
    if layout.kind == "tokens":
        if int(x.min()) < 0:
            raise UserDataError(f"{path}: x_{split} holds negative integers; token ids are >= 0")
        return x.astype(np.int64)
    x = layouts.to_channels_last(layout, x)
    if layout.kind == "image" and x.dtype == np.uint8:
        return (x.astype(np.float32) / 255.0).astype(np.float32)
    return x.astype(np.float32)


def _target_kind(y: np.ndarray, x_kind: str) -> str:
    """What y holds, from its shape and dtype (see the module docstring)."""
    if y.dtype.kind == "f" and (y.ndim == 2 or not np.all(np.isfinite(y)) or not np.all(y == np.round(y))):
        return VALUES
    if y.ndim == 2 and x_kind == "tokens" and y.dtype.kind in "iu":
        return NEXT_TOKEN
    return CLASSES


def _labels(path: Path, split: str, y: np.ndarray, n: int, x_kind: str = "image") -> np.ndarray:
    kind = _target_kind(y, x_kind)
    if len(y) != n:
        raise UserDataError(f"{path}: x_{split} has {n} samples but y_{split} has {len(y)} labels")
    if kind == VALUES:
        if y.ndim not in (1, 2):
            raise UserDataError(f"{path}: y_{split} has shape {y.shape}; regression targets are (N,) or (N, K)")
        if not np.all(np.isfinite(y)):
            raise UserDataError(f"{path}: y_{split} holds NaN or infinite values; clean them first")
        return (y[:, None] if y.ndim == 1 else y).astype(np.float32)
    if y.ndim != 1 and kind != NEXT_TOKEN:
        raise UserDataError(
            f"{path}: y_{split} has shape {y.shape}; expected one class id per sample, (N,), float regression "
            "targets (N, K), or next-token ids (N, T) beside (N, T) token ids"
        )
    if y.dtype.kind not in "iub" and y.dtype.kind != "f":
        raise UserDataError(f"{path}: y_{split} is {y.dtype}; class ids are integers 0..classes-1")
    if len(y) and y.min() < 0:
        raise UserDataError(f"{path}: y_{split} holds negative labels (min {int(y.min())}); class ids are 0..classes-1")
    if len(y) and y.max() >= MAX_CLASSES:
        raise UserDataError(f"{path}: y_{split} holds label {int(y.max())}; at most {MAX_CLASSES} classes")
    return y.astype(np.int64)


def _classes(path: Path, y_train: np.ndarray, y_test: np.ndarray, xs: tuple[np.ndarray, ...] = ()) -> int:
    """Classes (class ids), the vocabulary (next-token: ids in x count too) or K (values)."""
    if y_train.dtype == np.float32:
        if y_train.shape[1] != y_test.shape[1]:
            raise UserDataError(
                f"{path}: y_train has {y_train.shape[1]} targets per sample, y_test {y_test.shape[1]}; "
                "both splits need the same"
            )
        return int(y_train.shape[1])
    if y_test.dtype == np.float32:
        raise UserDataError(f"{path}: y_train holds class ids, y_test regression values; both splits need the same")
    classes = int(max([y_train.max(), y_test.max(), *(int(x.max()) for x in xs if x.size)])) + 1
    if classes < 2:
        raise UserDataError(f"{path}: every label is 0; a classifier needs at least 2 classes")
    return classes


def _head_targets(path: Path, key: str, y: np.ndarray, n: int, x_key: str) -> np.ndarray:
    """One head's targets of one split: int64 class ids (N,), or float32 (N, K) values."""
    if y.dtype.kind not in "fiub" or y.ndim not in (1, 2) or (y.ndim == 2 and y.dtype.kind != "f"):
        raise UserDataError(
            f"{path}: {key} is {y.dtype} of shape {y.shape}; an output's targets are integer class ids (N,) "
            "or float regression targets (N,) or (N, K)"
        )
    if len(y) != n:
        raise UserDataError(f"{path}: {x_key} has {n} samples but {key} has {len(y)}; give one target per sample")
    if y.dtype.kind == "f":
        if not np.all(np.isfinite(y)):
            raise UserDataError(f"{path}: {key} holds NaN or infinite values; clean them first")
        if y.ndim == 2 or not np.all(y == np.round(y)):
            return (y[:, None] if y.ndim == 1 else y).astype(np.float32)
    if len(y) and y.min() < 0:
        raise UserDataError(f"{path}: {key} holds negative labels (min {int(y.min())}); class ids are 0..classes-1")
    if len(y) and y.max() >= MAX_CLASSES:
        raise UserDataError(f"{path}: {key} holds label {int(y.max())}; at most {MAX_CLASSES} classes")
    return y.astype(np.int64)


def _heads(
    path: Path, get: Callable[[str], np.ndarray], heads: list[str], n_train: int, n_test: int
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], dict[str, int]]:
    """(y_train, y_test, classes) of several named outputs: head -> targets, and head ->
    its classes (class ids) or K (float values)."""
    x = "x_train", "x_test"
    y_train, y_test, classes = {}, {}, {}
    for head in heads:
        train = _head_targets(path, f"y_train_{head}", get(f"y_train_{head}"), n_train, x[0])
        test = _head_targets(path, f"y_test_{head}", get(f"y_test_{head}"), n_test, x[1])
        if train.dtype != test.dtype or (train.dtype == np.float32 and train.shape[1] != test.shape[1]):

            def said(a: np.ndarray) -> str:
                return f"{a.shape[1]} float values per sample" if a.dtype == np.float32 else "class ids"

            raise UserDataError(
                f"{path}: y_train_{head} holds {said(train)}, y_test_{head} {said(test)}; both splits of an "
                "output need the same"
            )
        if train.dtype == np.float32:
            classes[head] = int(train.shape[1])
        else:
            classes[head] = int(max(train.max(initial=0), test.max(initial=0))) + 1
            if classes[head] < 2:
                raise UserDataError(f"{path}: every label of y_train_{head} is 0; a classifier needs 2 classes or more")
        y_train[head], y_test[head] = train, test
    return y_train, y_test, classes


def head_targets(y: Any) -> tuple[tuple[str, str], ...]:
    """(head, what its y holds) of several named outputs' targets ((): one output)."""
    if not inputs.is_named(y):
        return ()
    return tuple((head, VALUES if a.dtype == np.float32 else CLASSES) for head, a in y.items())


def _split_inputs(path: Path, raw: dict[str, np.ndarray], names: list[str]) -> tuple[Any, Any, str]:
    """(x_train, x_test, the input kind) of one input or of named ones, channels last."""
    xs: dict[str, dict[str, np.ndarray]] = {"train": {}, "test": {}}
    kind = ""
    for name in names or [""]:
        suffix = f"_{name}" if name else ""
        array = raw[f"x_train{suffix}"]
        layout = _layout(path, raw.get(f"layout{suffix}"), array.shape, array.dtype, suffix)
        kind = layout.kind
        for split in ("train", "test"):
            xs[split][name] = _features(path, f"{split}{suffix}", raw[f"x_{split}{suffix}"], layout)
        x_train, x_test = xs["train"][name], xs["test"][name]
        if x_train.shape[1:] != x_test.shape[1:] or x_train.dtype != x_test.dtype:
            raise UserDataError(
                f"{path}: train samples{suffix and ' of ' + name} are {x_train.shape[1:]} {x_train.dtype}, test "
                f"samples {x_test.shape[1:]} {x_test.dtype}; both splits need the same sample shape and kind"
            )
    if not names:
        return xs["train"][""], xs["test"][""], kind
    for split in ("train", "test"):
        counts = {name: len(a) for name, a in xs[split].items()}
        if len(set(counts.values())) != 1:
            raise UserDataError(f"{path}: the named inputs of x_{split} hold different numbers of samples: {counts}")
    return xs["train"], xs["test"], "named"


def load(path: str | Path) -> Arrays:
    """The dataset at `path`, checked, as Arrays (named after the file or directory)."""
    path = Path(path)
    raw = _raw(path)
    names = input_names(path, list(raw)) if path.is_file() else []
    x_train, x_test, kind = _split_inputs(path, raw, names)
    heads = output_names(path, list(raw)) if path.is_file() else []
    if heads:
        ys = _heads(path, raw.__getitem__, heads, inputs.rows(x_train), inputs.rows(x_test))
        return Arrays(path.stem, ArraySplit(x_train, ys[0]), ArraySplit(x_test, ys[1]), ys[2])
    y_train = _labels(path, "train", raw["y_train"], inputs.rows(x_train), kind)
    y_test = _labels(path, "test", raw["y_test"], inputs.rows(x_test), kind)
    tokens = (x_train, x_test) if y_train.ndim == 2 and y_train.dtype == np.int64 else ()
    classes = _classes(path, y_train, y_test, tokens)
    for split, x, y in (("train", x_train, y_train), ("test", x_test, y_test)):
        if y.ndim == 2 and y.dtype == np.int64 and y.shape != x.shape:
            raise UserDataError(
                f"{path}: y_{split} {y.shape} must hold one next token per position of x_{split} {x.shape}"
            )
    name = path.stem if path.is_file() else path.name
    try:
        return Arrays(name, ArraySplit(x_train, y_train), ArraySplit(x_test, y_test), classes)
    except ValueError as exc:
        raise UserDataError(f"{path}: {exc}") from None


def reading(path: str | Path) -> str:
    """How the dataset's x is read, in one line (each input's layout, declared or inferred)."""
    path = Path(path)
    declared = _declared(path)
    names = input_names(path, list(declared)) if path.is_file() else []
    said = []
    for name in names or [""]:
        suffix = f"_{name}" if name else ""
        shape, dtype = declared[f"x_train{suffix}"]
        raw_layout = _label_array(path, f"layout{suffix}") if f"layout{suffix}" in declared else None
        layout = _layout(path, raw_layout, shape, dtype, suffix)
        said.append(f"x{suffix} {shape} {dtype}, " + layouts.describe(layout, shape, inferred=raw_layout is None))
    for head in output_names(path, list(declared)) if path.is_file() else []:
        shape, dtype = declared[f"y_train_{head}"]
        values = dtype.kind == "f" and (len(shape) == 2 or not _whole(_label_array(path, f"y_train_{head}")))
        k = shape[1] if len(shape) == 2 else 1
        what = f"{k} regression target{'s' if k > 1 else ''} per sample" if values else "class ids"
        said.append(f"output {head}: y_train_{head} {shape} {dtype}, {what}")
    return f"{path}: " + "; ".join(said)


def _whole(y: np.ndarray) -> bool:
    return bool(np.all(np.isfinite(y)) and np.all(y == np.round(y)))


# Up to this many declared bytes `plan` loads the whole dataset and checks every value
# (a NaN is refused before any worker starts); above it, the headers and the labels only,
# and the worker checks the values, so that planning stays a matter of seconds.
PLAN_FULL_CHECK_BYTES = 256 * 2**20


def _declared(path: Path) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """(shape, dtype) of each array, from headers only (sizes checked against the file)."""
    _refuse_special(path)
    if not path.exists():
        raise UserDataError(f"{path}: does not exist; expected a .npz file or a directory of IDX files")
    if path.is_dir():
        return {key: _idx(path, key, idx_shape) for key in IDX_FILES}
    if path.suffix != ".npz":
        raise UserDataError(f"{path}: not a .npz file or a directory of IDX files")
    headers = _npz_headers(path)
    input_names(path, list(headers))
    return headers


def _sample_shape(
    path: Path, split: str, shape: tuple[int, ...], dtype: np.dtype, layout: layouts.Layout
) -> tuple[int, ...]:
    """The sample shape `_features` makes of an array of this shape, from its header."""
    if dtype.kind not in "fiub" or len(shape) < 2:
        raise _not_numbers(path, split, shape, dtype)
    if len(shape) != layout.rank:
        raise UserDataError(f"{path}: x_{split} has shape {shape}; layout {layout.name} names {layout.rank} axes")
    if shape[0] == 0:
        raise UserDataError(f"{path}: x_{split} is empty")
    return layouts.sample_shape(layout, shape)


def describe(path: str | Path) -> tuple[Any, Any, str]:
    """(sample shape, classes, what y holds) of the dataset at `path`: every value checked
    where the dataset is small (PLAN_FULL_CHECK_BYTES), else its headers and its labels.
    The sample shape is name -> shape for named inputs; the classes head -> classes or K
    for several named outputs (what y holds: "heads")."""
    path = Path(path)
    declared = _declared(path)
    for key, (shape, dtype) in declared.items():
        _check(path, f"array {key} of shape {shape}", math.prod(shape) * dtype.itemsize)
    if sum(math.prod(shape) * dtype.itemsize for shape, dtype in declared.values()) <= PLAN_FULL_CHECK_BYTES:
        arrays = load(path)
        return arrays.input_shape, arrays.num_classes, _held(arrays.train.y)
    heads = output_names(path, list(declared)) if path.is_file() else []
    names = input_names(path, list(declared)) if path.is_file() else []
    shapes: dict[str, tuple[int, ...]] = {}
    kind, rows = "", {}
    for name in names or [""]:
        suffix = f"_{name}" if name else ""
        raw_layout = _label_array(path, f"layout{suffix}") if f"layout{suffix}" in declared else None
        layout = _layout(path, raw_layout, *declared[f"x_train{suffix}"], suffix)
        kind = layout.kind
        train = _sample_shape(path, f"train{suffix}", *declared[f"x_train{suffix}"], layout)
        test = _sample_shape(path, f"test{suffix}", *declared[f"x_test{suffix}"], layout)
        if train != test:
            raise UserDataError(
                f"{path}: train samples{suffix and ' of ' + name} are {train}, test samples {test}; both splits need "
                "the same sample shape and kind"
            )
        shapes[name] = train
        rows[name] = (declared[f"x_train{suffix}"][0][0], declared[f"x_test{suffix}"][0][0])
    if len(set(rows.values())) != 1:
        raise UserDataError(f"{path}: the named inputs hold different numbers of samples: {rows}")
    n_train, n_test = next(iter(rows.values()))
    shape_said = shapes if names else shapes[""]
    if heads:
        _, _, classes = _heads(path, lambda key: _label_array(path, key), heads, n_train, n_test)
        return shape_said, classes, HEADS
    labels = {key: _label_array(path, key) for key in ("y_train", "y_test")}
    y_train = _labels(path, "train", labels["y_train"], n_train, "named" if names else kind)
    y_test = _labels(path, "test", labels["y_test"], n_test, "named" if names else kind)
    tokens = tuple(_label_array(path, k) for k in ("x_train", "x_test")) if _held(y_train) == NEXT_TOKEN else ()
    return (shapes if names else shapes[""]), _classes(path, y_train, y_test, tokens), _held(y_train)


def _held(y: Any) -> str:
    if inputs.is_named(y):
        return HEADS
    if y.dtype == np.float32:
        return VALUES
    return NEXT_TOKEN if y.ndim == 2 else CLASSES


def _label_array(path: Path, key: str) -> np.ndarray:
    """One label array alone (the headers were checked)."""
    if path.is_dir():
        return _idx(path, key, read_idx)
    try:
        with np.load(path, allow_pickle=False) as data:
            return np.asarray(data[key])
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise UserDataError(f"{path}: not a readable .npz file ({exc}); write one with numpy.savez") from None


def dataset(path: Path) -> DatasetSpec:
    """A DatasetSpec for the user's file: checked now, so that planning fails early."""
    shape, classes, targets = describe(path)
    heads: tuple[tuple[str, str], ...] = ()
    if targets == HEADS:
        heads = _declared_heads(path)
    return DatasetSpec(
        name=path.stem if path.is_file() else path.name,
        description=f"your data: {path}",
        shape=lambda _s: (shape, classes),
        load=lambda data_dir, _s, _seed: load(path),
        origin=str(path),
        targets=targets,
        head_targets=heads,
        reading=reading(path),
    )


def _declared_heads(path: Path) -> tuple[tuple[str, str], ...]:
    """(head, what its y_train holds) of a file of several named outputs."""
    declared = _declared(path)
    out = []
    for head in output_names(path, list(declared)):
        shape, dtype = declared[f"y_train_{head}"]
        values = dtype.kind == "f" and (len(shape) == 2 or not _whole(_label_array(path, f"y_train_{head}")))
        out.append((head, VALUES if values else CLASSES))
    return tuple(out)
