"""Console rendering (rich) of TableData and of a whole report.

The default `dlbench report` output and the report `dlbench run` prints at the
end. A table is fitted to the console's width without breaking a word inside a
cell: each column is at least as wide as its longest word, and when that cannot
fit, the columns the table marks optional are dropped, in its order. The answer
block comes first; `--details` adds every table of the written formats.
"""

from __future__ import annotations

import re
import textwrap

from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from dlbench.report.render import TableData
from dlbench.terminal import printable

# A sentence too long for the width goes on under itself, this much further in than its
# first line: a reader sees where one sentence ends and the next begins.
HANG = 4
# A number and its unit stay on one line ("302 µs", "0.56 pp", "7 pairs" is free to break).
_UNIT = re.compile(r"(\d) (µs|ms|s|min|pp|%)(?=\W|$)")
_KEEP = "\u00a0"  # textwrap breaks at ASCII whitespace only


def wrapped(text: str, width: int, hang: int = HANG) -> list[str]:
    """`text` (its leading spaces are its indent) as lines of at most `width` columns, the
    lines after the first `hang` columns further in; words are never cut (a word longer
    than the room keeps its own line)."""
    body = text.lstrip(" ")
    indent = " " * (len(text) - len(body))
    if not body:
        return [""]
    lines = textwrap.wrap(
        _UNIT.sub(lambda m: f"{m.group(1)}{_KEEP}{m.group(2)}", body),
        width=max(width, len(indent) + hang + 20),
        initial_indent=indent,
        subsequent_indent=indent + " " * hang,
        break_long_words=False,
        break_on_hyphens=False,
    )
    return [line.replace(_KEEP, " ") for line in lines]


def say(console: Console, text: str, style: str | None = None, hang: int = HANG) -> None:
    """Print one sentence (or several on one line) wrapped at the console's width with a hanging indent."""
    for line in wrapped(printable(text), console.width, hang):
        console.print(Text(line, style=style or ""), soft_wrap=True, highlight=False)


# What a rich table adds around its cells: "│ " before each column, " │" at the end.
_BORDER_PER_COLUMN, _BORDER_END = 3, 1


def _longest_word(texts: list[str]) -> int:
    return max((len(word) for text in texts for word in text.split()), default=0)


def _fitted(data: TableData, width: int | None) -> tuple[list[int], list[int]]:
    """(kept column indices, their minimum widths) so that no word breaks within `width`."""
    kept = list(range(len(data.columns)))

    def minimum(i: int) -> int:
        cells = [row[i] for row in data.rows]
        if data.columns[i] in data.nowrap:  # one value ("1.23 ± 0.04"): its whole length
            return max([len(data.columns[i].split()[0]) if data.columns[i] else 0, *map(len, cells)])
        return _longest_word([data.columns[i], *cells])

    mins = {i: minimum(i) for i in kept}
    if width is not None:
        for name in data.optional:
            if sum(mins[i] + _BORDER_PER_COLUMN for i in kept) + _BORDER_END <= width:
                break
            if name in data.columns and data.columns.index(name) in kept:
                kept.remove(data.columns.index(name))
    return kept, [mins[i] for i in kept]


def _widths(data: TableData, kept: list[int], mins: list[int], width: int) -> list[int] | None:
    """Fixed column widths that fill at most `width`: every column its minimum, then the
    room left shared out in proportion to what each column would need to keep its
    cells on one line. None when even the minimums do not fit (rich then decides)."""
    room = width - len(kept) * _BORDER_PER_COLUMN - _BORDER_END
    natural = [max([len(data.columns[i]), *(len(row[i]) for row in data.rows)]) for i in kept]
    if sum(mins) > room:
        return None
    spare = room - sum(mins)
    wants = [n - m for n, m in zip(natural, mins)]
    if sum(wants) <= spare:
        return natural
    given = [m + (spare * w) // sum(wants) for m, w in zip(mins, wants)]
    return given


def rich_table(data: TableData, width: int | None = None) -> RenderableType:
    """A rich Table; with notes, the table followed by the note lines. With a width,
    optional columns are dropped until every column fits its longest word, and the
    columns get fixed widths no narrower than that."""
    from dataclasses import replace

    # Measured as printed: a database's text shows its control characters as escapes
    # ("\\x1b", four characters for one), and a width taken from the raw text cut it.
    data = replace(data, rows=[[printable(c) if isinstance(c, str) else c for c in row] for row in data.rows])
    kept, mins = _fitted(data, width)
    fixed = _widths(data, kept, mins, width) if width is not None else None
    # With a width, the caption is a sentence under the table like the notes, left-aligned and
    # wrapped with a hanging indent (rich centres a caption and wraps it flush).
    t = Table(
        title=data.title,
        caption=(data.caption or None) if width is None else None,
        title_justify="center" if width is None else "left",
    )
    # Where even every column's longest word cannot fit, the width wins: rich folds words
    # (a cut word reads better than a log line past its width, which a viewer wraps anyway).
    squeezed = width is not None and fixed is None
    for n, (i, minimum) in enumerate(zip(kept, mins)):
        col = data.columns[i]
        t.add_column(
            col,
            justify="right" if data.alignment(i) == "right" else "left",
            overflow="fold",
            no_wrap=col in data.nowrap and not squeezed,
            min_width=None if squeezed else minimum,
            width=fixed[n] if fixed else None,
        )
    for row in data.rows:
        t.add_row(*(row[i] for i in kept))
    dropped = [data.columns[i] for i in range(len(data.columns)) if i not in kept]
    notes = [*data.notes, *([f"(left out to fit {width} columns: {', '.join(dropped)})"] if dropped else [])]
    if width is not None and data.caption:
        notes.insert(0, data.caption)
    if not notes:
        return t
    if width is None:
        return Group(t, *(Text(note) for note in notes))
    return Group(t, *(Text("\n".join(wrapped(printable(note), width))) for note in notes))


def print_preface(console: Console, preface, details: bool = False) -> None:
    """A dlbench.report.render.Preface: its lines, then its tables (the long ones with details only)."""
    width = console.width
    console.print(Text(preface.title, style="bold"))
    for line in preface.lines:
        say(console, line)
    shown = preface.tables if details or preface.console_tables is None else preface.tables[: preface.console_tables]
    for table in shown:
        console.print()
        console.print(rich_table(table, width))
        for note in table.notes:
            say(console, note, style="dim")
    console.print()


def print_report(console: Console, report, details: bool = False) -> None:
    """Print a dlbench.report.model.Report: the answer first, then one row per case,
    then what only some runs have (sweeps, latency, failures); `details` adds every
    table of the written formats."""
    width = console.width
    if report.preface is not None:
        print_preface(console, report.preface, details)
    for line in report.lead_lines():
        say(console, line)
    console.print()
    console.print(Text("Answer", style="bold"))
    for line in report.answer.lines():
        say(console, "  " + line)
    for note in report.answer.notes:
        say(console, "  " + note, style="dim")
    tables = report.console_tables(details)
    for table in tables:
        console.print()
        console.print(rich_table(table, width))
    console.print()
    # The samplers line names why energy was not measured: the energy note would say it twice.
    if report.samplers_line:
        say(console, report.samplers_line)
    from dlbench.report.model import legend_for

    legend = legend_for(tables)
    if legend:
        say(console, "notes: " + legend)
    if not details:
        say(
            console,
            f"more: dlbench report --run {report.run['id']} --details (every table), "
            "--format html --out report.html (with figures)",
        )
