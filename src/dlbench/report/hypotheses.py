"""The hypothesis report in seed 002's form: one H0/H1 per pair of frameworks.

For every comparison set (cases that differ only in framework/variant) and every
timed metric (train time, inference time), every pair of frameworks is tested
with hypothesis_row on the samples dlbench.analysis.comparisons uses for verdicts:
one median per trial with >= 2 trials, paired by interleaving block where the
paired test can decide for the set's Holm family (comparisons.pair_by_block) and
unpaired otherwise (each row names its test), the repeats of the one trial with
one trial per case. The pairs of one set and metric are one
family: their p-values are Holm-adjusted together, as comparisons.within_run does.
"""

from __future__ import annotations

import math

from dlbench.analysis import stats
from dlbench.analysis.comparisons import analyse
from dlbench.report.render import TableData
from dlbench.report.words import num, reason


def _normality_words(label: str, nm: stats.Normality) -> str:
    if not nm.testable:
        return f"{label}: not testable ({nm.reason})"
    verdict = "consistent with normal" if nm.normal else "not normal"
    return (
        f"{label}: {verdict} (Shapiro-Wilk W={nm.shapiro_w:.3f}, p={num(nm.shapiro_p)}; "
        f"Lilliefors KS D={nm.ks_d:.3f}, p={num(nm.ks_p)})"
    )


def hypothesis_row(
    metric: str,
    phase: str,
    a_name: str,
    b_name: str,
    a,
    b,
    paired: bool,
    alpha: float = 0.05,
    adjusted_p: float | None = None,
    family_size: int = 1,
    band: float = 0.02,
    n_boot: int = stats.N_BOOT,
    seed: int = 0,
    comparison: stats.Comparison | None = None,
    normality_cache: dict | None = None,
) -> dict:
    """One hypothesis as seed 002 reports it (H0/H1, normality check, test, statistic,
    p-value, decision), with the effect size and the ratio of medians beside it.

    `comparison`: the compare_two result for (a, b), already Holm-adjusted, when the
    caller has it (then adjusted_p is ignored). `normality_cache`: name -> Normality,
    so a sample in several pairs is tested once."""
    if comparison is not None:
        c = comparison
    else:
        # Paired samples are trial medians by block; unpaired ones here are repeats of one process.
        c = stats.compare_two(a, b, paired, band, alpha, n_boot, seed, independent=paired)
        if adjusted_p is not None:
            c = stats.adjust(c, adjusted_p, family_size)
    cache = normality_cache if normality_cache is not None else {}

    def normal_of(name: str, x) -> stats.Normality:
        if name not in cache:
            cache[name] = stats.normality(x, alpha, seed=seed)
        return cache[name]

    what = f"{phase} {metric}"
    if paired:
        a_, b_ = stats.finite_pairs(a, b)
        checks = [_normality_words(f"differences {a_name} − {b_name}", stats.normality(a_ - b_, alpha, seed=seed))]
        h0 = (
            f"the {what} of {a_name} and {b_name} do not differ: the paired differences "
            f"{a_name} − {b_name} are symmetric about zero"
        )
        h1 = f"the paired differences {a_name} − {b_name} in {what} are not symmetric about zero (two-sided)"
        why = "paired blocks (one run of each in every interleaved block)"
    else:
        checks = [_normality_words(name, normal_of(name, x)) for name, x in ((a_name, a), (b_name, b))]
        h0 = f"the {what} of {a_name} and {b_name} do not differ: P({a_name} > {b_name}) = P({a_name} < {b_name})"
        h1 = f"P({a_name} > {b_name}) ≠ P({a_name} < {b_name}) for {what} (two-sided)"
        why = "unpaired samples"
    if not c.independent:
        why += "; repeats of one process per side (no test on them is evidence about the code)"
    chosen = f"{'paired ' if paired else ''}{c.test}, {c.test_method}"
    test_reason = (
        f"{chosen}: {why}; a rank test whatever the normality check says "
        f"(reported as a diagnostic: {'; '.join(checks)})"
    )
    if c.why is not None and c.why.cause in ("one process", "too few", "too few for quantile"):
        decision = "not decidable: " + reason(c)
    else:
        decision = f"reject H0 at alpha={alpha:g}" if c.p < alpha else f"do not reject H0 at alpha={alpha:g}"
        if c.at_floor:
            decision += " (p is the smallest this design can give)"
    return {
        "metric": metric,
        "phase": phase,
        "a": a_name,
        "b": b_name,
        "paired": paired,
        "n_a": c.n_a,
        "n_b": c.n_b,
        "n_nonzero": c.n_nonzero,
        "H0": h0,
        "H1": h1,
        "normality": "; ".join(checks),
        "test": chosen,
        "test_reason": test_reason,
        "statistic_name": c.statistic_name,
        "statistic": c.statistic,
        "p_value": c.p_value,
        "p_adjusted": c.p_adjusted,
        "p_used": c.p,
        "alpha": alpha,
        "decision": decision,
        "median_a": c.estimate_a,
        "median_b": c.estimate_b,
        "ratio": c.ratio,
        "ratio_ci_low": c.ratio_ci[0],
        "ratio_ci_high": c.ratio_ci[1],
        "ci_method": c.ci_method,
        "cliffs_delta": c.cliffs_delta,
        "a12": c.a12,
        "magnitude": c.magnitude,
        "verdict": c.verdict,
        "reason": reason(c),
    }


