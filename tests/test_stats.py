"""dlbench.analysis.stats against hand-computed values, published worked examples and exact null
distributions enumerated here (not scipy's word for them)."""

from __future__ import annotations

import math
from dataclasses import replace
from itertools import combinations, product

import numpy as np
import pytest
from scipy import stats as st

from dlbench.analysis import stats
from dlbench.report.hypotheses import hypothesis_row
from dlbench.report.words import reason

# Two-sided p as scipy and the textbooks define it for a discrete null:
# 2 * min(P(T <= t), P(T >= t)), capped at 1.


def _two_sided(null: list[float], t: float) -> float:
    null = np.asarray(null)
    return min(1.0, 2 * min(np.mean(null <= t + 1e-9), np.mean(null >= t - 1e-9)))


def _signed_rank_null(ranks: list[float]) -> list[float]:
    """Sum of positive ranks over every assignment of signs."""
    return [sum(r for r, s in zip(ranks, signs) if s) for signs in product((0, 1), repeat=len(ranks))]


def _mw_null(pooled: list[float], n1: int) -> list[float]:
    """U of the first sample over every split of the pooled values."""
    ranks = st.rankdata(pooled)
    return [sum(ranks[list(idx)]) - n1 * (n1 + 1) / 2 for idx in combinations(range(len(pooled)), n1)]


# --- summary and normality -------------------------------------------------------


def test_summary_hand_computed():
    s = stats.summary([4.0, 1.0, 3.0, 2.0, float("nan")])  # the NaN is dropped
    assert (s.n, s.mean, s.median, s.q1, s.q3, s.iqr, s.min, s.max) == (4, 2.5, 2.5, 1.75, 3.25, 1.5, 1.0, 4.0)
    assert s.sd == pytest.approx(math.sqrt(5 / 3))
    assert s.cv == pytest.approx(math.sqrt(5 / 3) / 2.5)
    assert s.noisy  # 1.5 / 2.5 = 0.6 > 0.10
    assert not stats.summary([10.0, 10.1, 10.2]).noisy  # 0.1 / 10.1 < 0.10
    assert math.isnan(stats.summary([3.0]).sd)
    with pytest.raises(ValueError):
        stats.summary([])


def test_normality_not_testable_with_reason():
    assert stats.normality([1.0, 2.0]).reason == "needs at least 3 values, got 2"
    nm = stats.normality([5.0] * 8)
    assert not nm.testable and "identical" in nm.reason and not nm.normal


def test_lilliefors_statistic_by_hand_and_reproducible():
    x = np.array([2.1, 2.4, 2.2, 3.9, 2.3, 2.5, 2.2, 2.6, 2.4, 5.0])
    nm = stats.normality(x, seed=3)
    # KS distance to N(mean, sd) with the sample sd (ddof=1, Lilliefors' choice), by hand.
    xs = np.sort(x)
    f = st.norm.cdf((xs - x.mean()) / x.std(ddof=1))
    i = np.arange(1, x.size + 1)
    assert nm.ks_d == pytest.approx(max((i / x.size - f).max(), (f - (i - 1) / x.size).max()))
    assert nm.shapiro_w == pytest.approx(st.shapiro(x).statistic)
    assert nm.ks_p < 0.05 and nm.shapiro_p < 0.05 and not nm.normal  # two outliers
    assert stats.normality(x, seed=3).ks_p == nm.ks_p
    assert "Monte Carlo" in nm.ks_method and "seed 3" in nm.ks_method


@pytest.mark.parametrize("n, loc, scale", [(5, 0.0, 1.0), (12, 1e3, 1e-3), (40, 5.0, 7.0)])
def test_lilliefors_p_equals_scipy_goodness_of_fit(n, loc, scale):
    # normality() simulates the null once per n; scipy simulates it per sample. With the
    # same seed the p-values must be the same: the statistic ignores location and scale.
    x = loc + scale * np.random.default_rng(n).lognormal(0.0, 0.5, n)
    ref = st.goodness_of_fit(st.norm, x, statistic="ks", n_mc_samples=2000, rng=np.random.default_rng(4))
    nm = stats.normality(x, n_mc=2000, seed=4)
    assert nm.ks_d == pytest.approx(ref.statistic, rel=1e-12)
    assert nm.ks_p == ref.pvalue


