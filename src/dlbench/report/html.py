"""HTML rendering of a report: one self-contained file.

Figures are inlined as base64 SVG (or PNG) data URIs in <img> elements, where
an SVG can run no script, and the CSS sits in a <style> element, so the file can
be mailed or archived and opens offline; it loads nothing from the network and
needs no script (fairness manifests collapse with <details>). jinja2
autoescaping escapes every user string: experiment names, config text, error
texts and case values.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from pathlib import Path

from dlbench.report.hypotheses import effect_text, p_text

TEMPLATES = Path(__file__).parent / "templates"


@dataclass(frozen=True)
class InlineFigure:
    name: str
    title: str
    caption: str
    data_uri: str


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
        run=report.run,
        environment=report.environment_table(),
        manifests=[(m, json.dumps(m.manifest, indent=2, sort_keys=True, default=str)) for m in report.manifests],
        sections=sections,
        hypotheses=hypotheses,
        figures=inline_figures(figures),
        figures_note=figures_note,
    )
