"""The hypothesis report in seed 002's form: one H0/H1 per pair of frameworks.

For every comparison set (cases that differ only in framework/variant) and every
timed metric (train time, inference time), every pair of frameworks is tested
with stats.hypothesis_row on the samples dlbench.comparisons uses for verdicts:
one median per trial paired by interleaving block when there are >= 2 trials,
the repeats of the one trial otherwise. The pairs of one set and metric are one
family: their p-values are Holm-adjusted together, as comparisons.within_run does.
"""

from __future__ import annotations

import math
from itertools import combinations

from dlbench import stats
from dlbench.comparisons import comparison_groups
from dlbench.report.render import TableData


def hypothesis_rows(trials, measurements, alpha: float = 0.05, band: float = 0.02) -> list[dict]:
    """stats.hypothesis_row dicts with "set" added, Holm-adjusted within set x metric."""
    out: list[dict] = []
    for g in comparison_groups(trials, measurements):
        groups = g.values
        pairs = [(a, b) for a, b in combinations(groups, 2) if groups[a] and groups[b]]
        phase_word = "inference" if g.phase == "infer" else g.phase
        raw = [stats.hypothesis_row("time", phase_word, a, b, groups[a], groups[b], g.paired, alpha=alpha,
                                    band=band) for a, b in pairs]
        if len(raw) > 1:
            adjusted = stats.holm([r["p_value"] for r in raw])
            raw = [stats.hypothesis_row("time", phase_word, a, b, groups[a], groups[b], g.paired, alpha=alpha,
                                        adjusted_p=q, family_size=len(raw), band=band)
                   for (a, b), q in zip(pairs, adjusted)]
        out += [{"set": g.set_label, "name": g.metric, **r} for r in raw]
    return out


def _num(v: float | None, spec: str = ".4g") -> str:
    return "—" if v is None or not math.isfinite(v) else format(v, spec)


def p_text(row: dict) -> str:
    p = _num(row["p_value"])
    if row["p_adjusted"] is None:
        return p
    return f"{_num(row['p_adjusted'])} (Holm; raw {p})"


def effect_text(row: dict) -> str:
    return (f"ratio A/B {_num(row['ratio'], '.3f')} [{_num(row['ratio_ci_low'], '.3f')}, "
            f"{_num(row['ratio_ci_high'], '.3f')}]; Cliff's δ {row['cliffs_delta']:+.2f} ({row['magnitude']})")


def hypothesis_table(rows: list[dict]) -> TableData | None:
    """All hypotheses as one table (Markdown, LaTeX, console); HTML also shows them as blocks."""
    if not rows:
        return None
    t = TableData("hypotheses (seed 002's form; A and B as named, two-sided, Holm within each set and metric)",
                  ["#", "set", "metric", "A", "B", "n", "H0", "H1", "normality check", "test", "statistic", "p",
                   "decision", "effect", "verdict"])
    for i, r in enumerate(rows, 1):
        n = f"{r['n_a']} pairs" if r["paired"] else f"{r['n_a']} + {r['n_b']}"
        t.add_row(str(i), r["set"], r["name"], r["a"], r["b"], n, r["H0"], r["H1"], r["normality"], r["test"],
                  f"{r['statistic_name']} = {_num(r['statistic'])}", p_text(r), r["decision"], effect_text(r),
                  f"{r['verdict']}: {r['reason']}")
    return t