def test_normal_sample_passes_both_tests():
    x = np.random.default_rng(7).normal(10.0, 0.5, size=40)
    nm = stats.normality(x)
    assert nm.testable and nm.normal and nm.shapiro_p > 0.05 and nm.ks_p > 0.05


# --- effect sizes and Holm -------------------------------------------------------


def test_cliffs_delta_and_a12_hand_counted():
    a, b = [1.0, 2.0, 3.0], [2.0, 2.0, 4.0]
    # a > b: (3,2), (3,2) = 2; a < b: (1,2), (1,2), (1,4), (2,4), (3,4) = 5; ties: (2,2), (2,2) = 2.
    assert stats.cliffs_delta(a, b) == pytest.approx((2 - 5) / 9)
    assert stats.a12(a, b) == pytest.approx((2 + 0.5 * 2) / 9)
    assert stats.cliffs_delta(b, a) == pytest.approx(3 / 9)
    assert stats.magnitude(-1 / 3) == "medium" and stats.magnitude(0.1) == "negligible"


def test_effect_sizes_match_brute_force_with_ties():
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 5, 23).astype(float), rng.integers(1, 6, 17).astype(float)
    sign = np.sign(np.subtract.outer(a, b))
    assert stats.cliffs_delta(a, b) == pytest.approx(sign.mean())
    assert stats.a12(a, b) == pytest.approx(((sign > 0) + 0.5 * (sign == 0)).mean())


def test_holm_hand_computed():
    # sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04 -> running max 0.06 for the last.
    assert stats.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert stats.holm([0.5, 0.6]) == [1.0, 1.0]  # 0.5 * 2 capped; 0.6 raised to the running maximum
    assert stats.holm([0.02]) == [0.02]
    with pytest.raises(ValueError):
        stats.holm([0.1, float("nan")])


# --- minimum sample sizes --------------------------------------------------------


def test_minimum_sample_sizes_from_exact_nulls():
    assert stats.min_p_wilcoxon(5) == pytest.approx(2 / 32)
    assert stats.min_p_wilcoxon(6) == pytest.approx(2 / 64)
    assert stats.min_p_mannwhitney(4, 4) == pytest.approx(2 / 70)
    assert stats.min_p_mannwhitney(3, 3) == pytest.approx(2 / 20)
    assert stats.min_pairs(0.05) == 6 and stats.min_group_size(0.05) == 4
    assert stats.min_pairs(0.01) == 8  # 2 / 2**7 = 0.0156, 2 / 2**8 = 0.0078


def test_too_few_pairs_is_undecided_with_what_is_needed():
    b = np.array([1.00, 1.01, 0.99, 1.02, 1.00])
    c = stats.compare_two(b * 1.5, b, paired=True)  # all five differences positive: p = 0.0625
    assert c.p_value == pytest.approx(0.0625)
    assert c.verdict == "undecided" and "needs at least 6 pairs" in reason(c)
    u = stats.compare_two([3.0, 3.1, 3.2], [1.0, 1.1, 1.2], paired=False)
    assert u.verdict == "undecided" and "needs at least 4 + 4 samples" in reason(u)


# --- the tests on worked examples ------------------------------------------------


def test_wilcoxon_hollander_wolfe_depression_example():
    # Hollander & Wolfe (1973) p. 29, the example of R's wilcox.test: V = 40, p = 0.03906.
    x = [1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30]
    y = [0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29]
    c = stats.compare_two(x, y, paired=True)
    # |d| ranks 1..9; the negative differences -0.08 and -0.147 have ranks 2 and 3: W- = 5, W+ = 40.
    assert c.statistic == 5 and c.test_method == "exact" and c.n_nonzero == 9
    null = _signed_rank_null(list(range(1, 10)))
    assert _two_sided(null, 40) == pytest.approx(20 / 512)  # 10 of 512 sign patterns give W- <= 5
    assert c.p_value == pytest.approx(20 / 512)


