"""`dlbench report --format`: one entry point from a stored run to the text of a report.

console is printed by the CLI with rich; markdown, latex, html and csv are
returned as text to print or write to --out. Only HTML carries figures
(dlbench.report.plots, matplotlib), drawn into a temporary directory and
inlined, so the written file stands alone.
"""

from __future__ import annotations

import tempfile

FORMATS = ("console", "markdown", "latex", "html", "csv")


def figures_for(store, run_id: int) -> tuple[list, str]:
    """The run's figures and, when there are none, why (shown in the report)."""
    from dlbench.report.html import inline_figures

    with tempfile.TemporaryDirectory(prefix="dlbench-figures-") as tmp:
        try:
            from dlbench.report.plots import make_figures

            figures = make_figures(store, run_id, tmp)
        except ImportError as exc:  # matplotlib is optional: the tables stand without it
            return [], f"plotting is unavailable ({exc})"
        # Inline now: the PNG files vanish with the directory.
        return inline_figures(figures), "" if figures else "the run has no values to plot"


def render(store, run_id: int, fmt: str) -> str:
    """The report of run_id in a written format (everything but console)."""
    from dlbench.report import csv_out, html, latex, markdown
    from dlbench.report.model import build_report

    if fmt not in FORMATS or fmt == "console":
        raise ValueError(f"format {fmt!r}: written formats are {', '.join(f for f in FORMATS if f != 'console')}")
    # CSV holds the summary only: skip the hypothesis tests it would not show.
    report = build_report(store, run_id, hypotheses=fmt != "csv")
    if fmt == "markdown":
        return markdown.render(report)
    if fmt == "latex":
        return latex.render(report)
    if fmt == "csv":
        return csv_out.render(report)
    figures, note = figures_for(store, run_id)
    return html.render(report, figures, note)
