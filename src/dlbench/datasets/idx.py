"""Reader for the IDX file format used by MNIST and Fashion-MNIST.

An IDX file is a 4-byte magic number (two zero bytes, a type code, the number
of dimensions), one big-endian uint32 per dimension, then the values in C order
and big-endian byte order. Files may be gzip-compressed; compression is
recognised by the gzip magic bytes, not by the file name, because copies in the
wild are named both ways.

Parsing is one ``np.frombuffer`` over the payload: no per-sample Python. Files are
read through ``idx_bytes``: the header first, its declared size checked against the
file and dlbench.datasets.bounded's limits, then never more than it declares.
"""

from __future__ import annotations

import gzip
import math
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from dlbench.datasets import bounded

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
    shape, dtype, header_len = header(data, source)
    expected = _declared_length(shape, dtype, header_len)
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
    """Read an IDX file, gzip-compressed or plain, into an array (bounded: idx_bytes)."""
    path = Path(path)
    return parse_idx(idx_bytes(path), path)


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


def header(data: bytes, source: str | Path = "<bytes>") -> tuple[tuple[int, ...], np.dtype, int]:
    """(shape, dtype, header length) from the first bytes of IDX data; the dimensions'
    product is a Python int (no 64-bit overflow) and is checked by the caller."""
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
    return shape, IDX_DTYPES[code], header_len


def _declared_length(shape: tuple[int, ...], dtype: np.dtype, header_len: int) -> int:
    return header_len + math.prod(shape) * dtype.itemsize


def _chunks(path: Path) -> Iterator[bytes]:
    """The file's uncompressed bytes in chunks of at most bounded.CHUNK: gunzipped
    (every member of a multi-member gzip file) when it starts with gzip's magic bytes."""
    with open(path, "rb") as f:
        first = f.read(len(_GZIP_MAGIC))
        if first != _GZIP_MAGIC:
            yield first
            while block := f.read(bounded.CHUNK):
                yield block
            return
        inflater = zlib.decompressobj(wbits=31)
        pending = first
        while True:
            block = f.read(bounded.CHUNK)
            data = pending + block
            pending = b""
            while data:
                try:
                    out = inflater.decompress(data, bounded.CHUNK)
                except zlib.error as exc:
                    raise IdxFormatError(f"{path}: damaged gzip data ({exc})") from None
                if out:
                    yield out
                data = inflater.unconsumed_tail
                if inflater.eof:
                    rest = inflater.unused_data + data
                    if rest.strip(b"\0"):  # another gzip member (zero padding after the last is allowed)
                        inflater = zlib.decompressobj(wbits=31)
                        data = rest
                    else:
                        data = b""
            if not block:
                if not inflater.eof:
                    raise IdxFormatError(f"{path}: damaged gzip data (the stream ends early: truncated file)")
                return


def idx_bytes(path: str | Path) -> bytes:
    """The uncompressed IDX bytes of a file, gzip-compressed or plain, read in bounded
    chunks: the header first, then never more than it declares, after checking that
    size against the file (dlbench.datasets.bounded) — a lying header or a gzip bomb
    is one IdxFormatError or DataLimitError naming the file, not gigabytes."""
    path = Path(path)
    size = path.stat().st_size
    with open(path, "rb") as f:
        compressed = f.read(len(_GZIP_MAGIC)) == _GZIP_MAGIC
    out = bytearray()
    expected: int | None = None
    for chunk in _chunks(path):
        out += chunk
        if expected is None and len(out) >= _HEADER and len(out) >= _HEADER + 4 * out[3]:
            shape, dtype, header_len = header(bytes(out[: _HEADER + 4 * out[3]]), path)
            expected = _declared_length(shape, dtype, header_len)
            if not compressed and size != expected:
                what = "truncated" if size < expected else "has trailing bytes"
                raise IdxFormatError(
                    f"{path}: IDX file {what}: shape {shape} of {dtype.name} needs {expected} bytes, file has {size}"
                )
            bounded.check_declared(
                path, f"its {dtype.name} array of shape {shape}", expected, size if compressed else None
            )
        if expected is not None and len(out) > expected:
            raise IdxFormatError(
                f"{path}: IDX file has trailing bytes: its header declares {expected} bytes, it holds more"
            )
    if expected is None:
        header(bytes(out), path)  # raises: too short, bad magic, ...
        raise AssertionError("unreachable")  # header() raised
    if len(out) != expected:
        raise IdxFormatError(f"{path}: IDX file truncated: its header declares {expected} bytes, it holds {len(out)}")
    return bytes(out)


def idx_shape(path: str | Path) -> tuple[tuple[int, ...], np.dtype]:
    """(shape, dtype) an IDX file declares, reading its header only (what `plan` needs)."""
    path = Path(path)
    head = bytearray()
    for chunk in _chunks(path):
        head += chunk
        if len(head) >= _HEADER and len(head) >= _HEADER + 4 * head[3]:
            break
    shape, dtype, _ = header(bytes(head[: _HEADER + 4 * head[3]] if len(head) >= _HEADER else head), path)
    return shape, dtype
