"""Statistics for comparing frameworks: summaries, normality diagnostics, paired and
unpaired rank tests, effect sizes, Holm correction, bootstrap ratio intervals, and the
stopping rule for adaptive repetition (docs/design.md).

Pure functions over numpy arrays; scipy.stats does every test it has. Decisions:
- Tests are rank tests whatever the normality diagnostics say (Wilcoxon signed-rank for
  paired blocks, Mann-Whitney U otherwise). Shapiro-Wilk / Lilliefors are reported, not
  used to switch to a t-test: with 5-20 samples failing to reject normality is no
  evidence of it, and a normality pre-test distorts the error rate of the test that
  follows. Seed 002 ran KS, found non-normal data and used the paired Wilcoxon test:
  the test we always use.
- Wilcoxon zeros: zero_method="pratt". A zero difference keeps the smallest rank, so a
  difference that the timer's resolution rounds to zero is ranked as a tiny one would
  be, instead of silently shrinking n (Wilcox's rule). Exact p-values: scipy's exact
  table without ties or zeros, an exhaustive sign-flip permutation (exact, conditional
  on the zeros and ties) up to 13 pairs, the normal approximation beyond.
- Ratio of medians a/b: percentile bootstrap (pairs resampled jointly when paired).
  Not BCa: its jackknife acceleration is inconsistent for the median, its bias
  correction is ill-defined for the discrete bootstrap distribution of a median of a
  few values, and it fails on degenerate (identical) samples; percentile intervals
  also carry over unchanged between the ratio and its logarithm.
- Run vs run may compare a low quantile instead of the median (`quantile`): on a
  shared machine interference only ever adds time, and a machine that alternates
  between a fast and a slow state (measured here: 1.5x, phases of seconds) makes the
  median depend on the share of slow phases a run happened to catch. A low quantile
  estimates the undisturbed speed (Chen & Revels 2016, "Robust benchmarking in noisy
  environments"; BenchmarkTools.jl judges on the minimum). Not the minimum itself:
  the bootstrap of an extreme is degenerate. A quantile q rests on about q*n values
  below it, so it needs n >= 2/q values (`min_quantile_n`) before any verdict.
- The process is the unit of evidence (docs/statistics.md). Repeats inside one process
  share its placement, caches, allocator state and the machine's phase, so they are
  correlated and say nothing about a second process running the same code: measured
  here, two runs of identical code, one process each, were "faster x0.43, p = 0.015"
  in 1 of 4 pairs. A sample of repeats from one process per side (`independent=False`)
  still gets its ratio and a within-process interval, but never a verdict word: its
  verdict is "undecided" with cause "one process". Verdicts are taken on one value per
  process (the trial's median), paired by interleaving block where the blocks match.
- Minimum sample sizes come from the exact null distributions: the smallest p a test
  can give is its p-value on the most extreme possible sample (all differences of one
  sign; the two samples completely separated), computed by scipy's exact method.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache, lru_cache
from itertools import combinations
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray


class _SciPyStats:
    """scipy.stats, imported at first use. Importing it takes 0.7 s, and the figures
    (which use this module's summaries but no test) are drawn in forked processes that
    would otherwise wait for it or each import it again."""

    def __getattr__(self, name: str) -> Any:
        from scipy import stats

        return getattr(stats, name)


st = _SciPyStats()

VARIANCE_WARNING = 0.10  # IQR / median above this is noisy (torch.utils.benchmark's rule)
N_BOOT = 9999
MAX_EXACT = 50  # beyond this many observations exact nulls are slow and the normal approximation is good
MAX_PERMUTATION = 13  # 2**13 sign flips < 9999: scipy's permutation test is then exhaustive
# Cliff's delta magnitude thresholds (Romano et al. 2006).
MAGNITUDES = ((0.147, "negligible"), (0.33, "small"), (0.474, "medium"), (math.inf, "large"))


@dataclass(frozen=True)
class Summary:
    """Descriptive statistics of one sample (NaN and inf dropped)."""

    n: int
    mean: float
    sd: float  # ddof=1; NaN for one value
    median: float
    q1: float
    q3: float
    min: float
    max: float

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1

    @property
    def cv(self) -> float:
        return self.sd / self.mean if self.mean != 0 else math.nan

    @property
    def noisy(self) -> bool:
        """IQR / median above VARIANCE_WARNING."""
        return self.median != 0 and self.iqr / abs(self.median) > VARIANCE_WARNING


@dataclass(frozen=True)
class Normality:
    n: int
    testable: bool
    reason: str  # why not testable; "" when tested
    shapiro_w: float
    shapiro_p: float
    ks_d: float  # KS distance to the normal with the sample mean and sd (ddof=1), as Lilliefors
    ks_p: float  # Lilliefors p-value by Monte Carlo
    ks_method: str
    alpha: float

    @property
    def normal(self) -> bool:
        """Neither test rejects normality at alpha (not evidence that the data are normal)."""
        return self.testable and self.shapiro_p >= self.alpha and self.ks_p >= self.alpha


# Why a verdict is what it is. Decided: "faster", "slower", "inside band". Undecided:
# "one process" (repeats of one process per side: no evidence about the code), "not
# interleaved" (two runs taken one after the other: the machine's drift between them is
# part of their difference), "busy machine" (a side ran while other processes took the
# CPU, dlbench.analysis.busy: its times hold the load, not only the code), "too few"
# (the exact test cannot reach alpha at these sizes, whatever the data),
# "too few for quantile", "undefined ratio", "overlaps band" (significant, CI across
# the band's edge), "few non-zero" (paired: too many zero differences), "not significant".
CAUSES = (
    "one process",
    "not interleaved",
    "busy machine",
    "faster",
    "slower",
    "inside band",
    "too few",
    "too few for quantile",
    "undefined ratio",
    "overlaps band",
    "few non-zero",
    "not significant",
)


@dataclass(frozen=True)
class Why:
    cause: str  # one of CAUSES
    need: int | None = None  # the smallest sample that could decide: pairs, or values per side
    smallest_p: float | None = None  # "too few": the smallest (Holm-scaled) p reachable now
    # "overlaps band" / "not significant": about how many pairs (or values per side) at this
    # spread would decide, and how: "inside" (CI inside the band), "clear" (CI clear of it),
    # "edge" (the ratio sits on the band's edge: no sample size decides), "futile" (more than
    # FUTILE_SAMPLES would be needed).
    projected: int | None = None
    projection: str = ""


@dataclass(frozen=True)
class Comparison:
    paired: bool
    n_a: int
    n_b: int
    n_nonzero: int | None  # paired: differences that are not exactly zero
    estimate_a: float  # the compared quantile of a: its median unless `quantile` says otherwise
    estimate_b: float
    ratio: float  # estimate_a / estimate_b
    ratio_ci: tuple[float, float]
    ci_method: str
    test: str
    test_method: str  # exact / exact permutation / normal approximation
    statistic_name: str
    statistic: float
    p_value: float
    p_adjusted: float | None  # Holm-adjusted when part of a family
    family_size: int
    min_p: float  # smallest p the exact test can reach at these sample sizes
    cliffs_delta: float
    a12: float
    magnitude: str
    band: float
    alpha: float
    verdict: str  # faster / slower / no meaningful difference / undecided (a relative to b)
    why: Why | None  # the numbers behind the verdict (dlbench.report.words says it in words)
    quantile: float = 0.5  # which quantile estimate_a, estimate_b and the ratio are of
    independent: bool = True  # one value per process (trial medians); False: repeats of one process per side
    interleaved: bool = True  # the two sides ran in the same blocks (False: two runs one after the other)
    # A side ran on a busy machine (other processes took the CPU: analysis.busy): no verdict word.
    busy: bool = False

    @property
    def decided(self) -> bool:
        """A verdict word was earned: faster, slower or no meaningful difference."""
        return self.verdict in ("faster", "slower", "no meaningful difference")

    @property
    def at_floor(self) -> bool:
        """The p-value is the smallest this design can give (every value on one side of
        the other, or every difference of one sign): the data could not have said more."""
        floor = self.min_p * self.family_size
        return math.isfinite(self.p) and floor < 1 and self.p <= floor * (1 + 1e-9)

    @property
    def estimator(self) -> str:
        return estimator_name(self.quantile)

    @property
    def p(self) -> float:
        """The p-value decisions use: Holm-adjusted when adjusted."""
        return self.p_value if self.p_adjusted is None else self.p_adjusted


@dataclass(frozen=True)
class Omnibus:
    test: str  # Friedman / Kruskal-Wallis, or "none" for two groups
    statistic: float
    df: int
    p_value: float
    method: str
    groups: tuple[str, ...]
    n: tuple[int, ...]
    pairwise: tuple[tuple[str, str, Comparison], ...]  # p_adjusted is Holm over all pairs

    def pair(self, a: str, b: str) -> Comparison:
        for x, y, c in self.pairwise:
            if (x, y) == (a, b):
                return c
        raise KeyError(f"no comparison {a} vs {b}; pairs are {[(x, y) for x, y, _ in self.pairwise]}")


def _finite(x: ArrayLike) -> NDArray[np.float64]:
    flat: NDArray[np.float64] = np.asarray(x, dtype=np.float64).ravel()
    return flat[np.isfinite(flat)]


def finite_pairs(a: ArrayLike, b: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    a, b = np.asarray(a, dtype=float).ravel(), np.asarray(b, dtype=float).ravel()
    if a.shape != b.shape:
        raise ValueError(f"paired samples need equal lengths, got {a.size} and {b.size}")
    keep = np.isfinite(a) & np.isfinite(b)  # a pair with a missing side is no pair
    return a[keep], b[keep]


def median_of(values: Sequence[float]) -> float:
    """float(np.median(values)) for a short list of floats, without numpy's per-call cost
    (25 us; a report at 10^6 measurements takes 20,000 trial medians): the middle value,
    or the two middle values' sum halved, which is how np.median averages them, so the
    result is the same float. NaN (no order) goes to numpy."""
    ordered = sorted(float(v) for v in values)  # float first: np.median averages in float64
    n = len(ordered)
    if n == 0 or any(v != v for v in ordered):
        return float(np.median(np.asarray(values, dtype=float)))
    half = n // 2
    if n % 2:
        return float(ordered[half])
    return float((ordered[half - 1] + ordered[half]) / 2)


def summary(x: ArrayLike) -> Summary:
    x = _finite(x)
    if x.size == 0:
        raise ValueError("summary of an empty sample")
    q1, med, q3 = np.percentile(x, [25, 50, 75])  # linear interpolation (Hyndman & Fan type 7)
    sd = float(x.std(ddof=1)) if x.size > 1 else math.nan
    return Summary(int(x.size), float(x.mean()), sd, float(med), float(q1), float(q3), float(x.min()), float(x.max()))


def normality(x: ArrayLike, alpha: float = 0.05, n_mc: int = N_BOOT, seed: int = 0) -> Normality:
    """Shapiro-Wilk and Lilliefors KS: KS distance to the normal with x's mean and sample
    sd (ddof=1, scipy's fit for norm), its p-value by Monte Carlo (goodness_of_fit refits
    every simulated normal sample the same way: Lilliefors' test without his table)."""
    x = _finite(x)
    reason = (
        f"needs at least 3 values, got {x.size}"
        if x.size < 3
        else "all values identical (sd = 0)"
        if np.ptp(x) == 0
        else ""
    )
    if reason:
        return Normality(int(x.size), False, reason, *(math.nan,) * 4, "", alpha)
    w, p_w = st.shapiro(x)
    d = st.ks_1samp(x, st.norm(x.mean(), x.std(ddof=1)).cdf).statistic
    null = _lilliefors_null(int(x.size), n_mc, seed)
    # monte_carlo_test's p: (#null >= d, within rounding, + 1) / (n_mc + 1)
    p_ks = (np.count_nonzero(null >= d - abs(d) * 1e2 * np.finfo(float).eps) + 1) / (n_mc + 1)
    method = f"Lilliefors (KS, mean and sd estimated), Monte Carlo p from {n_mc} samples, seed {seed}"
    return Normality(int(x.size), True, "", float(w), float(p_w), float(d), float(p_ks), method, alpha)


@lru_cache(maxsize=64)
def _lilliefors_null(n: int, n_mc: int, seed: int) -> np.ndarray:
    """The Monte Carlo null distribution of Lilliefors' statistic for samples of size n.

    It depends on n alone: refitting mean and sd makes the statistic invariant to the
    location and scale of the normal sampled. So scipy's goodness_of_fit simulates it
    once per n (here on standard normal quantiles), not once per sample tested: a report
    of 72 samples spent 0.7 s simulating the same distribution 72 times."""
    canonical = st.norm.ppf((np.arange(1, n + 1) - 0.5) / n)
    fit = st.goodness_of_fit(st.norm, canonical, statistic="ks", n_mc_samples=n_mc, rng=np.random.default_rng(seed))
    null = np.asarray(fit.null_distribution, dtype=float)
    null.setflags(write=False)  # shared through the cache
    return null


def _dominance(a: np.ndarray, b: np.ndarray) -> tuple[int, int]:
    """(#pairs with a > b, #pairs with a < b) over all len(a)*len(b) pairs, by sorting:
    O(n log n), so long latency samples do not build an n*m matrix."""
    b = np.sort(b)
    greater = np.searchsorted(b, a, side="left").sum()
    less = (b.size - np.searchsorted(b, a, side="right")).sum()
    return int(greater), int(less)


def cliffs_delta(a: ArrayLike, b: ArrayLike) -> float:
    """P(a > b) - P(a < b) over all pairs of one value from each sample."""
    a, b = _finite(a), _finite(b)
    greater, less = _dominance(a, b)
    return (greater - less) / (a.size * b.size)


def a12(a: ArrayLike, b: ArrayLike) -> float:
    """Vargha-Delaney A12 = P(a > b) + 0.5 P(a = b)."""
    a, b = _finite(a), _finite(b)
    greater, less = _dominance(a, b)
    ties = a.size * b.size - greater - less
    return (greater + 0.5 * ties) / (a.size * b.size)


def magnitude(delta: float) -> str:
    return next(label for bound, label in MAGNITUDES if abs(delta) < bound)


def holm(pvalues: ArrayLike) -> list[float]:
    """Holm step-down adjusted p-values: the i-th smallest p times (m - i + 1), made
    monotone by a running maximum, capped at 1; returned in the input order."""
    p = np.asarray(pvalues, dtype=float).ravel()
    if not np.all((p >= 0) & (p <= 1)):
        raise ValueError(f"p-values must lie in [0, 1], got {p.tolist()}")
    order = np.argsort(p, kind="stable")
    m = p.size
    adjusted = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        adjusted[i] = running
    return adjusted.tolist()


@cache
def min_p_wilcoxon(n: int) -> float:
    """Smallest two-sided p of the exact signed-rank test with n non-zero differences:
    its p-value when every difference has the same sign."""
    return 1.0 if n == 0 else float(st.wilcoxon(np.arange(1.0, n + 1), method="exact").pvalue)


@cache
def min_p_mannwhitney(n1: int, n2: int) -> float:
    """Smallest two-sided p of the exact Mann-Whitney test: the samples completely separated."""
    if n1 == 0 or n2 == 0:
        return 1.0
    return float(st.mannwhitneyu(np.arange(n1), np.arange(n1, n1 + n2), method="exact").pvalue)


def min_pairs(alpha: float = 0.05) -> int:
    """Smallest number of pairs with which the exact Wilcoxon test can give p < alpha."""
    return next(n for n in range(1, 64) if min_p_wilcoxon(n) < alpha)


def min_trials(alpha: float = 0.05) -> int:
    """Fewest trials per case with which a comparison of trial medians can reach alpha: by
    the paired test (min_pairs) or, with fewer blocks than it needs, the unpaired one."""
    return min(min_pairs(alpha), min_group_size(alpha))


def min_group_size(alpha: float = 0.05) -> int:
    """Smallest n such that Mann-Whitney with n + n samples can give p < alpha."""
    return next(n for n in range(1, 40) if min_p_mannwhitney(n, n) < alpha)


def estimator_name(quantile: float) -> str:
    """ "median", or e.g. "10th percentile", "1st percentile", "2.5th percentile"."""
    if quantile == 0.5:
        return "median"
    pct = f"{100 * quantile:.4g}"
    teen = pct[-2:] in ("11", "12", "13") and "." not in pct
    suffix = "th" if teen or "." in pct else {"1": "st", "2": "nd", "3": "rd"}.get(pct[-1], "th")
    return f"{pct}{suffix} percentile"


def check_quantile(quantile: float) -> float:
    if not 0 < quantile < 1:
        raise ValueError(
            f"quantile {quantile} must lie strictly between 0 and 1 (0.5: the median; 0.1: the "
            "10th percentile); the minimum (0) has no bootstrap CI"
        )
    return quantile


def min_quantile_n(quantile: float) -> int:
    """Values a sample needs before its `quantile` rests on at least two values
    beyond it (on its nearer side): 4 for the median, 20 for the 10th percentile."""
    return max(4, math.ceil(2 / min(quantile, 1 - quantile) - 1e-9))


def location(x: NDArray[np.float64], quantile: float, axis: int = -1) -> Any:
    # np.median for the median: bit-identical to what earlier versions stored and reported
    return np.median(x, axis=axis) if quantile == 0.5 else np.quantile(x, quantile, axis=axis)


# The bootstrap below draws exactly what scipy.stats.bootstrap(..., vectorized=True,
# method="percentile", rng=np.random.default_rng(seed)) draws (one batch: a (n_boot, n)
# index matrix per sample, in order; one shared matrix for paired samples) and takes the
# same percentiles of the same bootstrap distribution, so its intervals are scipy's.
# What is faster: the index matrices depend only on the sample sizes and the seed, so
# they are drawn once per (sizes, n_boot, seed) and kept as counts (how often each value
# is drawn into each resample); a resample's median is then read off the cumulative
# counts in the sample's sorted order instead of sorting each of the n_boot resamples.
# A report of many comparisons of the same sizes (81 trials a side at 10^6
# measurements) pays for the draw once instead of once per comparison.
# Counts are kept per (sizes, n_boot, seed): up to 4 million cells (8 MB in int16) in a
# cache of 16 keys, up to 20 million (the 812 trial medians a side of a 10^7-measurement
# run: 9,999 x 1,624 cells, 32 MB) in a cache of 2; larger ones are drawn again each time.
_SMALL_CELLS = 4_000_000
_LARGE_CELLS = 20_000_000


def _draw_counts(sizes: tuple[int, ...], n_boot: int, seed: int) -> tuple[NDArray[Any], ...]:
    rng = np.random.default_rng(seed)
    out = []
    for n in sizes:
        idx = rng.integers(0, n, (n_boot, n))  # scipy's _bootstrap_resample, in scipy's order
        flat = (idx + (np.arange(n_boot) * n)[:, None]).ravel()
        # A count, and the running sum of counts below, is at most n: int16 holds it below
        # 2^15 values and halves the memory. Kept transposed, a row per value: the running
        # sum then adds whole rows.
        dtype = np.int16 if n < 2**15 else np.int64
        counts = np.bincount(flat, minlength=n_boot * n).reshape(n_boot, n).T
        out.append(np.ascontiguousarray(counts, dtype=dtype))
    return tuple(out)


_small_counts = lru_cache(maxsize=16)(_draw_counts)
_large_counts = lru_cache(maxsize=2)(_draw_counts)


def _counts(sizes: tuple[int, ...], n_boot: int, seed: int) -> tuple[NDArray[Any], ...]:
    cells = n_boot * sum(sizes)
    if cells <= _SMALL_CELLS:
        return _small_counts(sizes, n_boot, seed)
    if cells <= _LARGE_CELLS:
        return _large_counts(sizes, n_boot, seed)
    return _draw_counts(sizes, n_boot, seed)


def _resampled_location(x: NDArray[np.float64], counts: NDArray[Any], quantile: float) -> NDArray[np.float64]:
    """`location(x[idx], quantile, axis=1)` for every row idx of the index matrix whose
    counts (transposed: values x resamples) are given, without building x[idx]: the k-th smallest value of a resample is
    the first value (in sorted order) whose cumulative count exceeds k."""
    n = x.size
    order = np.argsort(x, kind="stable")
    xs = x[order]
    cum = counts[order]  # (n, n_boot): how often the i-th smallest value is drawn into each resample
    for i in range(1, n):  # a running sum row by row: several times faster than np.cumsum(axis=0) here
        cum[i] += cum[i - 1]

    def order_stat(k: int) -> NDArray[np.float64]:
        picked: NDArray[np.float64] = xs[np.count_nonzero(cum <= k, axis=0)]
        return picked

    if quantile == 0.5:  # np.median: the middle value, or the mean of the middle two
        if n % 2:
            return order_stat(n // 2)
        middle: NDArray[np.float64] = np.mean(np.stack([order_stat(n // 2 - 1), order_stat(n // 2)]), axis=0)
        return middle
    # np.quantile's default ("linear", Hyndman & Fan type 7): between order statistics
    # floor(h) and floor(h) + 1 at h = q (n - 1)
    h = quantile * (n - 1)
    lo = math.floor(h)
    below = order_stat(lo)
    if lo + 1 >= n:
        return below
    gamma = h - lo
    above = order_stat(lo + 1)
    diff = above - below
    return np.where(gamma >= 0.5, above - diff * (1 - gamma), below + diff * gamma)


def _percentile_ci(theta: NDArray[np.float64]) -> tuple[float, float]:
    alpha = (1 - 0.95) / 2
    ci = st.quantile(theta, np.asarray([alpha, 1 - alpha], dtype=theta.dtype), axis=-1)
    if np.any(np.isnan(ci)):
        import warnings

        warnings.warn(st.DegenerateDataWarning("the bootstrap distribution holds NaN"), stacklevel=3)
    return float(ci[0]), float(ci[1])


def _boot_two(
    a: NDArray[np.float64], b: NDArray[np.float64], paired: bool, n_boot: int, seed: int, quantile: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The bootstrap distributions of location(a) and location(b), resampled as scipy does."""
    if paired:
        (c,) = _counts((a.size,), n_boot, seed)
        return _resampled_location(a, c, quantile), _resampled_location(b, c, quantile)
    ca, cb = _counts((a.size, b.size), n_boot, seed)
    return _resampled_location(a, ca, quantile), _resampled_location(b, cb, quantile)


def _ratio_ci(
    a: np.ndarray, b: np.ndarray, paired: bool, n_boot: int, seed: int, quantile: float = 0.5
) -> tuple[float, float]:
    if min(a.size, b.size) < 2 or location(b, quantile) <= 0:
        return math.nan, math.nan
    ta, tb = _boot_two(a, b, paired, n_boot, seed, quantile)
    return _percentile_ci(ta / tb)


def ratio_ci(
    a: ArrayLike, b: ArrayLike, paired: bool = False, n_boot: int = N_BOOT, seed: int = 0
) -> tuple[float, float]:
    """95% percentile-bootstrap CI of median(a) / median(b) (nan, nan with fewer than
    two values on a side); `paired` resamples pairs (a[i], b[i]) together."""
    x, y = _finite(a), _finite(b)
    if paired:
        x, y = finite_pairs(a, b)
    return _ratio_ci(x, y, paired, n_boot, seed)


def _wilcoxon(d: np.ndarray, seed: int) -> tuple[float, float, str]:
    abs_nonzero = np.abs(d[d != 0])
    irregular = abs_nonzero.size < d.size or np.unique(abs_nonzero).size < abs_nonzero.size
    if d.size > MAX_EXACT or (irregular and (d.size > MAX_PERMUTATION or d.size < 2)):
        method, label = "asymptotic", "normal approximation"
    elif irregular:
        # The exact table assumes no ties and no zeros; enumerating the sign flips does not.
        method, label = st.PermutationMethod(rng=np.random.default_rng(seed)), "exact permutation (zeros/ties)"
    else:
        method, label = "exact", "exact"
    res = st.wilcoxon(d, zero_method="pratt", method=method)
    return float(res.statistic), float(res.pvalue), label


def _mannwhitney(a: np.ndarray, b: np.ndarray, seed: int) -> tuple[float, float, str]:
    both = np.concatenate([a, b])
    ties = np.unique(both).size < both.size
    # A permutation test needs two values a side (scipy refuses fewer): one value and a tie
    # (accuracies often tie) take the normal approximation, which any verdict then outweighs.
    if max(a.size, b.size) > MAX_EXACT or (ties and (math.comb(both.size, a.size) > N_BOOT or min(a.size, b.size) < 2)):
        method, label = "asymptotic", "normal approximation, tie-corrected"
    elif ties:
        method, label = st.PermutationMethod(rng=np.random.default_rng(seed)), "exact permutation (ties)"
    else:
        method, label = "exact", "exact"
    res = st.mannwhitneyu(a, b, alternative="two-sided", method=method)
    return float(res.statistic), float(res.pvalue), label


def decide(c: Comparison) -> tuple[str, Why]:
    """The one verdict rule every report, `compare`, `explain`, the hypothesis report and
    the study claims take their words from: (verdict, why) for a comparison of a
    against b (lower is better) at its band and alpha."""
    return _decide(c)


def _decide(c: Comparison) -> tuple[str, Why]:
    lo_band, hi_band = 1 - c.band, 1 + c.band
    m = c.family_size
    if not c.independent:
        return "undecided", Why("one process", need=min_trials(c.alpha / m))
    if not c.interleaved:
        return "undecided", Why("not interleaved", need=min_trials(c.alpha / m))
    if c.busy:
        return "undecided", Why("busy machine")
    short = _too_few(c)
    if short is not None:
        return "undecided", short
    lo, hi = c.ratio_ci
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "undecided", Why("undefined ratio")
    if c.p < c.alpha and hi < lo_band:
        return "faster", Why("faster")
    if c.p < c.alpha and lo > hi_band:
        return "slower", Why("slower")
    if lo_band <= lo and hi <= hi_band:
        return "no meaningful difference", Why("inside band")
    if c.p < c.alpha:
        return "undecided", _projection(c, "overlaps band")
    if c.paired and c.min_p * m >= c.alpha:
        return "undecided", Why("few non-zero", need=min_pairs(c.alpha / m))
    return "undecided", _projection(c, "not significant")


# Beyond this many samples a projection says "more samples alone will hardly decide"
# rather than quoting an absurd number (a ratio next to the band's edge).
FUTILE_SAMPLES = 10_000


def samples_needed(n: int, half: float, target: float) -> int | None:
    """About how many values would shrink a CI of half-width `half`, seen with n
    values, to `target`, if the spread stays as seen: a CI's half-width falls as
    1/sqrt(n). None when no sample size can (target <= 0 or the width is unknown)."""
    if target <= 1e-9 or not math.isfinite(half) or n < 1:  # 1e-9: a ratio on the band's edge up to rounding
        return None
    return max(n + 1, math.ceil(n * (half / target) ** 2))


def _projection(c: Comparison, cause: str) -> Why:
    """How far from a verdict an undecided comparison is, in samples: the ratio CI
    must either fit inside the band ("no meaningful difference") or clear it
    (faster/slower), whichever the point estimate allows; "edge" when it sits on the
    band's edge, where more samples alone cannot decide."""
    lo, hi = c.ratio_ci
    half, off = max(hi - c.ratio, c.ratio - lo), abs(c.ratio - 1)
    n = c.n_a if c.paired else min(c.n_a, c.n_b)
    inside, clear = samples_needed(n, half, c.band - off), samples_needed(n, half, off - c.band)
    if inside is None and clear is None:
        return Why(cause, projection="edge")
    if min(inside or math.inf, clear or math.inf) > FUTILE_SAMPLES:
        return Why(cause, projection="futile", projected=FUTILE_SAMPLES)
    if inside is not None:
        return Why(cause, projection="inside", projected=inside)
    return Why(cause, projection="clear", projected=clear)


def _too_few(c: Comparison) -> Why | None:
    """Why the sample is too small for any verdict (None when it is not): the exact test
    could not reach alpha even on the most extreme data. Every Holm-adjusted p is at
    least m times the smallest raw p, so a family of m needs the sizes for alpha / m."""
    m, alpha = c.family_size, c.alpha
    if c.paired:
        smallest = min(1.0, min_p_wilcoxon(c.n_a) * m)
        if smallest >= alpha:
            return Why("too few", need=min_pairs(alpha / m), smallest_p=smallest)
        return _too_few_for_quantile(c)
    smallest = min(1.0, min_p_mannwhitney(c.n_a, c.n_b) * m)
    if smallest >= alpha:
        return Why("too few", need=min_group_size(alpha / m), smallest_p=smallest)
    return _too_few_for_quantile(c)


def _too_few_for_quantile(c: Comparison) -> Why | None:
    need, n = min_quantile_n(c.quantile), min(c.n_a, c.n_b)
    if c.quantile == 0.5 or n >= need:
        return None  # the median's own minimum (4) is below what the tests need
    return Why("too few for quantile", need=need)


def adjust(c: Comparison, p_adjusted: float, family_size: int) -> Comparison:
    """The comparison with a multiplicity-adjusted p-value and the verdict redone with it."""
    c = replace(c, p_adjusted=float(p_adjusted), family_size=int(family_size))
    verdict, why = _decide(c)
    return replace(c, verdict=verdict, why=why)


def compare_two(
    a: ArrayLike,
    b: ArrayLike,
    paired: bool,
    band: float = 0.02,
    alpha: float = 0.05,
    n_boot: int = N_BOOT,
    seed: int = 0,
    quantile: float = 0.5,
    independent: bool = True,
    interleaved: bool = True,
    busy: bool = False,
) -> Comparison:
    """a against b (lower is better: times). `busy`: a side ran on a busy machine, so the
    comparison gets a ratio and CI but no verdict word. `independent`: each value comes from a
    process of its own (a trial's median); False for the repeats of one process per
    side, which get a ratio and a within-process CI but no verdict word. `interleaved`:
    the two sides took turns in the same blocks; False for two runs taken one after the
    other, whose difference holds the machine's drift between them (no verdict either).
    Verdict "faster"/"slower" needs p < alpha and the ratio CI entirely outside
    [1 - band, 1 + band]; "no meaningful difference" needs the ratio CI entirely inside
    it; anything else, or too few samples, is "undecided", with the numbers of why
    (Why). The ratio is of medians, or of another `quantile` (see the module's
    docstring); the rank test is the same either way."""
    check_quantile(quantile)
    a, b = finite_pairs(a, b) if paired else (_finite(a), _finite(b))
    if a.size == 0 or b.size == 0:
        raise ValueError("compare_two needs at least one finite value in each sample")
    if paired:
        d = a - b
        n_nonzero = int(np.count_nonzero(d))
        statistic, p, method = _wilcoxon(d, seed)
        test, stat_name, min_p = "Wilcoxon signed-rank (Pratt zeros)", "W", min_p_wilcoxon(n_nonzero)
        ci_method = f"percentile bootstrap, pairs resampled jointly, {n_boot} resamples, seed {seed}"
    else:
        n_nonzero = None
        statistic, p, method = _mannwhitney(a, b, seed)
        test, stat_name, min_p = "Mann-Whitney U (two-sided)", "U", min_p_mannwhitney(a.size, b.size)
        ci_method = f"percentile bootstrap, samples resampled independently, {n_boot} resamples, seed {seed}"
    if not independent:
        ci_method = "within one process per side (repeats; says nothing of another process): " + ci_method
    est_a, est_b = float(location(a, quantile)), float(location(b, quantile))
    delta = cliffs_delta(a, b)
    c = Comparison(
        paired,
        int(a.size),
        int(b.size),
        n_nonzero,
        est_a,
        est_b,
        est_a / est_b if est_b > 0 else math.nan,
        _ratio_ci(a, b, paired, n_boot, seed, quantile),
        ci_method,
        test,
        method,
        stat_name,
        statistic,
        p,
        None,
        1,
        min_p,
        delta,
        a12(a, b),
        magnitude(delta),
        band,
        alpha,
        "",
        None,
        quantile,
        independent,
        interleaved,
        busy,
    )
    verdict, why = _decide(c)
    return replace(c, verdict=verdict, why=why)


def reverse(c: Comparison) -> Comparison:
    """The same comparison read the other way round: b relative to a."""
    lo, hi = c.ratio_ci
    flipped = {"faster": "slower", "slower": "faster"}
    why = c.why
    if why is not None and why.cause in flipped:
        why = replace(why, cause=flipped[why.cause])
    return replace(
        c,
        n_a=c.n_b,
        n_b=c.n_a,
        estimate_a=c.estimate_b,
        estimate_b=c.estimate_a,
        ratio=1 / c.ratio if c.ratio else math.nan,
        ratio_ci=(1 / hi if hi else math.nan, 1 / lo if lo else math.nan),
        cliffs_delta=-c.cliffs_delta,
        a12=1 - c.a12,
        verdict=flipped.get(c.verdict, c.verdict),
        why=why,
    )


def difference_ci(a: ArrayLike, b: ArrayLike, paired: bool, n_boot: int = N_BOOT, seed: int = 0) -> tuple[float, float]:
    """95% percentile-bootstrap CI of median(a) - median(b) (pairs resampled jointly
    when paired): how accuracy differences are stated, in the metric's own units."""
    a, b = finite_pairs(a, b) if paired else (_finite(a), _finite(b))
    if min(a.size, b.size) < 2:
        return math.nan, math.nan

    ta, tb = _boot_two(a, b, paired, n_boot, seed, 0.5)
    return _percentile_ci(ta - tb)


def compare_many(
    groups: Mapping[str, ArrayLike],
    paired: bool,
    alpha: float = 0.05,
    band: float = 0.02,
    n_boot: int = N_BOOT,
    seed: int = 0,
    independent: bool = True,
    busy: Collection[str] = (),
) -> Omnibus:
    """Friedman (paired blocks) or Kruskal-Wallis, then every pair with Holm-adjusted
    p-values. Holm alone controls the family-wise error over the pairs, so pairwise
    verdicts are not gated on the omnibus test, which is reported beside them. `busy`:
    the groups measured on a busy machine; a pair with one of them gets no verdict word
    (its p still counts in Holm's family: the test was made)."""
    names = tuple(groups)
    if len(names) < 2:
        raise ValueError(f"compare_many needs at least two groups, got {names}")
    if paired:
        sizes = {k: int(np.asarray(groups[k]).size) for k in names}
        if len(set(sizes.values())) != 1:
            raise ValueError(f"paired groups need equal-length blocks, got {sizes}")
        matrix = np.column_stack([np.asarray(groups[k], dtype=float).ravel() for k in names])
        samples = list(matrix[np.all(np.isfinite(matrix), axis=1)].T)  # a block missing a group is dropped whole
    else:
        samples = [_finite(groups[k]) for k in names]
    if len(names) == 2:
        test, stat, df, p_omni, method = "none", math.nan, 0, math.nan, "two groups: the pairwise test is the test"
    else:
        test, fn = ("Friedman", st.friedmanchisquare) if paired else ("Kruskal-Wallis", st.kruskal)
        res = fn(*samples)
        stat, df, p_omni = float(res.statistic), len(names) - 1, float(res.pvalue)
        method = "chi-square approximation, tie-corrected"
    pairs = list(combinations(range(len(names)), 2))
    raw = [
        compare_two(
            samples[i],
            samples[j],
            paired,
            band,
            alpha,
            n_boot,
            seed,
            independent=independent,
            busy=names[i] in busy or names[j] in busy,
        )
        for i, j in pairs
    ]
    adjusted = holm([c.p_value for c in raw])
    pairwise = tuple((names[i], names[j], adjust(c, q, len(pairs))) for (i, j), c, q in zip(pairs, raw, adjusted))
    return Omnibus(test, stat, df, p_omni, method, names, tuple(s.size for s in samples), pairwise)


def median_ci_halfwidth(x: ArrayLike, n_boot: int = N_BOOT, seed: int = 0) -> float:
    """Half-width of the 95% percentile-bootstrap CI of the median, relative to the
    median: the larger of its two sides, so that "within ±pct" holds on both sides of
    an asymmetric interval."""
    x = _finite(x)
    med = float(np.median(x)) if x.size else math.nan
    if x.size < 2 or med == 0 or not math.isfinite(med):
        return math.inf
    (counts,) = _counts((x.size,), n_boot, seed)
    lo, hi = _percentile_ci(_resampled_location(x, counts, 0.5))
    return max(med - lo, hi - med) / abs(med)


def ci_converged(x: ArrayLike, pct: float, seed: int = 0, min_n: int | None = None, n_boot: int = N_BOOT) -> bool:
    """Stopping rule for adaptive repetition: the 95% CI of the median lies within
    ±pct (a fraction: 0.02 = ±2%) of it. Never before min_n values (default: the pairs
    the Wilcoxon test needs), because a percentile interval from a handful of values is
    bounded by their range and far too narrow."""
    if not 0 < pct < 1:
        raise ValueError(f"pct is a fraction (0.02 means ±2%), got {pct}")
    n = _finite(x).size
    if n < (min_pairs() if min_n is None else min_n):
        return False
    return median_ci_halfwidth(x, n_boot, seed) <= pct
