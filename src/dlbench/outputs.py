"""Where dlbench writes what it makes: never over results, and always whole.

Every file a command writes on request (an export, a report, an explain report,
LaTeX tables) goes through here. Two rules:

- A destination that holds results is refused before anything is written: an
  SQLite file (any dlbench database is one; its first 16 bytes say so), the
  database the command reads (also under another name: a link, `./`), its
  journal or WAL, a directory, or a special file (a FIFO, a device).
- The bytes go to a temporary file in the destination's directory, which is
  renamed over the destination only once it is complete. A full disk or a crash
  mid-write leaves the previous file as it was (rename is atomic within a
  filesystem on POSIX), and at most a stray `.partial` file that says what it is.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

SQLITE_MAGIC = b"SQLite format 3\x00"
SIDECARS = ("", "-wal", "-shm", "-journal")  # SQLite's own files beside a database


class OutputRefused(OSError):
    """A destination that would overwrite results or cannot be a file; the message says why."""


def same_file(a: Path, b: Path) -> bool:
    """The two paths name one file (a link or ./ included), or would once created."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        pass
    try:
        return a.resolve() == b.resolve()
    except (OSError, RuntimeError):  # a symbolic link loop: compare the names as written
        return os.path.abspath(a) == os.path.abspath(b)


def check(path: Path, reading: Iterable[str | Path] = ()) -> None:
    """Raise OutputRefused when writing `path` could destroy results or is no file at all.

    `reading`: the databases the command reads (SQLite paths; URLs are skipped)."""
    for db in reading:
        text = str(db)
        if "://" in text:
            continue
        for suffix in SIDECARS:
            if same_file(path, Path(text + suffix)):
                what = "the results database this command reads" if not suffix else f"its SQLite {suffix[1:]} file"
                raise OutputRefused(f"{path} is {what} ({text}): results are never written over; choose another file")
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        if not path.parent.is_dir():
            raise OutputRefused(f"{path}: no directory {path.parent} to write into (create it first)") from None
        return
    except OSError as exc:
        raise OutputRefused(f"{path}: cannot be checked ({exc.strerror or exc})") from None
    if stat.S_ISDIR(mode):
        raise OutputRefused(f"{path} is a directory: give a file name inside it")
    if not stat.S_ISREG(mode):
        raise OutputRefused(f"{path} is a special file (a FIFO or a device), not a file dlbench writes")
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(SQLITE_MAGIC))
    except OSError as exc:
        raise OutputRefused(f"{path}: cannot be read to check what it holds ({exc.strerror or exc})") from None
    if head == SQLITE_MAGIC:
        raise OutputRefused(
            f"{path} is an SQLite database (a dlbench results file?): results are never written over; "
            "choose another file or remove it yourself"
        )


def write_with(path: Path, writer: Callable[[Path], None], reading: Iterable[str | Path] = ()) -> None:
    """Check `path`, let `writer` write a temporary file beside it, then rename it into place.

    OutputRefused for a refused destination; OSError (and whatever `writer` raises)
    after removing the temporary file, with `path` untouched."""
    check(path, reading)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        writer(tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        if path.exists():
            os.chmod(tmp, stat.S_IMODE(path.stat().st_mode))
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a new report is an ordinary file
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text(path: Path, text: str, reading: Iterable[str | Path] = ()) -> None:
    """`text` as UTF-8 into `path`, whole or not at all (see write_with)."""

    def write(tmp: Path) -> None:
        tmp.write_text(text, encoding="utf-8")

    write_with(path, write, reading)
