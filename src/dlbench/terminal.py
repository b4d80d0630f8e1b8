"""Text from a database reaches a terminal as text, never as terminal commands; and the
few ways every command writes a time, a number and a case label.

A run name, a command line, an error message or a note comes from a database that
someone else may have written. Printed raw, `ESC]0;...BEL` retitles the terminal
and `ESC[2J` clears it. Rich escapes its own markup but keeps ESC and most other
control characters, so every string the command line prints goes through
`printable`: C0 controls other than newline and tab, DEL and the C1 range are shown
as `\\xNN` escapes. Rich's own styling is applied afterwards, so colours still work.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

from rich.console import Console
from rich.text import Text

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """`text` with every control character but newline and tab written as a visible escape."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


class SafeConsole(Console):
    """A rich Console whose strings (printed, or in table cells) are made printable first."""

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return super().render_str(printable(text), **kwargs)


# Times as people read them: one unit per quantity, picked from its smallest value so that
# every value of it reads as a number of at least 1 (13.6 ms ... 5032 ms, not 0.0136 s).
TIME_UNITS = (("min", 60.0), ("s", 1.0), ("ms", 1e-3), ("µs", 1e-6))
_MINUTES_FROM = 120.0  # below two minutes seconds read better than "1.5 min"


def time_unit(seconds: Iterable[float | None]) -> tuple[str, float]:
    """(unit, seconds per unit) for a set of times: minutes from two minutes up, else the
    largest of s, ms, µs in which the smallest value is at least 1."""
    values = [abs(v) for v in seconds if v is not None and math.isfinite(v) and v != 0]
    if not values:
        return "s", 1.0
    smallest = min(values)
    if smallest >= _MINUTES_FROM:
        return TIME_UNITS[0]
    for unit, scale in TIME_UNITS[1:]:
        if smallest >= scale:
            return unit, scale
    return TIME_UNITS[-1]


def duration(seconds: float | None, unit: tuple[str, float] | None = None, digits: int = 3) -> str:
    """ "171 ms", "1.73 s", "2.5 min": `digits` significant digits (all of them from 10^digits
    up, never 1e+03); in `unit` when given (the unit of the quantity the value belongs to)."""
    if seconds is None or not math.isfinite(seconds):
        return "—"
    name, scale = unit or time_unit([seconds])
    value = seconds / scale
    return f"{value:.0f} {name}" if abs(value) >= 10**digits else f"{value:.{digits}g} {name}"


def number(value: float, digits: int = 3) -> str:
    """`digits` significant digits, never an exponent for a large value (5032, 1,259,000)."""
    if not math.isfinite(value):
        return "—"
    if abs(value) >= 10**digits:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"


def drop_shared(labels: list[str]) -> list[str]:
    """Case labels with the words every label holds left out ("jax:jit mlp digits b32" and
    "torch:eager mlp digits b32" -> "jax:jit", "torch:eager"): what tells the cases apart.
    A label left with nothing keeps its first word."""
    words = [label.split() for label in labels]
    if len(words) < 2:
        return [w[0] if w else "" for w in words]
    shared = set(words[0]).intersection(*map(set, words[1:]))
    return [" ".join(x for x in w if x not in shared) or (w[0] if w else "") for w in words]
