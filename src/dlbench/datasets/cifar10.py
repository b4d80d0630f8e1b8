"""CIFAR-10 from its official *binary* distribution: finding, verifying, fetching, loading.

The archive ``cifar-10-binary.tar.gz`` (one published md5) holds the folder
``cifar-10-batches-bin/`` with five training batches ``data_batch_{1..5}.bin``
and ``test_batch.bin``. Each batch is a run of 3073-byte records: one label
byte (0..9), then a 32x32 image stored channel-planar (1024 red bytes, 1024
green, 1024 blue, each plane row-major). Parsing is one ``np.frombuffer`` per
file; nothing is ever unpickled (the Python distribution of CIFAR-10 is pickles,
which can run code on load, so it is deliberately not supported).

A directory *holds* CIFAR-10 when it contains, in order of preference,

1. the six ``.bin`` files themselves (``--data-dir`` pointing at the folder),
2. ``cifar-10-batches-bin/`` with the six files (the archive extracted there),
3. ``cifar-10-binary.tar.gz`` (read in memory when loaded, extracted by ``ensure``).

The directories searched are MNIST's (see ``dlbench.datasets.mnist``): ``data_dir``
and ``data_dir/cifar10``, ``$DLBENCH_DATA`` and ``$DLBENCH_DATA/cifar10``, then the
user cache ``${XDG_CACHE_HOME:-~/.cache}/dlbench/cifar10`` where downloads go.

The archive is checked against the published md5 and size. Extracted ``.bin``
files have no published digest; they are checked for whole records and labels
in range (a truncated file is named in the error).
"""

from __future__ import annotations

import os
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dlbench.datasets import fetch
from dlbench.datasets.arrays import Arrays, ArraySplit
from dlbench.datasets.fetch import ChecksumMismatch, DatasetError, DatasetNotFound, DownloadError
from dlbench.datasets.mnist import cache_root

SHAPE = (32, 32, 3)
CLASSES = 10
RECORD_BYTES = 1 + SHAPE[0] * SHAPE[1] * SHAPE[2]  # label byte + planar R, G, B
# Every official batch holds 10,000 records (and batches.meta.txt a few bytes): a member
# declaring more is refused before it is inflated (a tar.gz bomb inflates ~1000x).
MAX_MEMBER_BYTES = 10_000 * RECORD_BYTES
FOLDER = "cifar-10-batches-bin"
TRAIN_BATCHES = tuple(f"data_batch_{i}.bin" for i in range(1, 6))
TEST_BATCH = "test_batch.bin"
BATCHES = (*TRAIN_BATCHES, TEST_BATCH)
# Extracted along with the batches (class names, one per line); harmless text.
EXTRA_MEMBERS = ("batches.meta.txt",)


class CifarFormatError(DatasetError):
    """A CIFAR-10 file is not in the binary format (the message names the file)."""


@dataclass(frozen=True)
class CifarDataset:
    """Everything needed to find, verify and download the CIFAR-10 binary archive.

    Tests replace ``md5``, ``size`` or ``mirrors`` with ``dataclasses.replace``.
    """

    name: str
    archive: str
    md5: str  # published on https://www.cs.toronto.edu/~kriz/cifar.html
    size: int  # bytes of the published archive
    mirrors: tuple[str, ...]
    system_dirs: tuple[Path, ...] = ()


CIFAR10 = CifarDataset(
    name="cifar10",
    archive="cifar-10-binary.tar.gz",
    md5="c32a1d4ab5d03f1284b67883e8d87530",
    size=170052171,
    mirrors=("https://www.cs.toronto.edu/~kriz/",),
)
# The registry the public functions use; tests swap the entry with monkeypatch.setitem.
SPECS: dict[str, CifarDataset] = {CIFAR10.name: CIFAR10}


def search_dirs(spec: CifarDataset, data_dir: str | Path | None = None) -> list[Path]:
    """The directories searched, in order, without duplicates (MNIST's order)."""
    dirs: list[Path] = []
    for root in (data_dir, os.environ.get("DLBENCH_DATA")):
        if root:  # None or "" means not given
            root = Path(root).expanduser().absolute()  # workers may run elsewhere
            dirs += [root, root / spec.name]
    dirs.append(cache_root() / spec.name)
    dirs += [Path(d) for d in spec.system_dirs]
    return list(dict.fromkeys(dirs))


def _has_batches(directory: Path) -> bool:
    return all((directory / name).is_file() for name in BATCHES)


