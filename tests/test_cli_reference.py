"""docs/cli.md cannot drift from the commands, and the exit statuses are declared once.

docs/cli.md is what scripts/cli_docs.py writes from every command's own --help; the table of
exit statuses in it and at the end of `dlbench --help` both render dlbench.cli.app.EXIT_STATUSES,
and every exit status the code raises must be in that table."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "cli_docs.py"


def test_cli_reference_is_what_the_generator_writes() -> None:
    # A narrow terminal and a DLBENCH_DB of the user's must not change the page: the generator fixes both.
    env = {**os.environ, "COLUMNS": "57", "DLBENCH_DB": "/elsewhere/x.db"}
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"], cwd=ROOT, capture_output=True, text=True, timeout=300, env=env
    )
    assert proc.returncode == 0, (
        "docs/cli.md differs from what `python scripts/cli_docs.py` writes (run it and commit the result):\n"
        f"{proc.stdout[-20000:]}\n{proc.stderr[-5000:]}"
    )


def test_every_command_has_its_section() -> None:
    from dlbench.cli import app

    page = (ROOT / "docs" / "cli.md").read_text()
    import typer

    group = typer.main.get_command(app)
    ctx = typer.Context(group, info_name="dlbench")
    for name in group.list_commands(ctx):
        assert f"\n## dlbench {name}\n\n```text\nUsage: dlbench {name} " in page, name


def test_exit_table_is_the_same_in_help_and_docs(cli) -> None:
    from dlbench.cli.app import EXIT_STATUSES

    page = (ROOT / "docs" / "cli.md").read_text()
    help_text = " ".join(cli("--help").split())  # --help wraps the meanings; compare word by word
    assert [s.code for s in EXIT_STATUSES] == ["0", "1", "2", "3", "4", "128+N"]
    for status in EXIT_STATUSES:
        assert f"\n| {status.code} | {status.meaning} |\n" in page
        assert f" {status.code} {status.meaning}" in help_text


def _exit_statuses_in_source() -> dict[str, set[str]]:
    """status -> files, for every typer.Exit(...), SystemExit(...), sys.exit(...) and fail(..., code=...)
    in src/dlbench: a number, an EXIT_ constant of cli/common.py, or 128+N for 128 + a signal's number."""
    from dlbench.cli import common

    constants = {name: value for name, value in vars(common).items() if name.startswith("EXIT_")}

    def status(node: ast.expr | None) -> str | None:
        if node is None:
            return "0"  # typer.Exit() exits 0
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return str(node.value)
        if isinstance(node, ast.Name) and node.id in constants:
            return str(constants[node.id])
        if isinstance(node, ast.BinOp) and isinstance(node.left, ast.Constant) and node.left.value == 128:
            return "128+N"
        return None  # a variable passed on (fail's own `code`, worker.py's sys.exit(main())): not a status

    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / "src" / "dlbench").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call):
                continue
            name = ast.unparse(node.func)
            if name in ("typer.Exit", "SystemExit", "sys.exit"):
                code = status(node.args[0] if node.args else None)
            elif name == "fail" and path.parent.name == "cli":  # cli.common.fail, exit 2 unless code= says
                code = next((status(k.value) for k in node.keywords if k.arg == "code"), "2")
            else:
                continue
            if code is not None:
                found.setdefault(code, set()).add(str(path.relative_to(ROOT)))
    return found


def test_every_exit_status_raised_is_in_the_table() -> None:
    from dlbench.cli.app import EXIT_STATUSES

    declared = {s.code for s in EXIT_STATUSES}
    found = _exit_statuses_in_source()
    assert {"0", "1", "2", "3", "4", "128+N"} <= set(found), found  # the scan sees the known ones
    assert set(found) <= declared, {code: files for code, files in found.items() if code not in declared}


def test_dlbench_db_is_the_default_database_and_db_wins(cli, tmp_path, monkeypatch) -> None:
    from conftest import TINY_RUN
    from dlbench.store import Store

    monkeypatch.chdir(tmp_path)  # where the default ./dlbench.db would land
    env_db = tmp_path / "team" / "shared.db"
    env_db.parent.mkdir()
    monkeypatch.setenv("DLBENCH_DB", str(env_db))
    out = cli("run", *cli.flags(**{**TINY_RUN, "repeats": 1, "train_samples": 128, "test_samples": 64}))
    # Compared without whitespace: the console wraps a long temporary path onto the next line.
    assert f"run1:1trials,0skippedcells->{env_db}" in "".join(out.split())
    assert env_db.exists() and not (tmp_path / "dlbench.db").exists()
    with Store(env_db) as store:
        run = store.run(None)
        assert run["status"] == "finished"
        # The stored command names the database, so it runs again as typed without the variable.
        assert f"--db {env_db}" in run["command"]
    # report and runs read it with no --db.
    assert "Status finished" in cli("report", "--format", "markdown").replace("*", "")
    listed = json.loads(cli("runs", "--format", "json"))["runs"]
    assert [(r["id"], r["name"], r["status"]) for r in listed] == [(run["id"], "mlp on digits: numpy", "finished")]
    # --db on the command line wins over DLBENCH_DB.
    missing = tmp_path / "missing.db"
    assert cli.error_line("report", "--db", missing) == f"error: {missing}: no such database file"
    assert "[env var: DLBENCH_DB; default: dlbench.db]" in " ".join(cli("runs", "--help").split())
