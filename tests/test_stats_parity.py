"""dlbench's own statistics held to the libraries they stand in for.

dlbench keeps three pieces of statistics in its own code, for speed or for the report's
needs, and each is checked here against the library that defines it:

- The median's distribution-free interval (dlbench.report.model.median_interval, and the
  benchmark script's copy, benchmarks/harness_vs_standalone.median_interval) against
  scipy.stats.quantile_test(x, p=0.5).confidence_interval(level): both take the order
  statistics x_(r) and x_(n+1-r). They pick r alike except in two places, tested apart:
  * Coverage exactly at the level. dlbench takes the largest r whose coverage
    1 - 2 P(B <= r - 1), B ~ Binomial(n, 1/2), is at least the level: a symmetric
    interval. scipy takes the lower end at r = ppf(a), the smallest k with
    P(B <= k) >= a, a = (1 - level) / 2, and the upper end at index isf(a), the smallest
    k with P(B > k) <= a. Unless some r has coverage exactly the level, the two rules
    pick the same r on both ends. Where one does (a dyadic level: 0.5 with n = 2, 0.875
    with n = 4; never 95%, since 0.025 is no multiple of 2^-n), the upper ends still
    agree, but scipy's lower end is one order statistic lower, x_(r-1) (nan when r = 1):
    its interval is asymmetric there, with coverage above the level.
  * Too few values. Where even [min, max] falls short of the level (n < 6 at 95%) scipy
    gives (nan, nan); dlbench's report gives [min, max] with the coverage it has and says
    why (no interval at all under 2 values), and the benchmark script gives None.
- Holm's step-down adjustment (dlbench.analysis.stats.holm) against statsmodels'
  multipletests(method="holm"): the same adjusted p-values, float for float, ties and
  ones included. Rejections agree with dlbench's rule p < alpha everywhere except at
  an adjusted p exactly equal to alpha, which statsmodels rejects and dlbench does not.
- The percentile bootstrap (stats.ratio_ci, difference_ci, median_ci_halfwidth, and
  _ratio_ci for other quantiles), which draws its resamples once per sample size and
  reads each resample's median off cumulative counts instead of sorting it, against
  scipy.stats.bootstrap(method="percentile") on the same data with an independent seed
  (tests/test_stats_bootstrap.py checks that with the same seed the intervals are
  scipy's exactly; this checks the statistics, whatever the random stream).
  Monte-Carlo tolerance: each endpoint is a sample quantile of B = 9,999 resamples, and
  the bootstrap distribution's CDF at a sample q-quantile is q with a standard deviation
  of sqrt(q (1 - q) / B) (0.0016 at q = 0.025). Two independent runs differ by sqrt(2)
  times that, so dlbench's endpoint must lie between scipy's bootstrap distribution's
  quantiles at q - d and q + d with d = 5 sqrt(2 q (1 - q) / B) = 0.011: a false failure
  has a chance of about 3e-7 per side. Measured on the CDF scale, the tolerance holds
  for any data scale and for the discrete bootstrap distribution of a median of a few
  values, where the endpoints often coincide exactly. It is tight enough to matter: the
  tests fail if dlbench gave a 90% interval, resampled paired samples apart (paired
  samples here share each block's level), or took the lower of the two middle values
  as the median; a 94% interval fails one case.
"""

from __future__ import annotations

import gc
import math
import sys
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pytest
import scipy.stats as sst
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from statsmodels.stats.multitest import multipletests

from dlbench.analysis import stats
from dlbench.report.model import median_interval

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from harness_vs_standalone import median_interval as script_median_interval  # noqa: E402

# Derandomized, no example database: the same examples every run, nothing written beside the tests.
PARITY = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


# --- the median's order-statistic interval -------------------------------------------------


def _scipy_median_ci(x: list[float], level: float) -> tuple[float, float]:
    ci = sst.quantile_test(np.asarray(x, dtype=float), q=0, p=0.5).confidence_interval(level)
    return float(ci.low), float(ci.high)


