"""Text from a database reaches a terminal as text, never as terminal commands.

A run name, a command line, an error message or a note comes from a database that
someone else may have written. Printed raw, `ESC]0;...BEL` retitles the terminal
and `ESC[2J` clears it. Rich escapes its own markup but keeps ESC and most other
control characters, so every string the command line prints goes through
`printable`: C0 controls other than newline and tab, DEL and the C1 range are shown
as `\\xNN` escapes. Rich's own styling is applied afterwards, so colours still work.
"""

from __future__ import annotations

import re
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
