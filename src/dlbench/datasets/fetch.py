"""Getting dataset files onto this machine, and the errors for missing or bad data.

``download`` tries each mirror in turn through pooch (``pooch.retrieve`` with its
HTTP downloader, which streams over requests into a temporary file in the
destination directory and moves it into place only once the download step has
finished). The download step here wraps pooch's: it checks the digest against
the published one, makes the file durable (fsync) and readable by all (0644)
while it still has its temporary name, so that the move puts verified bytes in
place with their final mode in one rename. Whatever goes wrong, pooch removes
its temporary file and nothing is left under the final name, so a later run
never mistakes a broken download for data.

A transient failure (the connection refused or dropped, a timeout, a body cut
short, HTTP 408, 425, 429 or 5xx) is retried on the same mirror, ``RETRIES``
more times with waits of ``BACKOFF``, 2 x ``BACKOFF``, ... seconds; a permanent
one (another HTTP error, a wrong checksum, a malformed URL, a local file error)
moves on to the next mirror at once. When every mirror has failed,
``DownloadError`` names each URL, what went wrong and how many attempts it had.

What stays here rather than in pooch, and why:
- The checksum: pooch's own check calls hashlib's constructors without
  ``usedforsecurity=False``, which a FIPS-mode Python refuses for md5, the digest
  MNIST and CIFAR-10 publish. So pooch is given no hash (``known_hash=None``) and
  the digest is checked in the download step, before pooch's move.
- Retries: ``pooch.retrieve`` has none, and ``Pooch(retry_if_failed=n)`` retries
  every failure alike (a 404 and a wrong checksum too) with fixed waits; a mirror
  that answers 404 should give way to the next one at once.
- Mirrors: pooch fetches one URL per file.
- Error messages: one line per URL, from requests' exceptions.

Runs in the parent process before any trial.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dlbench.version import __version__

# progress(file name, bytes received so far, total bytes or None when unknown)
ProgressFn = Callable[[str, int, int | None], None]

_CHUNK = 1 << 20
RETRIES = 2  # further attempts on one mirror after a transient failure: 3 in all
BACKOFF = 1.0  # seconds before the first retry, doubled before each further one
_TRANSIENT_HTTP = frozenset({408, 425, 429, 500, 502, 503, 504})
_sleep = time.sleep  # the tests replace it: retries without real waits


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


class _WrongChecksum(Exception):
    pass


class _Progress:
    """pooch's progress-bar protocol (``total``, ``update``, ``reset``, ``close``)
    turned into dlbench's ``progress(name, received, total)`` calls.

    pooch's downloader counts each chunk as its full chunk size, so ``received`` is
    capped at the total; the download step reports the true final size itself, and
    pooch's closing ``reset()``/``update(total)`` is ignored."""

    def __init__(self, name: str, report: ProgressFn) -> None:
        self.name, self.report = name, report
        self.received, self.done = 0, False
        self.size: int | None = None

    @property
    def total(self) -> int | None:
        return self.size

    @total.setter
    def total(self, total: int) -> None:  # set by pooch once the headers are in: 0 when unknown
        self.size, self.received, self.done = total or None, 0, False
        self.report(self.name, 0, self.size)

    def update(self, n: int) -> None:
        if self.done:
            return
        self.received += n
        if self.size is not None:
            self.received = min(self.received, self.size)
        self.report(self.name, self.received, self.size)

    def reset(self) -> None:
        self.done = True

    def close(self) -> None:
        pass


class _VerifiedDownload:
    """pooch's HTTP downloader, then, on the temporary file before pooch moves it:
    the digest checked (``_WrongChecksum`` otherwise, and pooch deletes the file),
    the bytes synced to disk and the mode set to 0644 (the temporary file is 0600,
    and a dataset is not a secret)."""

    def __init__(self, name: str, digest: str, algorithm: str, timeout: float, progress: ProgressFn | None) -> None:
        import pooch

        self.name, self.digest, self.algorithm = name, digest, algorithm
        self.bar = _Progress(name, progress) if progress is not None else False
        self.http = pooch.HTTPDownloader(
            progressbar=self.bar,
            chunk_size=_CHUNK,
            timeout=timeout,
            headers={"User-Agent": f"dlbench/{__version__} (+pooch/{pooch.__version__})"},
        )

    def __call__(self, url: str, output_file: str, pooch_instance: Any) -> None:
        self.http(url, output_file, pooch_instance)
        size = os.path.getsize(output_file)
        if isinstance(self.bar, _Progress) and self.bar.received != size:  # the true count, once
            self.bar.received = size
            self.bar.report(self.name, size, self.bar.size)
        actual = file_digest(output_file, self.algorithm)
        if actual != self.digest.lower():
            raise _WrongChecksum(
                f"wrong {self.algorithm} checksum: expected {self.digest}, got {actual} ({size} bytes)"
            )
        with open(output_file, "rb") as f:
            os.fsync(f.fileno())
        os.chmod(output_file, 0o644)


@contextmanager
def _quiet_pooch() -> Iterator[None]:
    """pooch logs every download at INFO to standard error; dlbench reports its own."""
    import pooch

    logger = pooch.get_logger()
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)


