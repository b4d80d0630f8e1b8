"""Tables of statistical verdicts, format-neutral: framework vs framework, and run vs run."""

from __future__ import annotations

from dlbench.analysis.comparisons import PairVerdict, RunDiff
from dlbench.analysis.stats import estimator_name
from dlbench.cases import case_label
from dlbench.report.render import TableData
from dlbench.report.words import reason
from dlbench.terminal import drop_shared, duration


def _p(c) -> str:
    if not c.independent:
        return "— (1 process)"  # a p-value over one process's repeats is no evidence about the code
    if not c.interleaved:
        return "— (not in turns)"  # two runs a drift apart: a p-value would test the drift too
    p = c.p_adjusted if c.p_adjusted is not None else c.p_value
    if p != p:
        return "—"
    return f"{p:.3g}" + (" (Holm)" if c.p_adjusted is not None else "") + (" (floor)" if c.at_floor else "")


def verdict_table(verdicts: list[PairVerdict], band: float = 0.02, alpha: float = 0.05) -> TableData:
    t = TableData(
        "framework vs framework (A relative to B; ratio of medians with bootstrap 95% CI)",
        ["set", "metric", "A", "B", "ratio A/B [95% CI]", "test", "p", "Cliff's δ", "verdict", "sample"],
        notes=[
            f"verdicts (band ±{band:.0%}, alpha {alpha:g}): faster/slower need independent processes per side, "
            f"p < {alpha:g} and the ratio CI outside ±{band:.0%}; 'no meaningful difference' = ratio CI inside "
            f"±{band:.0%}; one process per side gives a within-process CI and no verdict; (floor) = the "
            "smallest p the design can give"
        ],
        optional=("sample", "test", "Cliff's δ"),
    )
    for v in verdicts:
        c = v.comparison
        t.add_row(
            v.set_label,
            v.metric,
            v.a,
            v.b,
            f"{c.ratio:.3f} [{c.ratio_ci[0]:.3f}, {c.ratio_ci[1]:.3f}]",
            c.test,
            _p(c),
            f"{c.cliffs_delta:+.2f} ({c.magnitude})",
            c.verdict if c.independent else "no verdict (1 process per side)",
            f"{c.n_a}+{c.n_b} "
            + (
                "trial medians, paired by block"
                if v.independent and c.paired
                else "trial medians, unpaired"
                if v.independent
                else "repeats in one process each (correlated)"
            ),
        )
    return t


def omnibus_table(rows) -> TableData:
    t = TableData(
        "more than two frameworks: omnibus tests", ["set", "metric", "test", "statistic", "df", "p", "groups"]
    )
    for set_label, metric, o in rows:
        t.add_row(set_label, metric, o.test, f"{o.statistic:.4g}", str(o.df), f"{o.p_value:.3g}", ", ".join(o.groups))
    return t


def compare_table(
    diffs: list[RunDiff], a_name: str, b_name: str, threshold: float, quantile: float = 0.5, alpha: float = 0.05
) -> TableData:
    est = estimator_name(quantile)
    ratio_col = "ratio B/A [95% CI]"
    # Quality rows (`compare --quality`) are in their own units and directions: the values
    # carry their unit and the verdict reads better/worse (analysis.quality).
    mixed = any(d.declared is not None for d in diffs)
    direction = (
        "> 1: slower for times; a quality metric is better or worse in its own direction" if mixed else "> 1: slower"
    )
    regression = "significantly worse beyond the band" if mixed else f"significant and beyond +{threshold:.0%}"
    # The verdict is what a reader (or a grep in a CI log) looks for: it never wraps,
    # so the reason of an undecided verdict has a column of its own.
    # Said only where a row has no verdict for that reason: a title that says "no verdict"
    # above verdicts on several processes per side would be false.
    undecidable = any(c is not None and not (c.independent and c.interleaved) for c in (d.comparison for d in diffs))
    rule = (
        "; rows without several processes per side taken in turns: no verdict (ratio and CI only)"
        if undecidable
        else ""
    )
    t = TableData(
        f"{b_name} relative to {a_name} (ratio of {est}s, {direction}; band ±{threshold:.0%}, alpha {alpha:g}; "
        f"regression = {regression}{rule})",
        [
            "case",
            "metric",
            f"{est} A",
            f"{est} B",
            ratio_col,
            "p",
            "verdict",
            "reason",
            "sample",
        ],
        notes=[
            "paired: A and B took turns block by block (dlbench extend A B), block k of A paired with "
            "block k of B (Wilcoxon signed-rank, pairs resampled jointly); unpaired: Mann-Whitney U, "
            "samples resampled independently"
        ],
        nowrap=frozenset({ratio_col, "verdict", f"{est} A", f"{est} B"}),  # a value keeps its unit
        # At a log's 100 columns the sample's words are what gives way (the note above says
        # what paired and unpaired mean), so that case names and numbers stay whole.
        optional=("sample",),
    )
    # Cases named by what tells them apart; what they share is said once under the table.
    labels = sorted({case_label(d.case) for d in diffs})
    names = dict(zip(labels, drop_shared(labels))) if len(labels) > 1 else {}
    shared = [w for w in (labels[0].split() if labels else []) if all(w in x.split() for x in labels)]
    if names and shared:
        t.notes.append("every case: " + " ".join(shared))
    for d in diffs:
        c = d.comparison
        if c is None:
            name = names.get(label := case_label(d.case), label)
            t.add_row(name, d.metric, "—", "—", "—", "—", "no values on one side", "", "—")
            continue
        q = d.declared
        # run_vs_run compares B relative to A: the comparison's b is run A.
        # A time in the unit its size reads best in, the same function as report and run use;
        # four digits, as a regression gate reads differences of a few percent.
        a_value, b_value = (
            (q.value(c.estimate_b), q.value(c.estimate_a))
            if q is not None
            else (duration(c.estimate_b, digits=4), duration(c.estimate_a, digits=4))
        )
        t.add_row(
            names.get(label := case_label(d.case), label),
            d.metric,
            a_value,
            b_value,
            f"{c.ratio:.3f} [{c.ratio_ci[0]:.3f}, {c.ratio_ci[1]:.3f}]",
            _p(c),
            "REGRESSION" if d.regression else d.verdict if c.independent and c.interleaved else "no verdict",
            reason(c) if c.verdict == "undecided" else "",
            d.sample,
        )
    return _said_once(t, ("reason",))


def _said_once(t: TableData, columns: tuple[str, ...]) -> TableData:
    """`t` without those of `columns` whose every row holds one and the same text: that text
    is said once, in a note under the table, instead of on every row (a paragraph of
    reason repeated per row made the table too wide to read at 100 columns)."""
    for name in columns:
        i = t.columns.index(name)
        values = {row[i] for row in t.rows}
        if len(values) != 1 or (len(t.rows) < 2 and values != {""}):  # an empty column goes whatever the rows
            continue
        value = values.pop()
        t.columns.pop(i)
        for row in t.rows:
            row.pop(i)
        if i < len(t.align):
            t.align.pop(i)
        if value:
            t.notes.insert(0, f"{name}, every row: {value}")
    return t