def _coverage_hits_level(n: int, level: float) -> bool:
    """Some r has coverage 1 - 2 P(B <= r - 1) equal to `level` (up to rounding): where
    dlbench and scipy are defined differently (see the module's docstring)."""
    cdf = sst.binom.cdf(np.arange(n // 2 + 1), n, 0.5)
    return bool(np.any(np.isclose(1 - 2 * cdf, level, rtol=1e-9, atol=1e-12)))


def _enough(n: int, level: float) -> bool:
    """[min, max] reaches `level`: the smallest sample both give an interval for."""
    return n >= 2 and 1 - 2 * 0.5**n >= level


samples = st.lists(
    st.one_of(
        st.integers(-5, 5).map(float),  # ties
        st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
    ),
    min_size=1,
    max_size=400,
)
levels = st.one_of(st.sampled_from([0.95, 0.9, 0.99, 0.8, 0.5]), st.floats(0.5, 0.999))


@PARITY
@given(samples, levels)
def test_median_interval_is_scipys_quantile_test_interval(x: list[float], level: float) -> None:
    assume(not _coverage_hits_level(len(x), level))
    ours = median_interval(x, level)
    script = script_median_interval(x, level)
    low, high = _scipy_median_ci(x, level)
    if _enough(len(x), level):
        assert (ours["low"], ours["high"]) == (low, high) and ours["why"] is None
        assert ours["coverage"] >= level
        assert script == (low, high)
    else:  # scipy: no interval; the report: [min, max] short of the level, saying so; the script: None
        assert math.isnan(low) and math.isnan(high)
        assert script is None
        assert ours["why"] is not None
        if len(x) >= 2:
            assert (ours["low"], ours["high"]) == (min(x), max(x)) and ours["coverage"] < level


@pytest.mark.parametrize("n", [6, 7, 10, 25, 40, 81, 100, 1000, 5001])
def test_median_interval_at_95_percent_is_scipys(n: int) -> None:
    """The report's level on report-sized samples: no coverage can equal 95% exactly."""
    x = list(np.random.default_rng(n).lognormal(0, 0.5, n))
    ours = median_interval(x)
    assert (ours["low"], ours["high"]) == _scipy_median_ci(x, 0.95)
    assert script_median_interval(x) == _scipy_median_ci(x, 0.95)


@pytest.mark.parametrize(("n", "level", "r"), [(2, 0.5, 1), (4, 0.875, 1), (6, 0.78125, 2), (10, 0.978515625, 2)])
def test_coverage_exactly_at_the_level_is_where_the_definitions_part(n: int, level: float, r: int) -> None:
    """Coverage 1 - 2 P(B <= r - 1) equals the level: dlbench takes [x_(r), x_(n+1-r)]
    (coverage at least the level); scipy the same upper end and one order statistic
    lower at the lower end, x_(r-1) (none when r = 1)."""
    x = [float(v) for v in range(1, n + 1)]
    assert 1 - 2 * sst.binom.cdf(r - 1, n, 0.5) == pytest.approx(level, abs=1e-15)
    ours = median_interval(x, level)
    assert (ours["low"], ours["high"]) == (x[r - 1], x[n - r]) and ours["coverage"] == pytest.approx(level)
    assert script_median_interval(x, level) == (x[r - 1], x[n - r])
    low, high = _scipy_median_ci(x, level)
    assert high == x[n - r]
    if r == 1:
        assert math.isnan(low)
    else:
        assert low == x[r - 2]


def test_median_interval_reads_only_finite_values() -> None:
    x = list(np.random.default_rng(5).normal(0, 1, 30))
    ours = median_interval([*x, math.nan, math.inf, None])  # type: ignore[list-item]
    assert (ours["low"], ours["high"]) == _scipy_median_ci(x, 0.95)


# --- Holm -----------------------------------------------------------------------------------


def _statsmodels_holm(p: list[float], alpha: float = 0.05) -> tuple[list[bool], list[float]]:
    # statsmodels' Holm branch calls gc.collect() on every call: 0.1 s each in a test
    # process that holds many objects. It frees nothing this test needs, so it is skipped.
    with mock.patch.object(gc, "collect", lambda generation=2: 0):
        reject, adjusted, _, _ = multipletests(np.asarray(p, dtype=float), alpha=alpha, method="holm")
    return reject.tolist(), adjusted.tolist()


# p-values with ties, ones, zeros and the values tests produce at their floors
p_values = st.lists(
    st.one_of(
        st.sampled_from([0.0, 1.0, 1.0, 0.05, 0.01, 0.0078125, 0.015625, 0.5, 1e-300]),
        st.floats(0, 1),
    ),
    min_size=1,
    max_size=80,
)


@PARITY
@given(p_values, st.sampled_from([0.05, 0.01, 0.1]))
def test_holm_is_statsmodels(p: list[float], alpha: float) -> None:
    reject, adjusted = _statsmodels_holm(p, alpha)
    ours = stats.holm(p)
    assert ours == adjusted  # float for float
    assume(not any(math.isclose(q, alpha, rel_tol=1e-12) for q in ours))
    assert reject == [q < alpha for q in ours]  # dlbench decides at p < alpha


def test_holm_on_random_vectors_with_ties_and_ones() -> None:
    rng = np.random.default_rng(20)
    for _ in range(500):
        m = int(rng.integers(1, 60))
        p = rng.uniform(0, 1, m) ** rng.uniform(0.2, 5)  # from mostly small to mostly large
        p = np.round(p, int(rng.integers(1, 4)))  # ties
        p[rng.uniform(size=m) < 0.15] = 1.0  # ones
        assert stats.holm(p) == _statsmodels_holm(p.tolist())[1]


def test_holm_at_alpha_exactly() -> None:
    """An adjusted p of exactly alpha: statsmodels rejects, dlbench's verdicts (p < alpha) do not."""
    reject, adjusted = _statsmodels_holm([0.025, 0.5])
    assert adjusted == stats.holm([0.025, 0.5]) == [0.05, 0.5]
    assert reject == [True, False]


# --- the percentile bootstrap ---------------------------------------------------------------

B = stats.N_BOOT
Q_LOW = 0.025  # the 95% interval's lower percentile; the upper is 1 - Q_LOW
DELTA = 5 * math.sqrt(2 * Q_LOW * (1 - Q_LOW) / B)  # 0.011: see the module's docstring


def _scipy_bootstrap(data: tuple[np.ndarray, ...], statistic: Any, paired: bool, seed: int) -> np.ndarray:
    res = sst.bootstrap(
        data,
        statistic,
        paired=paired,
        vectorized=True,
        n_resamples=B,
        method="percentile",
        rng=np.random.default_rng(seed),
    )
    distribution: np.ndarray = np.asarray(res.bootstrap_distribution, dtype=float)
    return distribution


def _bands(distribution: np.ndarray) -> tuple[tuple[float, float], tuple[float, float]]:
    """Where each endpoint of a 95% percentile interval from an independent run of B
    resamples lies, but for a chance of about 3e-7 a side."""
    qs = [Q_LOW - DELTA, Q_LOW + DELTA, 1 - Q_LOW - DELTA, 1 - Q_LOW + DELTA]
    lo_lo, lo_hi, hi_lo, hi_hi = (float(v) for v in np.quantile(distribution, qs))
    return (lo_lo, lo_hi), (hi_lo, hi_hi)


def _within(ci: tuple[float, float], distribution: np.ndarray) -> None:
    (lo_lo, lo_hi), (hi_lo, hi_hi) = _bands(distribution)
    assert lo_lo <= ci[0] <= lo_hi, (ci, (lo_lo, lo_hi))
    assert hi_lo <= ci[1] <= hi_hi, (ci, (hi_lo, hi_hi))


def _samples(seed: int, n_a: int, n_b: int, ties: bool, paired: bool) -> tuple[np.ndarray, np.ndarray]:
    """Skewed times; paired ones share each block's level (b = a times a small factor), so
    that resampling pairs jointly gives a visibly narrower interval than resampling apart."""
    rng = np.random.default_rng(seed)
    a = rng.lognormal(0, 0.3, n_a)
    b = a * rng.lognormal(0.1, 0.05, n_a) if paired else rng.lognormal(0.1, 0.3, n_b)
    return (np.round(a, 1), np.round(b, 1)) if ties else (a, b)


def _quantile_ratio(q: float) -> Any:
    def ratio(x: np.ndarray, y: np.ndarray, axis: int = -1) -> Any:
        return np.quantile(x, q, axis=axis) / np.quantile(y, q, axis=axis)

    return ratio


def _median_difference(x: np.ndarray, y: np.ndarray, axis: int = -1) -> Any:
    return np.median(x, axis=axis) - np.median(y, axis=axis)


BOOT_CASES = [
    # (n_a, n_b, paired, quantile, ties)
    (81, 81, True, 0.5, False),  # a report's trial medians, paired by block
    (81, 81, False, 0.5, False),
    (5, 5, True, 0.5, False),  # the fewest pairs a verdict can rest on: a very discrete distribution
    (7, 12, False, 0.5, True),
    (30, 30, True, 0.1, False),  # run vs run on a low quantile
    (40, 25, False, 0.25, True),
    (200, 150, False, 0.5, False),
]


@pytest.mark.parametrize(("n_a", "n_b", "paired", "quantile", "ties"), BOOT_CASES)
def test_bootstrap_ratio_interval_is_scipys_within_monte_carlo_error(
    n_a: int, n_b: int, paired: bool, quantile: float, ties: bool
) -> None:
    a, b = _samples(n_a * 1000 + n_b, n_a, n_b, ties, paired)
    ci = stats._ratio_ci(a, b, paired, B, 0, quantile)
    if quantile == 0.5:
        assert ci == stats.ratio_ci(a, b, paired)
    _within(ci, _scipy_bootstrap((a, b), _quantile_ratio(quantile), paired, seed=12345))


@pytest.mark.parametrize("paired", [True, False])
def test_bootstrap_difference_interval_is_scipys_within_monte_carlo_error(paired: bool) -> None:
    a, b = _samples(7, 40, 40, True, paired)  # accuracies tie often
    ci = stats.difference_ci(a, b, paired)
    _within(ci, _scipy_bootstrap((a, b), _median_difference, paired, seed=54321))


@pytest.mark.parametrize(("n", "seed"), [(10, 1), (15, 2), (40, 3), (120, 4)])
def test_median_ci_halfwidth_is_scipys_within_monte_carlo_error(n: int, seed: int) -> None:
    """The stopping rule's half-width, max(median - low, high - median) / median, grows as
    low falls and as high rises: the bands of the endpoints bound it."""
    x = np.random.default_rng(seed).normal(10, 1, n)
    med = float(np.median(x))
    (lo_lo, lo_hi), (hi_lo, hi_hi) = _bands(_scipy_bootstrap((x,), np.median, False, seed=seed + 999))
    half = stats.median_ci_halfwidth(x)
    assert max(med - lo_hi, hi_lo - med) / med <= half <= max(med - lo_lo, hi_hi - med) / med


@settings(PARITY, max_examples=25)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_a=st.integers(2, 60),
    n_b=st.integers(2, 60),
    paired=st.booleans(),
    quantile=st.sampled_from([0.5, 0.5, 0.25, 0.1, 0.9]),
    ties=st.booleans(),
)
def test_bootstrap_ratio_interval_on_drawn_samples(
    seed: int, n_a: int, n_b: int, paired: bool, quantile: float, ties: bool
) -> None:
    a, b = _samples(seed, n_a, n_b, ties, paired)
    ci = stats._ratio_ci(a, b, paired, B, seed % 1000, quantile)
    _within(ci, _scipy_bootstrap((a, b), _quantile_ratio(quantile), paired, seed=seed + 1))
