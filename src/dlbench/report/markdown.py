"""Markdown rendering (GitHub-flavoured pipe tables) of a report.

Cell text is escaped so that a `|` or a newline in an error text cannot break
the table, and `<`, `&`, `*`, `_` in user strings (experiment names, case
values) render as themselves instead of as HTML or emphasis.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dlbench.report.render import TableData

_ESCAPES = {
    "\\": "\\\\",
    "|": "\\|",
    "`": "\\`",
    "*": "\\*",
    "_": "\\_",
    "[": "\\[",
    "]": "\\]",
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
    "#": "\\#",
}


def escape(text: str) -> str:
    out = "".join(_ESCAPES.get(ch, ch) for ch in str(text))
    return " ".join(out.splitlines())  # a table row is one line


def _fence(text: str, lang: str = "") -> str:
    # A fence longer than any backtick run inside, so config text cannot close it early.
    longest, run = 0, 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text.rstrip()}\n{fence}"


def table(t: TableData) -> str:
    lines = [f"**{escape(t.title)}**", ""]
    lines.append("| " + " | ".join(escape(c) for c in t.columns) + " |")
    lines.append("|" + "|".join("---:" if t.alignment(i) == "right" else "---" for i in range(len(t.columns))) + "|")
    for row in t.rows:
        lines.append("| " + " | ".join(escape(c) for c in row) + " |")
    for extra in ([t.caption] if t.caption else []) + t.notes:
        lines += ["", f"*{escape(extra)}*"]
    return "\n".join(lines)


def answer(report) -> list[str]:
    """The answer block: a heading per compared setting, a bullet per framework."""
    a = report.answer
    parts = ["## Answer", ""]
    if not a.items:  # the notes still hold: a setting applied in part, mixed hardware
        return parts + [escape(a.empty), ""] + [line for note in a.notes for line in (f"*{escape(note)}*", "")]
    subject = None
    for item in a.items:
        if item.subject != subject:
            # A blank line first: right after a list, the bold line would join its last item.
            parts += [""] if subject is not None else []
            subject = item.subject
            parts += [f"**{escape(subject)}**", ""]
        parts.append(f"- *{escape(item.metric)}*: {escape(item.best)}")
        parts += [f"  - {escape(line)}" for line in item.others]
    parts.append("")
    for note in a.notes:
        parts += [f"*{escape(note)}*", ""]
    return parts


def relative(path: Path, base: Path | None) -> str:
    """A figure's path as the document should link it: relative to the document's folder
    (so the pair can be moved together), with forward slashes."""
    if base is None:
        return path.as_posix()
    return Path(os.path.relpath(path.resolve(), base.resolve())).as_posix()


def figures_section(figures: Sequence[Any], base: Path | None) -> list[str]:
    parts = ["", "## Figures"]
    for f in figures:
        if f.png is None:
            continue
        parts += ["", f"![{escape(f.title)}]({relative(f.png, base)})", "", f"*{escape(f.caption)}*"]
    return parts


def preface(section) -> list[str]:
    """A dlbench.report.render.Preface as a section of its own (nothing when None)."""
    if section is None:
        return []
    parts = [f"## {escape(section.title)}", ""]
    for line in section.lines:
        parts += [escape(line), ""]
    for t in section.tables:
        parts += [table(t), ""]
    return parts


def render(report, figures: Sequence[Any] = (), base: Path | None = None) -> str:
    """figures: written by make_figures, linked relative to `base` (the document's folder)."""
    r = report.run
    parts = [
        f"# {escape(report.title)}",
        "",
        *preface(report.preface),
        *answer(report),
        f"Status **{escape(r['status'])}**, started {escape(r['started_at'])}"
        + (f", finished {escape(r['finished_at'])}" if r.get("finished_at") else "")
        + f", dlbench {escape(r.get('dlbench_version') or '?')}.",
        "",
        "Command:",
        "",
        _fence(r.get("command") or "", "sh"),
    ]
    if r.get("config_text"):
        parts += [
            "",
            f"Configuration ({escape(r.get('config_source') or 'embedded')}):",
            "",
            _fence(r["config_text"], "toml"),
        ]
    if report.settings:
        parts += [
            "",
            f"Settings shared by every case: {escape(report.settings)}",
            "",
            f"Notes: {escape(report.legend)}",
        ]
    for heading, tables in report.document_tables():
        parts += ["", f"## {heading}"]
        for t in tables:
            parts += ["", table(t)]
    if figures:
        parts += figures_section(figures, base)
    if report.manifests:
        parts += ["", "## Fairness manifests"]
        for m in report.manifests:
            parts += [
                "",
                f"Trial {m.trial_id} (block {m.block}, {escape(m.status)}): {escape(m.case)}",
                "",
                _fence(json.dumps(m.manifest, indent=2, sort_keys=True, default=str), "json"),
            ]
    return "\n".join(parts) + "\n"
