"""MNIST and Fashion-MNIST: where their IDX files are looked for, checked and fetched.

Both datasets ship as the same four files (train/t10k x images/labels), 28x28
grey images in 10 classes. A directory *holds* a dataset when all four are
there, each either gzipped (``<name>.gz``, as published) or plain (``<name>``,
as many people unpack them).

Search order (first complete directory wins):

1. ``data_dir`` (``--data-dir``) itself, then ``data_dir/<dataset>``;
2. ``$DLBENCH_DATA`` itself, then ``$DLBENCH_DATA/<dataset>``;
3. the user cache ``${XDG_CACHE_HOME:-~/.cache}/dlbench/<dataset>`` (where
   downloads go);
4. system directories (``/usr/share/datasets/fashion-mnist`` from the Debian
   package ``dataset-fashion-mnist``).

Every file is checked against two published md5 digests: that of the
distributed ``.gz`` and that of the uncompressed IDX bytes. The second one
matters because a re-compressed copy holds the right data in a different .gz
(the Debian package's files are such copies: their .gz md5 differs from the
published one, their uncompressed md5 matches).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dlbench.datasets import bounded, fetch
from dlbench.datasets.arrays import Arrays, ArraySplit
from dlbench.datasets.fetch import ChecksumMismatch, DatasetNotFound, DownloadError
from dlbench.datasets.idx import IdxFormatError, idx_bytes, is_gzip, parse_idx

TRAIN_IMAGES = "train-images-idx3-ubyte"
TRAIN_LABELS = "train-labels-idx1-ubyte"
TEST_IMAGES = "t10k-images-idx3-ubyte"
TEST_LABELS = "t10k-labels-idx1-ubyte"
SHAPE = (28, 28, 1)
CLASSES = 10


@dataclass(frozen=True)
class IdxFile:
    """One file of a dataset and its published digests."""

    name: str  # without ".gz"
    gz_md5: str  # md5 of the distributed .gz file
    raw_md5: str  # md5 of the uncompressed IDX bytes

    @property
    def gz_name(self) -> str:
        return self.name + ".gz"


@dataclass(frozen=True)
class IdxDataset:
    """Everything needed to find, verify and download one IDX dataset.

    Tests replace ``files``, ``mirrors`` or ``system_dirs`` with
    ``dataclasses.replace`` rather than flipping hidden switches.
    """

    name: str
    files: tuple[IdxFile, ...]
    mirrors: tuple[str, ...]
    system_dirs: tuple[Path, ...] = ()
    hints: tuple[str, ...] = ()  # extra ways to get the data, for DatasetNotFound


MNIST_MIRRORS = (
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
    "https://storage.googleapis.com/cvdf-datasets/mnist/",
)
FASHION_MNIST_MIRRORS = ("http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",)
FASHION_MNIST_SYSTEM_DIRS = (Path("/usr/share/datasets/fashion-mnist"),)

MNIST = IdxDataset(
    name="mnist",
    files=(
        IdxFile(TRAIN_IMAGES, "f68b3c2dcbeaaa9fbdd348bbdeb94873", "6bbc9ace898e44ae57da46a324031adb"),
        IdxFile(TRAIN_LABELS, "d53e105ee54ea40749a09fcbcd1e9432", "a25bea736e30d166cdddb491f175f624"),
        IdxFile(TEST_IMAGES, "9fb629c4189551a2d022fa330f9573f3", "2646ac647ad5339dbf082846283269ea"),
        IdxFile(TEST_LABELS, "ec29112dd5afa0611ce80d1b7f02629c", "27ae3e4e09519cfbb04c329615203637"),
    ),
    mirrors=MNIST_MIRRORS,
)
FASHION_MNIST = IdxDataset(
    name="fashion-mnist",
    files=(
        IdxFile(TRAIN_IMAGES, "8d4fb7e6c68d591d4c3dfef9ec88bf0d", "f4a8712d7a061bf5bd6d2ca38dc4d50a"),
        IdxFile(TRAIN_LABELS, "25c81989df183df01b3e8a0aad5dffbe", "9018921c3c673c538a1fc5bad174d6f9"),
        IdxFile(TEST_IMAGES, "bef4ecab320f06d8554ea6380940ec79", "8181f5470baa50b63fa0f6fddb340f0a"),
        IdxFile(TEST_LABELS, "bb300cfdad3c16e7a12a480ee83cd310", "15d484375f8d13e6eb1aabb0c3f46965"),
    ),
    mirrors=FASHION_MNIST_MIRRORS,
    system_dirs=FASHION_MNIST_SYSTEM_DIRS,
    hints=(
        "install the Debian package: apt-get install dataset-fashion-mnist "
        "(puts the files in /usr/share/datasets/fashion-mnist)",
    ),
)
# The registry the public functions use; tests swap entries with monkeypatch.setitem.
SPECS: dict[str, IdxDataset] = {MNIST.name: MNIST, FASHION_MNIST.name: FASHION_MNIST}


def cache_root() -> Path:
    """``${XDG_CACHE_HOME:-~/.cache}/dlbench`` (a relative XDG path is ignored, per the spec)."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "dlbench"