def test_wilcoxon_zero_and_tied_differences_use_pratt():
    # Wikipedia's signed-rank example: one zero difference and a tie (5, 5).
    a = [125, 115, 130, 140, 140, 115, 140, 125, 140, 135]
    b = [110, 122, 125, 120, 140, 124, 123, 137, 135, 145]
    c = stats.compare_two(a, b, paired=True)
    # Pratt: the zero takes rank 1, |d| = 5, 5, 7, 9, 10, 12, 15, 17, 20 take 2.5, 2.5, 4, ..., 10.
    # Positive: 5, 5, 15, 17, 20 -> W+ = 2.5 + 2.5 + 8 + 9 + 10 = 32; W- = 4 + 5 + 6 + 7 = 22.
    # (Dropping the zero, Wilcox's rule, would give W- = 18.)
    assert c.statistic == 22 and c.n_nonzero == 9 and c.test_method.startswith("exact permutation")
    ranks = [2.5, 2.5, 4, 5, 6, 7, 8, 9, 10]
    assert c.p_value == pytest.approx(_two_sided(_signed_rank_null(ranks), 32))
    assert c.verdict == "undecided"


def test_all_zero_differences_give_p_one_and_no_meaningful_difference():
    x = np.array([1.0, 1.1, 0.9, 1.05, 1.02, 0.98, 1.01, 0.99])
    c = stats.compare_two(x, x.copy(), paired=True)
    assert c.n_nonzero == 0 and c.p_value == 1.0 and c.ratio_ci == (1.0, 1.0)
    assert c.verdict == "no meaningful difference"


def test_mann_whitney_tiny_sample_hand_enumerated():
    a, b = [0.9, 1.0, 1.2, 1.3], [1.1, 1.4, 1.5, 1.6]
    c = stats.compare_two(a, b, paired=False)
    assert c.statistic == 2  # a > b only for (1.2, 1.1) and (1.3, 1.1)
    null = _mw_null(a + b, 4)
    assert sum(u <= 2 for u in null) == 4  # U = 0, 1, 2, 2 among the 70 splits
    assert c.p_value == pytest.approx(8 / 70) and c.test_method == "exact"
    assert c.verdict == "undecided" and "≥ 0.05" in reason(c)


def test_mann_whitney_with_ties_hand_enumerated():
    a, b = [1.0, 2.0, 2.0, 3.0], [2.0, 3.0, 4.0, 4.0]
    c = stats.compare_two(a, b, paired=False)
    # a = 1 beats nothing; each 2 ties one b (0.5 each); 3 beats 2 and ties 3 (1.5): U = 2.5.
    assert c.statistic == 2.5 and c.test_method == "exact permutation (ties)"
    assert c.p_value == pytest.approx(_two_sided(_mw_null(a + b, 4), 2.5))


# --- verdicts --------------------------------------------------------------------


def _times(n: int, seed: int, sd: float = 0.02) -> np.ndarray:
    return np.random.default_rng(seed).lognormal(np.log(2.0), sd, n)


def test_identical_samples_no_meaningful_difference():
    x = _times(12, 1, sd=0.003)
    assert stats.compare_two(x, x, paired=True).verdict == "no meaningful difference"
    c = stats.compare_two(x, x, paired=False)
    assert c.ratio == 1.0 and c.p_value == 1.0 and c.cliffs_delta == 0 and c.a12 == 0.5
    assert c.verdict == "no meaningful difference", reason(c)


