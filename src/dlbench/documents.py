"""What every JSON document dlbench prints or writes starts with: its kind and schema version.

`{"schema": "dlbench/<kind>", "schema_version": SCHEMA_VERSION, ...}`, one kind per
command (report, compare, runs, trials, plan, env, export, gate), each a `$defs` entry of
the shipped schema, schemas/output.schema.json (JSON Schema draft 2020-12);
docs/json.md documents the fields and when the version changes. Kept apart from
report/ (report/json_out.py lays the documents out) so that dlbench.results, which
report/ builds on, can head `dlbench export`'s JSON too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

# One version for every kind. It changes when a field is removed or renamed, or changes
# type or meaning; a field marked "deprecated" in the schema goes at that change. Fields
# and kinds are added within a version (docs/json.md).
SCHEMA_VERSION = 1
# Every document kind, as "schema": f"dlbench/{kind}"; one $defs entry each in the schema file.
KINDS = ("report", "compare", "runs", "trials", "plan", "env", "export", "gate")
SCHEMA_FILE = Path(__file__).resolve().parent / "schemas" / "output.schema.json"


def header(kind: str) -> dict[str, Any]:
    """The first two fields of a `kind` document (ValueError for a kind the schema lacks)."""
    if kind not in KINDS:
        raise ValueError(f"unknown JSON document kind {kind!r}; kinds are {', '.join(KINDS)}")
    return {"schema": f"dlbench/{kind}", "schema_version": SCHEMA_VERSION}
