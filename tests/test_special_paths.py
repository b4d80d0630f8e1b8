"""A special file as --db is refused at once; a run is never compared with itself."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlbench.cli import app

runner = CliRunner()


@pytest.fixture(scope="module")
def db(small_db: Path) -> Path:
    return small_db


def _one_line_error(args: list[str], text: str) -> None:
    result = runner.invoke(app, args)
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert result.exit_code == 2 and len(lines) == 1 and text in lines[0], result.output


@pytest.mark.parametrize("command", [["runs"], ["report"], ["run", "--framework", "numpy", "--model", "mlp"]])
def test_a_fifo_as_db_is_refused_instead_of_hanging(tmp_path, command):
    fifo = tmp_path / "fifo.db"
    os.mkfifo(fifo)
    _one_line_error([*command, "--db", str(fifo)], "is a special file (a FIFO or a device)")


def test_dev_null_as_db_is_refused():
    _one_line_error(["runs", "--db", os.devnull], "is a special file")


def test_a_run_compared_with_itself_is_refused(db, tmp_path):
    _one_line_error(["compare", str(db), str(db)], "are the same run")
    link = tmp_path / "link.db"
    link.symlink_to(db)
    _one_line_error(["compare", str(db), f"{link}:1"], "are the same run")
    copy = tmp_path / "copy.db"
    shutil.copy(db, copy)  # another file holding the same run: a comparison, not an error
    result = runner.invoke(app, ["compare", str(db), str(copy)])
    assert "are the same run" not in result.output
