"""Optional extras: a cluster executor whose engine is not installed is refused in one line
that names the extra (pip install 'dlbench[ray]'), before a run is stored; the extras exist
in the package metadata with the pins requirements-cluster.txt has."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from dlbench.executor_settings import ENGINES, missing_engine
from dlbench.extras import install_hint

ROOT = Path(__file__).resolve().parents[1]
# Loaded at interpreter start-up (sitecustomize on PYTHONPATH): Ray and submitit cannot be
# found, as on a machine without the extras, whether or not this one has them.
BLOCK = """
import sys


class _Missing:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("ray", "submitit"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _Missing())
"""


@pytest.fixture
def without_engines(tmp_path: Path) -> dict[str, str]:
    folder = tmp_path / "block"
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(BLOCK)
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")]).rstrip(":"))


@pytest.mark.parametrize("executor", sorted(ENGINES))
def test_a_missing_engine_is_refused_before_a_run_is_stored(executor: str, tmp_path: Path, without_engines):
    db = tmp_path / "r.db"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "dlbench",
            "run",
            "--framework",
            "numpy",
            "--model",
            "mlp",
            "--dataset",
            "digits",
            "--executor",
            executor,
            "--db",
            str(db),
        ],
        capture_output=True,
        text=True,
        env=without_engines,
        cwd=tmp_path,
    )
    said = " ".join(result.stderr.split())
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert f"--executor {executor}: {ENGINES[executor][1]} is not installed" in said
    assert f"pip install 'dlbench[{executor}]'" in said
    if db.exists():  # nothing stored: no run, interrupted or otherwise
        with sqlite3.connect(db) as con:
            assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 0


def test_the_check_follows_what_is_importable(monkeypatch):
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert missing_engine("local") is None
    assert missing_engine("ray") == f"--executor ray: Ray is not installed; install it with {install_hint('ray')}"
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: object())
    assert missing_engine("ray") is None and missing_engine("slurm") is None


def test_the_cluster_extras_pin_what_requirements_cluster_pins():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    pins = {}
    for line in (ROOT / "requirements-cluster.txt").read_text().splitlines():
        name, sep, version = line.partition("==")
        if sep and not line.startswith("#"):
            pins[name.strip()] = version.strip()
    assert extras["ray"] == [f"ray=={pins['ray']}"]
    assert extras["slurm"] == [f"submitit=={pins['submitit']}"]
    assert extras["postgres"] == [f"psycopg[binary]=={pins['psycopg']}"] and pins["psycopg"] == pins["psycopg-binary"]
    assert (
        "pip install 'dlbench[postgres]' (in a source checkout: .venv/bin/pip install -r requirements-cluster.txt)"
        == (install_hint("postgres"))
    )
