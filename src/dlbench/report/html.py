"""HTML rendering of a report: one self-contained file.

Figures are inlined as base64 SVG (or PNG) data URIs in <img> elements, where
an SVG can run no script, and the CSS sits in a <style> element, so the file can
be mailed or archived and opens offline; it loads nothing from the network and
needs no script (fairness manifests collapse with <details>). jinja2
autoescaping escapes every user string: experiment names, config text, error
texts and case values.

The answer box has two states: green when every line of the answer stands as it
is, amber (with the warnings in its head) when the answer carries a warning: a
case measured on a busy machine, an undecided comparison, a comparison of one
process per side (no verdict), trials on mixed hardware, a part or sampler that
failed, a setting that did not apply in full, or nothing to compare.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from pathlib import Path

from dlbench.report.answer import BUSY_MARK
from dlbench.report.hypotheses import effect_text, p_text

TEMPLATES = Path(__file__).parent / "templates"


@dataclass(frozen=True)
class InlineFigure:
    name: str
    title: str
    caption: str
    data_uri: str


# Words that make one line of the answer a warning: it is no verdict, or rests on a busy machine
# (report.answer words them so; the notes that warn come marked, Answer.warnings).
WARNING_LINE_WORDS = ("undecided", "no verdict", "busy machine", BUSY_MARK)


@dataclass(frozen=True)
class AnswerState:
    """How the HTML answer box shows the answer: `warnings` (empty: the green state), the
    notes that are no warning, and which of the answer's lines carry a warning."""

    warnings: tuple[str, ...]
    notes: tuple[str, ...]
    warned_lines: frozenset[str] = field(default_factory=frozenset)

    @property
    def state(self) -> str:
        return "warning" if self.warnings else "ok"


def answer_state(answer) -> AnswerState:
    """The answer's warnings: its notes that warn (busy machine first, as the answer puts
    it), then how many comparisons are undecided or have no verdict, counted on its lines."""
    warnings = list(answer.warnings)
    notes = tuple(n for n in answer.notes if n not in warnings)
    lines = [line for item in answer.items for line in item.others]
    every = [line for item in answer.items for line in (item.best, *item.others)]
    warned = frozenset(line for line in every if any(w in line for w in WARNING_LINE_WORDS))
    undecided = sum("undecided" in line for line in lines)
    if undecided:
        warnings.append(
            f"{undecided} of {len(lines)} comparison(s) undecided: the data cannot yet say which is better "
            "(each such line says what would decide it)"
        )
    if not answer.items and answer.empty:
        warnings.append(answer.empty)
    return AnswerState(tuple(warnings), notes, warned)


def _read(data: object) -> bytes:
    """A figure file's bytes: given as bytes, or the path make_figures wrote."""
    if isinstance(data, (bytes, bytearray)):
        return bytes(data)
    return Path(str(data)).read_bytes()


def _data_uri(f) -> str:
    """SVG when the figure has it (vector: sharp at any zoom, and the report draws its
    figures as SVG only, a quarter less work than rasterizing PNGs), otherwise PNG."""
    if getattr(f, "svg", None) is not None:
        try:
            return svg_data_uri(_read(f.svg))
        except ValueError:
            raise ValueError(f"figure {f.name!r}: not an SVG file") from None
    data = _read(f.png)
    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        raise ValueError(f"figure {f.name!r}: not a PNG file")
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def svg_data_uri(data: bytes) -> str:
    """An SVG file's bytes as a data URI for <img> (where an SVG can run no script)."""
    if b"<svg" not in data[:2000]:
        raise ValueError("not an SVG file")
    return "data:image/svg+xml;base64," + base64.b64encode(data).decode("ascii")


def inline_figures(figures) -> list[InlineFigure]:
    return [
        f if isinstance(f, InlineFigure) else InlineFigure(f.name, f.title, f.caption or "", _data_uri(f))
        for f in figures
    ]


def environment():
    """The templates' jinja2 environment: autoescaping on, an undefined name an error."""
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render(report, figures=(), figures_note: str = "") -> str:
    env = environment()
    sections = [
        ("summary", "Summary statistics", report.summary),
        ("sweeps", "Batch-size sweeps", report.sweeps),
        ("latency", "Inference latency", [report.latency] if report.latency else []),
        ("telemetry", "Telemetry", report.telemetry),
        ("verdicts", "Verdicts", [t for t in (report.omnibus, report.verdicts) if t]),
    ]
    hypotheses = [dict(r, p_text=p_text(r), effect_text=effect_text(r)) for r in report.hypotheses]
    return env.get_template("report.html.j2").render(
        report=report,
        answer_state=answer_state(report.answer),
        run=report.run,
        environment=report.environment_table(),
        manifests=[(m, json.dumps(m.manifest, indent=2, sort_keys=True, default=str)) for m in report.manifests],
        sections=sections,
        hypotheses=hypotheses,
        figures=inline_figures(figures),
        figures_note=figures_note,
    )
