"""`dlbench report --format`: one entry point from a stored run to the text of a report.

console is printed by the CLI with rich; markdown, latex, html and csv are
returned as text to print or write to --out. Only HTML carries figures
(dlbench.report.plots, matplotlib), drawn into a temporary directory and
inlined, so the written file stands alone.

Drawing is most of an HTML report's time (matplotlib layout and PNG encoding,
~8 s of CPU over 100,000 measurements), so on Linux the figures are drawn in
two forked children while this process computes the tables and tests: the
rows are read from the database once, before the fork, and the children
inherit them (no second read, no pickling of 100,000 rows). Elsewhere they
are drawn here, one after another.
"""

from __future__ import annotations

import sys
import tempfile
import traceback
from typing import Any

FORMATS = ("console", "markdown", "latex", "html", "csv")

# Two groups of about equal drawing cost (measured at 100,000 measurements).
FIGURE_GROUPS = (("03_runs_train_time", "01_box_train_time", "07_energy_runs", "08_telemetry"),
                 ("05_batch_size", "06_accuracy_runs", "02_box_infer_time", "04_relative_time"))


def _start_figures(trials: list, rows: list, tmp: str) -> Any:
    """Start drawing (forked children on Linux); _finish_figures collects the result."""
    try:
        from dlbench.report.plots import make_figures
    except ImportError as exc:  # matplotlib is optional: the tables stand without it
        return f"plotting is unavailable ({exc})"

    def draw(names):
        return make_figures(None, 0, tmp, formats=("png",), only=names, trials=trials, rows=rows)

    if not sys.platform.startswith("linux"):
        return [draw(None)]
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    children = []
    for names in FIGURE_GROUPS:
        reader, writer = ctx.Pipe(duplex=False)

        def child(names=names, writer=writer):
            try:
                writer.send(("ok", draw(names)))
            except BaseException:  # report anything, then let the child end
                writer.send(("error", traceback.format_exc()))
            finally:
                writer.close()

        process = ctx.Process(target=child, daemon=True)
        process.start()
        writer.close()
        children.append((process, reader))
    return children


def _finish_figures(drawing: Any) -> tuple[list, str]:
    from dlbench.report.html import inline_figures
    from dlbench.report.plots import FIGURE_NAMES

    if isinstance(drawing, str):
        return [], drawing
    figures = []
    for part in drawing:
        if isinstance(part, list):
            figures += part
            continue
        process, reader = part
        try:
            status, payload = reader.recv()
        except EOFError:
            process.join()
            raise RuntimeError(f"drawing the figures failed: the child process ended with code "
                               f"{process.exitcode} and no result") from None
        process.join()
        if status != "ok":
            raise RuntimeError(f"drawing the figures failed:\n{payload}")
        figures += payload
    figures.sort(key=lambda f: FIGURE_NAMES.index(f.name))
    # Inline now: the PNG files vanish with the directory.
    return inline_figures(figures), "" if figures else "the run has no values to plot"


def render(store, run_id: int, fmt: str) -> str:
    """The report of run_id in a written format (everything but console)."""
    from dlbench.report import csv_out, html, latex, markdown
    from dlbench.report.model import build_report

    if fmt not in FORMATS or fmt == "console":
        raise ValueError(f"format {fmt!r}: written formats are {', '.join(f for f in FORMATS if f != 'console')}")
    trials, rows = store.trials(run_id), store.measurements(run_id)
    if fmt != "html":
        # CSV holds the summary only: skip the hypothesis tests it would not show.
        report = build_report(store, run_id, hypotheses=fmt != "csv", trials=trials, measurements=rows)
        return {"markdown": markdown.render, "latex": latex.render, "csv": csv_out.render}[fmt](report)
    with tempfile.TemporaryDirectory(prefix="dlbench-figures-") as tmp:
        drawing = _start_figures(trials, rows, tmp)  # drawn while the tables are computed
        report = build_report(store, run_id, trials=trials, measurements=rows)
        figures, note = _finish_figures(drawing)
    return html.render(report, figures, note)
