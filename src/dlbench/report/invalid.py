"""The report's line for stored values that are no measurement (Store.invalid_values).

Infinity, a value at the float's limit or text in the number column can only come from
something other than dlbench writing the database; the store reads them as missing, and
this line names them, so that a statistic computed without them says so.
"""

from __future__ import annotations

SHOWN = 5  # named one by one; the rest counted


def invalid_note(found: list[tuple[int, str, str, str]]) -> str:
    """One line naming the left-out values (trial, phase, metric, the value); "" for none."""
    if not found:
        return ""
    named = "; ".join(f"trial {t} {phase} {metric} = {value[:24]}" for t, phase, metric, value in found[:SHOWN])
    more = f" and {len(found) - SHOWN} more" if len(found) > SHOWN else ""
    return (
        f"INVALID VALUES: {len(found)} stored value(s) are no number a measurement can hold (infinite, beyond "
        f"1e300, or text) and are left out of every statistic: {named}{more}. dlbench never stores such a value: "
        "the database was written by something else."
    )
