"""Console rendering (rich) of TableData and of a whole report.

The default `dlbench report` output and the report `dlbench run` prints at the
end: the same tables as every other format, drawn with rich box characters.
"""

from __future__ import annotations

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from dlbench.report.render import TableData


def rich_table(data: TableData) -> RenderableType:
    """A rich Table; with notes, the table followed by the note lines."""
    t = Table(title=data.title, caption=data.caption or None)
    for i, col in enumerate(data.columns):
        # fold: long error texts and sampler reasons wrap inside their cell instead of
        # being cut with an ellipsis; numbers never wrap inside "1.2 ± 0.3".
        t.add_column(col, justify=data.alignment(i), overflow="fold", no_wrap=col in data.nowrap)
    for row in data.rows:
        t.add_row(*row)
    if not data.notes:
        return t
    return Group(t, *(Text(note) for note in data.notes))


def print_report(console: Console, report) -> None:
    """Print a dlbench.report.model.Report: the settings line, then every table in
    the order the run command has always printed them."""
    if report.settings:
        console.print(f"settings shared by every case: {report.settings}", highlight=False)
        console.print("notes: " + report.legend, highlight=False)
    for table in report.console_tables():
        console.print(rich_table(table))