def test_clear_slowdown_with_ten_pairs():
    b = _times(10, 2)
    a = b * 1.2 * _times(10, 3, sd=0.01) / 2.0
    c = stats.compare_two(a, b, paired=True)
    assert c.verdict == "slower" and c.p_value == pytest.approx(2 / 1024)
    assert 1.15 < c.ratio_ci[0] <= c.ratio <= c.ratio_ci[1] < 1.25
    assert c.cliffs_delta > 0.474 and c.a12 > 0.5 and c.magnitude == "large"
    assert stats.compare_two(b, a, paired=True).verdict == "faster"
    assert stats.compare_two(a, b, paired=False).verdict == "slower"


def test_significant_but_tiny_difference_is_not_meaningful():
    b = _times(12, 4)
    c = stats.compare_two(b * 1.005, b, paired=True)  # every block 0.5% slower
    assert c.p_value < 0.001 and c.verdict == "no meaningful difference"


def test_significant_but_ci_overlapping_band_is_undecided():
    b = _times(8, 5, sd=0.05)
    a = b * np.array([1.01, 1.02, 1.015, 1.03, 1.005, 1.04, 1.025, 1.012])
    c = stats.compare_two(a, b, paired=True)
    assert c.p_value < 0.05 and c.ratio_ci[0] < 1.02 < c.ratio_ci[1]
    assert c.verdict == "undecided" and "overlaps" in reason(c)


def test_samples_needed_follows_one_over_root_n():
    # Half-width 0.10 from 8 values; reaching 0.05 takes 4x the values, 0.025 takes 16x.
    assert stats.samples_needed(8, 0.10, 0.05) == 32
    assert stats.samples_needed(8, 0.10, 0.025) == 128
    assert stats.samples_needed(8, 0.101, 0.05) == 33  # 32.64 rounds up
    assert stats.samples_needed(8, 0.01, 0.05) == 9  # already narrow enough: at least one more
    assert stats.samples_needed(8, 0.10, 0.0) is None and stats.samples_needed(8, math.inf, 0.05) is None


def test_undecided_says_how_many_samples_would_decide():
    rng = np.random.default_rng(7)
    a, b = rng.lognormal(0, 0.15, 8), rng.lognormal(0, 0.15, 8)
    c = stats.compare_two(a, b, paired=False, band=0.05)
    assert c.verdict == "undecided"
    lo, hi = c.ratio_ci
    half, off = max(hi - c.ratio, c.ratio - lo), abs(c.ratio - 1)
    if off < 0.05:
        want = f"about {math.ceil(8 * (half / (0.05 - off)) ** 2)} samples per side would put the CI inside ±5%"
    else:
        want = f"about {math.ceil(8 * (half / (off - 0.05)) ** 2)} samples per side would clear the ±5% band"
    assert want in reason(c), reason(c)
    assert f"if the ratio stays at {c.ratio:.4g}" in reason(c)


def test_undecided_paired_counts_pairs_and_names_the_band_edge():
    b = np.array([1.0, 1.3, 0.8, 1.1, 0.9, 1.2, 1.05, 0.95])
    a = b * np.array([1.30, 0.80, 1.10, 0.92, 1.25, 0.95, 1.02, 1.08])
    c = stats.compare_two(a, b, paired=True, band=0.05)
    assert c.verdict == "undecided" and "pairs would" in reason(c), reason(c)
    # A ratio exactly on the band's edge cannot be decided by more samples.
    edge = replace(c, ratio=1.05, ratio_ci=(0.95, 1.15))
    edge = replace(edge, why=stats._projection(edge, "not significant"))
    assert edge.why.projection == "edge" and "sits on the band's edge" in reason(edge)
    near = replace(c, ratio=1.0501, ratio_ci=(0.95, 1.15))  # 0.0001 from the edge: 8 * (0.1 / 0.0001)^2
    near = replace(near, why=stats._projection(near, "not significant"))
    assert near.why.projection == "futile"
    assert reason(near).endswith(
        "; at this spread more than 10,000 pairs would be needed for the "
        "ratio 1.05: more samples alone will hardly decide"
    )


def test_paired_needs_equal_lengths():
    with pytest.raises(ValueError, match="equal lengths"):
        stats.compare_two([1.0, 2.0], [1.0], paired=True)