def hypothesis_rows(
    trials, measurements, alpha: float = 0.05, band: float = 0.02, analysed: list | None = None
) -> list[dict]:
    """hypothesis_row dicts with "set" added, Holm-adjusted within set x metric.

    `analysed` (from comparisons.analyse) supplies the tests already run for the
    verdict tables; each pair's comparison is then reused, not recomputed."""
    out: list[dict] = []
    for g, result in analysed if analysed is not None else analyse(trials, measurements, band, alpha):
        phase_word = "inference" if g.phase == "infer" else g.phase
        normal_cache: dict = {}  # a framework's sample is tested once, whatever pairs it is in
        for a, b, comp in result.pairwise:
            row = hypothesis_row(
                "time",
                phase_word,
                a,
                b,
                g.values[a],
                g.values[b],
                g.paired,
                alpha=alpha,
                band=band,
                comparison=comp,
                normality_cache=normal_cache,
            )
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
    return (
        f"ratio A/B {_num(row['ratio'], '.3f')} [{_num(row['ratio_ci_low'], '.3f')}, "
        f"{_num(row['ratio_ci_high'], '.3f')}]; Cliff's δ {row['cliffs_delta']:+.2f} ({row['magnitude']})"
    )


def hypothesis_table(rows: list[dict]) -> TableData | None:
    """All hypotheses as one table (Markdown, LaTeX, console); HTML also shows them as blocks."""
    if not rows:
        return None
    t = TableData(
        "hypotheses (seed 002's form; A and B as named, two-sided, Holm within each set and metric)",
        [
            "#",
            "set",
            "metric",
            "A",
            "B",
            "n",
            "H0",
            "H1",
            "normality check",
            "test",
            "statistic",
            "p",
            "decision",
            "effect",
            "verdict",
        ],
    )
    for i, r in enumerate(rows, 1):
        n = f"{r['n_a']} pairs" if r["paired"] else f"{r['n_a']} + {r['n_b']}"
        t.add_row(
            str(i),
            r["set"],
            r["name"],
            r["a"],
            r["b"],
            n,
            r["H0"],
            r["H1"],
            r["normality"],
            r["test"],
            f"{r['statistic_name']} = {_num(r['statistic'])}",
            p_text(r),
            r["decision"],
            effect_text(r),
            f"{r['verdict']}: {r['reason']}",
        )
    return t
