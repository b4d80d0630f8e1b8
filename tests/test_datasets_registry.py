"""The public datasets API: names, shapes, search order, errors, and each loader."""

from __future__ import annotations

import dataclasses
import gzip
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dlbench.datasets as datasets
from dlbench import registry
from dlbench.datasets import SyntheticOptions, fetch, mnist
from dlbench.datasets.idx import encode_idx

SHARED_MNIST = Path(__file__).resolve().parents[2] / "shared" / "data" / "mnist"
DEBIAN_FASHION = Path("/usr/share/datasets/fashion-mnist")
FILE_NAMES = [f.gz_name for f in mnist.MNIST.files]


@pytest.fixture()
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh user cache, no $DLBENCH_DATA, no system directory; returns tmp_path."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("DLBENCH_DATA", raising=False)
    for name, spec in mnist.SPECS.items():
        monkeypatch.setitem(mnist.SPECS, name, dataclasses.replace(spec, system_dirs=()))
    return tmp_path


def test_names_and_shapes() -> None:
    assert registry.names("dataset", {}) == ["digits", "mnist", "fashion-mnist", "cifar10", "synthetic"]
    assert datasets.dataset_shape("cifar10") == ((32, 32, 3), 10)
    assert datasets.dataset_shape("digits") == ((8, 8, 1), 10)
    assert datasets.dataset_shape("mnist") == ((28, 28, 1), 10)
    assert datasets.dataset_shape("fashion-mnist") == ((28, 28, 1), 10)
    assert datasets.dataset_shape("synthetic") == ((28, 28, 1), 10)
    opts = SyntheticOptions(shape=(16, 16, 3), classes=4, train_size=8, test_size=4)
    assert datasets.dataset_shape("synthetic", opts) == ((16, 16, 3), 4)


@pytest.mark.parametrize(
    "call",
    [
        lambda: datasets.dataset_shape("imagenet"),
        lambda: datasets.locate("imagenet"),
        lambda: datasets.ensure("imagenet"),
        lambda: datasets.load("imagenet"),
    ],
)
def test_unknown_name_is_keyerror_naming_choices(call) -> None:
    with pytest.raises(KeyError) as err:
        call()
    message = str(err.value)
    assert "'imagenet'" in message
    assert all(name in message for name in registry.builtin("dataset"))
    assert "\n" not in message


def _fake_set(directory: Path) -> Path:
    """A directory with empty files of the right names (enough for locate)."""
    directory.mkdir(parents=True, exist_ok=True)
    for name in FILE_NAMES:
        (directory / name).write_bytes(b"")
    return directory