def _chain(exc: BaseException) -> Iterator[Any]:
    """The exception, the exceptions and objects in its args, their reasons and
    causes: requests wraps urllib3's errors, which wrap the socket's."""
    seen: set[int] = set()
    todo: list[Any] = [exc]
    while todo:
        x = todo.pop(0)
        if id(x) in seen:
            continue
        seen.add(id(x))
        yield x
        if isinstance(x, BaseException):
            todo += [*x.args, getattr(x, "reason", None), x.__cause__, x.__context__]


def _http_status(exc: BaseException) -> int | None:
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


def _incomplete(exc: BaseException) -> tuple[int, int] | None:
    """(received, total) of a body cut short: urllib3's IncompleteRead (bytes read, bytes still expected)."""
    for x in _chain(exc):
        partial, expected = getattr(x, "partial", None), getattr(x, "expected", None)
        if isinstance(partial, int) and isinstance(expected, int):
            return partial, partial + expected
    return None


def _timed_out(exc: BaseException) -> bool:
    return any(isinstance(x, TimeoutError) or "Timeout" in type(x).__name__ for x in _chain(exc))


def _transient(exc: BaseException) -> bool:
    """Worth another attempt on the same mirror."""
    import requests

    if isinstance(exc, requests.HTTPError):
        return _http_status(exc) in _TRANSIENT_HTTP
    return isinstance(exc, requests.ConnectionError | requests.Timeout | requests.exceptions.ChunkedEncodingError)


def _describe(exc: BaseException, timeout: float) -> str:
    import requests

    if isinstance(exc, requests.HTTPError) and exc.response is not None:
        return f"HTTP {exc.response.status_code} {exc.response.reason}"
    cut = _incomplete(exc)
    if cut is not None:
        return f"transfer interrupted: received {cut[0]} of {cut[1]} bytes (Content-Length)"
    if isinstance(exc, requests.exceptions.ChunkedEncodingError):
        return f"transfer interrupted: {exc}"
    if _timed_out(exc):
        return f"timed out: no data for {timeout:g} s"
    if isinstance(exc, requests.ConnectionError):
        # The innermost OSError says what happened (refused, no such host, reset), without urllib3's wrapping.
        chain = list(_chain(exc))
        reasons = [x for x in chain if isinstance(x, OSError) and not isinstance(x, requests.RequestException)]
        reason = reasons[-1] if reasons else exc
        connecting = any(type(x).__name__ in ("NewConnectionError", "NameResolutionError") for x in chain)
        return f"{'cannot connect' if connecting else 'connection lost'}: {reason}"
    if isinstance(exc, _WrongChecksum):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def download(
    urls: Sequence[str],
    dest: str | Path,
    digest: str,
    *,
    algorithm: str = "md5",
    timeout: float = 60.0,
    progress: ProgressFn | None = None,
    retries: int | None = None,
    backoff: float | None = None,
) -> Path:
    """Download ``dest`` from the first of ``urls`` that delivers the right bytes.

    ``digest`` is the expected hex digest (``algorithm``, md5 by default since
    that is what MNIST and Fashion-MNIST publish). Each URL is tried in order: a
    transient failure (connection refused or dropped, a timeout, a short body,
    HTTP 408/425/429/5xx) is retried on the same URL up to ``retries`` more times
    (default ``RETRIES``) after waits of ``backoff``, 2 x ``backoff``, ... seconds
    (default ``BACKOFF``); any other HTTP error or a digest mismatch moves on to
    the next URL at once. Returns ``dest`` once it holds verified bytes (at once,
    fetching nothing, when it already does; a file there with other bytes is not
    the data and is removed first); raises ``DownloadError`` naming every URL
    tried, its failure and its number of attempts.
    """
    import pooch
    import requests

    if not urls:
        raise ValueError("download needs at least one URL")
    retries = RETRIES if retries is None else retries
    backoff = BACKOFF if backoff is None else backoff
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    if dest.exists():
        if file_digest(dest, algorithm) == digest.lower():
            return dest
        dest.unlink()  # pooch (given no hash: see the module's docstring) would keep any file it finds
    failures: list[str] = []
    for url in urls:
        for attempt in range(1 + retries):
            try:
                with _quiet_pooch():
                    pooch.retrieve(
                        url,
                        known_hash=None,
                        fname=dest.name,
                        path=dest.parent,
                        downloader=_VerifiedDownload(dest.name, digest, algorithm, timeout, progress),
                    )
                return dest
            except (OSError, requests.RequestException, _WrongChecksum, ValueError) as exc:
                # RequestException is an OSError; ValueError: requests' answer to some malformed URLs.
                if attempt < retries and _transient(exc):
                    _sleep(backoff * 2**attempt)
                    continue
                tries = f" ({attempt + 1} attempts)" if attempt else ""
                failures.append(f"{url}: {_describe(exc, timeout)}{tries}")
                break
    raise DownloadError(f"could not download {dest.name} to {dest.parent}:\n  " + "\n  ".join(failures))
