"""The bootstrap intervals of analysis.stats (drawn once per sample size, medians read
off counts) are scipy.stats.bootstrap's intervals: the same resamples and the same
percentiles, checked value for value against scipy and against hand-computed cases."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import scipy.stats as sst

from dlbench.analysis import stats


def _scipy_ci(
    data: tuple[np.ndarray, ...], statistic: Any, paired: bool, n_boot: int, seed: int
) -> tuple[float, float]:
    res = sst.bootstrap(
        data,
        statistic,
        paired=paired,
        vectorized=True,
        n_resamples=n_boot,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


CASES = [
    # (n_a, n_b, paired, quantile, rounded: ties)
    (81, 81, True, 0.5, False),
    (81, 81, False, 0.5, False),
    (7, 12, False, 0.5, True),
    (20, 20, True, 0.1, False),
    (33, 25, False, 0.25, True),
    (2, 2, False, 0.5, False),
    (9, 9, True, 0.9, True),
]


@pytest.mark.parametrize(("n_a", "n_b", "paired", "quantile", "ties"), CASES)
def test_ratio_ci_is_scipys(n_a: int, n_b: int, paired: bool, quantile: float, ties: bool) -> None:
    rng = np.random.default_rng(n_a * 100 + n_b)
    a, b = rng.lognormal(0, 0.3, n_a), rng.lognormal(0.1, 0.3, n_b)
    if ties:
        a, b = np.round(a, 1), np.round(b, 1)

    def ratio(x: np.ndarray, y: np.ndarray, axis: int = -1) -> Any:
        return stats.location(x, quantile, axis) / stats.location(y, quantile, axis)

    seed = n_a + n_b
    assert stats._ratio_ci(a, b, paired, 999, seed, quantile) == _scipy_ci((a, b), ratio, paired, 999, seed)


def test_report_sized_intervals_are_scipys_at_9999() -> None:
    """The report's case: 81 trial medians a side, the default 9,999 resamples; the
    second call reuses the drawn counts and must give the same again."""
    rng = np.random.default_rng(3)
    a, b = rng.lognormal(0, 0.2, 81), rng.lognormal(0, 0.2, 81)

    def ratio(x: np.ndarray, y: np.ndarray, axis: int = -1) -> Any:
        return np.median(x, axis=axis) / np.median(y, axis=axis)

    def diff(x: np.ndarray, y: np.ndarray, axis: int = -1) -> Any:
        return np.median(x, axis=axis) - np.median(y, axis=axis)

    for paired in (True, False):
        want = _scipy_ci((a, b), ratio, paired, stats.N_BOOT, 0)
        assert stats.ratio_ci(a, b, paired) == want
        assert stats.ratio_ci(a, b, paired) == want
        assert stats.difference_ci(a, b, paired) == _scipy_ci((a, b), diff, paired, stats.N_BOOT, 0)
    c = stats.compare_two(a, b, paired=True)
    assert c.ratio_ci == _scipy_ci((a, b), ratio, True, stats.N_BOOT, 0)


def test_median_ci_halfwidth_is_scipys() -> None:
    x = np.random.default_rng(8).normal(10, 1, 15)
    lo, hi = _scipy_ci((x,), np.median, False, 999, 4)
    med = float(np.median(x))
    assert stats.median_ci_halfwidth(x, n_boot=999, seed=4) == max(med - lo, hi - med) / med


def test_resampled_medians_by_hand() -> None:
    """Each resample's median read off the counts equals the median of the resample
    itself: [3, 1, 2] resampled as rows of indices, counts transposed (value x row)."""
    x = np.array([3.0, 1.0, 2.0])
    idx = np.array([[0, 0, 1], [1, 1, 1], [2, 0, 1], [2, 2, 0]])
    counts = np.stack([np.bincount(r, minlength=3) for r in idx]).T.astype(np.int32)
    got = stats._resampled_location(x, counts.copy(), 0.5)
    assert got.tolist() == [3.0, 1.0, 2.0, 2.0]
    x4 = np.array([4.0, 1.0, 3.0, 2.0])
    idx4 = np.array([[0, 1, 2, 3], [1, 1, 0, 0], [3, 3, 3, 2]])
    counts4 = np.stack([np.bincount(r, minlength=4) for r in idx4]).T.astype(np.int32)
    # medians of the even-sized resamples: (2+3)/2, (1+4)/2, (2+2)/2; the 10th percentile
    # (numpy's linear rule, h = 0.3): 1 + 0.3*(2-1), 1 + 0.3*(1-1), 2 + 0.3*(2-2)
    assert stats._resampled_location(x4, counts4.copy(), 0.5).tolist() == [2.5, 2.5, 2.0]
    assert np.allclose(stats._resampled_location(x4, counts4.copy(), 0.1), [1.3, 1.0, 2.0])


def test_two_value_sample_interval_by_hand() -> None:
    """[1, 3] against [1, 1]: a resample's median is 1, 2 or 3 (chances 1/4, 1/2, 1/4),
    so the 95% percentile interval of the ratio is [1, 3]."""
    lo, hi = stats.ratio_ci([1.0, 3.0], [1.0, 1.0])
    assert (lo, hi) == (1.0, 3.0)
    assert math.isnan(stats.ratio_ci([1.0], [2.0, 3.0])[0])


def test_median_of_is_numpys_median() -> None:
    """The trial medians the analyses take without numpy are np.median's floats: odd and
    even sizes, ties, infinities, integers, and NaN (numpy's answer: nan)."""
    rng = np.random.default_rng(11)
    for n in range(1, 13):
        for _ in range(50):
            x = rng.lognormal(0, 1, n)
            if n > 3:
                x[: n // 3] = x[-1]  # ties
            assert stats.median_of(list(x)) == float(np.median(x))
    assert stats.median_of([1.0, math.inf]) == math.inf
    assert stats.median_of([3, 1, 2, 10]) == 2.5
    assert stats.median_of([0.1, 0.2]) == float(np.median([0.1, 0.2]))
    assert math.isnan(stats.median_of([1.0, math.nan, 2.0]))


def test_large_samples_are_scipys() -> None:
    """500 trial medians a side (a 10^7-measurement run has 812): counts of 9,999 x 1,000
    cells, kept in the cache for large draws, in int16."""
    rng = np.random.default_rng(12)
    a, b = rng.lognormal(0, 0.2, 500), rng.lognormal(0.05, 0.2, 500)

    def ratio(x: np.ndarray, y: np.ndarray, axis: int = -1) -> Any:
        return np.median(x, axis=axis) / np.median(y, axis=axis)

    for paired in (False, True):
        want = _scipy_ci((a, b), ratio, paired, stats.N_BOOT, 0)
        assert stats.ratio_ci(a, b, paired) == want
        assert stats.ratio_ci(a, b, paired) == want  # from the cache
