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
from dlbench.comparisons import analyse
from dlbench.report.render import TableData


def hypothesis_rows(trials, measurements, alpha: float = 0.05, band: float = 0.02,
                    analysed: list | None = None) -> list[dict]:
    """stats.hypothesis_row dicts with "set" added, Holm-adjusted within set x metric.

    `analysed` (from comparisons.analyse) supplies the tests already run for the
    verdict tables; each pair's comparison is then reused, not recomputed."""
    out: list[dict] = []
    for g, result in (analysed if analysed is not None else analyse(trials, measurements, band, alpha)):
        phase_word = "inference" if g.phase == "infer" else g.phase
        normal_cache: dict = {}  # a framework's sample is tested once, whatever pairs it is in
        for a, b, comp in result.pairwise:
            row = stats.hypothesis_row("time", phase_word, a, b, g.values[a], g.values[b], g.paired,
                                       alpha=alpha, band=band, comparison=comp, normality_cache=normal_cache)
            out.append({"set": g.set_label, "name": g.metric, **row})
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
