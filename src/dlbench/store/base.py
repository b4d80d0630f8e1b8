"""What the two databases share (SQLite: dlbench.store.core, PostgreSQL:
dlbench.store.postgres): the one interface both connections implement (Connection), the
SQL dialect, which spells here what SQLite and PostgreSQL write differently (SQLite's
spelling), the error, and the splitting of a migration script into statements."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any, Literal, Protocol


class StoreError(RuntimeError):
    pass


class Cursor(Protocol):
    lastrowid: int | None

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Connection(Protocol):
    """The database under a Store, one interface for both: sqlite3.Connection (SQLite) and
    dlbench.store.postgres.Connection (PostgreSQL, psycopg made to behave alike). SQL is
    written with `?` placeholders and SQLite's spelling (Dialect says what differs);
    rows are read by position and by name; `with db:` commits or rolls back."""

    @property
    def in_transaction(self) -> bool: ...

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Any: ...

    def executemany(self, sql: str, seq_of_parameters: Iterable[Sequence[Any]], /) -> Any: ...

    def commit(self) -> None: ...

    def rollback(self) -> None: ...

    def close(self) -> None: ...

    def __enter__(self) -> Any: ...

    def __exit__(self, *exc: Any) -> Literal[False] | bool | None: ...


class Dialect:
    """What the Store's SQL spells differently per database: SQLite's spelling here,
    PostgreSQL's in dlbench.store.postgres.PostgresDialect."""

    name = "sqlite"
    begin_immediate = "BEGIN IMMEDIATE"  # a write transaction that takes the lock at once
    lock_row = ""  # appended to a SELECT inside it (SQLite's lock covers the whole file)
    last_id = "SELECT last_insert_rowid()"
    another = "use another database file"

    def json_text(self, column: str, key: str) -> str:
        return f"json_extract({column}, '$.{key}')"

    def string_agg(self, expr: str, separator: str, order: str) -> str:
        """Joined in `order`: SQLite's group_concat keeps the order of an ordered subquery."""
        return f"group_concat({expr}, {separator})"

    def version(self, db: Any) -> int:
        return int(db.execute("PRAGMA user_version").fetchone()[0])

    def tables(self, db: Any) -> dict[str, set[str]]:
        return sqlite_tables(db)


SQLITE = Dialect()


def statements(script: str) -> list[str]:
    """A migration script split into its statements. executescript() would commit
    the open transaction first, so a migration runs statement by statement."""
    found, pending = [], ""
    pieces = script.split(";")
    for i, piece in enumerate(pieces):
        pending += piece + (";" if i < len(pieces) - 1 else "")
        if sqlite3.complete_statement(pending):  # a ";" inside a string or trigger body does not end it
            found.append(pending.strip())
            pending = ""
    if pending.strip():
        found.append(pending.strip())  # incomplete: executing it raises, naming the text
    return [s for s in found if s.strip("; \t\n")]


def sqlite_tables(db: sqlite3.Connection) -> dict[str, set[str]]:
    """An SQLite database's tables and their columns."""
    names = [
        r[0]
        for r in db.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
        )
    ]
    return {n: {r[0] for r in db.execute("SELECT name FROM pragma_table_info(?)", (n,))} for n in names}
