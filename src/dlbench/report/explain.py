"""`dlbench explain`'s report: the answer first, then the numbers behind it.

Each explained pair is one section (a render.Preface): sentences that say how much
slower B is, which op categories the gap sits in (profiles), and how much of it
each toggled setting closes (ablation), then the tables those sentences come
from. A sentence is written only where the numbers support it: no gap is
explained where A is not significantly faster; a toggle whose closure CI
includes 0 is said to have no measurable effect; a category's share is given
only when the profiled gap agrees with the timed one, and flagged otherwise.
The stacked bars (one bar per case, one colour per category) are drawn with
matplotlib for HTML and for Markdown written to a file.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dlbench.cases import case_label
from dlbench.explain.ablation import MIN_BLOCKS, Gap, Profile
from dlbench.explain.categories import BACKGROUND, CATEGORIES, CATEGORY_LABELS
from dlbench.report.render import Preface, TableData
from dlbench.report.words import design_words

# A category is named as a share of the gap from this fraction of it on.
SHARE_FLOOR = 0.10
# The profiled gap (profiler on) may differ from the timed one by this much before the
# category shares are flagged as indicative only (the profiler's cost is not uniform).
AGREEMENT = 0.25


@dataclass
class Section:
    preface: Preface
    bars: list[tuple[str, dict[str, float]]] = field(default_factory=list)  # (case label, ms/step by category)


def _ms(seconds: float) -> str:
    if math.isnan(seconds):
        return "n/a"
    ms = seconds * 1e3
    return f"{ms:.3g}" if ms < 100 else f"{ms:.0f}"


def _pct(x: float) -> str:
    return "n/a" if math.isnan(x) else f"{100 * x:.0f}%"


def _ci_pct(ci: tuple[float, float]) -> str:
    lo, hi = ci
    return "[n/a]" if math.isnan(lo) else f"[{100 * lo:.0f}, {100 * hi:.0f}]"


def _who(case: Any, other: Any = None) -> str:
    """framework:variant, and the recorded settings where `other` shares that label."""
    label = case_label(case.as_dict(), setting=False)
    if other is not None and label == case_label(other.as_dict(), setting=False):
        mine, theirs = case.as_dict(), other.as_dict()
        differ = [
            f"{k}={mine[k]}"
            for k in ("threads", "pipeline", "layout", "precision", "init", "runtime")
            if mine.get(k) != theirs.get(k)
        ]
        label += f" ({', '.join(differ)})" if differ else ""
    return label


def _role_label(role: str, gap: Gap) -> str:
    if role in ("A", "B"):
        case = gap.pair.a if role == "A" else gap.pair.b
        other = gap.pair.b if role == "A" else gap.pair.a
        return f"{role}: {_who(case, other)}"
    if role == "all":
        return "B, every toggle"
    effect = next(e for e in gap.effects if e.role == role)
    return f"B, {effect.toggles[0].words()}"


def headline(gap: Gap) -> str:
    a, b = _who(gap.pair.a, gap.pair.b), _who(gap.pair.b, gap.pair.a)
    c = gap.comparison
    lo, hi = gap.ratio_ci
    numbers = (
        f"median step {_ms(gap.b_median_s)} ms vs {_ms(gap.a_median_s)} ms, ratio CI [{lo:.2f}, {hi:.2f}], "
        f"{gap.n} blocks of trial medians, paired"
    )
    if not gap.significant:
        verdict = c.verdict if c is not None else "too few values"
        more = f" (a gap needs {MIN_BLOCKS} blocks or more: --blocks {MIN_BLOCKS})" if gap.n < MIN_BLOCKS else ""
        return f"No gap to explain: {b} against {a} is '{verdict}'{more} ({numbers}); nothing below is attributed."
    p = f", p = {c.p:.2g}" if c is not None else ""
    return f"{b} is {gap.ratio:.2f}x slower than {a} ({numbers}{p})."


def profile_lines(gap: Gap, profiles: dict[str, Profile]) -> list[str]:
    pa, pb = profiles.get(gap.pair.a.key), profiles.get(gap.pair.b.key)
    if pa is None or pb is None:
        return ["No profile for A or B (run with --profile-steps to have one)."]
    profiled = pb.step_s - pa.step_s
    # The same steps without the profiler: does the profiler change the gap it is asked about?
    unprofiled = pb.unprofiled_s - pa.unprofiled_s
    if not gap.significant or profiled <= 0:
        return [
            "Profiles (ms/step, A / B): "
            + ", ".join(
                f"{CATEGORY_LABELS[c]} {_ms(pa.per_step[c])} / {_ms(pb.per_step[c])}"
                for c in CATEGORIES
                if max(pa.per_step[c], pb.per_step[c]) > 0.05 * max(pa.step_s, pb.step_s)
            )
            + "."
        ]
    shares = sorted(((c, (pb.per_step[c] - pa.per_step[c]) / profiled) for c in CATEGORIES), key=lambda x: -x[1])
    named = [
        f"{_pct(s)} {CATEGORY_LABELS[c]} (B {_ms(pb.per_step[c])} ms/step vs A {_ms(pa.per_step[c])})"
        for c, s in shares
        if s >= SHARE_FLOOR
    ][:3]
    line = "Of the gap under the profiler, " + ("; ".join(named) if named else "no category holds 10% or more") + "."
    # Shares of a net gap: where B is faster, the others add up to more than 100%.
    less = [
        f"{CATEGORY_LABELS[c]} ({_ms(pb.per_step[c])} vs {_ms(pa.per_step[c])} ms/step, {_pct(s)} of the gap)"
        for c, s in reversed(shares)
        if s <= -SHARE_FLOOR
    ][:2]
    if less:
        line += " B spends less than A on " + "; ".join(less) + "."
    top = [c for c, s in shares if s >= SHARE_FLOOR][:1]
    if top and pb.top_ops.get(top[0]):
        ops = ", ".join(f"{name} {_ms(s)} ms" for name, s in pb.top_ops[top[0]])
        line += f" In B, {CATEGORY_LABELS[top[0]]} is mostly {ops}."
    lines = [line]
    if unprofiled > 0 and abs(profiled - unprofiled) > AGREEMENT * unprofiled:
        lines.append(
            f"Caution: under the profiler the gap is {_ms(profiled)} ms/step, without it {_ms(unprofiled)} (the same "
            f"steps): the profiler's cost differs between A and B by {_pct(abs(profiled - unprofiled) / unprofiled)} "
            f"of the gap, so these shares are indicative only."
        )
    return lines


def ablation_lines(gap: Gap) -> list[str]:
    not_tried = [f"Not tried: {why}." for why in gap.pair.not_tried]
    if not gap.effects:
        if not_tried:  # the settings there were could not run: say which and why, not "nothing differs"
            return ["No setting toggled: none of the candidate settings could run here.", *not_tried]
        return [
            "No setting toggled: A and B agree on every recorded setting this explanation could toggle, and B "
            "already runs the best known value of each (or --only left the others out)."
        ]
    if not gap.significant:
        return []
    singles = sorted((e for e in gap.effects if e.role != "all"), key=lambda e: -e.closure)
    lines = []
    helped = [e for e in singles if e.measurable and e.ci[0] > 0]
    for e in singles:
        t = e.toggles[0]
        toward = {"A": "A's value", "named": "the value named", "other": "the other extreme"}.get(
            t.toward, "the best known value"
        )
        if e.measurable:
            verb = "closes" if e.closure > 0 else "widens the gap by"
            amount = _pct(abs(e.closure))
            lines.append(f"Switching B's {t.words()} ({toward}) {verb} {amount} of it {_ci_pct(e.ci)}.")
        elif e.blocks < MIN_BLOCKS:
            lines.append(
                f"{t.words()} ({toward}): not decided (closure {_pct(e.closure)} over {e.blocks} blocks; "
                f"a closure needs {MIN_BLOCKS} or more: --blocks {MIN_BLOCKS})."
            )
        else:
            lines.append(
                f"{t.words()} ({toward}): no measurable effect "
                f"(closure {_pct(e.closure)}, CI {_ci_pct(e.ci)} includes 0)."
            )
    if helped:
        best = helped[0]
        rivals = [e.role for e in helped[1:] if e.ci[1] >= best.ci[0]]
        overlap = f" (its CI overlaps {', '.join(rivals)}'s)" if rivals else ""
        lines.insert(0, f"The largest share is {best.role}: {_pct(best.closure)} {_ci_pct(best.ci)}{overlap}.")
    every = next((e for e in gap.effects if e.role == "all"), None)
    if every is not None:
        lo, hi = every.ci
        if every.measurable and 0 <= every.closure <= 1:
            own = " (the frameworks' own difference)" if gap.pair.a.framework != gap.pair.b.framework else ""
            lines.append(
                f"With every toggle at once B runs {_ms(every.median_s)} ms/step: {_pct(1 - every.closure)} of the "
                f"gap remains [{_pct(1 - hi)}, {_pct(1 - lo)}]{own}."
            )
        else:
            lines.append(
                f"With every toggle at once B runs {_ms(every.median_s)} ms/step, closure {_pct(every.closure)} "
                f"{_ci_pct(every.ci)}: the toggles do not add up (some slow B down; see each alone)."
            )
    if every is None and len(gap.pair.toggles) > 1 and gap.pair.toggled(gap.pair.toggles) == gap.pair.a:
        lines.append("B with every toggle at once is A itself: these settings are the whole difference between them.")
    return lines + not_tried


def _cases_table(gap: Gap) -> TableData:
    t = TableData(
        "step time by case (median, ms/step)",
        ["case", "ms/step", "x A", "gap closed [95% CI]", "vs B"],
        align=["left", "right", "right", "right", "left"],
        caption="gap closed = (B - case) / (B - A) of trial medians; CI: percentile bootstrap over blocks "
        f"(a closure needs {MIN_BLOCKS} blocks or more to count as measurable).",
    )
    t.add_row(_role_label("A", gap), _ms(gap.a_median_s), "1.00", "", "")
    t.add_row(_role_label("B", gap), _ms(gap.b_median_s), f"{gap.ratio:.2f}", "0%", "")
    for e in gap.effects:
        verdict = e.versus_b.verdict if e.versus_b is not None else "n/a"
        t.add_row(
            _role_label(e.role, gap),
            _ms(e.median_s),
            f"{e.median_s / gap.a_median_s:.2f}" if gap.a_median_s > 0 else "n/a",
            f"{_pct(e.closure)} {_ci_pct(e.ci)}",
            verdict,
        )
    return t


def _profile_table(
    gap: Gap, profiles: dict[str, Profile]
) -> tuple[TableData | None, list[tuple[str, dict[str, float]]]]:
    roles = [("A", gap.pair.a), ("B", gap.pair.b)] + [(e.role, e.case) for e in gap.effects]
    present = [(r, c, profiles[c.key]) for r, c in roles if c.key in profiles]
    if not present:
        return None, []
    t = TableData(
        "profile: ms per step by category",
        ["category"] + [_role_label(r, gap) for r, _, _ in present],
        align=["left"] + ["right"] * len(present),
    )
    for c in CATEGORIES:
        if any(p.per_step[c] > 0 for _, _, p in present):
            t.add_row(CATEGORY_LABELS[c], *(_ms(p.per_step[c]) for _, _, p in present))
    t.add_row("sum = profiled step", *(_ms(p.step_s) for _, _, p in present))
    t.add_row("unprofiled step (same steps)", *(_ms(p.unprofiled_s) for _, _, p in present))
    t.add_row("profiler's cost", *(_pct(p.cost) for _, _, p in present))
    sources = sorted({p.source for _, _, p in present if p.source})
    t.caption = (
        f"medians over {present[0][2].calls} profiled calls per case; {'; '.join(sources)}. "
        f"'{CATEGORY_LABELS[BACKGROUND]}' = profiled step time no op covered, plus the runtime's own events."
    )
    bars = [(_role_label(r, gap), {c: p.per_step[c] * 1e3 for c in CATEGORIES}) for r, _, p in present]
    return t, bars


def criteria_line(gaps: list[Gap]) -> str:
    """The verdict criteria the gaps were judged at, as every report states them."""
    c = next((g.comparison for g in gaps if g.comparison is not None), None)
    if c is None:
        return ""
    # The design the gap's own comparison ran (ablation._compare: the two cases' trial medians).
    design = design_words(2, c.n_a, c.paired, c.family_size, unit="cases")
    return (
        f"Verdicts at band ±{c.band:.0%} and alpha {c.alpha:g} ({design}); a gap and a closure need "
        f"{MIN_BLOCKS} blocks or more."
    )


def sections(gaps: list[Gap], profiles: dict[str, Profile], noise: str = "") -> list[Section]:
    out = []
    criteria = criteria_line(gaps)
    for gap in gaps:
        a, b = _who(gap.pair.a, gap.pair.b), _who(gap.pair.b, gap.pair.a)
        title = f"{b} vs {a}: {case_label(gap.pair.a.as_dict(), framework=False)}"
        lines = [headline(gap)]
        if gap.significant:
            lines += profile_lines(gap, profiles)
        lines += ablation_lines(gap)
        if criteria:
            lines.append(criteria)
        if noise:
            lines.append(noise)
        tables = [_cases_table(gap)]
        profile_table, bars = _profile_table(gap, profiles)
        if profile_table is not None:
            tables.append(profile_table)
        out.append(Section(Preface(title, lines, tables), bars))
    return out


def draw_bars(section: Section, path: Path) -> Path | None:
    """Side-by-side stacked bars, one per case, one colour per category (SVG)."""
    if not section.bars:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [label for label, _ in section.bars]
    # Text as text, not as glyph outlines: a tenth of the file, and searchable. Set for
    # this figure only: a caller's own matplotlib settings stay as they were.
    with plt.rc_context({"svg.fonttype": "none"}):
        fig, ax = plt.subplots(figsize=(max(4.0, 1.6 * len(labels) + 2.5), 4.0))
        bottoms = [0.0] * len(labels)
        colours = plt.get_cmap("tab10")
        for i, c in enumerate(CATEGORIES):
            heights = [values[c] for _, values in section.bars]
            if not any(h > 0 for h in heights):
                continue
            ax.bar(range(len(labels)), heights, bottom=bottoms, label=CATEGORY_LABELS[c], color=colours(i % 10))
            bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
        ax.set_xticks(range(len(labels)), labels, rotation=20, ha="right", fontsize=8)
        ax.set_ylabel("ms per step (profiled)")
        ax.set_title("\n".join(textwrap.wrap(section.preface.title, 60)), fontsize=9)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        fig.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        from dlbench import outputs

        kind = path.suffix.lstrip(".") or "svg"
        outputs.write_with(path, lambda tmp: fig.savefig(tmp, format=kind, bbox_inches="tight"))
        plt.close(fig)
    return path


def markdown(found: list[Section], title: str, figures: Path | None = None, base: Path | None = None) -> str:
    from dlbench.report import markdown as md

    parts = [f"# {md.escape(title)}", ""]
    for i, section in enumerate(found):
        parts += md.preface(section.preface)
        if figures is not None:
            drawn = draw_bars(section, figures / f"explain_{i + 1}.svg")
            if drawn is not None:
                parts += [f"![{md.escape(section.preface.title)}]({md.relative(drawn, base)})", ""]
    return "\n".join(parts)


def html(found: list[Section], title: str) -> str:
    """One self-contained page (templates/explain.html.j2): the bars inlined as SVG."""
    import tempfile

    from dlbench.report import html as page

    shown = []
    with tempfile.TemporaryDirectory(prefix="dlbench-explain-") as tmp:
        for i, section in enumerate(found):
            drawn = draw_bars(section, Path(tmp) / f"bars_{i}.svg")
            uri = None if drawn is None else page.svg_data_uri(drawn.read_bytes())
            shown.append((section.preface, uri))
    return page.environment().get_template("explain.html.j2").render(title=title, sections=shown)
