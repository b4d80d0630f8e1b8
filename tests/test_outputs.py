"""No output ever replaces results, and every output is written whole (dlbench.outputs)."""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

import pytest

from dlbench import outputs


@pytest.fixture(scope="module")
def db(small_db: Path) -> Path:
    return small_db


def _measurements(path: Path) -> int:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return con.execute("SELECT count(*) FROM measurements").fetchone()[0]
    finally:
        con.close()


@pytest.fixture
def refused(cli):
    """refused(args, protected, text): one `error:` line holding text, exit status 2, protected unchanged."""

    def check(args: list[str], protected: Path, text: str) -> None:
        before = protected.read_bytes()
        line = cli.error_line(*args)
        assert line.startswith("error: ") and text in line, line
        assert protected.read_bytes() == before

    return check


def test_export_onto_the_database_it_reads_is_refused(db, refused):
    count = _measurements(db)
    refused(["export", str(db), "--db", str(db)], db, "is the results database this command reads")
    link = db.parent / "link.db"
    link.symlink_to(db)
    refused(["export", str(link), "--db", str(db)], db, "is the results database this command reads")
    assert _measurements(db) == count > 0  # still a database, every row there


def test_report_and_explain_onto_any_sqlite_file_or_sidecar_are_refused(db, tmp_path, refused):
    other = tmp_path / "other.db"
    other.write_bytes(db.read_bytes())
    refused(["report", "--db", str(db), "-f", "markdown", "-o", str(other)], other, "is an SQLite database")
    refused(["explain", "--show", "1", "--db", str(db), "-f", "html", "-o", str(other)], other, "is an SQLite database")
    wal = Path(str(db) + "-wal")
    wal.write_bytes(b"")
    try:
        refused(["report", "--db", str(db), "-f", "markdown", "-o", str(wal)], db, "its SQLite wal file")
    finally:
        wal.unlink()


def test_explain_out_with_the_console_format_is_refused_not_silently_ignored(db, tmp_path, cli):
    assert "--out needs a written format" in cli("explain", "--show", "1", "--db", db, "-o", tmp_path / "x.md", code=2)
    assert not (tmp_path / "x.md").exists()


def test_special_files_and_directories_are_refused(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(outputs.OutputRefused, match="special file"):
        outputs.check(fifo)
    with pytest.raises(outputs.OutputRefused, match="is a directory"):
        outputs.check(tmp_path)
    with pytest.raises(outputs.OutputRefused, match="no directory"):
        outputs.check(tmp_path / "missing" / "r.md")
    outputs.check(tmp_path / "new.md")  # a new file, and an existing plain one, are fine
    (tmp_path / "old.md").write_text("old")
    outputs.check(tmp_path / "old.md")


def test_a_failed_write_leaves_the_previous_file_whole_and_no_partial(tmp_path):
    target = tmp_path / "report.md"
    target.write_text("the previous report\n")
    os.chmod(target, 0o640)

    def disk_full(tmp: Path) -> None:
        tmp.write_text("half of the new rep")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        outputs.write_with(target, disk_full)
    assert target.read_text() == "the previous report\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.md"]
    outputs.write_text(target, "the new report\n")
    assert target.read_text() == "the new report\n"
    assert (target.stat().st_mode & 0o777) == 0o640  # the file keeps its mode
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.md"]


def test_export_and_report_still_write(db, tmp_path, cli):
    out = tmp_path / "m.csv"
    cli("export", out, "--db", db)
    assert out.read_text().count("\n") == _measurements(db) + 1  # header + one row per value
    md = tmp_path / "r.md"
    cli("report", "--db", db, "-f", "markdown", "-o", md)
    assert md.read_text().startswith("#") and (md.stat().st_mode & 0o777) == 0o666 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
