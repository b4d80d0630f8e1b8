"""Do two learning curves differ beyond their spread? A rule stated before any curve is drawn.

Each case's measured repeats are curves of training loss per epoch. At the last epoch every
case of a comparison reached, two cases differ beyond their spread when no repeat of one
overlaps any repeat of the other: every loss of A above every loss of B. Were the n + m
repeats one curve, each of the C(n+m, n) ways of splitting them would be as likely, and two
of them (all of A above all of B, or below) are disjoint: that chance is the p given. It
needs two repeats a side; with fewer the spread is not known and nothing is said about it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class CurveGap:
    higher: str  # the case whose every repeat ended above the other's
    lower: str
    epoch: int  # 1-based, as the figure labels epochs
    higher_range: tuple[float, float]
    lower_range: tuple[float, float]
    p: float  # 2 / C(n + m, n): the chance of so clean a split were the repeats one curve

    def words(self) -> str:
        (a_lo, a_hi), (b_lo, b_hi) = self.higher_range, self.lower_range
        return (
            f"{self.higher} ends above {self.lower} beyond their spread (epoch {self.epoch}: every repeat "
            f"{a_lo:.4g}-{a_hi:.4g} against {b_lo:.4g}-{b_hi:.4g}; p = {self.p:.2g} were they one curve)"
        )


def gaps(finals: dict[str, list[float]], epoch: int) -> list[CurveGap]:
    """Every pair of cases whose repeats' losses at `epoch` do not overlap; cases with fewer
    than two repeats are left out (their spread is not known)."""
    known = {case: values for case, values in finals.items() if len(values) >= 2}
    found = []
    names = sorted(known)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            va, vb = known[a], known[b]
            if min(va) > max(vb):
                hi, lo = a, b
            elif min(vb) > max(va):
                hi, lo = b, a
            else:
                continue
            n, m = len(known[hi]), len(known[lo])
            found.append(
                CurveGap(
                    hi,
                    lo,
                    epoch,
                    (min(known[hi]), max(known[hi])),
                    (min(known[lo]), max(known[lo])),
                    2 / math.comb(n + m, n),
                )
            )
    return found
