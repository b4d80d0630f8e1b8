"""Was the machine busy while a trial ran? The share of the CPU other processes took.

The CPU sampler stores, per phase window and repeat, `cpu.others_util:mean`: the
share of all cores busy with something other than the worker (system busy time
minus the worker's own, steal included), in %. A trial whose measured train or
inference windows have a median share of at least BUSY_THRESHOLD is flagged.

Why it matters more than it looks: on a 2-core VM one busy loop on one core made
torch's cnn on digits (2 OpenMP threads) train 50x slower, 1.5 s -> 74-90 s a
repeat, because its thread pool waits on the descheduled thread; a 1-thread worker
pinned beside the same loop slows about 2x.

The threshold, measured on that VM (numpy mlp on digits, 60 epochs, --threads 1,
everything under `taskset -c 0`): quiet, the train windows read 3-6% and the
short inference windows 6-14% (median of a trial's repeats at most 6%); beside a
busy loop pinned to the worker's core, 20-26% (the worker gets half its core:
25% of two cores goes to the loop) and training ran 2.1-2.3x slower. 15% sits
between them. On more cores one interfering process is a smaller share of the
machine; the flag then catches broad load (a build, another benchmark) rather than
a single thread, and --threads with pinning is the remedy for the latter.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from dlbench.analysis.rows import Rows, columns

BUSY_THRESHOLD = 15.0  # % of all cores that other processes took, median over a trial's measured windows
# Two runs taken in turns whose sides were busy unequally, each side under the threshold: a
# load of 10% duty beside every block of B only (benchmarks/identical_runs.py --design light)
# read A 1.6-8.7% and B 5.3-12.9%, and slowed identical code by 0-7%: with enough blocks a
# "slower" the code did not earn. Unequal: B's share above A's (or below) by at least
# UNEQUAL_POINTS in the median over the blocks both measured, and consistently so (the exact
# signed-rank test, p < UNEQUAL_ALPHA), over at least UNEQUAL_MIN_PAIRS blocks.
UNEQUAL_POINTS = 3.0
UNEQUAL_ALPHA = 0.05
UNEQUAL_MIN_PAIRS = 6
METRIC = "cpu.others_util:mean"
PHASES = ("train", "infer")


def others_share(measurements: Rows) -> dict[int, float]:
    """Trial id -> the larger of its train and inference medians of the others' share
    (% of all cores) over measured repeats of ok trials; trials without the metric are absent.

    Windows the slicer flagged unreliable (shorter than ten ticks of the CPU-time counters,
    dlbench.telemetry) are left out: a 1 ms k-NN fit or an 11 ms jax mlp training read 0%
    or 100% by where the tick fell, and on a quiet machine flagged such cases BUSY at
    "100%". A trial whose every window is that short has no share: not known, not quiet."""
    measurements = measurements if isinstance(measurements, list) else list(measurements)
    per: dict[tuple[int, str], list[float]] = defaultdict(list)
    names = ("metric", "phase", "warmup", "value", "status", "trial_id")
    flags = _flags(measurements)
    for (metric, phase, warmup, value, status, trial), flag in zip(
        zip(*columns(measurements, names), strict=True), flags, strict=True
    ):
        if metric != METRIC or (flag and flag.startswith("unreliable")):
            continue
        if phase in PHASES and not warmup and value is not None and status == "ok":
            per[(trial, phase)].append(float(value))
    out: dict[int, float] = {}
    for (trial, _), values in per.items():
        out[trial] = max(out.get(trial, 0.0), statistics.median(values))
    return out


def _flags(measurements: list[Any]) -> Sequence[str | None]:
    """Each row's flag; rows built as dicts without one (tests) have none."""
    if measurements and isinstance(measurements[0], dict):
        return [m.get("flag") for m in measurements]
    return columns(measurements, ("flag",))[0]


def busy_trials(measurements: Rows, threshold: float = BUSY_THRESHOLD) -> dict[int, float]:
    """Trial id -> its share (see others_share), for the trials at or above the threshold."""
    return {t: share for t, share in others_share(measurements).items() if share >= threshold}


def busy_cases(measurements: Rows, threshold: float = BUSY_THRESHOLD) -> dict[str, float]:
    """Case key -> the largest share among its busy trials."""
    measurements = measurements if isinstance(measurements, list) else list(measurements)
    trial_case: dict[int, str] = {}
    for trial, key in zip(*columns(measurements, ("trial_id", "case_key")), strict=True):
        trial_case.setdefault(trial, key)
    out: dict[str, float] = {}
    for trial, share in busy_trials(measurements, threshold).items():
        key = trial_case[trial]
        out[key] = max(out.get(key, 0.0), share)
    return out


def shares_by_block(trials: Rows, measurements: Rows) -> dict[str, dict[int, float]]:
    """Case key -> block -> that block's trial's share (see others_share), for the trials
    that have one."""
    share = others_share(measurements)
    out: dict[str, dict[int, float]] = defaultdict(dict)
    for t in trials:
        if t["id"] in share:
            out[t["case_key"]][t["block"]] = share[t["id"]]
    return dict(out)


def unequal_load(a: dict[int, float], b: dict[int, float]) -> float | None:
    """The median over shared blocks of B's share minus A's (percentage points of all cores)
    when the two sides of a comparison in turns were busy unequally; None when they were not,
    or when too few blocks have a share on both sides to tell."""
    import numpy as np
    from scipy.stats import wilcoxon

    blocks = sorted(set(a) & set(b))
    if len(blocks) < UNEQUAL_MIN_PAIRS:
        return None
    d = np.array([b[k] - a[k] for k in blocks])
    median = float(np.median(d))
    if abs(median) < UNEQUAL_POINTS or not np.any(d):
        return None
    p = float(wilcoxon(d, zero_method="pratt").pvalue)
    return median if p < UNEQUAL_ALPHA else None
