"""The gate's sequential rule (dlbench.analysis.sequential): the exact signed-rank law, the
Pocock level and what one look decides, against scipy and hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import wilcoxon

from dlbench.analysis import sequential


def test_the_signed_rank_law_is_the_exact_one():
    # n = 3: W+ in 0..6; the subsets of {1, 2, 3} by their sum: 0, 1, 2, 3 (twice: {3}, {1, 2}), 4, 5, 6.
    assert list(sequential.signed_rank_pmf(3) * 8) == [1, 1, 1, 2, 1, 1, 1]
    rng = np.random.default_rng(0)
    for n in range(1, 26):
        d = rng.normal(0.2, 1.0, n)
        w, k = sequential.w_plus(d)
        assert k == n
        expected = wilcoxon(d, alternative="greater", method="exact").pvalue
        assert sequential.upper_p(w, k) == pytest.approx(expected, rel=1e-9)


def test_zeros_are_dropped_and_ties_share_their_rank():
    w, n = sequential.w_plus(np.array([0.0, 1.0, -1.0, 2.0]))
    assert n == 3 and w == 1.5 + 3  # |1| and |-1| tie at ranks 1 and 2 (1.5 each), 2 is rank 3
    assert sequential.upper_p(0.0, 0) == 1.0


def test_the_first_look_that_can_decide():
    assert sequential.first_look(0.01) == 7  # 2^-7 = 0.0078 <= 0.01 < 2^-6
    assert sequential.first_look(2**-9) == 9


@pytest.mark.parametrize(("max_pairs", "alpha"), [(16, 0.05), (30, 0.025)])
def test_the_pocock_level_holds_alpha_over_every_look(max_pairs, alpha):
    """Simulated apart from the level's own simulation (another generator, normal and heavy-
    tailed differences on the band's edge): a test read after every pair at the level crosses
    it at most alpha of the time; read at alpha itself after every pair, it crosses far more."""
    level = sequential.pocock_level(max_pairs, alpha)
    assert alpha / max_pairs < level < alpha  # above Bonferroni's level, below one look's
    rng = np.random.default_rng(7)
    sims = 1500
    for noise in (rng.normal(0, 1, (sims, max_pairs)), rng.standard_t(2, (sims, max_pairs))):
        crossed = naive = 0
        for row in noise:
            p = [sequential.upper_p(*sequential.w_plus(row[:n])) for n in range(1, max_pairs + 1)]
            crossed += min(p) <= level
            naive += min(p) <= alpha
        se = math.sqrt(alpha * (1 - alpha) / sims)
        assert crossed / sims <= alpha + 3 * se
        assert naive / sims > 2 * alpha


def test_the_level_is_refused_outside_its_range():
    with pytest.raises(ValueError, match="max_pairs"):
        sequential.pocock_level(0, 0.05)
    with pytest.raises(ValueError, match="alpha"):
        sequential.pocock_level(10, 1.5)


def test_one_look_decides_slower_within_or_goes_on():
    a = [1.0, 1.1, 0.9, 1.05, 0.95, 1.02, 0.98, 1.01]
    slower = sequential.look(a, [x * 1.3 for x in a], band=0.05, level=0.005)
    # every pair 1.3x: all 8 shifted differences positive, p = 2^-8 = 0.0039 <= 0.005
    assert slower.decision == "slower" and slower.p_slower == pytest.approx(2**-8)
    assert slower.ratio == pytest.approx(1.3) and slower.pairs == 8
    faster = sequential.look(a, [x * 0.9 for x in a], band=0.05, level=0.005)
    assert faster.decision == "within" and faster.p_within == pytest.approx(2**-8)
    # 1.3x but the band is 0.4: the pairs say "within" (B is not 1.4x slower)
    assert sequential.look(a, [x * 1.3 for x in a], band=0.4, level=0.005).decision == "within"
    # too few pairs to reach the level either way
    assert sequential.look(a[:5], [x * 1.3 for x in a[:5]], band=0.05, level=0.005).decision == "continue"
    with pytest.raises(ValueError, match="paired values must match"):
        sequential.look([1.0], [1.0, 2.0], 0.05, 0.01)
