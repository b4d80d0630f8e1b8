"""A user's own dataset by path (datasets/files.py): what is read, how it is converted,
and the one-line error for each way a file can be wrong."""

from __future__ import annotations

import gzip
import re
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dlbench.datasets import files
from dlbench.datasets.files import IDX_FILES, UserDataError


def _idx_bytes(array: np.ndarray) -> bytes:
    code = {np.dtype(np.uint8): 0x08, np.dtype(np.float32): 0x0D}[array.dtype]
    header = struct.pack(">BBBB", 0, 0, code, array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    return header + array.astype(array.dtype.newbyteorder(">")).tobytes()


def _idx_dir(root: Path, arrays: dict[str, np.ndarray], gzipped: bool = False) -> Path:
    root.mkdir()
    for key, name in IDX_FILES.items():
        data = _idx_bytes(arrays[key])
        if gzipped:
            (root / f"{name}.gz").write_bytes(gzip.compress(data))
        else:
            (root / name).write_bytes(data)
    return root


def _images(n: int, rng: np.random.Generator) -> np.ndarray:
    return rng.integers(0, 256, size=(n, 6, 5), dtype=np.uint8)


def _valid(rng: np.random.Generator) -> dict[str, np.ndarray]:
    return {
        "x_train": _images(12, rng),
        "y_train": np.arange(12, dtype=np.uint8) % 3,
        "x_test": _images(4, rng),
        "y_test": np.array([0, 1, 2, 1], dtype=np.uint8),
    }


@pytest.mark.parametrize("gzipped", [False, True])
def test_idx_directory_loads_scaled_nhwc_with_classes_from_labels(tmp_path: Path, gzipped: bool):
    raw = _valid(np.random.default_rng(0))
    arrays = files.load(_idx_dir(tmp_path / "mine", raw, gzipped))
    assert arrays.name == "mine"
    assert arrays.train.x.shape == (12, 6, 5, 1) and arrays.train.x.dtype == np.float32
    # uint8 pixels become [0, 1]: value v is v / 255 exactly as float32 computes it
    np.testing.assert_array_equal(arrays.train.x[..., 0], (raw["x_train"].astype(np.float32) / 255.0))
    np.testing.assert_array_equal(arrays.test.y, [0, 1, 2, 1])
    assert arrays.train.y.dtype == np.int64 and arrays.num_classes == 3
    assert tuple(arrays.input_shape) == (6, 5, 1)


def test_npz_kinds_images_features_and_tokens(tmp_path: Path):
    rng = np.random.default_rng(1)
    labels = {"y_train": np.array([0, 1, 1, 0]), "y_test": np.array([1, 0])}
    float_images = rng.normal(size=(4, 3, 3, 2)).astype(np.float64)
    np.savez(tmp_path / "img.npz", x_train=float_images, x_test=float_images[:2], **labels)
    img = files.load(tmp_path / "img.npz")
    # float images are kept as they are (no scaling), only cast to float32
    np.testing.assert_array_equal(img.train.x, float_images.astype(np.float32))
    assert img.name == "img" and img.num_classes == 2

    features = rng.normal(size=(4, 7)).astype(np.float32)
    np.savez(tmp_path / "feat.npz", x_train=features, x_test=features[:2], **labels)
    feat = files.load(tmp_path / "feat.npz")
    assert feat.train.x.shape == (4, 7) and feat.train.x.dtype == np.float32

    tokens = rng.integers(0, 50, size=(4, 9)).astype(np.int32)
    np.savez(tmp_path / "tok.npz", x_train=tokens, x_test=tokens[:2], **labels)
    tok = files.load(tmp_path / "tok.npz")
    assert tok.train.x.dtype == np.int64
    np.testing.assert_array_equal(tok.train.x, tokens)


def test_describe_reads_shape_and_classes(tmp_path: Path):
    rng = np.random.default_rng(2)
    x = rng.random((10, 8, 8, 3), dtype=np.float32)
    np.savez(tmp_path / "d.npz", x_train=x, y_train=np.arange(10) % 7, x_test=x[:3], y_test=np.array([0, 9, 1]))
    # classes = the largest label in either split + 1
    assert files.describe(tmp_path / "d.npz") == ((8, 8, 3), 10, "classes")


def test_object_arrays_are_refused_never_unpickled(tmp_path: Path):
    marker = tmp_path / "unpickled"
    payload = np.array([_Boom(str(marker))], dtype=object)
    y = np.array([0])
    np.savez(tmp_path / "evil.npz", x_train=payload, y_train=y, x_test=payload, y_test=y)
    with pytest.raises(UserDataError, match=r"evil\.npz: array 'x_train' holds Python objects"):
        files.load(tmp_path / "evil.npz")
    assert not marker.exists()


class _Boom:
    """Pickles into a call that would create a file if it were ever unpickled."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (Path.touch, (Path(self.path),))


def _npz(tmp_path: Path, name: str = "d.npz", **overrides) -> Path:
    arrays = {k: v for k, v in _valid(np.random.default_rng(3)).items()}
    arrays.update(overrides)
    arrays = {k: v for k, v in arrays.items() if v is not None}
    np.savez(tmp_path / name, **arrays)
    return tmp_path / name


BAD_NPZ = [
    ({"y_test": None}, "no array 'y_test'; a dataset .npz holds exactly x_train, y_train, x_test, y_test"),
    ({"x_val": np.zeros((2, 3))}, "unexpected array 'x_val'; allowed: x_train, y_train, x_test, y_test"),
    ({"y_train": np.zeros(11, dtype=np.int64)}, "x_train has 12 samples but y_train has 11 labels"),
    ({"y_test": np.array([0, -1, 1, 2])}, r"y_test holds negative labels \(min -1\)"),
    ({"y_test": np.array([0, 1, 2, 100_000])}, "y_test holds label 100000; at most 100000 classes"),
    # Fractions are regression targets: the two splits must agree.
    ({"y_test": np.array([0.0, 1.5, 2.0, 1.0])}, "y_train holds class ids, y_test regression values; both splits"),
    ({"y_test": np.array([0.0, np.nan, 2.0, 1.0])}, "y_test holds NaN or infinite values; clean them first"),
    ({"y_test": np.array(["a", "b", "c", "d"])}, "y_test is <U1; class ids are integers"),
    ({"y_train": np.zeros((12, 1), dtype=np.int64)}, r"y_train has shape \(12, 1\); expected one class id per sample"),
    ({"x_train": np.full((12, 6, 5), np.inf, np.float32)}, "x_train holds 360 NaN or infinite values"),
    ({"x_test": np.zeros((0, 6, 5), np.uint8), "y_test": np.zeros(0, np.int64)}, "x_test is empty"),
    ({"x_test": np.zeros((4, 5, 6), np.uint8)}, r"train samples are \(6, 5, 1\) float32, test samples \(5, 6, 1\)"),
    # One number per sample: the message gives the reshape.
    (
        {"x_train": np.zeros(12, np.float32)},
        r"x_train has shape \(12,\), one number per sample; samples are rows: "
        r"save it as x_train.reshape\(-1, 1\), shape \(12, 1\) \(one feature per sample\)",
    ),
    ({"x_train": np.zeros(12, np.int64)}, r"shape \(12, 1\) \(one token id per sample\)"),
    ({"x_train": np.array(["a"] * 12)}, r"x_train is <U1 of shape \(12,\); expected numbers, one sample"),
    ({"x_train": np.zeros((12, 1, 1, 1, 1, 1), np.float32)}, "x_train: 6 dimensions: a sample array has 2 to 5"),
    ({"layout": np.array("NCHW")}, r"x_train: layout 'NCHW' names 4 axes; the array has 3, shape \(12, 6, 5\)"),
    ({"x_train": -np.ones((12, 4), np.int64), "x_test": np.ones((4, 4), np.int64)}, "x_train holds negative integers"),
    (
        {"y_train": np.zeros(12, np.int64), "y_test": np.zeros(4, np.int64)},
        "every label is 0; a classifier needs at least 2 classes",
    ),
]


@pytest.mark.parametrize(("overrides", "expected"), BAD_NPZ, ids=[e.split(";")[0][:40] for _, e in BAD_NPZ])
def test_each_bad_npz_is_one_line_naming_the_file(tmp_path: Path, overrides, expected):
    path = _npz(tmp_path, **overrides)
    with pytest.raises(UserDataError) as caught:
        files.load(path)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{path}: ")
    assert re.search(expected, message), message


def test_paths_that_are_not_datasets(tmp_path: Path):
    with pytest.raises(UserDataError, match="does not exist; expected a .npz file or a directory of IDX files"):
        files.load(tmp_path / "missing.npz")
    (tmp_path / "data.csv").write_text("1,2\n")
    with pytest.raises(UserDataError, match=r"data\.csv: not a .npz file or a directory of IDX files"):
        files.load(tmp_path / "data.csv")
    (tmp_path / "broken.npz").write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(UserDataError, match=r"broken\.npz: not a readable .npz file"):
        files.load(tmp_path / "broken.npz")


def test_idx_directory_missing_or_corrupt_file(tmp_path: Path):
    root = _idx_dir(tmp_path / "idx", _valid(np.random.default_rng(4)))
    (root / IDX_FILES["y_test"]).unlink()
    with pytest.raises(UserDataError, match="no t10k-labels-idx1-ubyte \\(or t10k-labels-idx1-ubyte.gz\\)"):
        files.load(root)
    (root / IDX_FILES["y_test"]).write_bytes(b"\x00\x00\x08\x01\x00\x00\x00\x09abc")  # says 9 values, has 3
    with pytest.raises(UserDataError) as caught:
        files.load(root)
    assert "t10k-labels-idx1-ubyte" in str(caught.value) and "\n" not in str(caught.value)


def test_cli_names_the_bad_file_in_one_line_and_writes_no_run(tmp_path: Path):
    path = _npz(tmp_path, name="short.npz", y_train=np.zeros(5, np.int64))
    db = tmp_path / "r.db"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "dlbench",
            "run",
            "--trials",
            "1",
            "--dataset",
            str(path),
            "--model",
            "mlp",
            "--db",
            str(db),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "short.npz: x_train has 12 samples but y_train has 5 labels" in lines[0]
    assert "Traceback" not in proc.stderr and not db.exists()
