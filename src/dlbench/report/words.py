"""Verdicts in words: why a comparison is faster, slower, equal or undecided.

dlbench.analysis.stats decides and records why in numbers (stats.Why); this
module writes the sentence a table, the answer block or the hypothesis report
shows. Keeping the words here lets the analysis stay numbers-only and every
format say the same thing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

from dlbench.analysis.busy import BUSY_THRESHOLD, UNEQUAL_POINTS
from dlbench.analysis.stats import FUTILE_SAMPLES, Comparison, min_pairs

if TYPE_CHECKING:
    from dlbench.analysis.design import DesignCheck


def num(v: float) -> str:
    """Four significant digits, as every verdict sentence shows numbers."""
    return f"{v:.4g}"


def family(m: int) -> str:
    return f" for {m} Holm-adjusted comparisons" if m > 1 else ""


def test_words(paired: bool) -> str:
    """The test trial medians get under a design: the words every printed rule uses."""
    if paired:
        return "paired Wilcoxon signed-rank over trial medians paired by block"
    return "unpaired Mann-Whitney over trial medians"


def holm_words(m: int) -> str:
    return f"Holm over {m}" if m > 1 else "one comparison, no Holm"


def design_words(
    members: int, n: int | str, paired: bool, m: int, one_process: bool = False, unit: str = "frameworks/variants"
) -> str:
    """One design in words, e.g. "3 frameworks/variants x 6 trials per case, unpaired
    Mann-Whitney over trial medians, Holm over 3": `n` trials per case (ignored when
    `one_process`: the sample is then the repeats of one process), `m` the Holm family size."""
    if one_process:
        return f"{members} {unit} x 1 trial per case: repeats of one process, a ratio and no verdict"
    return f"{members} {unit} x {n} trials per case, {test_words(paired)}, {holm_words(m)}"


def check_words(d: DesignCheck, unit: str = "frameworks/variants") -> str:
    """design_words of an analysis.design.DesignCheck (a plan's or a stored run's design)."""
    return design_words(d.members, d.n, d.paired, d.family, d.one_process, unit=unit)


def designs_words(designs: Iterable[str]) -> str:
    """Several designs' words, each once, in their first order ("; "-joined)."""
    return "; ".join(dict.fromkeys(designs))


def p_words(c: Comparison) -> str:
    floor = " (the smallest this design can give)" if c.at_floor else ""
    return f"p = {num(c.p)}" + (" (Holm)" if c.p_adjusted is not None else "") + floor


def _projection(c: Comparison) -> str:
    why = c.why
    assert why is not None
    unit = "pairs" if c.paired else "samples per side"
    if why.projection == "edge":
        return f"; the ratio {num(c.ratio)} sits on the band's edge, where more samples alone cannot decide"
    if why.projection == "futile":
        return (
            f"; at this spread more than {FUTILE_SAMPLES:,} {unit} would be needed for the ratio "
            f"{num(c.ratio)}: more samples alone will hardly decide"
        )
    if why.projection == "inside":
        return (
            f"; at this spread about {why.projected} {unit} would put the CI inside ±{c.band:.0%} "
            f"if the ratio stays at {num(c.ratio)}"
        )
    return (
        f"; at this spread about {why.projected} {unit} would clear the ±{c.band:.0%} band "
        f"if the ratio stays at {num(c.ratio)}"
    )


# Why a comparison on a busy machine gets no verdict word, and what would give it one. The
# numbers: a busy loop on one core made a 2-thread torch cnn train 50x slower on a 2-core VM;
# the first answer, "16.9x slower, p = 0.024", reversed pinned on a quiet core.
BUSY_REASON = (
    "not decided: the machine was busy (other processes took at least "
    f"{BUSY_THRESHOLD:.0f}% of the CPU while a side ran, or, in runs taken in turns, "
    f"{UNEQUAL_POINTS:.0f} points more beside one side than the other), so the times hold the load as well as "
    "the code; "
    "rerun on a quiet machine, or pinned beside the load (taskset -c 1 dlbench run ... --threads 1); "
    "dlbench report --busy-verdicts judges it anyway"
)


def reason(c: Comparison) -> str:
    """The verdict's reason, e.g. "p = 0.002 (Holm) < 0.05 and ratio 0.81 [95% CI 0.78, 0.85] below 0.98"."""
    why = c.why
    if why is None:
        return ""
    m, alpha, cause = c.family_size, c.alpha, why.cause
    if cause == "one process":
        return (
            "one process per side: its repeats share the process's state, so no test on them says anything "
            f"of the code; {why.need or 'N'} or more independent trials per side (--trials, or dlbench extend) decide"
        )
    if cause == "not interleaved":
        return (
            "the runs were taken one after the other, not in turns: their difference holds the machine's drift "
            "between them (identical code moved by up to 23% between runs here); `dlbench extend A B --blocks "
            f"{why.need or 'N'}` runs them in turns, block by block, and decides"
        )
    if cause == "busy machine":
        return BUSY_REASON
    if cause == "too few":
        if c.paired:
            return (
                f"needs at least {why.need} pairs{family(m)}: the exact two-sided Wilcoxon signed-rank test "
                f"cannot reach p < {alpha:g} with {c.n_a} (smallest p = {num(why.smallest_p or math.nan)})"
            )
        return (
            f"needs at least {why.need} + {why.need} samples{family(m)}: the exact two-sided Mann-Whitney "
            f"test cannot reach p < {alpha:g} with {c.n_a} + {c.n_b} (smallest p = "
            f"{num(why.smallest_p or math.nan)})"
        )
    if cause == "too few for quantile":
        return (
            f"the {c.estimator} of {min(c.n_a, c.n_b)} values rests on fewer than two values beyond it: "
            f"needs at least {why.need} per side"
        )
    if cause == "undefined ratio":
        return f"ratio of {c.estimator}s undefined ({c.estimator} of b is not positive)"
    lo, hi = c.ratio_ci
    ci = f"ratio {num(c.ratio)} [95% CI {num(lo)}, {num(hi)}]"
    p = p_words(c)
    if cause == "faster":
        return f"{p} < {alpha:g} and {ci} below {num(1 - c.band)}"
    if cause == "slower":
        return f"{p} < {alpha:g} and {ci} above {num(1 + c.band)}"
    if cause == "inside band":
        return f"{ci} inside ±{c.band:.0%} ({p}{', significant' if c.p < alpha else ''})"
    if cause == "overlaps band":
        return f"{p} < {alpha:g} but {ci} overlaps the ±{c.band:.0%} band{_projection(c)}"
    if cause == "few non-zero":
        return (
            f"{ci} not inside ±{c.band:.0%}, and only {c.n_nonzero} of {c.n_a} differences are non-zero: "
            f"the Wilcoxon test needs {min_pairs(alpha / m)}{family(m)} to reach p < {alpha:g}"
        )
    return f"{p} ≥ {alpha:g} and {ci} not inside ±{c.band:.0%}: more samples needed{_projection(c)}"