def search_dirs(spec: IdxDataset, data_dir: str | Path | None = None) -> list[Path]:
    """The directories searched for ``spec``, in order, without duplicates."""
    dirs: list[Path] = []
    for root in (data_dir, os.environ.get("DLBENCH_DATA")):
        if root:  # None or "" means not given
            # Absolute: workers may run in another working directory.
            root = Path(root).expanduser().absolute()
            dirs += [root, root / spec.name]
    dirs.append(cache_root() / spec.name)
    dirs += [Path(d) for d in spec.system_dirs]
    return list(dict.fromkeys(dirs))


def find_file(directory: Path, f: IdxFile) -> Path | None:
    """``directory``'s copy of ``f``: the .gz when present, else the plain file."""
    for candidate in (directory / f.gz_name, directory / f.name):
        if candidate.is_file():
            return candidate
    return None


def missing_files(spec: IdxDataset, directory: Path) -> list[str]:
    """Names of ``spec``'s files that ``directory`` lacks (in either form)."""
    return [f.name for f in spec.files if find_file(directory, f) is None]


def locate(spec: IdxDataset, data_dir: str | Path | None = None) -> tuple[Path | None, list[Path]]:
    """The first searched directory holding every file (or None), and all places searched.

    Only presence is checked here (cheap); digests are checked by ``verified_bytes``.
    """
    searched: list[Path] = []
    for d in search_dirs(spec, data_dir):
        searched.append(d)
        if d.is_dir() and not missing_files(spec, d):
            return d, searched
    return None, searched


def verified_bytes(path: Path, f: IdxFile) -> bytes:
    """The uncompressed IDX bytes of ``path`` after checking them against ``f``'s digests.

    A gzip file passes when its own md5 is the published one (the common case:
    one md5 over the small compressed file) or, failing that, when its content
    is the published uncompressed data. Anything else is ``ChecksumMismatch``
    naming the file, the expected and the actual digests.
    """
    stored = path.read_bytes()
    stored_md5 = fetch.bytes_digest(stored)
    if is_gzip(stored):
        try:
            raw = idx_bytes(path)  # bounded: a gzip bomb in the data directory is refused, not inflated
        except (IdxFormatError, bounded.DataLimitError) as exc:
            raise ChecksumMismatch(
                f"{path}: corrupt file: expected md5 {f.gz_md5}, got {stored_md5} ({exc}); delete it and fetch it again"
            ) from exc
        if stored_md5 == f.gz_md5:
            return raw
        raw_md5 = fetch.bytes_digest(raw)
        if raw_md5 == f.raw_md5:
            return raw
        raise ChecksumMismatch(
            f"{path}: checksum mismatch: expected md5 {f.gz_md5} (published .gz) or "
            f"{f.raw_md5} (uncompressed content), got {stored_md5} (file) and "
            f"{raw_md5} (uncompressed content); delete it and fetch it again"
        )
    if stored_md5 != f.raw_md5:
        raise ChecksumMismatch(
            f"{path}: checksum mismatch: expected md5 {f.raw_md5} (uncompressed IDX), got "
            f"{stored_md5}; delete it and fetch it again"
        )
    return stored


def verify(spec: IdxDataset, directory: Path) -> None:
    """Check every file of ``spec`` in ``directory`` (raises on the first bad one)."""
    for f in spec.files:
        path = find_file(directory, f)
        if path is None:
            raise DatasetNotFound(f"{directory}: {f.name}(.gz) is missing")
        if path.name == f.gz_name and fetch.file_digest(path) == f.gz_md5:
            continue  # the published file itself: no need to decompress it here
        verified_bytes(path, f)


