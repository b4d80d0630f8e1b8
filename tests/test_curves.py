"""dlbench.analysis.curves: when two learning curves differ beyond their spread, on hand-made
repeats with the chance worked out by hand."""

from __future__ import annotations

import pytest

from dlbench.analysis.curves import gaps


def test_disjoint_repeats_differ_and_the_chance_is_two_of_every_split():
    (gap,) = gaps({"tf": [0.50, 0.52, 0.55], "torch": [0.70, 0.72, 0.80]}, epoch=2)
    assert (gap.higher, gap.lower, gap.epoch) == ("torch", "tf", 2)
    assert gap.higher_range == (0.70, 0.80) and gap.lower_range == (0.50, 0.55)
    assert gap.p == pytest.approx(2 / 20)  # C(6, 3) = 20 splits of six repeats, two of them this clean
    assert gap.words().startswith("torch ends above tf beyond their spread (epoch 2: every repeat 0.7-0.8")


def test_overlapping_repeats_or_a_single_repeat_say_nothing():
    assert gaps({"tf": [0.5, 0.71], "torch": [0.70, 0.80]}, epoch=1) == []  # one repeat of tf above one of torch
    assert gaps({"tf": [0.5], "torch": [0.70, 0.80]}, epoch=1) == []  # tf's spread is not known
    found = gaps({"a": [1.0, 1.1], "b": [2.0, 2.1], "c": [1.05, 2.05]}, epoch=3)
    assert [(g.higher, g.lower) for g in found] == [("b", "a")]  # c overlaps both
    assert found[0].p == pytest.approx(2 / 6)
