"""The report's line for a packed latency copy that failed its check (dlbench.store.latency_packs).

The per-call latency times are read from a packed copy of their rows; the copy proves
itself against the rows before it is used, and a trial whose copy does not is read from
its rows, which are the record. The percentiles are then right, but the file was changed
by something other than dlbench, and the reader should know, and how to mend the copy.
"""

from __future__ import annotations

from dlbench.store.latency_packs import LatencyCopy

SHOWN = 8  # trials named one by one; the rest counted


def latency_copy_note(check: LatencyCopy, db: str) -> str:
    """One line; "" when the copy was used as it is."""
    if check.trusted:
        return ""
    rebuild = f"`dlbench repack --db {db}` rebuilds the copy (any run written to the file restores the triggers)"
    if check.missing_triggers:
        return (
            f"LATENCY COPY NOT TRUSTED: the database lacks the trigger(s) {', '.join(check.missing_triggers)} "
            "that mark a trial's packed latency times stale when its rows change (dropped by another tool); "
            f"every percentile here is read from the rows, which are the record. {rebuild}."
        )
    named = ", ".join(str(t) for t in check.stale[:SHOWN])
    more = f" and {len(check.stale) - SHOWN} more" if len(check.stale) > SHOWN else ""
    return (
        f"LATENCY COPY STALE: the packed latency times of trial(s) {named}{more} do not match their rows "
        "(count, sum or form; the file was changed by another tool); their percentiles are read from the "
        f"rows, which are the record. {rebuild}."
    )
