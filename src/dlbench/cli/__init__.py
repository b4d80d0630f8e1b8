"""Command line: a thin layer over dlbench.service and the report package.

Each module is one command group and parses flags and prints; the work is done by the
library. Heavy modules are imported inside the commands so that `dlbench --help` stays
fast, and nothing here ever imports a deep-learning framework.
"""

from __future__ import annotations

# Each command module registers its commands on the app when imported, in this order
# (the order `dlbench --help` lists them).
# isort: off
from dlbench.cli import running, reporting, baselines, gating, inventory, studies, explaining, shell  # noqa: F401

# isort: on
from dlbench.cli.app import app as app
from dlbench.cli.common import console as console
from dlbench.cli.common import err_console


def main() -> None:
    """The console script. A store error that no command turned into its own message
    (damage that appears after the database passed its check on opening, a device
    that fails mid-read) still ends in one line and exit 1, never a traceback."""
    import sqlite3

    from dlbench.store import StoreError

    try:
        app()
    except (StoreError, sqlite3.Error) as exc:
        from rich.text import Text

        hint = (
            ""
            if isinstance(exc, StoreError)
            else (
                " (the database file may be damaged: `sqlite3 FILE 'PRAGMA integrity_check'` tells; "
                "nothing more was written)"
            )
        )
        err_console.print(Text.assemble(("error: ", "bold red"), f"{exc}{hint}"), highlight=False, soft_wrap=True)
        raise SystemExit(1) from None
