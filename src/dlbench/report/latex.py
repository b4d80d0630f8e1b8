"""LaTeX rendering of a report: a standalone article with booktabs tables.

Every string is escaped (experiment names, case values, error texts and config
text are user input): the ten special characters & % $ # _ { } ~ ^ \\ and the
non-ASCII symbols the tables use (±, —, δ, °, ≥ ...) become LaTeX commands, so
the document compiles with pdflatex as well as with lualatex.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dlbench.report.markdown import relative
from dlbench.report.render import TableData

_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    # OT1 text fonts print < > | as other glyphs.
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
    "±": r"$\pm$",
    "—": "---",
    "–": "--",
    "−": "$-$",
    "δ": r"$\delta$",
    "°": r"\textdegree{}",
    "≥": r"$\geq$",
    "≤": r"$\leq$",
    "≠": r"$\neq$",
    "×": r"$\times$",
    "…": r"\ldots{}",
    "µ": r"\textmu{}",
}


def escape(text: object) -> str:
    return "".join(_SPECIAL.get(ch, ch) for ch in str(text)).replace("\n", " ")


def _tt_block(text: str) -> str:
    """Preformatted text (a command line, TOML, JSON) without a verbatim environment:
    user text containing \\end{verbatim} must not be able to end it."""
    lines = []
    for line in text.rstrip().splitlines() or [""]:
        stripped = line.lstrip(" ")
        indent = len(line) - len(stripped)
        lines.append("~" * indent + escape(stripped) if stripped else "~")
    return "{\\small\\ttfamily\\raggedright\n" + "\\\\\n".join(lines) + "\\par}\n"


def tabular(t: TableData) -> list[str]:
    """The tabular alone (booktabs rules): what a paper `\\input`s inside its own table."""
    spec = "".join("r" if t.alignment(i) == "right" else "l" for i in range(len(t.columns)))
    out = [
        f"\\begin{{tabular}}{{{spec}}}",
        "\\toprule",
        " & ".join(escape(c) for c in t.columns) + " \\\\",
        "\\midrule",
    ]
    out += [" & ".join(escape(c) for c in row) + " \\\\" for row in t.rows]
    return out + ["\\bottomrule", "\\end{tabular}"]


def bare_tables(report) -> list[tuple[str, str]]:
    """(file name, text) of every table as a bare tabular to \\input (needs booktabs),
    numbered in the report's order; the table's title is a comment at its top."""
    out = []
    n = 0
    for heading, tables in report.document_tables():
        if heading == "Hypotheses":
            continue
        for t in tables:
            n += 1
            slug = re.sub(r"[^a-z0-9]+", "_", t.title.lower()).strip("_")[:40] or "table"
            title = " ".join(t.title.split())
            out.append(
                (
                    f"{n:02d}_{slug}.tex",
                    f"% {title}\n% dlbench: \\input this inside a table environment; "
                    "needs \\usepackage{booktabs}\n" + "\n".join(tabular(t)) + "\n",
                )
            )
    return out


def table(t: TableData) -> str:
    out = [
        "\\begin{table}[htbp]",
        "\\centering",
        "\\footnotesize",
        f"\\caption{{{escape(t.title)}}}",
        "\\begin{adjustbox}{max width=\\linewidth}",
        *tabular(t),
        "\\end{adjustbox}",
    ]
    for extra in ([t.caption] if t.caption else []) + t.notes:
        out.append(f"\\par\\smallskip{{\\scriptsize {escape(extra)}}}")
    out.append("\\end{table}")
    return "\n".join(out) + "\n"


def _hypotheses(rows: list[dict]) -> str:
    """Seed 002's layout: each hypothesis as a paragraph (its H0/H1 sentences do not fit a tabular)."""
    from dlbench.report.hypotheses import effect_text, p_text

    out = ["\\begin{description}"]
    for i, r in enumerate(rows, 1):
        out.append(
            f"\\item[Hypothesis {i}] ({escape(r['set'])}, {escape(r['name'])}: {escape(r['a'])} vs {escape(r['b'])})"
        )
        out.append("\\begin{itemize}")
        for key, value in (
            ("H0", r["H0"]),
            ("H1", r["H1"]),
            ("Normality", r["normality"]),
            ("Test", r["test"]),
            ("Statistic", f"{r['statistic_name']} = {r['statistic']:.4g}"),
            ("p", p_text(r)),
            ("Decision", r["decision"]),
            ("Effect", effect_text(r)),
            ("Verdict", f"{r['verdict']}: {r['reason']}"),
        ):
            out.append(f"\\item \\textbf{{{escape(key)}:}} {escape(value)}")
        out.append("\\end{itemize}")
    out.append("\\end{description}")
    return "\n".join(out) + "\n"