def test_ratio_ci_coverage():
    # True ratio of medians 1.1; percentile intervals should cover it about 95% of the time.
    rng = np.random.default_rng(11)
    hits = 0
    for i in range(150):
        a, b = rng.lognormal(np.log(1.1), 0.1, 30), rng.lognormal(0.0, 0.1, 30)
        lo, hi = stats.compare_two(a, b, paired=False, n_boot=999, seed=i).ratio_ci
        hits += lo <= 1.1 <= hi
    assert 0.86 <= hits / 150 <= 0.99


# --- more than two groups --------------------------------------------------------


def test_friedman_hand_computed():
    # Within-block ranks: A = 1,1,1,2 (R=5), B = 2,3,2,1 (8), C = 3,2,3,3 (11); n=4, k=3:
    # 12 / (4*3*4) * (25 + 64 + 121) - 3*4*4 = 52.5 - 48 = 4.5; chi2(2) survival = exp(-4.5 / 2).
    groups = {"A": [1.0, 1.0, 1.0, 2.0], "B": [2.0, 3.0, 2.0, 1.0], "C": [3.0, 2.0, 3.0, 3.0]}
    o = stats.compare_many(groups, paired=True)
    assert o.test == "Friedman" and o.df == 2 and o.n == (4, 4, 4)
    assert o.statistic == pytest.approx(4.5) and o.p_value == pytest.approx(math.exp(-2.25))
    # 4 pairs, 3 Holm-adjusted comparisons: alpha / 3 needs 7 pairs.
    assert all("needs at least 7 pairs for 3 Holm-adjusted comparisons" in reason(c) for _, _, c in o.pairwise)


def test_kruskal_hand_computed_and_holm_pairwise():
    # Ranks 1-3, 4-6, 7-9: H = 12 / (9*10) * (6**2 + 15**2 + 24**2) / 3 - 3*10 = 7.2; p = exp(-3.6).
    o = stats.compare_many({"x": [1.0, 2.0, 3.0], "y": [4.0, 5.0, 6.0], "z": [7.0, 8.0, 9.0]}, paired=False)
    assert o.test == "Kruskal-Wallis" and o.statistic == pytest.approx(7.2)
    assert o.p_value == pytest.approx(math.exp(-3.6))
    assert [(a, b) for a, b, _ in o.pairwise] == [("x", "y"), ("x", "z"), ("y", "z")]


def test_compare_many_adjusts_pairwise_with_holm():
    base = _times(12, 6)
    groups = {"torch": base * 1.2, "tf": base, "jax": base * 1.005 * _times(12, 7, sd=0.001) / 2.0}
    o = stats.compare_many(groups, paired=True)
    raw = [stats.compare_two(groups[a], groups[b], paired=True).p_value for a, b, _ in o.pairwise]
    assert [c.p_adjusted for _, _, c in o.pairwise] == pytest.approx(stats.holm(raw))
    assert all(c.family_size == 3 for _, _, c in o.pairwise)
    assert o.pair("torch", "tf").verdict == "slower" and o.pair("torch", "jax").verdict == "slower"
    assert o.pair("tf", "jax").verdict == "no meaningful difference"
    assert "(Holm)" in reason(o.pair("torch", "tf"))
    with pytest.raises(ValueError, match="equal-length"):
        stats.compare_many({"a": [1.0, 2.0], "b": [1.0]}, paired=True)


# --- stopping rule and the hypothesis row ---------------------------------------


def test_ci_stopping_rule():
    tight, loose = _times(20, 8, sd=0.005), _times(20, 9, sd=0.2)
    assert stats.median_ci_halfwidth(tight) < 0.02 < stats.median_ci_halfwidth(loose)
    assert stats.ci_converged(tight, 0.02) and not stats.ci_converged(loose, 0.02)
    assert not stats.ci_converged(tight[:5], 0.02)  # fewer than 6 values never converge
    assert stats.median_ci_halfwidth([3.0] * 8) == 0.0
    with pytest.raises(ValueError, match="fraction"):
        stats.ci_converged(tight, 2)


