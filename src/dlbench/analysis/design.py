"""Whether a design can reach a verdict at all, before anything runs.

The analysis compares cases that differ only in framework/variant (a comparison
set, analysis.comparisons.comparison_sets). A set of k members has k(k-1)/2 pairs,
Holm-adjusted together, so the smallest p any pair can get is m times the exact
test's smallest p (m = the family size). With one trial per case the sample is
that trial's repeats, which share one process and give a ratio but never a
verdict (the process is the unit of evidence: dlbench.analysis.stats); with two or
more trials it is one median per trial: paired by block (exact Wilcoxon) where the
paired test can reach alpha with that many blocks, unpaired (exact Mann-Whitney)
otherwise (comparisons.pair_by_block). If even completely separated samples cannot
reach alpha, no verdict is possible however large the difference: 3 frameworks x 4
trials (m = 3, smallest p = 2/70 x 3 = 0.086) is such a design. Numbers only:
dlbench.cli says it in words.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, fields
from operator import attrgetter
from typing import Any

from dlbench.analysis import stats
from dlbench.analysis.comparisons import ALPHA, pair_by_block
from dlbench.plan import Case, Plan


@dataclass(frozen=True)
class DesignCheck:
    decidable: bool
    one_process: bool  # one trial per case: repeats of one process, a ratio and no verdict
    members: int  # frameworks/variants in the largest comparison set
    family: int  # Holm family size of that set: members * (members - 1) / 2
    paired: bool  # trial medians paired by block (else unpaired, or repeats of one process)
    n: int  # trials per case (repeats per case with one trial)
    smallest_p: float  # the smallest Holm-adjusted p this design can give
    trials_needed: int  # smallest trials (paired blocks) that could decide
    alpha: float = ALPHA


def largest_set(plan: Plan) -> int:
    """Members of the largest comparison set in the plan (0 or 1: nothing is compared).
    Cases are grouped by their fields other than framework and variant, read once per
    case (a plan of 10,000 cases spent 17 s in an as_dict and a json.dumps per trial)."""
    rest = attrgetter(*(f.name for f in fields(Case) if f.name not in ("framework", "variant")))
    sets: dict[Any, set[tuple[str, str]]] = defaultdict(set)
    for case in plan.cases:
        sets[rest(case)].add((case.framework, case.variant))
    return max((len(members) for members in sets.values()), default=0)


def check(plan: Plan, alpha: float = ALPHA) -> DesignCheck | None:
    """None when the plan compares nothing (every set has a single member)."""
    k = largest_set(plan)
    if k < 2:
        return None
    p = plan.experiment.protocol
    return design(k, p.trials, p.repeats, alpha)


def design(members: int, trials: int, repeats: int = 1, alpha: float = ALPHA) -> DesignCheck:
    """The design of one comparison set without a Plan: `members` frameworks/variants with
    `trials` trials (processes) per case, `repeats` measured repeats per trial (the sample
    when trials is 1). The same decision the comparisons make (pair_by_block)."""
    k = members
    family = k * (k - 1) // 2
    paired = trials >= 2
    n = trials if paired else repeats
    if not paired:  # one process per case: repeats, never a verdict
        smallest = 1.0
    elif pair_by_block(n, k, alpha):
        smallest = min(1.0, stats.min_p_wilcoxon(n) * family)
    else:
        paired, smallest = False, min(1.0, stats.min_p_mannwhitney(n, n) * family)
    needed = min(stats.min_pairs(alpha / family), stats.min_group_size(alpha / family))
    return DesignCheck(
        trials >= 2 and smallest < alpha,
        trials < 2,
        k,
        family,
        paired,
        n,
        smallest,
        needed,
        alpha,
    )


def needed(d: DesignCheck) -> DesignCheck:
    """The design `d` would be at its smallest deciding trial count (d.trials_needed): what
    the advice "--trials N" runs, paired or not as pair_by_block decides at N."""
    return design(d.members, d.trials_needed, 1, d.alpha)