def answer(report) -> list[str]:
    """The answer block: a paragraph per compared setting, an item per framework."""
    a = report.answer
    out = ["\\subsection*{Answer}"]
    if not a.items:  # the notes still hold: a setting applied in part, mixed hardware
        return out + [escape(a.empty) + "\\par"] + [f"{{\\small {escape(n)}\\par}}" for n in a.notes]
    subject = None
    for item in a.items:
        if item.subject != subject:
            if subject is not None:
                out.append("\\end{itemize}")
            subject = item.subject
            out += [f"\\paragraph{{{escape(subject)}}}", "\\begin{itemize}"]
        out.append(f"\\item \\emph{{{escape(item.metric)}}}: {escape(item.best)}")
        if item.others:
            out += ["\\begin{itemize}", *(f"\\item {escape(line)}" for line in item.others), "\\end{itemize}"]
    out.append("\\end{itemize}")
    out += [f"{{\\small {escape(n)}\\par}}" for n in a.notes]
    return out


def preface(section) -> list[str]:
    """A dlbench.report.render.Preface: its lines as paragraphs, then its tables."""
    if section is None:
        return []
    out = [f"\\subsection*{{{escape(section.title)}}}"]
    out += [f"{escape(line)}\\par" for line in section.lines]
    out += [table(t) for t in section.tables]
    return out


def render(report, figures: Sequence[Any] = (), base: Path | None = None) -> str:
    """A whole document; figures (written by make_figures) are included relative to `base`."""
    r = report.run
    out = [
        "\\documentclass[a4paper]{article}",
        "\\usepackage[T1]{fontenc}",
        "\\usepackage[utf8]{inputenc}",
        "\\usepackage[landscape,margin=1.5cm]{geometry}",
        "\\usepackage{booktabs}",
        "\\usepackage{adjustbox}",
        "\\usepackage{textcomp}",
        "\\usepackage{graphicx}",
        "\\begin{document}",
        f"\\section*{{{escape(report.title)}}}",
        f"Status {escape(r['status'])}, started {escape(r['started_at'])}"
        + (f", finished {escape(r['finished_at'])}" if r.get("finished_at") else "")
        + f", dlbench {escape(r.get('dlbench_version') or '?')}.\\par\\medskip",
        *preface(report.preface),
        *answer(report),
        "Command:\\par",
        _tt_block(r.get("command") or ""),
    ]
    if report.settings:
        out.append(f"\\medskip Settings shared by every case: {escape(report.settings)}.\\par")
        out.append(f"Notes: {escape(report.legend)}.\\par")
    for heading, tables in report.document_tables():
        out.append(f"\\subsection*{{{escape(heading)}}}")
        if heading == "Hypotheses":
            out.append(_hypotheses(report.hypotheses))
            continue
        out += [table(t) for t in tables]
        out.append("\\clearpage" if heading == "Telemetry" else "")
    for fig in figures:
        if fig.png is None:
            continue
        out += [
            "\\begin{figure}[htbp]",
            "\\centering",
            f"\\includegraphics[width=\\linewidth,height=0.75\\textheight,keepaspectratio]"
            f"{{{relative(fig.png, base)}}}",
            f"\\caption{{{escape(fig.title)}. {escape(fig.caption)}}}",
            "\\end{figure}",
        ]
    if figures:
        out.append("\\clearpage")
    if r.get("config_text"):
        out += [
            f"\\subsection*{{Configuration ({escape(r.get('config_source') or 'embedded')})}}",
            _tt_block(r["config_text"]),
        ]
    if report.manifests:
        out.append("\\subsection*{Fairness manifests}")
        for m in report.manifests:
            out.append(f"\\paragraph{{Trial {m.trial_id}}} block {m.block}, {escape(m.status)}: {escape(m.case)}\\par")
            out.append(_tt_block(json.dumps(m.manifest, indent=1, sort_keys=True, default=str)))
    out.append("\\end{document}")
    return "\n".join(out) + "\n"