def find(spec: CifarDataset, directory: Path) -> tuple[str, Path] | None:
    """What ``directory`` holds: ("folder", dir with the .bin files), ("archive", tar.gz) or None."""
    if _has_batches(directory):
        return "folder", directory
    if _has_batches(directory / FOLDER):
        return "folder", directory / FOLDER
    if (directory / spec.archive).is_file():
        return "archive", directory / spec.archive
    return None


def locate(spec: CifarDataset, data_dir: str | Path | None = None) -> tuple[Path | None, list[Path]]:
    """The first searched directory holding the data (or None), and all places searched.

    The directory returned is the one with the ``.bin`` files, or the one with
    the archive. Only presence is checked here (cheap).
    """
    searched: list[Path] = []
    for d in search_dirs(spec, data_dir):
        searched.append(d)
        if d.is_dir() and (hit := find(spec, d)) is not None:
            return hit[1].parent if hit[0] == "archive" else hit[1], searched
    return None, searched


def verify_archive(spec: CifarDataset, path: Path) -> None:
    """Raise ``ChecksumMismatch`` unless ``path`` is the published archive (size, then md5)."""
    size = path.stat().st_size
    if size != spec.size:
        raise ChecksumMismatch(
            f"{path}: wrong size: expected {spec.size} bytes (the published "
            f"archive), got {size}; delete it and fetch it again"
        )
    actual = fetch.file_digest(path)
    if actual != spec.md5:
        raise ChecksumMismatch(
            f"{path}: checksum mismatch: expected md5 {spec.md5}, got {actual}; delete it and fetch it again"
        )


def _member_names() -> dict[str, str]:
    """Archive member name -> file name, for exactly the members we take out."""
    return {f"{FOLDER}/{name}": name for name in (*BATCHES, *EXTRA_MEMBERS)}


def read_archive(path: Path) -> dict[str, bytes]:
    """The batch files' bytes, read from the tar.gz in memory (file name -> bytes).

    Only regular-file members with the expected names are read: links, devices
    and any other name (``../x``, absolute paths) are ignored, so nothing outside
    the expected set can be produced whatever the archive contains.
    """
    wanted = _member_names()
    out: dict[str, bytes] = {}
    try:
        with tarfile.open(path, "r:gz") as tar:
            for member in tar:
                name = wanted.get(member.name)
                if name is None or not member.isfile():
                    continue
                if member.size > MAX_MEMBER_BYTES:
                    raise CifarFormatError(
                        f"{path}: member {member.name} declares {member.size} bytes; a CIFAR-10 batch holds at "
                        f"most {MAX_MEMBER_BYTES} (10,000 records): not the official archive"
                    )
                handle = tar.extractfile(member)
                if handle is not None:
                    out[name] = handle.read()
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise CifarFormatError(f"{path}: not a readable tar.gz archive ({exc})") from exc
    missing = [n for n in BATCHES if n not in out]
    if missing:
        raise CifarFormatError(f"{path}: archive lacks {', '.join(f'{FOLDER}/{n}' for n in missing)}")
    return out


def extract(path: Path, dest: Path) -> Path:
    """Write the archive's batch files into ``dest/cifar-10-batches-bin``; returns that folder.

    Each file goes to a temporary name first and is renamed into place, so an
    interrupted extraction never leaves a truncated batch under its real name.
    """
    contents = read_archive(path)
    for name in BATCHES:
        check_records(len(contents[name]), path / FOLDER / name)  # refuse to write a malformed batch
    folder = dest / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in contents.items():
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.chmod(tmp, 0o644)
            os.replace(tmp, folder / name)
        finally:
            Path(tmp).unlink(missing_ok=True)
    return folder


def check_records(nbytes: int, source: Path) -> int:
    """Records in a batch file of ``nbytes`` bytes; ``CifarFormatError`` naming ``source`` if bad."""
    if nbytes % RECORD_BYTES:
        raise CifarFormatError(
            f"{source}: {nbytes} bytes is not a whole number of {RECORD_BYTES}-byte records "
            f"(truncated or not a CIFAR-10 binary batch; {nbytes % RECORD_BYTES} bytes extra); "
            "delete it and fetch the archive again"
        )
    return nbytes // RECORD_BYTES