def test_locate_search_order(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    system = isolated / "system"
    monkeypatch.setitem(mnist.SPECS, "fashion-mnist", dataclasses.replace(mnist.FASHION_MNIST, system_dirs=(system,)))
    arg, env, cache = isolated / "arg", isolated / "env", isolated / "xdg" / "dlbench"
    monkeypatch.setenv("DLBENCH_DATA", str(env))
    expected = [arg, arg / "fashion-mnist", env, env / "fashion-mnist", cache / "fashion-mnist", system]
    assert datasets.locate("fashion-mnist", str(arg)) == (None, expected)

    # Fill every place, then empty them from the first: each time the next one wins.
    for place in (arg / "fashion-mnist", env, cache / "fashion-mnist", system):
        _fake_set(place)
    for winner in (arg / "fashion-mnist", env, cache / "fashion-mnist", system):
        found, searched = datasets.locate("fashion-mnist", str(arg))
        assert found == winner
        assert searched == expected[: expected.index(winner) + 1]
        shutil.rmtree(winner)
    # The directory itself comes before its <name> subdirectory.
    _fake_set(arg / "fashion-mnist")
    _fake_set(arg)
    assert datasets.locate("fashion-mnist", str(arg))[0] == arg


def test_plain_files_count_as_present(isolated: Path) -> None:
    d = isolated / "plain"
    d.mkdir()
    for name in FILE_NAMES:
        (d / name.removesuffix(".gz")).write_bytes(b"")
    assert datasets.locate("mnist", str(d))[0] == d


def test_not_found_message_lists_every_place(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    system = isolated / "usr-share"
    monkeypatch.setitem(mnist.SPECS, "fashion-mnist", dataclasses.replace(mnist.FASHION_MNIST, system_dirs=(system,)))
    monkeypatch.setenv("DLBENCH_DATA", str(isolated / "env"))
    partial = isolated / "arg"
    partial.mkdir()
    (partial / FILE_NAMES[0]).write_bytes(b"")
    _, searched = datasets.locate("fashion-mnist", str(partial))
    assert len(searched) == 6
    for call in (
        lambda: datasets.ensure("fashion-mnist", str(partial), download=False),
        lambda: datasets.load("fashion-mnist", str(partial)),
    ):
        with pytest.raises(datasets.DatasetNotFound) as err:
            call()
        message = str(err.value)
        for place in searched:
            assert f"  {place}  (" in message
        assert "missing train-labels-idx1-ubyte, t10k-images" in message  # what the partial lacks
        assert "apt-get install dataset-fashion-mnist" in message
        assert "--data-dir" in message and "DLBENCH_DATA" in message
        assert mnist.FASHION_MNIST_MIRRORS[0] in message


@pytest.fixture()
def t10k_as_full_set(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The real MNIST test files standing in for both splits, with a matching checksum table.

    Exercises the whole verify-and-load path on real data without the 60k files.
    """
    if not SHARED_MNIST.is_dir():
        reason = f"{SHARED_MNIST} absent (the project's shared MNIST test set)"
        print(f"SKIP: {reason}")
        pytest.skip(reason)
    d = isolated / "data" / "mnist"
    d.mkdir(parents=True)
    by_name = {f.name: f for f in mnist.MNIST.files}
    files = []
    for split in ("train", "t10k"):
        for kind in ("images-idx3-ubyte", "labels-idx1-ubyte"):
            real = by_name[f"t10k-{kind}"]
            files.append(dataclasses.replace(real, name=f"{split}-{kind}"))
            shutil.copy(SHARED_MNIST / real.gz_name, d / f"{split}-{kind}.gz")
    monkeypatch.setitem(mnist.SPECS, "mnist", dataclasses.replace(mnist.MNIST, files=tuple(files)))
    return d


def test_load_real_mnist_files(t10k_as_full_set: Path) -> None:
    data_dir = str(t10k_as_full_set.parent)
    assert datasets.ensure("mnist", data_dir, download=False) == t10k_as_full_set
    arrays = datasets.load("mnist", data_dir)
    assert arrays.name == "mnist" and arrays.num_classes == 10 and arrays.input_shape == (28, 28, 1)
    x, y = arrays.test.x, arrays.test.y
    assert x.shape == (10_000, 28, 28, 1) and x.dtype == np.float32
    assert y.dtype == np.int64 and y[0] == 7 and np.bincount(y).sum() == 10_000
    assert x.min() == 0.0 and x.max() == 1.0


def test_recompressed_and_plain_copies_pass_verification(t10k_as_full_set: Path) -> None:
    # Like the Debian package: same data, different .gz bytes (or none at all).
    images = t10k_as_full_set / "train-images-idx3-ubyte.gz"
    raw = gzip.decompress(images.read_bytes())
    images.write_bytes(gzip.compress(raw, compresslevel=1, mtime=0))
    labels = t10k_as_full_set / "train-labels-idx1-ubyte.gz"
    (t10k_as_full_set / "train-labels-idx1-ubyte").write_bytes(gzip.decompress(labels.read_bytes()))
    labels.unlink()
    arrays = datasets.load("mnist", str(t10k_as_full_set))
    assert len(arrays.train) == 10_000 and arrays.train.y[0] == 7


def test_corrupt_local_file_names_file_and_digests(t10k_as_full_set: Path) -> None:
    labels = t10k_as_full_set / "t10k-labels-idx1-ubyte.gz"
    raw = bytearray(gzip.decompress(labels.read_bytes()))
    raw[8] = (raw[8] + 1) % 10  # one wrong label, still a valid IDX file
    labels.write_bytes(gzip.compress(bytes(raw)))
    expected = next(f for f in mnist.MNIST.files if f.name == "t10k-labels-idx1-ubyte")
    for call in (
        lambda: datasets.ensure("mnist", str(t10k_as_full_set), download=False),
        lambda: datasets.load("mnist", str(t10k_as_full_set)),
    ):
        with pytest.raises(datasets.ChecksumMismatch) as err:
            call()
        message = str(err.value)
        assert str(labels) in message
        assert expected.gz_md5 in message and expected.raw_md5 in message
        assert fetch.file_digest(labels) in message


def test_truncated_local_gzip_is_a_checksum_error(t10k_as_full_set: Path) -> None:
    images = t10k_as_full_set / "t10k-images-idx3-ubyte.gz"
    images.write_bytes(images.read_bytes()[:5000])
    with pytest.raises(datasets.ChecksumMismatch, match="corrupt file") as err:
        datasets.load("mnist", str(t10k_as_full_set))
    assert str(images) in str(err.value)


def test_load_files_written_here(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The loader end to end on tiny IDX files, independent of any shared data."""
    rng = np.random.default_rng(1)
    d = isolated / "tiny"
    d.mkdir()
    files = []
    for split, n in (("train", 12), ("t10k", 5)):
        images = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        labels = rng.integers(0, 10, n).astype(np.uint8)
        for kind, array in (("images-idx3-ubyte", images), ("labels-idx1-ubyte", labels)):
            packed = gzip.compress(encode_idx(array))
            (d / f"{split}-{kind}.gz").write_bytes(packed)
            files.append(
                mnist.IdxFile(f"{split}-{kind}", fetch.bytes_digest(packed), fetch.bytes_digest(encode_idx(array)))
            )
        if split == "train":
            train_images, train_labels = images, labels
    monkeypatch.setitem(mnist.SPECS, "fashion-mnist", dataclasses.replace(mnist.FASHION_MNIST, files=tuple(files)))
    arrays = datasets.load("fashion-mnist", str(d))
    assert len(arrays.train) == 12 and len(arrays.test) == 5
    np.testing.assert_array_equal(arrays.train.x[..., 0] * 255, train_images.astype(np.float32))
    np.testing.assert_array_equal(arrays.train.y, train_labels.astype(np.int64))


def test_debian_fashion_mnist() -> None:
    if not DEBIAN_FASHION.is_dir():
        reason = f"{DEBIAN_FASHION} absent (apt-get install dataset-fashion-mnist)"
        print(f"SKIP: {reason}")
        pytest.skip(reason)
    # The Debian .gz files are re-compressed: only the content digests match.
    assert datasets.ensure("fashion-mnist", download=False) is not None
    arrays = mnist.load(mnist.FASHION_MNIST, str(DEBIAN_FASHION))
    assert (len(arrays.train), len(arrays.test)) == (60_000, 10_000)
    assert np.bincount(arrays.test.y).tolist() == [1000] * 10
    assert 0.0 <= float(arrays.train.x.min()) and float(arrays.train.x.max()) == 1.0


def test_digits_split() -> None:
    a = datasets.load("digits")
    assert a.input_shape == (8, 8, 1) and a.num_classes == 10
    assert (len(a.train), len(a.test)) == (1437, 360)
    assert a.train.x.dtype == np.float32 and a.train.y.dtype == np.int64
    assert a.train.x.min() == 0.0 and a.train.x.max() == 1.0
    # Stratified: every class has (almost exactly) a fifth of its samples in the test set.
    total = np.bincount(a.train.y, minlength=10) + np.bincount(a.test.y, minlength=10)
    assert np.all(np.abs(np.bincount(a.test.y, minlength=10) - total * 0.2) <= 1)
    b = datasets.load("digits", seed=123)  # the split is fixed, not seeded per trial
    np.testing.assert_array_equal(a.test.x, b.test.x)
    assert datasets.ensure("digits") is None and datasets.locate("digits") == (None, [])


def test_synthetic() -> None:
    opts = SyntheticOptions(shape=(16, 12, 3), classes=4, train_size=50, test_size=20)
    a = datasets.load("synthetic", synthetic=opts, seed=5)
    assert a.train.x.shape == (50, 16, 12, 3) and a.test.x.shape == (20, 16, 12, 3)
    assert a.train.x.dtype == np.float32 and a.train.y.dtype == np.int64
    assert 0.0 <= a.train.x.min() and a.train.x.max() < 1.0
    assert set(np.unique(a.train.y)) <= set(range(4)) and len(np.unique(a.train.y)) == 4
    assert a.num_classes == 4 and a.input_shape == (16, 12, 3)
    same = datasets.load("synthetic", synthetic=opts, seed=5)
    other = datasets.load("synthetic", synthetic=opts, seed=6)
    np.testing.assert_array_equal(a.train.x, same.train.x)
    assert not np.array_equal(a.train.x, other.train.x)
    assert len(datasets.load("synthetic").train) == 6000  # defaults
    assert datasets.ensure("synthetic") is None


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"shape": (28, 28)}, "three positive integers"),
        ({"shape": (28, 0, 1)}, "three positive integers"),
        ({"classes": 1}, "classes must be an integer >= 2"),
        ({"train_size": 0}, "train_size must be a positive integer"),
        ({"test_size": -3}, "test_size must be a positive integer"),
        ({"test_size": 2.5}, "test_size must be a positive integer"),
    ],
)
def test_synthetic_options_validated(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        SyntheticOptions(**kwargs)


def test_synthetic_shape_list_becomes_tuple() -> None:
    opts = SyntheticOptions(shape=[8, 8, 1])  # type: ignore[arg-type]  (as parsed from TOML)
    assert opts.shape == (8, 8, 1) and hash(opts)


def test_package_stays_light() -> None:
    """The parent imports this package: no deep-learning framework, no scikit-learn."""
    code = (
        "import sys, dlbench.datasets as d; d.load('synthetic'); d.ensure('digits'); "
        "d.dataset_shape('mnist'); "
        "print([m for m in ('torch', 'tensorflow', 'jax', 'keras', 'sklearn') "
        "if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_digits_read_without_scikit_learn_are_scikit_learns_split_bit_for_bit(monkeypatch) -> None:
    """The shipped split and the file read directly give exactly what load_digits() and
    train_test_split give (the path a worker took before), and no scikit-learn module is
    imported on the way; a data file other than the one the split was drawn for falls
    back to scikit-learn's split."""
    import subprocess
    import sys

    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    from dlbench.datasets import digits

    bunch = load_digits()
    x = (bunch.images / 16.0).astype(np.float32).reshape(-1, 8, 8, 1)
    expected = train_test_split(x, bunch.target.astype(np.int64), test_size=0.2, stratify=bunch.target, random_state=0)
    got = digits.load()
    for want, have in zip(expected, (got.train.x, got.test.x, got.train.y, got.test.y), strict=True):
        assert want.dtype == have.dtype
        np.testing.assert_array_equal(want, have)
    code = (
        "import sys; from dlbench.datasets import digits; digits.load(); "
        "print(sorted(m for m in sys.modules if m.startswith('sklearn')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    # Another release's file: scikit-learn draws the split (here: the same file, so the same split).
    monkeypatch.setattr(digits, "DATA_SHA256", "0" * 64)
    drawn = []
    real = digits._sklearn_split
    monkeypatch.setattr(digits, "_sklearn_split", lambda *a: drawn.append(1) or real(*a))
    again = digits.load()
    assert drawn == [1]
    np.testing.assert_array_equal(again.test.x, got.test.x)
