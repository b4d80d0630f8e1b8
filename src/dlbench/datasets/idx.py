"""Reader for the IDX file format used by MNIST and Fashion-MNIST.

An IDX file is a 4-byte magic number (two zero bytes, a type code, the number
of dimensions), one big-endian uint32 per dimension, then the values in C order
and big-endian byte order. Files may be gzip-compressed; compression is
recognised by the gzip magic bytes, not by the file name, because copies in the
wild are named both ways.

Parsing is one ``np.frombuffer`` over the payload: no per-sample Python.
"""

from __future__ import annotations

import gzip
import struct
import zlib
from pathlib import Path

import numpy as np

# IDX type code -> big-endian numpy dtype (from the format's definition).
IDX_DTYPES: dict[int, np.dtype] = {
    0x08: np.dtype(">u1"),
    0x09: np.dtype(">i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}
_GZIP_MAGIC = b"\x1f\x8b"
_HEADER = 4


class IdxFormatError(ValueError):
    """A file is not a well-formed IDX file (the message names the file)."""


def is_gzip(data: bytes) -> bool:
    """Whether ``data`` starts with the gzip magic bytes."""
    return data[:2] == _GZIP_MAGIC


def decompress(data: bytes, source: str | Path) -> bytes:
    """The IDX bytes of a file's content: gunzipped when it is gzip data.

    A truncated or damaged gzip stream is an ``IdxFormatError`` naming ``source``
    rather than a bare ``EOFError``/``zlib.error`` from deep inside gzip.
    """
    if not is_gzip(data):
        return data
    try:
        return gzip.decompress(data)
    except (EOFError, OSError, zlib.error) as exc:
        raise IdxFormatError(f"{source}: damaged gzip data ({exc})") from exc


def parse_idx(data: bytes, source: str | Path = "<bytes>") -> np.ndarray:
    """Parse uncompressed IDX bytes into an array of the file's shape.

    Checks the magic number, the type code, every dimension and that the payload
    is exactly as long as the dimensions say (a truncated download or a file with
    trailing garbage fails here, not later as a silently misshaped array).
    Single-byte types come back as a read-only view of ``data``; wider types are
    converted once to native byte order.
    """
    if len(data) < _HEADER:
        raise IdxFormatError(f"{source}: {len(data)} bytes is too short for an IDX header")
    zero0, zero1, code, ndim = data[0], data[1], data[2], data[3]
    if zero0 != 0 or zero1 != 0:
        raise IdxFormatError(
            f"{source}: bad IDX magic number 0x{data[:4].hex()} (must start with two zero bytes; is it an IDX file?)"
        )
    if code not in IDX_DTYPES:
        known = ", ".join(f"0x{c:02X}" for c in IDX_DTYPES)
        raise IdxFormatError(f"{source}: unknown IDX type code 0x{code:02X} (known: {known})")
    if ndim == 0:
        raise IdxFormatError(f"{source}: IDX header declares 0 dimensions")
    header_len = _HEADER + 4 * ndim
    if len(data) < header_len:
        raise IdxFormatError(
            f"{source}: truncated IDX header: {ndim} dimensions need {header_len} bytes, file has {len(data)}"
        )
    shape = struct.unpack(f">{ndim}I", data[_HEADER:header_len])
    dtype = IDX_DTYPES[code]
    expected = header_len + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(data) != expected:
        what = "truncated" if len(data) < expected else "has trailing bytes"
        raise IdxFormatError(
            f"{source}: IDX file {what}: shape {shape} of {dtype.name} needs {expected} bytes, file has {len(data)}"
        )
    array = np.frombuffer(data, dtype=dtype, offset=header_len).reshape(shape)
    if dtype.itemsize > 1:
        array = array.astype(dtype.newbyteorder("="))
    return array


def read_idx(path: str | Path) -> np.ndarray:
    """Read an IDX file, gzip-compressed or plain, into an array."""
    path = Path(path)
    return parse_idx(decompress(path.read_bytes(), path), path)


def encode_idx(array: np.ndarray) -> bytes:
    """The IDX bytes of ``array`` (used to write test fixtures and converted copies)."""
    array = np.asarray(array)
    found = [(c, d) for c, d in IDX_DTYPES.items() if array.dtype.kind == d.kind and array.dtype.itemsize == d.itemsize]
    if not found:
        raise ValueError(f"dtype {array.dtype} has no IDX type code")
    code, dtype = found[0]
    if not 1 <= array.ndim <= 255:
        raise ValueError(f"IDX needs 1 to 255 dimensions, got {array.ndim}")
    header = bytes((0, 0, code, array.ndim)) + struct.pack(f">{array.ndim}I", *array.shape)
    return header + np.ascontiguousarray(array, dtype=dtype).tobytes()
