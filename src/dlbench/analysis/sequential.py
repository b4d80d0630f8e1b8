"""The regression gate's sequential rule: look after every block pair, stop as soon as the
pairs decide, and keep the chance that identical code fails at or below alpha over all looks.

Block k of the baseline A and block k of the candidate B ran back to back (`extend_runs`
takes turns), so each pair gives one log ratio d_k = log(b_k / a_k) of trial medians, with
what the two processes shared (the machine's state in that minute) taken out. The gate
asks of the median of d one question with two answers:

    slower   B is slower than A by more than the band: median d > log(1 + band)
    within   B is not slower than A by more than the band: median d < log(1 + band)

Each is Wilcoxon's signed-rank test of d - log(1 + band), one-sided, exact. Read once,
after a fixed number of pairs, it holds alpha; read after every pair and stopped at the
first p below alpha it would not (a sequence of looks at the same growing sample crosses a
fixed level far more often than one look does). The gate therefore uses one constant level
for every look, Pocock's design, set so that the chance of crossing it at any look up to
the budget is alpha when the true ratio sits on the band's edge (and smaller below it).

The level is found by simulation, without assuming a distribution of times: under the null
(d - log(1 + band) symmetric about zero, continuous) the signed-rank statistic's whole
sequence has the same law for every such distribution - each sign a fair coin, the ranks
of the magnitudes a uniformly random order, all independent. `pocock_level` simulates that
law, and takes the largest level whose false-positive rate's one-sided 95% Clopper-Pearson
upper bound over the simulations is at most alpha, so the simulation's own error cannot
push the rate above alpha.

Several comparisons in one gate (cases x metrics) share alpha by Bonferroni: each gets
alpha / K. A budget reached first, in blocks or in minutes, leaves comparisons
"undecided": stopping early spends less than the design allows, never more.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np
from scipy.stats import beta as beta_dist
from scipy.stats import rankdata

# Null sequences simulated to set a level: the rate's standard error at alpha 0.05 is
# about 0.0011, and the bound below takes it into account.
SIMULATIONS = 40_000
SEED = 20261129
# The most pairs a gate may look at; the null's exact law is tabulated up to it.
MAX_PAIRS = 200


@cache
def signed_rank_pmf(n: int) -> np.ndarray:
    """The exact law of Wilcoxon's W+ (sum of the ranks of positive differences) for n
    non-zero differences without ties: index w -> P(W+ = w)."""
    counts = np.zeros(n * (n + 1) // 2 + 1)
    counts[0] = 1.0
    for k in range(1, n + 1):
        shifted = np.zeros_like(counts)
        shifted[k:] = counts[:-k]
        counts = counts + shifted  # rank k either counts (positive) or not
    pmf: np.ndarray = counts / counts.sum()
    return pmf


@cache
def _upper_tail(n: int) -> np.ndarray:
    """w -> P(W+ >= w) for n differences."""
    return np.cumsum(signed_rank_pmf(n)[::-1])[::-1]


def upper_p(w: float, n: int) -> float:
    """One-sided exact p of W+ >= w with n non-zero differences (1 for n = 0). A W+ that
    is not an integer (ties given average ranks) is rounded down, the conservative side."""
    if n == 0:
        return 1.0
    w_int = max(0, math.floor(w + 1e-9))
    tail = _upper_tail(n)
    return float(tail[w_int]) if w_int < tail.size else 0.0


def w_plus(d: np.ndarray) -> tuple[float, int]:
    """(W+, non-zero count) of differences d: zeros dropped, ties given average ranks."""
    nonzero = d[d != 0]
    if nonzero.size == 0:
        return 0.0, 0
    ranks = rankdata(np.abs(nonzero))
    return float(ranks[nonzero > 0].sum()), int(nonzero.size)


def _null_w_sequences(max_pairs: int, sims: int, seed: int) -> np.ndarray:
    """sims x max_pairs: W+ after 1..max_pairs pairs of null sequences (fair signs,
    uniformly random order of magnitudes), built one pair at a time."""
    rng = np.random.default_rng(seed)
    magnitude = rng.random((sims, max_pairs))
    positive = rng.random((sims, max_pairs)) < 0.5
    w = np.zeros((sims, max_pairs), dtype=np.int64)
    current = np.zeros(sims, dtype=np.int64)
    for n in range(max_pairs):
        new = magnitude[:, n : n + 1]
        if n:
            below = magnitude[:, :n] < new
            # Earlier positive differences larger than the new one move up one rank.
            current += (positive[:, :n] & ~below).sum(axis=1)
            rank_new = 1 + below.sum(axis=1)
        else:
            rank_new = np.ones(sims, dtype=np.int64)
        current += np.where(positive[:, n], rank_new, 0)
        w[:, n] = current
    return w


def _critical(level: float, max_pairs: int) -> np.ndarray:
    """Per look n (index n - 1): the smallest W+ whose exact one-sided p is at most level
    (a value above the largest W+ where none is)."""
    out = np.empty(max_pairs, dtype=np.int64)
    for n in range(1, max_pairs + 1):
        reach = np.nonzero(_upper_tail(n) <= level)[0]
        out[n - 1] = reach[0] if reach.size else n * (n + 1) // 2 + 1
    return out


def _upper_bound(k: int, sims: int) -> float:
    """One-sided 95% Clopper-Pearson upper bound of a rate seen k times in sims."""
    return 1.0 if k >= sims else float(beta_dist.ppf(0.95, k + 1, sims - k))


@cache
def pocock_level(max_pairs: int, alpha: float, sims: int = SIMULATIONS, seed: int = SEED) -> float:
    """The nominal one-sided level every look uses, so that a null sequence crosses it at
    any look up to `max_pairs` with a rate whose upper 95% bound is at most alpha."""
    if not 1 <= max_pairs <= MAX_PAIRS:
        raise ValueError(f"max_pairs must be 1..{MAX_PAIRS}, got {max_pairs}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    w = _null_w_sequences(max_pairs, sims, seed)
    # Candidate levels: every exact p a look can give, below alpha (a larger level cannot hold).
    candidates = np.unique(np.concatenate([_upper_tail(n) for n in range(1, max_pairs + 1)]))
    candidates = candidates[candidates <= alpha]
    best, lo, hi = 0.0, 0, candidates.size - 1
    while lo <= hi:  # the crossing rate grows with the level: the largest level that holds
        mid = (lo + hi) // 2
        crossed = int((w >= _critical(float(candidates[mid]), max_pairs)).any(axis=1).sum())
        if _upper_bound(crossed, sims) <= alpha:
            best, lo = float(candidates[mid]), mid + 1
        else:
            hi = mid - 1
    return best


def first_look(level: float) -> int:
    """The fewest pairs whose most extreme outcome reaches the level: 2^-n <= level."""
    return max(1, math.ceil(-math.log2(level))) if level > 0 else MAX_PAIRS + 1


@dataclass(frozen=True)
class Look:
    """What the pairs so far say of one comparison."""

    pairs: int  # non-zero shifted differences the test used
    ratio: float  # B/A: exp of the median log ratio (the median of the per-pair ratios)
    p_slower: float  # one-sided exact p of "slower than 1 + band"
    p_within: float  # one-sided exact p of "not slower than 1 + band"
    level: float  # the level each look uses (Pocock)
    decision: str  # "slower", "within" or "continue"


def look(a: list[float], b: list[float], band: float, level: float) -> Look:
    """One look at paired values (a[k], b[k] from block k): decide or go on."""
    if len(a) != len(b):
        raise ValueError(f"paired values must match: {len(a)} against {len(b)}")
    av, bv = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    keep = np.isfinite(av) & np.isfinite(bv) & (av > 0) & (bv > 0)
    d = np.log(bv[keep]) - np.log(av[keep])
    ratio = float(np.exp(np.median(d))) if d.size else math.nan
    shifted = d - math.log1p(band)
    w, n = w_plus(shifted)
    p_slower = upper_p(w, n)
    p_within = upper_p(n * (n + 1) / 2 - w, n)  # W- = total - W+, same law under the null
    if p_slower <= level:
        decision = "slower"
    elif p_within <= level:
        decision = "within"
    else:
        decision = "continue"
    return Look(n, ratio, p_slower, p_within, level, decision)
