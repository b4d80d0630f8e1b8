"""A special file as --db is refused at once; a run is never compared with itself."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def db(small_db: Path) -> Path:
    return small_db


@pytest.mark.parametrize("command", [["runs"], ["report"], ["run", "--framework", "numpy", "--model", "mlp"]])
def test_a_fifo_as_db_is_refused_instead_of_hanging(tmp_path, command, cli):
    fifo = tmp_path / "fifo.db"
    os.mkfifo(fifo)
    assert "is a special file (a FIFO or a device)" in cli.error_line(*command, "--db", fifo)


def test_dev_null_as_db_is_refused(cli):
    assert "is a special file" in cli.error_line("runs", "--db", os.devnull)


def test_a_run_compared_with_itself_is_refused(db, tmp_path, cli):
    assert "are the same run" in cli.error_line("compare", db, db)
    link = tmp_path / "link.db"
    link.symlink_to(db)
    assert "are the same run" in cli.error_line("compare", db, f"{link}:1")
    copy = tmp_path / "copy.db"
    shutil.copy(db, copy)  # another file holding the same run: a comparison, not an error
    assert "are the same run" not in cli("compare", db, copy, code=None)


def test_control_characters_from_a_database_print_as_visible_escapes(db, tmp_path, cli, monkeypatch):
    from dlbench.cli import common
    from dlbench.terminal import printable

    # Wide enough for the 28-character escaped name to stay whole in its table cell: this test
    # reads the escapes, and a table fitted to 100 columns folds a long name across rows.
    monkeypatch.setattr(common.console, "width", 400)

    assert printable("a\x1b]0;pwned\x07b\x1b[2J\tc\nd\x9b") == "a\\x1b]0;pwned\\x07b\\x1b[2J\tc\nd\\x9b"
    # The experiment file refuses such a name; a database someone sent can hold anything.
    source, db = db, tmp_path / "e.db"
    shutil.copy(source, db)
    con = sqlite3.connect(db)
    with con:
        con.execute("UPDATE runs SET name = ?", ("evil\x1b]0;pwned\x07\x1b[2J",))
    con.close()
    for args in (["runs"], ["report"]):
        out = cli(*args, "--db", db, code=None)
        assert "\x1b" not in out and "\x07" not in out, (args, out)
        assert "evil\\x1b]0;pwned\\x07\\x1b[2J" in out.replace("\n", ""), (args, out)


@pytest.mark.parametrize("text", ["file:x.db?mode=rwc", "postgresql://", "sqlite:///a.db", "odd:name.db"])
def test_a_db_that_reads_as_a_url_is_refused_and_creates_nothing(tmp_path, monkeypatch, text):
    from dlbench.store import Store, StoreError

    monkeypatch.chdir(tmp_path)
    with pytest.raises(StoreError, match=r"reads as a URL \(\w+:\), not a database file"):
        Store(Path(text))
    assert list(tmp_path.iterdir()) == []
    # With its folder named, a file whose name has a colon is a file like any other.
    Store(tmp_path / "odd:name.db").close()
    assert (tmp_path / "odd:name.db").exists()
