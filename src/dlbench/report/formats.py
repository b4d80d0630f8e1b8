"""`dlbench report --format`: one entry point from a stored run to the text of a report.

console is printed by the CLI with rich; markdown, latex, html, csv and json are
returned as text to print or write to --out. Only HTML carries figures
(dlbench.report.plots, matplotlib), drawn into a temporary directory and
inlined, so the written file stands alone.

The report's figures are SVG: vector, sharp at any zoom, 30% smaller than the
PNGs, and a quarter less CPU (no rasterizing, no PNG encoding). Drawing is still
most of an HTML report's time (matplotlib layout and text: ~4 s of CPU over
100,000 measurements), so on Linux the figures are shared out among two forked
children and this process. The rows the figures draw (all but the per-call
latencies) are read before the fork and inherited, not pickled; this process
reads the latencies after it. Each worker takes the next undrawn figure, largest
first, from a shared counter, and this process joins in once its tables and
tests are computed, so that no core idles while figures remain. Elsewhere they
are drawn here, one after another.
"""

from __future__ import annotations

import importlib
import sys
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlbench.analysis.criteria import ALPHA, BAND


@dataclass(frozen=True)
class Format:
    """One report format: the function that writes it ("module:function", taking the
    report, the figures written beside it and the folder they are linked from; "" for
    the console, which the command line prints with rich), whether it shows the
    hypothesis tests, and how it holds figures ("linked" files, "inlined" in the
    document, or "none")."""

    name: str
    writer: str
    hypotheses: bool = True
    figures: str = "linked"

    def write(self, report: Any, figures: Any, base: Any) -> str:
        module, _, function = self.writer.partition(":")
        text: str = getattr(importlib.import_module(module), function)(report, figures, base)
        return text


# Every format `report --format` takes, by name; a new format is one entry here.
REGISTRY: dict[str, Format] = {
    f.name: f
    for f in (
        Format("console", ""),
        Format("markdown", "dlbench.report.markdown:render"),
        Format("latex", "dlbench.report.latex:render"),
        Format("html", "dlbench.report.html:render", figures="inlined"),
        # CSV holds the summary only: the hypothesis tests it would not show are skipped.
        Format("csv", "dlbench.report.csv_out:render", hypotheses=False, figures="none"),
        # JSON for scripts (docs/json.md): the numbers behind the answer and every table, no
        # figures; the hypothesis report (normality tests per sample) is not part of it.
        Format("json", "dlbench.report.json_out:render", hypotheses=False, figures="none"),
    )
}
FORMATS = tuple(REGISTRY)
CHILDREN = 2  # with this process: three workers keep two cores busy to the end

# Largest first (measured at 100,000 measurements), so the last figures taken are small.
DRAWING_ORDER = (
    "05_batch_size",
    "03_runs_train_time",
    "06_accuracy_runs",
    "02_box_infer_time",
    "01_box_train_time",
    "04_relative_time",
    "08_telemetry",
    "10_learning_curves",
    "07_energy_runs",
    "09_scaling",
)


