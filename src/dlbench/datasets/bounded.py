"""Limits on what a data file may make dlbench allocate, checked before it allocates.

A header declares a shape and a compressed stream may inflate to far more than its
file: a 1 MB gzip once made `plan` hold 9.5 GB. Every reader checks the size a file
declares against three things before it allocates: the file's real size (plain
files must hold exactly what they declare), a compression ratio no real dataset
reaches (only above INFLATION_FLOOR bytes, where it matters), and a stated ceiling
and the memory this machine has available. Compressed data is inflated in chunks,
never past what was declared.
"""

from __future__ import annotations

MAX_ARRAY_BYTES = 64 * 2**30  # one array held in memory; DLBENCH_MAX_ARRAY_BYTES raises it
# Real datasets compress by 2-10x (MNIST's images 4.7x); a zip or gzip bomb by ~1000x.
MAX_INFLATION = 200
INFLATION_FLOOR = 64 * 2**20  # below this a high ratio (an all-zero test array) costs nothing
CHUNK = 2**20


class DataLimitError(ValueError):
    """A file that declares more than may be allocated for it (the message says why)."""


def _gib(n: int) -> str:
    return f"{n / 2**30:.3g} GiB" if n >= 2**30 else f"{n / 2**20:.3g} MiB" if n >= 2**20 else f"{n} bytes"


def max_array_bytes() -> int:
    import os

    text = os.environ.get("DLBENCH_MAX_ARRAY_BYTES", "")
    return int(text) if text.isdigit() and int(text) > 0 else MAX_ARRAY_BYTES


def check_declared(source: object, what: str, nbytes: int, compressed: int | None = None) -> None:
    """Refuse `what` of `source` declaring `nbytes` (inflated from `compressed` bytes)."""
    import psutil

    limit = max_array_bytes()
    if nbytes > limit:
        raise DataLimitError(
            f"{source}: {what} declares {_gib(nbytes)}; at most {_gib(limit)} per array "
            "(DLBENCH_MAX_ARRAY_BYTES raises the limit)"
        )
    if compressed is not None and nbytes > INFLATION_FLOOR and nbytes > MAX_INFLATION * max(compressed, 1):
        raise DataLimitError(
            f"{source}: {what} declares {_gib(nbytes)} from {_gib(compressed)} of compressed data "
            f"({nbytes / max(compressed, 1):.0f}:1); real datasets compress less than {MAX_INFLATION}:1"
        )
    available = psutil.virtual_memory().available
    if nbytes > available:
        raise DataLimitError(
            f"{source}: {what} declares {_gib(nbytes)}; this machine has {_gib(available)} of memory available"
        )
