"""The optional extras of the dlbench package (pyproject.toml's optional-dependencies) and
how to install one: the words every "not installed" message uses, for a wheel's user and
for a source checkout alike. Imports nothing of dlbench."""

from __future__ import annotations

# Extras pinned in requirements-cluster.txt for a source checkout (the rest are in requirements.txt).
CLUSTER = frozenset({"ray", "slurm", "postgres"})


def install_hint(extra: str) -> str:
    """pip install 'dlbench[EXTRA]', and what a source checkout installs instead."""
    checkout = "requirements-cluster.txt" if extra in CLUSTER else "requirements.txt"
    return f"pip install 'dlbench[{extra}]' (in a source checkout: .venv/bin/pip install -r {checkout})"
