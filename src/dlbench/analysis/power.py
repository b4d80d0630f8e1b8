"""The power of a design: how often it would decide a true difference, before anything runs.

A design (analysis.design.check) says whether a verdict is possible at all; this says
how likely one is. It simulates the design's samples, one trial median per process:
`members` frameworks, `n` trials each (paired by block or not, as the design says),
each median lognormal around its framework's true time with a between-process
coefficient of variation `cv`; one framework is `ratio` times slower than the rest. On
each simulated run it applies the analysis' own tests, stats.compare_many (the paired
Wilcoxon by block or Mann-Whitney, Holm over the set's pairs, the ratio's bootstrap CI
against the band, the verdict from stats.decide), and counts the runs in which the
slow framework is decided "slower" than a fast one. A design that cannot reach alpha
(one process per case, or too few trials: smallest_p >= alpha) has power 0 without
simulation: no data could decide there.

The default spread is the one measured on the 2-core VM this project is built on
(benchmarks/calibration.py DEFAULT_SIZES, log-scale sds from A/A runs on 2026-11-26):
between processes 0.125, between repeats inside one process 0.161. A trial median of r
repeats then varies between processes by about sqrt(0.125^2 + 0.161^2 / r) on the log
scale (trial_cv). No block effect is simulated (the calibration measured none), which
favours neither test.
"""

from __future__ import annotations

import math

import numpy as np

from dlbench.analysis import stats
from dlbench.analysis.criteria import BAND
from dlbench.analysis.design import DesignCheck

# benchmarks/calibration.py DEFAULT_SIZES: log-scale sds measured on this project's 2-core VM.
SD_PROCESS = 0.125
SD_REPEAT = 0.161
CV_SOURCE = (
    "between-process spread measured on this project's 2-core VM (benchmarks/calibration.py "
    "DEFAULT_SIZES: log sd 0.125 between processes, 0.161 between repeats in one process)"
)
# Bootstrap resamples of each simulated comparison's ratio CI: fewer than a report's 9999
# (the CI's ends move by well under the band's width), so that thousands of runs take seconds.
N_BOOT = 999


def trial_cv(repeats: int, sd_process: float = SD_PROCESS, sd_repeat: float = SD_REPEAT) -> float:
    """Coefficient of variation between processes of a trial's median of `repeats` repeats
    (the repeats' own spread shrinking with their number, the process's not)."""
    sd = math.sqrt(sd_process**2 + sd_repeat**2 / max(1, repeats))
    return math.sqrt(math.expm1(sd**2))


def power(
    design: DesignCheck,
    ratio: float,
    cv: float,
    sims: int = 2000,
    seed: int = 0,
    alpha: float | None = None,
    band: float = BAND,
    n_boot: int = N_BOOT,
) -> float:
    """The share of `sims` simulated runs of `design` that decide a framework `ratio` times
    slower than the others slower (than the first of them), at `alpha` (the design's when
    None) and `band`, with trial medians varying by `cv` between processes."""
    if ratio <= 0 or cv < 0 or sims < 1:
        raise ValueError(f"power: ratio > 0, cv >= 0 and sims >= 1, got {ratio}, {cv}, {sims}")
    alpha = design.alpha if alpha is None else alpha
    if design.one_process or design.members < 2 or design.smallest_p >= alpha:
        return 0.0
    sd = math.sqrt(math.log1p(cv**2))
    k, n = design.members, design.n
    centre = np.zeros(k)
    centre[0] = math.log(ratio)
    names = ["slow", *(f"fast{i}" for i in range(1, k))]
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(sims):
        draws = np.exp(centre[:, None] + rng.normal(0.0, sd, size=(k, n)))
        result = stats.compare_many(
            dict(zip(names, draws)), paired=design.paired, alpha=alpha, band=band, n_boot=n_boot, seed=seed
        )
        hits += result.pair("slow", "fast1").verdict == "slower"
    return hits / sims


def sim_error(p: float, sims: int) -> float:
    """The binomial standard error of a simulated share `p` of `sims` runs."""
    return math.sqrt(max(p * (1 - p), 0.25 / sims) / sims)
