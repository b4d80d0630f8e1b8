"""Bounded work on any data file (issue 33 item 2): a header that lies, a gzip or zip
bomb, or a shape beyond memory is one line naming the file, after a few reads, never
an allocation of what the file claims."""

from __future__ import annotations

import gzip
import io
import json
import struct
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest

from dlbench.datasets import bounded, files
from dlbench.datasets.idx import IdxFormatError, encode_idx, idx_bytes, idx_shape

MiB = 2**20


def _peak_while(fn) -> tuple[BaseException, int]:
    """The exception `fn` raises and the peak of Python allocations while it ran."""
    tracemalloc.start()
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - returned for the test to check
        caught = exc
    else:
        raise AssertionError("expected a refusal")
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return caught, peak


def test_a_gzip_idx_inflating_past_its_header_stops_within_a_chunk(tmp_path: Path):
    # 10 declared bytes, 200 MiB of zeros behind them, ~200 KiB on disk.
    path = tmp_path / "bomb.gz"
    with gzip.open(path, "wb", compresslevel=9) as f:
        f.write(bytes((0, 0, 0x08, 1)) + struct.pack(">I", 10))
        for _ in range(200):
            f.write(bytes(MiB))
    assert path.stat().st_size < MiB
    exc, peak = _peak_while(lambda: idx_bytes(path))
    assert isinstance(exc, IdxFormatError) and "has trailing bytes" in str(exc) and str(path) in str(exc)
    assert peak < 8 * MiB, peak  # a chunk or two, not 200 MiB


def test_a_header_declaring_petabytes_is_refused_before_allocating(tmp_path: Path):
    plain = tmp_path / "huge"
    plain.write_bytes(bytes((0, 0, 0x0D, 3)) + struct.pack(">3I", 2**31, 2**31, 2**20) + bytes(64))
    with pytest.raises(IdxFormatError, match=r"IDX file truncated: shape \(2147483648, 2147483648, 1048576\)"):
        idx_bytes(plain)
    compressed = tmp_path / "huge.gz"
    compressed.write_bytes(gzip.compress(plain.read_bytes()))
    with pytest.raises(bounded.DataLimitError, match="declares .* GiB; at most 64 GiB per array"):
        idx_bytes(compressed)
    # The header alone still reads (what plan asks for), in a few bytes.
    assert idx_shape(compressed)[0] == (2**31, 2**31, 2**20)


def test_255_dimensions_whose_product_overflows_64_bits_are_one_error(tmp_path: Path):
    path = tmp_path / "dims"
    path.write_bytes(bytes((0, 0, 0x08, 255)) + struct.pack(">255I", *([2**32 - 1] * 255)))
    with pytest.raises(IdxFormatError, match="truncated"):
        idx_bytes(path)