def download_missing(
    spec: IdxDataset, directory: Path, *, progress: fetch.ProgressFn | None = None, timeout: float = 60.0
) -> None:
    """Fetch each of ``spec``'s files that ``directory`` lacks, trying the mirrors in order."""
    for f in spec.files:
        if find_file(directory, f) is None:
            urls = [fetch.join_url(m, f.gz_name) for m in spec.mirrors]
            fetch.download(urls, directory / f.gz_name, f.gz_md5, progress=progress, timeout=timeout)


def not_found_message(spec: IdxDataset, searched: list[Path], problem: str | None = None) -> str:
    """Why ``spec`` was not found: every place searched (with what it lacks) and how to get it."""
    names = ", ".join(f.gz_name for f in spec.files)
    lines = [
        f"dataset {spec.name!r} not found; it needs the files {names} "
        "(gzipped or not) in one directory. Searched, in order:"
    ]
    for d in searched:
        if not d.is_dir():
            state = "no such directory"
        else:
            state = "missing " + ", ".join(missing_files(spec, d))
        lines.append(f"  {d}  ({state})")
    if problem:
        lines.append(problem)
    lines.append("To get it, any one of:")
    lines += [f"  - {h}" for h in spec.hints]
    lines += [
        f"  - put the files in a directory and pass it with --data-dir DIR (DIR or DIR/{spec.name})",
        f"  - set DLBENCH_DATA=DIR (DIR or DIR/{spec.name})",
        f"  - let dlbench download them (needs network) into {cache_root() / spec.name} from {', '.join(spec.mirrors)}",
    ]
    return "\n".join(lines)


def ensure(
    spec: IdxDataset,
    data_dir: str | Path | None = None,
    *,
    download: bool = True,
    progress: fetch.ProgressFn | None = None,
    timeout: float = 60.0,
) -> Path:
    """Find ``spec``'s files (downloading them into the cache when allowed) and verify them."""
    found, searched = locate(spec, data_dir)
    if found is not None:
        verify(spec, found)
        return found
    if not download:
        raise DatasetNotFound(not_found_message(spec, searched, "Download was not allowed."))
    target = cache_root() / spec.name
    try:
        download_missing(spec, target, progress=progress, timeout=timeout)
    except DownloadError as exc:
        raise DatasetNotFound(not_found_message(spec, searched, f"Download failed: {exc}")) from exc
    verify(spec, target)  # also catches a bad file left in the cache by hand
    return target


def _images(raw: bytes, source: Path) -> np.ndarray:
    u8 = parse_idx(raw, source)
    if u8.dtype != np.uint8 or u8.shape[1:] != SHAPE[:2]:
        raise IdxFormatError(
            f"{source}: expected uint8 images of {SHAPE[0]}x{SHAPE[1]}, got {u8.dtype} of shape {u8.shape}"
        )
    x = u8.astype(np.float32)[..., np.newaxis]
    x /= np.float32(255.0)  # in place: no float64 temporary of the whole set
    return x


def _labels(raw: bytes, source: Path, count: int) -> np.ndarray:
    u8 = parse_idx(raw, source)
    if u8.dtype != np.uint8 or u8.shape != (count,):
        raise IdxFormatError(f"{source}: expected {count} uint8 labels, got {u8.dtype} of shape {u8.shape}")
    if count and int(u8.max()) >= CLASSES:
        raise IdxFormatError(f"{source}: label {int(u8.max())} outside 0..{CLASSES - 1}")
    return u8.astype(np.int64)


def load(spec: IdxDataset, data_dir: str | Path | None = None) -> Arrays:
    """The dataset as float32 NHWC images in [0, 1] and int64 labels (no download)."""
    found, searched = locate(spec, data_dir)
    if found is None:
        raise DatasetNotFound(
            not_found_message(
                spec,
                searched,
                "Workers never download: run `dlbench run` (which fetches data "
                "before any trial) or fetch it as described below.",
            )
        )
    by_name = {f.name: f for f in spec.files}
    splits = []
    for images_name, labels_name in ((TRAIN_IMAGES, TRAIN_LABELS), (TEST_IMAGES, TEST_LABELS)):
        ipath = find_file(found, by_name[images_name])
        lpath = find_file(found, by_name[labels_name])
        if ipath is None or lpath is None:  # removed since locate() looked
            raise DatasetNotFound(f"{found}: {images_name} or {labels_name} disappeared")
        x = _images(verified_bytes(ipath, by_name[images_name]), ipath)
        y = _labels(verified_bytes(lpath, by_name[labels_name]), lpath, x.shape[0])
        splits.append(ArraySplit(x, y))
    return Arrays(spec.name, splits[0], splits[1], CLASSES)