def test_hypothesis_row_paired():
    b = _times(10, 10)
    a = b * 1.2 * _times(10, 12, sd=0.01) / 2.0
    row = hypothesis_row("time", "train", "torch", "tf", a, b, paired=True, alpha=0.05)
    assert row["test"].startswith("paired Wilcoxon signed-rank") and "Shapiro-Wilk" in row["test_reason"]
    assert "differences torch − tf" in row["normality"] and "symmetric about zero" in row["H0"]
    assert row["decision"].startswith("reject H0 at alpha=0.05") and row["verdict"] == "slower"
    # 10 pairs all of one sign: p is the floor of the design, and the decision says so
    assert row["decision"].endswith("(p is the smallest this design can give)")
    assert row["p_used"] == row["p_value"] and row["a12"] == 1.0
    held = hypothesis_row("time", "train", "torch", "tf", a, b, True, 0.05, adjusted_p=0.2, family_size=3)
    assert held["p_used"] == 0.2 and held["decision"] == "do not reject H0 at alpha=0.05"
    assert held["verdict"] == "undecided"


def test_hypothesis_row_unpaired_and_too_small():
    # Unpaired samples in a run's report are the repeats of one process per side: no decision.
    row = hypothesis_row("time", "infer", "jax", "tf", [1.0, 1.1, 1.2, 1.3], [2.0, 2.1, 2.2, 2.3], paired=False)
    assert row["test"].startswith("Mann-Whitney U") and row["normality"].count("Shapiro-Wilk") == 2
    assert row["decision"].startswith("not decidable: one process per side"), row["decision"]
    # Independent trial medians, unpaired, but 3 + 3 cannot reach p < 0.05 (smallest p = 0.1).
    c = stats.compare_two([1.0, 1.1, 1.2], [2.0, 2.1, 2.2], paired=False)
    row = hypothesis_row("time", "infer", "jax", "tf", [1.0, 1.1, 1.2], [2.0, 2.1, 2.2], False, comparison=c)
    assert row["decision"].startswith("not decidable: needs at least 4 + 4 samples")


def test_one_process_per_side_gets_a_ratio_and_no_verdict():
    fast = [1.0, 1.1, 0.9, 1.05, 0.95, 1.02]
    c = stats.compare_two([5 * v for v in fast], fast, paired=False, independent=False)
    # The same numbers as an independent comparison, the verdict withheld.
    free = stats.compare_two([5 * v for v in fast], fast, paired=False)
    assert free.verdict == "slower" and c.verdict == "undecided" and not c.decided
    assert c.ratio == free.ratio and c.ratio_ci == free.ratio_ci and c.p_value == free.p_value
    # 4 + 4 trial medians (exact Mann-Whitney: 2/70 = 0.029) decide where 6 pairs are needed paired
    assert c.why is not None and c.why.cause == "one process" and c.why.need == 4
    assert c.ci_method.startswith("within one process per side")
    assert stats.reverse(c).verdict == "undecided"
    many = stats.compare_many({"a": fast, "b": [2 * v for v in fast]}, paired=False, independent=False)
    assert all(x.verdict == "undecided" and x.why.cause == "one process" for _, _, x in many.pairwise)


def test_p_at_the_design_floor_is_flagged():
    # 5 + 5 completely separated: p = 2 / C(10, 5) = 0.0079, the smallest Mann-Whitney gives.
    c = stats.compare_two([1.0, 1.1, 1.2, 1.3, 1.4], [2.0, 2.1, 2.2, 2.3, 2.4], paired=False)
    assert c.p == pytest.approx(2 / 252) and c.at_floor
    # One overlap: p is above the floor.
    d = stats.compare_two([1.0, 1.1, 1.2, 1.3, 2.15], [2.0, 2.1, 2.2, 2.3, 2.4], paired=False)
    assert d.p > 2 / 252 and not d.at_floor
    # Holm over 3: the floor is 3 x 0.0079 = 0.024 (the default run's p-values before this rule).
    adjusted = stats.adjust(c, 3 * c.p_value, 3)
    assert adjusted.p == pytest.approx(6 / 252) and adjusted.at_floor


