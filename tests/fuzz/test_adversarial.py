"""The adversarial-input suite (issue 33 item 5), by kind: lying headers, bombs,
damaged JSON columns, control characters, symlinks, special files and output paths
onto inputs. Each property holds for every drawn input: the reader returns exactly
what the file holds or refuses it with its own one-line error; never another
exception, never an allocation of what a header merely claims, never a write onto
a path dlbench reads. The counts are printed in the session's "fuzz inputs tried".
"""

from __future__ import annotations

import gzip
import io
import math
import os
import shutil
import sqlite3
import struct
import tracemalloc
import zipfile
from unittest import mock

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlbench.datasets import bounded, files
from dlbench.datasets.idx import IDX_DTYPES, IdxFormatError, idx_bytes
from dlbench.outputs import OutputRefused, check
from dlbench.store import Store, StoreError
from dlbench.terminal import printable
from dlbench.trial.spec import SpecError, TrialSpec

from .invariants import tally

ADVERSARIAL = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
MiB = 2**20
# What any one drawn file may make a reader allocate: a few chunks, whatever it claims.
PEAK = 16 * MiB


def _peak(fn):
    """(result or exception, peak bytes of Python allocations) of fn()."""
    tracemalloc.start()
    try:
        try:
            out = fn()
        except Exception as exc:  # noqa: BLE001 - the property decides which are allowed
            out = exc
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@st.composite
def idx_files(draw):
    """IDX bytes whose header may lie: dimensions up to 2^32-1, payloads shorter or
    longer than declared, wrong magic or type codes; plain or gzipped, one or two members."""
    code = draw(st.sampled_from([*IDX_DTYPES, 0x00, 0x0A, 0xFF]))
    ndim = draw(st.sampled_from([0, 1, 2, 3, 4, 255]))
    dims = draw(
        st.lists(st.one_of(st.integers(0, 40), st.sampled_from([2**31, 2**32 - 1])), min_size=ndim, max_size=ndim)
    )
    magic = draw(st.sampled_from([b"\x00\x00", b"\x00\x00", b"\x1f\x00", b"\x01\x00"]))
    header = magic + bytes((code, ndim)) + struct.pack(f">{ndim}I", *dims)
    itemsize = IDX_DTYPES[code].itemsize if code in IDX_DTYPES else 1
    declared = math.prod(dims) * itemsize if dims else 0
    honest = declared if declared <= 4096 else draw(st.integers(0, 4096))
    payload_len = draw(st.sampled_from([honest, max(honest - 1, 0), honest + 1, honest + draw(st.integers(1, 64))]))
    zeros_mib = draw(st.sampled_from([0, 0, 0, 24]))  # a bomb: MiBs of zeros behind a small header
    body = header + bytes(payload_len) + bytes(zeros_mib * MiB)
    packing = draw(st.sampled_from(["plain", "gzip", "gzip2", "cut"]))
    if packing == "plain":  # a plain bomb is its first 64 KiB: refused by its size alone
        body = body[: 64 * 1024 + len(header)] if zeros_mib else body
        return body, body
    data = gzip.compress(body, compresslevel=1)
    if packing == "gzip2":
        half = len(body) // 2
        data = gzip.compress(body[:half], compresslevel=1) + gzip.compress(body[half:], compresslevel=1)
    if packing == "cut":
        data = data[: max(len(data) // 2, 1)]
    return data, body


@ADVERSARIAL
@given(drawn=idx_files())
def test_idx_readers_return_exactly_the_file_or_refuse_in_bounded_memory(tmp_path_factory, drawn):
    data, body = drawn
    path = tmp_path_factory.mktemp("idx") / "f"
    path.write_bytes(data)
    out, peak = _peak(lambda: idx_bytes(path))
    if isinstance(out, Exception):
        assert isinstance(out, IdxFormatError | bounded.DataLimitError), repr(out)
        assert str(path) in str(out) and "\n" not in str(out)
    else:
        assert data[:2] == b"\x1f\x8b" or out == data  # plain: the file itself
        assert len(out) <= 8 * MiB  # only honest (small) declarations are accepted here
    assert peak < PEAK, (peak, len(data))
    tally("idx file", not isinstance(out, Exception))


def _npy(shape: tuple[int, ...], descr: str, payload: bytes) -> bytes:
    out = io.BytesIO()
    np.lib.format.write_array_header_1_0(out, {"descr": descr, "fortran_order": False, "shape": shape})
    return out.getvalue() + payload


@st.composite
def npz_files(draw):
    """A .npz of real arrays in which members may lie: a header's shape or dtype
    changed, a member dropped, added or truncated; stored or deflated."""
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    n = draw(st.integers(2, 12))
    arrays = {
        "x_train": rng.random((n, 4, 4), dtype=np.float32),
        "y_train": np.arange(n) % 3,
        "x_test": rng.random((n, 4, 4), dtype=np.float32),
        "y_test": np.arange(n) % 3,
    }
    members = {}
    for key, array in arrays.items():
        out = io.BytesIO()
        np.lib.format.write_array(out, array)
        members[f"{key}.npy"] = out.getvalue()
    for _ in range(draw(st.integers(0, 2))):
        name = draw(st.sampled_from(sorted(members) + ["extra.npy"]))
        lie = draw(st.sampled_from(["shape", "dtype", "drop", "truncate", "add"]))
        if lie == "drop":
            members.pop(name, None)
        elif lie == "add" or name not in members:
            members[name] = _npy((3,), "<f4", bytes(12))
        elif lie == "truncate":
            members[name] = members[name][: draw(st.integers(0, max(len(members[name]) - 1, 0)))]
        else:
            shape = draw(st.sampled_from([(2**40,), (n, 4, 5), (0,), (n,)])) if lie == "shape" else (n, 4, 4)
            descr = draw(st.sampled_from(["<f8", "|O", "<U3", "|u1"])) if lie == "dtype" else "<f4"
            header_len = len(_npy((n, 4, 4), "<f4", b""))
            members[name] = _npy(shape, descr, members[name][header_len:])
    compression = draw(st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED]))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


