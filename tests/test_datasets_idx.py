"""The IDX reader: real MNIST / Fashion-MNIST files, files written here, malformed files."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from dlbench.datasets.idx import IdxFormatError, encode_idx, parse_idx, read_idx

SHARED_MNIST = Path(__file__).resolve().parents[2] / "shared" / "data" / "mnist"
DEBIAN_FASHION = Path("/usr/share/datasets/fashion-mnist")

# Per-class counts of the official MNIST test set (LeCun et al.).
MNIST_TEST_HISTOGRAM = [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]


def _need(path: Path, why: str) -> None:
    if not path.exists():
        reason = f"{path} absent ({why})"
        print(f"SKIP: {reason}")
        pytest.skip(reason)


def test_real_mnist_test_set() -> None:
    _need(SHARED_MNIST, "the project's shared MNIST test set")
    images = read_idx(SHARED_MNIST / "t10k-images-idx3-ubyte.gz")
    labels = read_idx(SHARED_MNIST / "t10k-labels-idx1-ubyte.gz")
    assert images.shape == (10_000, 28, 28) and images.dtype == np.uint8
    assert labels.shape == (10_000,) and labels.dtype == np.uint8
    assert labels[0] == 7  # the famous first test digit
    histogram = np.bincount(labels, minlength=10)
    assert histogram.sum() == 10_000
    assert histogram.tolist() == MNIST_TEST_HISTOGRAM
    # Digits are centred in a blank border: corners empty, centre inked.
    assert images[:, :2, :2].max() == 0 and images[:, 10:18, 10:18].max() == 255


def test_real_fashion_mnist_train_set() -> None:
    _need(DEBIAN_FASHION, "install the Debian package dataset-fashion-mnist")
    images = read_idx(DEBIAN_FASHION / "train-images-idx3-ubyte.gz")
    labels = read_idx(DEBIAN_FASHION / "train-labels-idx1-ubyte.gz")
    assert images.shape == (60_000, 28, 28) and images.dtype == np.uint8
    assert labels.shape == (60_000,)
    assert np.bincount(labels, minlength=10).tolist() == [6000] * 10  # balanced by design


@pytest.mark.parametrize("dtype", ["u1", "i1", ">i2", ">i4", ">f4", ">f8"])
@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_roundtrip_every_type_code(tmp_path: Path, dtype: str, compress: bool) -> None:
    rng = np.random.default_rng(0)
    original = (rng.standard_normal((3, 4, 5)) * 100).astype(np.dtype(dtype).newbyteorder("="))
    data = encode_idx(original)
    path = tmp_path / ("a.idx.gz" if compress else "a.idx")
    path.write_bytes(gzip.compress(data) if compress else data)
    back = read_idx(path)
    assert back.shape == original.shape
    assert back.dtype == original.dtype and back.dtype.isnative
    np.testing.assert_array_equal(back, original)


def test_header_is_big_endian(tmp_path: Path) -> None:
    data = bytes([0, 0, 0x0C, 1, 0, 0, 0, 2]) + bytes([0, 0, 1, 0, 0xFF, 0xFF, 0xFF, 0xFE])
    assert parse_idx(data).tolist() == [256, -2]


def test_compression_recognised_by_content_not_name(tmp_path: Path) -> None:
    labels = np.arange(10, dtype=np.uint8)
    plain_named_gz = tmp_path / "labels.gz"
    plain_named_gz.write_bytes(encode_idx(labels))
    gz_named_plain = tmp_path / "labels"
    gz_named_plain.write_bytes(gzip.compress(encode_idx(labels)))
    assert read_idx(plain_named_gz).tolist() == list(range(10))
    assert read_idx(gz_named_plain).tolist() == list(range(10))


def _write(tmp_path: Path, data: bytes, name: str = "bad-idx1-ubyte") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_bad_magic(tmp_path: Path) -> None:
    path = _write(tmp_path, b"PK\x03\x04" + bytes(20))
    with pytest.raises(IdxFormatError, match="bad IDX magic number 0x504b0304") as err:
        read_idx(path)
    assert str(path) in str(err.value)


def test_unknown_type_code(tmp_path: Path) -> None:
    path = _write(tmp_path, bytes([0, 0, 0x0A, 1, 0, 0, 0, 1, 0]))
    with pytest.raises(IdxFormatError, match="unknown IDX type code 0x0A"):
        read_idx(path)


def test_zero_dimensions(tmp_path: Path) -> None:
    with pytest.raises(IdxFormatError, match="0 dimensions"):
        read_idx(_write(tmp_path, bytes([0, 0, 8, 0])))


def test_truncated_header(tmp_path: Path) -> None:
    path = _write(tmp_path, bytes([0, 0, 8, 3, 0, 0, 0, 10, 0, 0]))
    with pytest.raises(IdxFormatError, match="truncated IDX header") as err:
        read_idx(path)
    assert str(path) in str(err.value)
    with pytest.raises(IdxFormatError, match="too short"):
        read_idx(_write(tmp_path, b"\x00\x00", "tiny"))


def test_truncated_payload(tmp_path: Path) -> None:
    full = encode_idx(np.zeros((10, 28, 28), np.uint8))
    path = _write(tmp_path, full[:-100], "short-idx3-ubyte")
    with pytest.raises(IdxFormatError, match=r"truncated: shape \(10, 28, 28\)") as err:
        read_idx(path)
    assert str(path) in str(err.value) and str(len(full)) in str(err.value)


def test_trailing_bytes(tmp_path: Path) -> None:
    path = _write(tmp_path, encode_idx(np.zeros(5, np.uint8)) + b"junk")
    with pytest.raises(IdxFormatError, match="trailing bytes"):
        read_idx(path)


def test_truncated_gzip_stream(tmp_path: Path) -> None:
    packed = gzip.compress(encode_idx(np.arange(1000, dtype=np.uint8) % 7))
    path = _write(tmp_path, packed[: len(packed) // 2], "cut.gz")
    with pytest.raises(IdxFormatError, match="damaged gzip data") as err:
        read_idx(path)
    assert str(path) in str(err.value)


def test_encode_rejects_types_without_a_code() -> None:
    with pytest.raises(ValueError, match="no IDX type code"):
        encode_idx(np.zeros(3, np.uint16))