def parse_batches(parts: list[tuple[bytes, Path]]) -> ArraySplit:
    """Records of several batch files as one split: NHWC float32 in [0, 1], int64 labels."""
    counts = [check_records(len(data), source) for data, source in parts]
    x = np.empty((sum(counts), *SHAPE), dtype=np.float32)
    y = np.empty(sum(counts), dtype=np.int64)
    start = 0
    for (data, source), count in zip(parts, counts):
        records = np.frombuffer(data, dtype=np.uint8).reshape(count, RECORD_BYTES)
        labels = records[:, 0]
        if count and int(labels.max()) >= CLASSES:
            bad = int(np.argmax(labels >= CLASSES))
            raise CifarFormatError(f"{source}: record {bad} has label {int(labels[bad])}, outside 0..{CLASSES - 1}")
        planar = records[:, 1:].reshape(count, SHAPE[2], SHAPE[0], SHAPE[1])  # N, C, H, W
        x[start : start + count] = planar.transpose(0, 2, 3, 1)  # -> N, H, W, C (casts to float32)
        y[start : start + count] = labels
        start += count
    x /= np.float32(255.0)  # in place, as MNIST does: no float64 temporary of the whole set
    return ArraySplit(x, y)


def not_found_message(spec: CifarDataset, searched: list[Path], problem: str | None = None) -> str:
    """Why CIFAR-10 was not found: every place searched and how to get it."""
    lines = [
        f"dataset {spec.name!r} not found; it needs {', '.join(BATCHES)} (a directory "
        f"holding them, or its {FOLDER}/ subfolder) or the archive {spec.archive}. "
        "Searched, in order:"
    ]
    for d in searched:
        lines.append(f"  {d}  ({'no such directory' if not d.is_dir() else 'none of them'})")
    if problem:
        lines.append(problem)
    url = fetch.join_url(spec.mirrors[0], spec.archive) if spec.mirrors else spec.archive
    lines += [
        "To get it, any one of:",
        f"  - download {url} (md5 {spec.md5}, {spec.size} bytes) into a directory, "
        f"extracted or not, and pass it with --data-dir DIR (DIR or DIR/{spec.name})",
        f"  - set DLBENCH_DATA=DIR (DIR or DIR/{spec.name})",
        f"  - let dlbench download it (needs network) into {cache_root() / spec.name}",
    ]
    return "\n".join(lines)


def ensure(
    spec: CifarDataset,
    data_dir: str | Path | None = None,
    *,
    download: bool = True,
    progress: fetch.ProgressFn | None = None,
    timeout: float = 60.0,
) -> Path:
    """Find CIFAR-10 (downloading the archive into the cache when allowed) and check it.

    A found archive is verified, then extracted next to itself when that
    directory is writable, so that workers read plain files; otherwise workers
    read the archive in memory. Returns the directory ``locate`` will report.
    """
    found, searched = locate(spec, data_dir)
    if found is None:
        if not download:
            raise DatasetNotFound(not_found_message(spec, searched, "Download was not allowed."))
        target = cache_root() / spec.name
        try:
            fetch.download(
                [fetch.join_url(m, spec.archive) for m in spec.mirrors],
                target / spec.archive,
                spec.md5,
                progress=progress,
                timeout=timeout,
            )
        except DownloadError as exc:
            raise DatasetNotFound(not_found_message(spec, searched, f"Download failed: {exc}")) from exc
        found = target
    kind, path = find(spec, found) or ("missing", found)
    if kind == "archive":
        verify_archive(spec, path)
        if os.access(found, os.W_OK):
            return extract(path, found)
        read_archive(path)  # read-only place: at least prove the members are there
        return found
    if kind == "folder":
        for name in BATCHES:  # whole records only; cheap (sizes), no published digests
            check_records((path / name).stat().st_size, path / name)
        return path
    raise DatasetNotFound(not_found_message(spec, searched, f"{found}: files disappeared"))


def load(spec: CifarDataset, data_dir: str | Path | None = None) -> Arrays:
    """CIFAR-10 as float32 NHWC images in [0, 1] and int64 labels (never downloads)."""
    found, searched = locate(spec, data_dir)
    hit = find(spec, found) if found is not None else None
    if hit is None:
        raise DatasetNotFound(
            not_found_message(
                spec,
                searched,
                "Workers never download: run `dlbench run` (which fetches data "
                "before any trial) or fetch it as described below.",
            )
        )
    kind, path = hit
    if kind == "archive":
        verify_archive(spec, path)
        contents = read_archive(path)
        parts = {n: (contents[n], path / FOLDER / n) for n in BATCHES}
    else:
        parts = {n: ((path / n).read_bytes(), path / n) for n in BATCHES}
    train = parse_batches([parts[n] for n in TRAIN_BATCHES])
    test = parse_batches([parts[TEST_BATCH]])
    return Arrays(spec.name, train, test, CLASSES)
