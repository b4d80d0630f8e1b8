"""Getting dataset files onto this machine, and the errors for missing or bad data.

``download`` tries each mirror in turn, streams the body into a temporary file
in the destination directory while hashing it, checks the byte count against
Content-Length and the digest against the published one, and only then moves
the file into place with ``os.replace`` (atomic on one filesystem). Whatever
goes wrong, no partial or unverified file is left under the final name, nor any
temporary file, so a later run never mistakes a broken download for data.

Runs in the parent process before any trial; standard library only.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from dlbench.version import __version__

# progress(file name, bytes received so far, total bytes or None when unknown)
ProgressFn = Callable[[str, int, int | None], None]

_CHUNK = 1 << 20
_USER_AGENT = f"dlbench/{__version__} (+urllib)"


class DatasetError(Exception):
    """Base class for dataset problems the user has to act on."""


class DatasetNotFound(DatasetError):
    """The dataset's files are in none of the places searched (and were not downloaded)."""


class ChecksumMismatch(DatasetError):
    """A local dataset file exists but its content is not the published one."""


class DownloadError(DatasetError):
    """Every mirror failed; the message names each URL and what went wrong."""


def new_hash(algorithm: str) -> Any:
    # usedforsecurity=False: md5 is the published checksum, not a security
    # measure, and FIPS-mode Pythons refuse md5 without the flag.
    return hashlib.new(algorithm, usedforsecurity=False)


def bytes_digest(data: bytes, algorithm: str = "md5") -> str:
    """Hex digest of in-memory bytes."""
    h = new_hash(algorithm)
    h.update(data)
    return h.hexdigest()


def file_digest(path: str | Path, algorithm: str = "md5") -> str:
    """Hex digest of a file, read in chunks."""
    h = new_hash(algorithm)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def join_url(base: str, filename: str) -> str:
    """``base`` (a mirror, with or without trailing slash) + ``filename``."""
    return base.rstrip("/") + "/" + filename


def _fetch_to(url: str, out, name: str, algorithm: str, timeout: float, progress: ProgressFn | None) -> tuple[str, int]:
    """Stream ``url`` into the open file ``out``; returns (hex digest, bytes).

    Raises OSError-family errors (HTTPError, URLError, TimeoutError) or
    ``_Incomplete`` for a body shorter than its Content-Length: http.client does
    not raise on a connection closed early when reading in chunks, it just
    returns b"", so the length check has to be done here.
    """
    request = urllib.request.Request(url, headers={"User-Agent": _USER_AGENT})
    h = new_hash(algorithm)
    received = 0
    with urllib.request.urlopen(request, timeout=timeout) as response:
        length = response.headers.get("Content-Length")
        total = int(length) if length is not None and length.isdigit() else None
        if progress is not None:
            progress(name, 0, total)
        while True:
            chunk = response.read(_CHUNK)
            if not chunk:
                break
            out.write(chunk)
            h.update(chunk)
            received += len(chunk)
            if progress is not None:
                progress(name, received, total)
    if total is not None and received != total:
        raise _Incomplete(f"transfer interrupted: received {received} of {total} bytes (Content-Length)")
    return h.hexdigest(), received


class _Incomplete(Exception):
    pass


def _describe(exc: BaseException, timeout: float) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}"
    if isinstance(exc, TimeoutError) or (
        isinstance(exc, urllib.error.URLError) and isinstance(exc.reason, TimeoutError)
    ):
        return f"timed out: no data for {timeout:g} s"
    if isinstance(exc, urllib.error.URLError):
        return f"cannot connect: {exc.reason}"
    if isinstance(exc, _Incomplete):
        return str(exc)
    if isinstance(exc, http.client.IncompleteRead):
        return f"transfer interrupted: {exc!r}"
    return f"{type(exc).__name__}: {exc}"


def download(
    urls: Sequence[str],
    dest: str | Path,
    digest: str,
    *,
    algorithm: str = "md5",
    timeout: float = 60.0,
    progress: ProgressFn | None = None,
) -> Path:
    """Download ``dest`` from the first of ``urls`` that delivers the right bytes.

    ``digest`` is the expected hex digest (``algorithm``, md5 by default since
    that is what MNIST and Fashion-MNIST publish). Each URL is tried in order;
    on an HTTP error, a connection failure, a timeout, a short body or a digest
    mismatch the next one is tried. Returns ``dest`` once it holds verified
    bytes; raises ``DownloadError`` naming every URL tried and its failure.
    """
    if not urls:
        raise ValueError("download needs at least one URL")
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    failures: list[str] = []
    for url in urls:
        # The temporary file lives next to dest so that os.replace is a rename
        # within one filesystem (atomic), and starts with "." so that a
        # directory listing never shows it as a dataset file.
        fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
        tmp = Path(tmp_name)
        try:
            with os.fdopen(fd, "wb") as out:
                actual, size = _fetch_to(url, out, dest.name, algorithm, timeout, progress)
                out.flush()
                os.fsync(out.fileno())
            if actual != digest.lower():
                failures.append(f"{url}: wrong {algorithm} checksum: expected {digest}, got {actual} ({size} bytes)")
                continue
            # mkstemp makes the file private (0600); a dataset is not a secret.
            os.chmod(tmp, 0o644)
            os.replace(tmp, dest)
            return dest
        except (OSError, http.client.HTTPException, _Incomplete, ValueError) as exc:
            # HTTPException: e.g. IncompleteRead in a chunked body; ValueError:
            # urllib's answer to a malformed URL.
            failures.append(f"{url}: {_describe(exc, timeout)}")
        finally:
            tmp.unlink(missing_ok=True)
    raise DownloadError(f"could not download {dest.name} to {dest.parent}:\n  " + "\n  ".join(failures))
