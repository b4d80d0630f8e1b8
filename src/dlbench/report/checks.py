"""The report's line per user model: what the last `dlbench check` of its code said.

The run keeps the record (environment["model_checks"], dlbench.conformance.record via
dlbench.service.runs.start_run): the check's verdict and when, or that this code was
never checked on the machine that ran it. A model that failed its check, or was never
checked, is a warning: a comparison of its frameworks may compare different networks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def check_notes(checks: Any) -> list[tuple[str, bool]]:
    """(line, warns) per user model, in name order; nothing for a record that is not one
    (a database written by hand)."""
    out: list[tuple[str, bool]] = []
    if not isinstance(checks, Mapping):
        return out
    for model, found in sorted(checks.items(), key=lambda kv: str(kv[0])):
        if not isinstance(found, Mapping):
            continue
        if not found.get("checked"):
            source = found.get("source", model)
            out.append(
                (
                    f"NOT CHECKED: {model} is your own model and no `dlbench check` of its current code was "
                    f"recorded on the machine that ran it: `dlbench check {source}` says whether every framework "
                    "builds the same network and trains it alike",
                    True,
                )
            )
            continue
        options = found.get("options") or {}
        said = ", ".join(f"{k}={v}" for k, v in sorted(options.items()))
        when = f"{found.get('checked_at', '?')}" + (f", options {said}" if said else "")
        prefix = "check" if found.get("ok") else "CHECK FAILED"
        out.append((f"{prefix} ({when}, this code): {found.get('verdict', '')}", not found.get("ok")))
    return out
