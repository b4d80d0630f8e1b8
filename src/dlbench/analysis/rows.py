"""The shapes the analysis reads: stored rows and case dicts.

A row is a sqlite3.Row from dlbench.store, a dlbench.store_pg.Row from a PostgreSQL
store (read the same way: row["name"], row[0], row.keys()), or a dict with the same
keys, as the tests build them: typed Any because sqlite3.Row is not a Mapping to the
type checker. A case is the dict a plan cell becomes (framework, variant, model, ...).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeAlias

Row: TypeAlias = Any
Rows: TypeAlias = Iterable[Row]
Case: TypeAlias = dict[str, Any]