# A machine that alternates between a fast and a slow state: both runs share the fast
# state (1.00-1.13 s), run B caught slow phases in 12 of 20 trials, run A in 6.
FAST_A, SLOW_A = 1.00 + 0.01 * np.arange(14), np.full(6, 1.50)
FAST_B, SLOW_B = 1.00 + 0.01 * np.arange(8), 1.50 + 0.01 * np.arange(12)


def test_a_low_quantile_sees_the_shared_fast_state_where_the_median_sees_the_slow_share():
    a, b = np.concatenate([FAST_A, SLOW_A]), np.concatenate([FAST_B, SLOW_B])
    by_median = stats.compare_two(b, a, paired=False, band=0.05)
    # medians: (1.09 + 1.10) / 2 = 1.095 and (1.51 + 1.52) / 2 = 1.515
    assert by_median.estimate_a == pytest.approx(1.515) and by_median.estimate_b == pytest.approx(1.095)
    assert by_median.ratio == pytest.approx(1.515 / 1.095) and by_median.estimator == "median"
    assert by_median.verdict == "undecided" and by_median.ratio_ci[1] > 1.3  # B looks ~38% slower
    low = stats.compare_two(b, a, paired=False, band=0.05, quantile=0.1)
    # 10th percentile of 20 sorted values: position 0.1 * 19 = 1.9, x[1] + 0.9 (x[2] - x[1]) = 1.019 in both
    assert low.estimate_a == pytest.approx(1.019) and low.estimate_b == pytest.approx(1.019)
    assert low.ratio == pytest.approx(1.0)
    assert low.verdict == "no meaningful difference", reason(low)
    assert low.p_value == by_median.p_value  # the rank test is the same; only the estimate differs


def test_a_low_quantile_still_reports_a_real_slowdown():
    a = np.concatenate([FAST_A, SLOW_A])
    c = stats.compare_two(a * 1.3, a, paired=False, band=0.05, quantile=0.1)
    assert c.ratio == pytest.approx(1.3) and c.verdict == "slower", reason(c)


def test_a_quantile_needs_values_beyond_it_and_lies_inside_zero_one():
    assert [stats.min_quantile_n(q) for q in (0.5, 0.25, 0.1, 0.9, 0.05)] == [4, 8, 20, 20, 40]
    a = np.concatenate([FAST_A, SLOW_A])[::2]  # 10 values
    c = stats.compare_two(a * 1.3, a, paired=False, band=0.05, quantile=0.1)
    assert c.verdict == "undecided"
    assert reason(c) == (
        "the 10th percentile of 10 values rests on fewer than two values beyond it: needs at least 20 per side"
    )
    for q in (0.0, 1.0, -0.1):
        with pytest.raises(ValueError, match=f"quantile {q} must lie strictly between 0 and 1"):
            stats.compare_two(a, a, paired=False, quantile=q)


def test_estimator_names():
    names = {q: stats.estimator_name(q) for q in (0.5, 0.1, 0.01, 0.02, 0.03, 0.11, 0.025, 0.9, 0.21)}
    assert names == {
        0.5: "median",
        0.1: "10th percentile",
        0.01: "1st percentile",
        0.02: "2nd percentile",
        0.03: "3rd percentile",
        0.11: "11th percentile",
        0.025: "2.5th percentile",
        0.9: "90th percentile",
        0.21: "21st percentile",
    }


def test_one_value_beside_ties_takes_the_normal_approximation():
    # Accuracies tie often; scipy's permutation test refuses a sample of one value.
    c = stats.compare_two([0.9], [0.9, 0.9, 0.8], paired=False)
    assert c.test_method == "normal approximation, tie-corrected" and c.verdict == "undecided"
