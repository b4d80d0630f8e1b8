"""CIFAR-10 binary batches: parsing, the folder and archive forms, errors, download.

Every file is written here in the official format (a label byte, then the
planar R, G, B planes of a 32x32 image), 20 records per training batch, so the
expected arrays are known exactly. Downloads come from a local HTTP server on
127.0.0.1; nothing touches the internet.
"""

from __future__ import annotations

import dataclasses
import http.server
import io
import tarfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import dlbench.datasets as datasets
from dlbench.datasets import cifar10, fetch
from local_http import serving

PER_BATCH = 20


def _images(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` random uint8 NHWC images and labels 0..9."""
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 256, size=(n, 32, 32, 3), dtype=np.uint8), rng.integers(0, 10, size=n, dtype=np.uint8))


def _encode(x: np.ndarray, y: np.ndarray) -> bytes:
    """The official record layout, written without the loader's code: label, R plane, G, B."""
    out = bytearray()
    for img, label in zip(x, y):
        out.append(int(label))
        for c in range(3):
            out += img[:, :, c].tobytes()  # one plane, row-major
    return bytes(out)


@pytest.fixture(scope="module")
def official() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """File name -> (uint8 images, labels) for the five training batches and the test batch."""
    return {
        name: _images(PER_BATCH if name != cifar10.TEST_BATCH else 10, seed)
        for seed, name in enumerate(cifar10.BATCHES)
    }


def _write_folder(directory: Path, official: dict) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, (x, y) in official.items():
        (directory / name).write_bytes(_encode(x, y))
    return directory


def _tar_bytes(official: dict, extra: list[tarfile.TarInfo] = (), skip: str = "") -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for info in extra:
            tar.addfile(info, io.BytesIO(b"evil" * (info.size // 4)) if info.isfile() else None)
        for name, (x, y) in official.items():
            if name == skip:
                continue
            data = _encode(x, y)
            info = tarfile.TarInfo(f"{cifar10.FOLDER}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@pytest.fixture()
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh user cache and no $DLBENCH_DATA; returns tmp_path."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("DLBENCH_DATA", raising=False)
    return tmp_path


def _use_archive(monkeypatch: pytest.MonkeyPatch, data: bytes, **changes) -> cifar10.CifarDataset:
    """Make the registry's checksum table describe ``data`` (our small archive)."""
    spec = dataclasses.replace(cifar10.CIFAR10, md5=fetch.bytes_digest(data), size=len(data), **changes)
    monkeypatch.setitem(cifar10.SPECS, "cifar10", spec)
    return spec


def _expect(arrays: datasets.Arrays, official: dict) -> None:
    xs = np.concatenate([official[n][0] for n in cifar10.TRAIN_BATCHES])
    ys = np.concatenate([official[n][1] for n in cifar10.TRAIN_BATCHES])
    assert arrays.name == "cifar10" and arrays.num_classes == 10
    assert arrays.input_shape == (32, 32, 3)
    assert arrays.train.x.dtype == np.float32 and arrays.train.y.dtype == np.int64
    assert arrays.train.x.shape == (5 * PER_BATCH, 32, 32, 3)
    np.testing.assert_array_equal(arrays.train.x, xs.astype(np.float32) / np.float32(255))
    np.testing.assert_array_equal(arrays.train.y, ys.astype(np.int64))
    tx, ty = official[cifar10.TEST_BATCH]
    np.testing.assert_array_equal(arrays.test.x, tx.astype(np.float32) / np.float32(255))
    np.testing.assert_array_equal(arrays.test.y, ty)


def test_registry_shape() -> None:
    assert datasets.dataset_shape("cifar10") == ((32, 32, 3), 10)
    assert datasets.dataset_shape("cifar10") == ((32, 32, 3), 10)
    assert cifar10.CIFAR10.md5 == "c32a1d4ab5d03f1284b67883e8d87530"
    assert cifar10.CIFAR10.size == 170052171


def test_layout_is_planar_rgb_to_nhwc(isolated: Path) -> None:
    # One hand-made record: label 7, red plane = row index, green = column, blue = 200.
    rows, cols = np.meshgrid(np.arange(32), np.arange(32), indexing="ij")
    record = bytes([7]) + rows.astype(np.uint8).tobytes() + cols.astype(np.uint8).tobytes() + bytes([200] * 1024)
    split = cifar10.parse_batches([(record * 2, isolated / "x.bin")])
    assert split.y.tolist() == [7, 7]
    img = split.x[0] * 255
    assert img[3, 5].tolist() == pytest.approx([3, 5, 200])
    assert img[31, 0].tolist() == pytest.approx([31, 0, 200])


def test_extracted_folder_loads_exactly(isolated: Path, official: dict) -> None:
    _write_folder(isolated / "data" / cifar10.FOLDER, official)
    found, _ = datasets.locate("cifar10", str(isolated / "data"))
    assert found == isolated / "data" / cifar10.FOLDER
    assert datasets.ensure("cifar10", str(isolated / "data"), download=False) == found
    _expect(datasets.load("cifar10", str(isolated / "data")), official)
    # --data-dir pointing at the folder itself works too
    _expect(datasets.load("cifar10", str(found)), official)


def test_search_order(isolated: Path, monkeypatch: pytest.MonkeyPatch, official: dict) -> None:
    arg, env, cache = isolated / "arg", isolated / "env", isolated / "xdg" / "dlbench" / "cifar10"
    monkeypatch.setenv("DLBENCH_DATA", str(env))
    expected = [arg, arg / "cifar10", env, env / "cifar10", cache]
    assert datasets.locate("cifar10", str(arg)) == (None, expected)
    _write_folder(cache, official)
    assert datasets.locate("cifar10", str(arg)) == (cache, expected)
    _write_folder(env / "cifar10" / cifar10.FOLDER, official)
    assert datasets.locate("cifar10", str(arg))[0] == env / "cifar10" / cifar10.FOLDER


def test_archive_loads_and_extracts_safely(isolated: Path, monkeypatch: pytest.MonkeyPatch, official: dict) -> None:
    evil = []
    for name in ("../escape.bin", "/tmp/dlbench-absolute.bin", f"{cifar10.FOLDER}/../up.bin"):
        info = tarfile.TarInfo(name)
        info.size = 8
        evil.append(info)
    data = _tar_bytes(official, evil)
    _use_archive(monkeypatch, data)
    d = isolated / "data" / "cifar10"
    d.mkdir(parents=True)
    (d / cifar10.CIFAR10.archive).write_bytes(data)
    assert datasets.locate("cifar10", str(isolated / "data"))[0] == d
    _expect(datasets.load("cifar10", str(isolated / "data")), official)  # read in memory
    assert sorted(p.name for p in d.iterdir()) == [cifar10.CIFAR10.archive]  # load wrote nothing

    folder = datasets.ensure("cifar10", str(isolated / "data"), download=False)
    assert folder == d / cifar10.FOLDER
    assert sorted(p.name for p in folder.iterdir()) == sorted(cifar10.BATCHES)  # no temporaries
    assert not (isolated / "data" / "escape.bin").exists() and not (d / "escape.bin").exists()
    assert not (d / "up.bin").exists() and not Path("/tmp/dlbench-absolute.bin").exists()
    assert datasets.locate("cifar10", str(isolated / "data"))[0] == folder  # extracted wins now
    _expect(datasets.load("cifar10", str(isolated / "data")), official)


def test_archive_link_member_is_ignored(isolated: Path, monkeypatch: pytest.MonkeyPatch, official: dict) -> None:
    link = tarfile.TarInfo(f"{cifar10.FOLDER}/data_batch_2.bin")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
    data = _tar_bytes(official, [link], skip="data_batch_2.bin")
    _use_archive(monkeypatch, data)
    (isolated / cifar10.CIFAR10.archive).write_bytes(data)
    with pytest.raises(datasets.CifarFormatError, match="lacks cifar-10-batches-bin/data_batch_2.bin"):
        datasets.ensure("cifar10", str(isolated), download=False)
    assert not (isolated / cifar10.FOLDER).exists()


def test_wrong_archive_is_checksum_mismatch(isolated: Path, monkeypatch: pytest.MonkeyPatch, official: dict) -> None:
    data = _tar_bytes(official)
    (isolated / cifar10.CIFAR10.archive).write_bytes(data)
    # The real table: our small archive has the wrong size.
    with pytest.raises(datasets.ChecksumMismatch, match="expected 170052171 bytes"):
        datasets.load("cifar10", str(isolated))
    # Right size, wrong content: the md5 catches it.
    spec = dataclasses.replace(cifar10.CIFAR10, size=len(data))
    monkeypatch.setitem(cifar10.SPECS, "cifar10", spec)
    with pytest.raises(datasets.ChecksumMismatch) as err:
        datasets.ensure("cifar10", str(isolated), download=False)
    assert "c32a1d4ab5d03f1284b67883e8d87530" in str(err.value)
    assert fetch.bytes_digest(data) in str(err.value)
    assert str(isolated / cifar10.CIFAR10.archive) in str(err.value)


def test_truncated_batch_names_the_file(isolated: Path, official: dict) -> None:
    folder = _write_folder(isolated / cifar10.FOLDER, official)
    bad = folder / "data_batch_3.bin"
    bad.write_bytes(bad.read_bytes()[:-5])
    for call in (
        lambda: datasets.load("cifar10", str(isolated)),
        lambda: datasets.ensure("cifar10", str(isolated), download=False),
    ):
        with pytest.raises(datasets.CifarFormatError) as err:
            call()
        message = str(err.value)
        assert str(bad) in message and "3073-byte records" in message
        assert f"{PER_BATCH * 3073 - 5} bytes" in message


def test_label_out_of_range(isolated: Path, official: dict) -> None:
    folder = _write_folder(isolated / cifar10.FOLDER, official)
    raw = bytearray((folder / cifar10.TEST_BATCH).read_bytes())
    raw[3 * 3073] = 10
    (folder / cifar10.TEST_BATCH).write_bytes(bytes(raw))
    with pytest.raises(datasets.CifarFormatError, match=r"test_batch.bin: record 3 has label 10"):
        datasets.load("cifar10", str(isolated))


def test_not_found_lists_places_and_how_to_get_it(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DLBENCH_DATA", str(isolated / "env"))
    _, searched = datasets.locate("cifar10", str(isolated / "arg"))
    for call in (
        lambda: datasets.ensure("cifar10", str(isolated / "arg"), download=False),
        lambda: datasets.load("cifar10", str(isolated / "arg")),
    ):
        with pytest.raises(datasets.DatasetNotFound) as err:
            call()
        message = str(err.value)
        assert all(f"  {place}  (" in message for place in searched) and len(searched) == 5
        assert "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz" in message
        assert "c32a1d4ab5d03f1284b67883e8d87530" in message
        assert "--data-dir" in message and "DLBENCH_DATA" in message


class _Handler(http.server.BaseHTTPRequestHandler):
    body = b""
    hits: list[str] = []

    def log_message(self, *args: object) -> None:  # keep pytest output clean
        pass

    def do_GET(self) -> None:
        self.hits.append(self.path)
        route = self.path.split("/")[1]
        body = self.body
        if route == "corrupt":
            body = body[:100] + bytes([body[100] ^ 0xFF]) + body[101:]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture()
def server(official: dict) -> Iterator[str]:
    _Handler.body, _Handler.hits = _tar_bytes(official), []
    with serving(_Handler) as url:
        yield url


def test_download_verifies_and_extracts(
    server: str, isolated: Path, monkeypatch: pytest.MonkeyPatch, official: dict
) -> None:
    _use_archive(monkeypatch, _Handler.body, mirrors=(f"{server}/good/",))
    folder = datasets.ensure("cifar10")
    cache = isolated / "xdg" / "dlbench" / "cifar10"
    assert folder == cache / cifar10.FOLDER
    assert fetch.file_digest(cache / cifar10.CIFAR10.archive) == fetch.bytes_digest(_Handler.body)
    assert _Handler.hits == [f"/good/{cifar10.CIFAR10.archive}"]
    _expect(datasets.load("cifar10"), official)
    assert datasets.ensure("cifar10") == folder and len(_Handler.hits) == 1  # not fetched again


def test_download_with_wrong_checksum_is_rejected(server: str, isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _use_archive(monkeypatch, _Handler.body, mirrors=(f"{server}/corrupt/",))
    with pytest.raises(datasets.DatasetNotFound) as err:
        datasets.ensure("cifar10")
    message = str(err.value)
    assert "Download failed" in message and "wrong md5 checksum" in message
    assert f"{server}/corrupt/{cifar10.CIFAR10.archive}" in message
    cache = isolated / "xdg" / "dlbench" / "cifar10"
    assert not cache.exists() or list(cache.iterdir()) == []  # nothing unverified left


def test_archive_member_larger_than_any_batch_is_refused_before_inflating(
    isolated: Path, monkeypatch: pytest.MonkeyPatch, official: dict
) -> None:
    big = tarfile.TarInfo(f"{cifar10.FOLDER}/data_batch_1.bin")
    big.size = cifar10.MAX_MEMBER_BYTES + cifar10.RECORD_BYTES  # zeros: ~30 KiB once compressed
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.addfile(big, io.BytesIO(bytes(big.size)))
    (isolated / "bomb.tar.gz").write_bytes(buf.getvalue())
    with pytest.raises(datasets.CifarFormatError, match=r"member cifar-10-batches-bin/data_batch_1.bin declares"):
        cifar10.read_archive(isolated / "bomb.tar.gz")