@ADVERSARIAL
@given(data=npz_files())
def test_npz_headers_that_lie_are_refused_with_one_line_in_bounded_memory(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("npz") / "d.npz"
    path.write_bytes(data)
    results = {}
    for reader in (files.load, files.describe):
        out, peak = _peak(lambda reader=reader: reader(path))
        assert isinstance(out, files.UserDataError | tuple | files.Arrays), repr(out)
        if isinstance(out, files.UserDataError):
            assert str(path) in str(out) and "\n" not in str(out)
        assert peak < PEAK, peak
        results[reader.__name__] = out
        tally(f"npz via {reader.__name__}", not isinstance(out, Exception))
    loaded, described = results["load"], results["describe"]
    # What plan is told is what the worker loads: the same refusal or the same shape and classes.
    assert isinstance(loaded, Exception) == isinstance(described, Exception)
    if not isinstance(loaded, Exception):
        assert described[:2] == (tuple(loaded.input_shape), loaded.num_classes)
    # As for a large dataset (headers and labels only): whatever loads is described alike.
    with mock.patch.object(files, "PLAN_FULL_CHECK_BYTES", 0):
        headers_only, peak = _peak(lambda: files.describe(path))
    assert isinstance(headers_only, files.UserDataError | tuple) and peak < PEAK, repr(headers_only)
    if not isinstance(loaded, Exception):
        assert headers_only == described
    tally("npz via describe, headers only", not isinstance(headers_only, Exception))


JSON_COLUMNS = st.sampled_from(
    [("trials", "case_json"), ("trials", "protocol_json"), ("trials", "manifest_json"), ("runs", "environment_json")]
)
DAMAGE = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["{", "[]", "null", "1", '"x"', "{}", '{"repeats": -5}', "\x00", '{"a": NaN}']),
)


@ADVERSARIAL
@given(where=JSON_COLUMNS, text=DAMAGE)
def test_a_damaged_json_column_is_a_store_error_or_a_checked_value(small_db, tmp_path_factory, where, text):
    table, column = where
    db = tmp_path_factory.mktemp("json") / "d.db"
    shutil.copy(small_db, db)
    with sqlite3.connect(db) as con:
        con.execute(f"update {table} set {column} = ?", (text,))  # noqa: S608 - names from the list above
    with Store(db, readonly=True) as store:
        try:
            run = store.run()
            for row in store.trials(run["id"]):
                TrialSpec.from_row(row)
            accepted = True
        except StoreError as exc:
            assert str(db) in str(exc) and column in str(exc), str(exc)
            accepted = False
        except SpecError as exc:  # a JSON object whose values are checked as if typed
            assert str(exc).startswith(("trial case", "trial protocol")), str(exc)
            accepted = False
    tally("damaged json column", accepted)


