"""Whether a design can reach a verdict at all, before anything runs.

The analysis compares cases that differ only in framework/variant (a comparison
set, analysis.comparisons.comparison_sets). A set of k members has k(k-1)/2 pairs,
Holm-adjusted together, so the smallest p any pair can get is m times the exact
test's smallest p (m = the family size). With one trial per case the sample is
that trial's repeats, compared with the exact Mann-Whitney test; with two or more
trials it is one median per trial, paired by block, compared with the exact
Wilcoxon signed-rank test. If even completely separated samples cannot reach
alpha, no verdict is possible however large the difference: 3 frameworks x 3
repeats (m = 3, smallest p = 0.1 x 3) is such a design. Numbers only:
dlbench.cli says it in words.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass

from dlbench.analysis import stats
from dlbench.analysis.comparisons import ALPHA
from dlbench.plan import Plan


@dataclass(frozen=True)
class DesignCheck:
    decidable: bool
    members: int  # frameworks/variants in the largest comparison set
    family: int  # Holm family size of that set: members * (members - 1) / 2
    paired: bool  # trials >= 2: trial medians paired by block
    n: int  # repeats per case (unpaired) or trials (paired)
    smallest_p: float  # the smallest Holm-adjusted p this design can give
    repeats_needed: int  # smallest repeats that could decide with one trial per case
    trials_needed: int  # smallest trials (paired blocks) that could decide
    alpha: float = ALPHA


def largest_set(plan: Plan) -> int:
    """Members of the largest comparison set in the plan (0 or 1: nothing is compared)."""
    sets: dict[str, set[str]] = defaultdict(set)
    for trial in plan.trials:
        case = trial.case.as_dict()
        rest = {k: v for k, v in case.items() if k not in ("framework", "variant")}
        sets[json.dumps(rest, sort_keys=True, default=str)].add(f"{case['framework']}:{case['variant']}")
    return max((len(members) for members in sets.values()), default=0)


def check(plan: Plan, alpha: float = ALPHA) -> DesignCheck | None:
    """None when the plan compares nothing (every set has a single member)."""
    k = largest_set(plan)
    if k < 2:
        return None
    family = k * (k - 1) // 2
    p = plan.experiment.protocol
    paired = p.trials >= 2
    n = p.trials if paired else p.repeats
    raw = stats.min_p_wilcoxon(n) if paired else stats.min_p_mannwhitney(n, n)
    smallest = min(1.0, raw * family)
    return DesignCheck(
        smallest < alpha,
        k,
        family,
        paired,
        n,
        smallest,
        stats.min_group_size(alpha / family),
        stats.min_pairs(alpha / family),
        alpha,
    )