class _Drawing:
    """Figures being drawn by forked children and, on finish(), by this process too."""

    def __init__(self, trials: list, rows: list, tmp: str) -> None:
        from dlbench.report.plots import FIGURE_NAMES, index_rows, make_figures

        assert sorted(DRAWING_ORDER) == sorted(FIGURE_NAMES), "DRAWING_ORDER must name every figure"
        indexed = index_rows(trials, rows)  # once, here: every worker inherits it
        self._draw = lambda name: make_figures(
            None, 0, Path(tmp), formats=("svg",), only=(name,), trials=trials, rows=rows, indexed=indexed
        )
        self.children: list = []
        if not sys.platform.startswith("linux"):
            self._next = iter(range(len(DRAWING_ORDER))).__next__
            return
        import multiprocessing

        # Import matplotlib and load the font once here: the children inherit them, instead
        # of spending 0.5 s (matplotlib) and 0.4 s (matplotlib.figure) each. scipy, which
        # only the tables need, is imported after the fork, by this process alone.
        import matplotlib
        import matplotlib.figure  # noqa: F401
        from matplotlib import font_manager
        from matplotlib.backends import backend_agg  # noqa: F401

        font_manager.get_font(font_manager.findfont("DejaVu Sans"))
        # Box plots read every rcParam, and reading "backend" while it is still the
        # automatic choice imports pyplot to resolve it: resolve it once here.
        matplotlib.rcParams["backend"]
        ctx = multiprocessing.get_context("fork")
        self._counter = ctx.Value("i", 0)  # index of the next figure to draw, with its lock
        self._next = self._take
        for _ in range(CHILDREN):
            reader, writer = ctx.Pipe(duplex=False)
            process = ctx.Process(target=self._child, args=(writer,), daemon=True)
            process.start()
            writer.close()
            self.children.append((process, reader))

    def _take(self) -> int:
        with self._counter.get_lock():
            n = self._counter.value
            self._counter.value = n + 1
        if n >= len(DRAWING_ORDER):
            raise StopIteration
        return n

    def _drain(self) -> list:
        drawn: list[Any] = []
        while True:
            try:
                n = self._next()
            except StopIteration:
                return drawn
            drawn += self._draw(DRAWING_ORDER[n])

    def _child(self, writer: Any) -> None:
        try:
            writer.send(("ok", self._drain()))
        except BaseException:  # report anything, then let the child end
            writer.send(("error", traceback.format_exc()))
        finally:
            writer.close()

    def finish(self) -> tuple[list, str]:
        """Draw what is left here, collect the children's figures, inline them all."""
        from dlbench.report.html import inline_figures
        from dlbench.report.plots import FIGURE_NAMES

        figures = self._drain()
        for process, reader in self.children:
            try:
                status, payload = reader.recv()
            except EOFError:
                process.join()
                raise RuntimeError(
                    f"drawing the figures failed: the child process ended with code {process.exitcode} and no result"
                ) from None
            process.join()
            if status != "ok":
                raise RuntimeError(f"drawing the figures failed:\n{payload}")
            figures += payload
        figures.sort(key=lambda f: FIGURE_NAMES.index(f.name))
        # Inline now: the files vanish with the directory.
        return inline_figures(figures), "" if figures else "the run has no values to plot"


def _start_figures(trials: list, rows: list, tmp: str) -> Any:
    """Start drawing (forked children on Linux); _finish_figures completes it."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:  # matplotlib is optional: the tables stand without it
        return f"plotting is unavailable ({exc})"
    return _Drawing(trials, rows, tmp)


def _finish_figures(drawing: Any) -> tuple[list, str]:
    if isinstance(drawing, str):
        return [], drawing
    return drawing.finish()


def render(
    store,
    run_id: int,
    fmt: str,
    figures: Any = (),
    base: Any = None,
    preface: Any = None,
    band: float = BAND,
    alpha: float = ALPHA,
    busy_verdicts: bool = False,
) -> str:
    """The report of run_id in a written format (everything but console). Markdown and
    LaTeX link `figures` (already written by make_figures) relative to `base`; `preface`
    (a dlbench.report.render.Preface) comes before everything else; `band` and `alpha`
    are the verdict criteria (dlbench.analysis.criteria)."""
    from dlbench.report.model import build_report

    form = REGISTRY.get(fmt)
    if form is None or not form.writer:
        raise ValueError(f"format {fmt!r}: written formats are {', '.join(f for f in FORMATS if REGISTRY[f].writer)}")
    if form.figures != "inlined":
        report = build_report(
            store, run_id, hypotheses=form.hypotheses, band=band, alpha=alpha, busy_verdicts=busy_verdicts
        )
        report.preface = preface
        return form.write(report, figures, base)
    # Neither the figures nor the tables but the latency table need the per-call latency
    # rows (nine in ten of a run's rows): build_report reads those apart, after the fork.
    trials, rows = store.trials(run_id), store.measurements(run_id, latency=False)
    with tempfile.TemporaryDirectory(prefix="dlbench-figures-") as tmp:
        drawing = _start_figures(trials, rows, tmp)  # drawn while the tables are computed
        report = build_report(
            store, run_id, trials=trials, measurements=rows, band=band, alpha=alpha, busy_verdicts=busy_verdicts
        )
        report.preface = preface
        figures, note = _finish_figures(drawing)
    return form.write(report, figures, note)
