"""baseline save, list and delete, and compare's --baseline: named runs for a CI gate.

Parses flags and prints; dlbench.service.baselines checks, saves and resolves.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, NoReturn

import typer

from dlbench.cli import complete
from dlbench.cli.app import app
from dlbench.cli.common import (
    DB,
    console,
    db_text,
    err_console,
    fail,
    invocation,
    is_url,
    open_store,
    resolve_run,
    same_database,
    show_table,
)

baseline_app = typer.Typer(
    help="Named baselines kept in the database: save a run under a name, list and delete them; "
    "`dlbench compare --baseline NAME RUN` compares a run against one (docs/ci.md).",
    no_args_is_help=True,
)
app.add_typer(baseline_app, name="baseline")

NameArg = Annotated[
    str,
    typer.Argument(
        help="The baseline's name: letters, digits and . _ - / (e.g. main).", autocompletion=complete.baselines
    ),
]


def _existing(db: Path) -> None:
    """A baseline names a stored run: a --db that does not exist is refused, never created empty."""
    if not is_url(db) and not db.is_file():
        fail(f"--db {db}: no such database file (give the --db that dlbench run wrote)")


@baseline_app.command("save")
def save(
    ctx: typer.Context,
    name: NameArg,
    run_id: Annotated[
        int,
        typer.Option("--run", help="The run the name stands for (see dlbench runs).", autocompletion=complete.run_ids),
    ],
    replace: Annotated[
        bool, typer.Option("--replace", help="Point an existing name at this run (without it, that is refused).")
    ] = False,
    note: Annotated[
        str | None, typer.Option("--note", help="A line kept with it (e.g. the commit the run measured).")
    ] = None,
    db: DB = Path("dlbench.db"),
) -> None:
    """Save run ID under NAME, with who saved it, the command and the time."""
    from dlbench.service import ServiceError
    from dlbench.service import baselines as service

    _existing(db)
    store = open_store(db)
    try:
        saved = service.save(store, name, run_id, command=invocation(ctx), note=note, replace=replace)
    except ServiceError as exc:
        fail(str(exc))
    b, old = saved.baseline, saved.replaced
    before = "" if old is None else f"; it named run {old.run_id} before (saved {old.saved_at})"
    console.print(
        f"saved baseline {b.name!r}: run {b.run_id} of {db_text(db)} "
        f"({b.n_cases} case{'' if b.n_cases == 1 else 's'}){before}",
        highlight=False,
        soft_wrap=True,  # one line, whatever the path's length: a script or a log reads it whole
    )


@baseline_app.command("list")
def list_baselines(db: DB = Path("dlbench.db")) -> None:
    """The named baselines: name, run id, the run's name and start, its cases, when and by whom saved."""
    from dlbench.service import baselines as service

    store = open_store(db, readonly=True)
    found = service.listing(store)
    if not found:
        console.print(
            f"no baselines in {db_text(db)}; save one with: dlbench baseline save NAME --run ID",
            highlight=False,
            soft_wrap=True,
        )
        return
    show_table(service.table(found))


@baseline_app.command("show")
def show(
    name: NameArg,
    field: Annotated[
        str | None,
        typer.Option(
            "--field",
            help="Print only this, for a script: run (its id), commit (the dlbench commit the run measured), "
            "python (the interpreter its workers ran under), version (dlbench's) or note (the line saved with it).",
        ),
    ] = None,
    db: DB = Path("dlbench.db"),
) -> None:
    """One baseline: its run, who saved it, and the code that measured it (interpreter, dlbench version, commit)."""
    from dlbench.service import ServiceError
    from dlbench.service import baselines as service

    _existing(db)
    store = open_store(db, readonly=True)
    try:
        found = service.provenance(store, name)
        value = None if field is None else service.field_value(found, field)
    except ServiceError as exc:
        fail(str(exc))
    if value is None:
        show_table(service.provenance_table(found))
        return
    if field == "commit" and found.modified:
        # On stderr: standard output is the commit alone, for the script that reads it.
        err_console.print(
            f"baseline {name!r}: run {found.baseline.run_id} ran with uncommitted changes on top of {value}; "
            "that commit is not exactly the code it measured",
            highlight=False,
        )
    print(value)


@baseline_app.command("delete")
def delete(name: NameArg, db: DB = Path("dlbench.db")) -> None:
    """Forget baseline NAME; its run stays in the database."""
    from dlbench.service import ServiceError
    from dlbench.service import baselines as service

    _existing(db)
    store = open_store(db)
    try:
        gone = service.delete(store, name)
    except ServiceError as exc:
        fail(str(exc))
    console.print(
        f"deleted baseline {gone.name!r} (it named run {gone.run_id}, which stays)", highlight=False, soft_wrap=True
    )


def _refuse(message: str) -> NoReturn:
    fail(message)
    raise AssertionError("unreachable: fail() exits")


def compare_pair(baseline: str | None, a: str | None, b: str | None, db: Path) -> tuple[str, str]:
    """compare's A and B. Without --baseline: the two runs given. With --baseline NAME the
    one run given is B, and A is the run that NAME stands for in --db; a B that is that
    same run is refused, as compare refuses any run compared with itself."""
    from dlbench.service import ServiceError
    from dlbench.service import baselines as service

    if baseline is None:
        if a is None or b is None:
            _refuse("compare needs two runs, A B, or --baseline NAME and one run: dlbench compare --baseline NAME RUN")
        return a, b
    if b is not None:
        _refuse(f"--baseline {baseline} is A: give one run to compare against it, not two ({a} and {b})")
    if a is None:
        _refuse(f"--baseline {baseline}: give the run to compare against it: dlbench compare --baseline {baseline} RUN")
    store = open_store(db, readonly=True)
    try:
        found = service.resolve(store, baseline)
    except ServiceError as exc:
        _refuse(f"--baseline {baseline}: {exc}")
    sb, rb = resolve_run(a, db, readonly=True)
    if rb["id"] == found.run_id and same_database(store.path, sb.path):
        fail(
            f"--baseline {baseline} is run {found.run_id} of {store.path}, and {a} is the same run: "
            "a run compared with itself says nothing"
        )
    # On stderr: standard output stays the comparison's alone (a document a script may read).
    err_console.print(
        f"A is baseline {found.name!r}: run {found.run_id} ({found.run_name}, started {found.run_started_at}), "
        f"saved {found.saved_at} by {found.saved_by or 'unknown'}" + (f": {found.note}" if found.note else ""),
        highlight=False,
        soft_wrap=True,  # one line also in a 100-column log: what follows it is the plain comparison
    )
    return str(found.run_id), a