@ADVERSARIAL
@given(name=st.text(min_size=1, max_size=60))
def test_text_from_a_database_reaches_the_terminal_without_control_characters(name):
    shown = printable(name)
    assert not any(ord(c) < 32 and c not in "\n\t" or ord(c) == 0x7F or 0x80 <= ord(c) < 0xA0 for c in shown)
    tally("terminal text", True)


@ADVERSARIAL
@given(kind=st.sampled_from(["db", "db-link", "db-wal", "db-journal", "dir", "fifo", "plain", "missing", "loop"]))
def test_an_output_path_onto_an_input_or_a_special_file_is_refused(small_db, tmp_path_factory, kind):
    root = tmp_path_factory.mktemp("out")
    db = root / "results.db"
    shutil.copy(small_db, db)
    target = {
        "db": db,
        "db-link": root / "link.csv",
        "db-wal": root / "results.db-wal",
        "db-journal": root / "results.db-journal",
        "dir": root / "folder",
        "fifo": root / "fifo",
        "plain": root / "report.md",
        "missing": root / "no" / "such" / "report.md",
        "loop": root / "loop",
    }[kind]
    if kind == "db-link":
        target.symlink_to(db)
    elif kind == "dir":
        target.mkdir()
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "plain":
        target.write_text("old report\n")
    elif kind == "loop":
        target.symlink_to(target)
    before = db.read_bytes()
    try:
        check(target, [db])
        accepted = True
    except OutputRefused as exc:
        assert "\n" not in str(exc)
        accepted = False
    assert accepted == (kind == "plain"), (kind, accepted)
    assert db.read_bytes() == before
    tally("output path", accepted)


@ADVERSARIAL
@given(kind=st.sampled_from(["loop", "dangling", "dir", "fifo"]), as_model=st.booleans())
def test_a_symlink_loop_or_special_file_as_model_or_dataset_is_one_line(tmp_path_factory, kind, as_model):
    from typer.testing import CliRunner

    from dlbench.cli import app

    root = tmp_path_factory.mktemp("ref")
    path = root / ("m.py" if as_model else "d.npz")
    if kind == "loop":
        path.symlink_to(path)
    elif kind == "dangling":
        path.symlink_to(root / "gone")
    elif kind == "dir":
        path.mkdir()
    else:
        os.mkfifo(path)
    flag = ["--model", f"{path}:M"] if as_model else ["--dataset", str(path)]
    result = CliRunner().invoke(app, ["plan", "--framework", "numpy", *flag])
    assert result.exit_code == 2, (kind, result.exit_code, result.output)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    tally("model or dataset reference", False)


PACK_COLUMNS = st.sampled_from(["times", "n", "trial_id", "phase"])
PACK_VALUES = st.one_of(
    st.binary(max_size=40),
    st.text(max_size=12),
    st.integers(min_value=-3, max_value=5),
    st.floats(allow_nan=True, allow_infinity=True),
    st.none(),
)


@ADVERSARIAL
@given(column=PACK_COLUMNS, value=PACK_VALUES, duplicate=st.booleans(), drop_trigger=st.booleans())
def test_an_edited_latency_copy_never_changes_a_percentile(
    small_db, tmp_path_factory, column, value, duplicate, drop_trigger
):
    """Whatever another tool writes into latency_packs (and whether it drops a trigger and
    scales the rows too), the latency percentiles are the rows' and no exception escapes;
    "accepted" counts edits the copy's check let through (only ones that change nothing)."""
    from dlbench.analysis.rows import latency_percentiles_of
    from dlbench.analysis.summary import latency_percentiles

    db = tmp_path_factory.mktemp("packs") / "d.db"
    shutil.copy(small_db, db)
    with sqlite3.connect(db) as con:
        assert con.execute("select count(*) from latency_packs").fetchone()[0] > 0, "the run holds no packed latency"
        try:
            con.execute(f"update latency_packs set {column} = ? where id = 1", (value,))  # noqa: S608 - listed names
        except sqlite3.IntegrityError:  # NOT NULL: the edit another tool could not make either
            pass
        if duplicate:
            con.execute(
                "insert into latency_packs (trial_id, phase, n, times) select trial_id, phase, n, times"
                " from latency_packs where id = 1"
            )
        if drop_trigger:
            con.execute("drop trigger latency_unpacked_update")
            con.execute("update measurements set value = value * 1000 where phase like 'latency%'")
    with Store(db, readonly=True) as store:
        run = store.run()["id"]
        samples, check = store.latency_samples_checked(run)
        assert latency_percentiles_of(samples) == latency_percentiles(store.latency_calls(run))
    tally("edited latency copy", check.trusted)