def test_a_damaged_or_cut_gzip_stream_names_the_file(tmp_path: Path):
    good = gzip.compress(encode_idx(np.arange(1000, dtype=np.uint8)))
    cut = tmp_path / "cut.gz"
    cut.write_bytes(good[: len(good) // 2])
    with pytest.raises(IdxFormatError, match=r"cut.gz: damaged gzip data \(the stream ends early"):
        idx_bytes(cut)
    garbled = tmp_path / "garbled.gz"
    garbled.write_bytes(good[:12] + bytes(b ^ 0x5A for b in good[12:40]) + good[40:])
    with pytest.raises(IdxFormatError, match="garbled.gz: damaged gzip data"):
        idx_bytes(garbled)
    # Two gzip members are one stream (what `cat a.gz b.gz` makes), as gzip.decompress reads it.
    whole = encode_idx(np.arange(1000, dtype=np.uint8))
    two = tmp_path / "two.gz"
    two.write_bytes(gzip.compress(whole[:500]) + gzip.compress(whole[500:]))
    assert idx_bytes(two) == whole


def _npy_member(shape: tuple[int, ...], payload: bytes) -> bytes:
    out = io.BytesIO()
    np.lib.format.write_array_header_1_0(out, {"descr": "<f4", "fortran_order": False, "shape": shape})
    return out.getvalue() + payload


def test_an_npz_whose_header_declares_more_than_its_member_holds_is_refused(tmp_path: Path):
    path = tmp_path / "lying.npz"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("x_train.npy", _npy_member((10**15,), bytes(16)))
    exc, peak = _peak_while(lambda: files.load(path))
    assert isinstance(exc, files.UserDataError)
    assert "array 'x_train' declares shape (1000000000000000,) of float32" in str(exc) and "damaged" in str(exc)
    assert peak < 4 * MiB


def test_an_npz_bomb_is_refused_by_its_compression_ratio(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(bounded, "INFLATION_FLOOR", MiB)  # the same rule, on a test-sized bomb
    path = tmp_path / "bomb.npz"
    zeros = np.zeros((8 * MiB // 4,), np.float32)
    np.savez_compressed(path, x_train=zeros, y_train=np.zeros(3, np.int64), x_test=zeros, y_test=np.zeros(3))
    with pytest.raises(files.UserDataError, match=r"declares 8 MiB from .* of compressed data \(\d+:1\)"):
        files.load(path)


def _dataset(n: int = 40) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {
        "x_train": rng.integers(0, 256, (n, 6, 6), dtype=np.uint8),
        "y_train": np.arange(n) % 3,
        "x_test": rng.integers(0, 256, (n // 2, 6, 6), dtype=np.uint8),
        "y_test": np.arange(n // 2) % 3,
    }


def test_plan_reads_headers_and_labels_only_for_a_large_dataset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    npz, idx_dir = tmp_path / "d.npz", tmp_path / "idx"
    arrays = _dataset()
    np.savez(npz, **arrays)
    idx_dir.mkdir()
    for key, name in files.IDX_FILES.items():
        (idx_dir / f"{name}.gz").write_bytes(gzip.compress(encode_idx(arrays[key].astype(np.uint8))))
    full = {p: files.describe(p) for p in (npz, idx_dir)}
    assert full[npz] == full[idx_dir] == ((6, 6, 1), 3, "classes")
    monkeypatch.setattr(files, "PLAN_FULL_CHECK_BYTES", 0)  # every dataset counts as large
    loaded: list[Path] = []
    monkeypatch.setattr(files, "load", lambda p: loaded.append(p))
    assert {p: files.describe(p) for p in (npz, idx_dir)} == full
    assert loaded == []  # the images were never read
    bad = dict(arrays, x_test=arrays["x_test"][:, :5])
    np.savez(npz, **bad)
    with pytest.raises(files.UserDataError, match=r"train samples are \(6, 6, 1\), test samples \(5, 6, 1\)"):
        files.describe(npz)


def test_the_command_line_says_one_line_for_a_bomb(tmp_path: Path, cli):
    path = tmp_path / "lying.npz"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("x_train.npy", _npy_member((10**15,), bytes(16)))
    output = cli("plan", "--framework", "numpy", "--model", "mlp", "--dataset", path, code=2)
    assert "Traceback" not in output, output
    assert "lying.npz: array 'x_train' declares shape" in output


def test_float64_values_beyond_float32_are_refused_not_cast_to_inf(tmp_path: Path):
    path = tmp_path / "wide.npz"
    arrays = _dataset()
    x = arrays["x_train"].astype(np.float64)
    x[0, 0, 0] = 1e300
    np.savez(path, **dict(arrays, x_train=x, x_test=arrays["x_test"].astype(np.float64)))
    with pytest.raises(files.UserDataError, match=r"x_train holds values beyond float32's range \(\|x\| up to 1e\+300"):
        files.load(path)


def test_feature_vectors_planned_for_an_image_model_are_a_skipped_cell_with_why(tmp_path: Path, cli):
    path = tmp_path / "features.npz"
    rng = np.random.default_rng(0)
    x, y = rng.random((40, 7), dtype=np.float32), np.arange(40) % 2
    np.savez(path, x_train=x, y_train=y, x_test=x[:10], y_test=y[:10])
    output = cli("plan", "--framework", "numpy", "--model", "mlp", "--dataset", path, "--format", "json", code=None)
    # The reason as data: a table cell wraps it at the terminal's width.
    reasons = [s["reason"] for s in json.loads(output)["skipped"]]
    assert any("mlp takes images, (H, W, C) per sample; this dataset's samples have shape (7,)" in r for r in reasons)
