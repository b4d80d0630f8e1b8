"""The format-neutral table every report renderer consumes.

A table is built once, as plain strings, by dlbench.report.tables / dlbench.report.verdict_tables
/ dlbench.report.hypotheses; console (rich), Markdown, LaTeX, HTML and CSV are
renderings of the same TableData, so the formats cannot disagree on a number.
The data does not draw itself: each format's module renders it.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class TableData:
    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    caption: str = ""  # printed under the table (what a symbol or an empty table means)
    notes: list[str] = field(default_factory=list)  # further lines after the caption
    # Per column "left" or "right"; numbers are right-aligned. Missing entries: left.
    align: list[str] = field(default_factory=list)
    # Columns whose cells must not wrap on the console ("1.23 ± 0.04" is one value).
    nowrap: frozenset[str] = frozenset()
    # Columns the console may leave out, in this order, when the table is wider than the
    # console (the written formats always show every column).
    optional: tuple[str, ...] = ()

    def add_row(self, *cells: object) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"table {self.title!r}: row has {len(cells)} cells for {len(self.columns)} columns")
        self.rows.append([str(c) for c in cells])

    def alignment(self, i: int) -> str:
        return self.align[i] if i < len(self.align) else "left"


@dataclass
class Preface:
    """A section every format shows before the run's own report (a study's paper vs
    this run): lines of text, the first of which leads the whole report, then tables."""

    title: str
    lines: list[str] = field(default_factory=list)
    tables: list[TableData] = field(default_factory=list)
    # The console shows the first this many tables unless asked for details (None: all).
    console_tables: int | None = None
