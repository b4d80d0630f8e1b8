"""The wall-time attribution and the rule tables, on hand-made events whose answer is computed by hand."""

from __future__ import annotations

import pytest

from dlbench.explain.categories import CATEGORIES, Rule, attribute, categorize
from dlbench.explain.events import OpEvent

RULES = (
    Rule(r"^Optimizer\.step", "optimizer", on="scope"),
    Rule(r"^conv", "convolution"),
    Rule(r"^mm$", "matmul"),
    Rule(r"^add_?$", "elementwise"),
    Rule(r"^wait$", "overhead"),
)


def ev(name, lane, start, dur, scopes=()):
    return OpEvent(name, lane, float(start), float(dur), tuple(scopes))


def test_first_matching_rule_wins_and_scope_rules_see_the_enclosing_ranges():
    assert categorize(ev("add_", "t", 0, 1, ["Optimizer.step#SGD.step"]), RULES) == "optimizer"
    assert categorize(ev("add_", "t", 0, 1), RULES) == "elementwise"
    assert categorize(ev("conv2d", "t", 0, 1), RULES) == "convolution"
    assert categorize(ev("softmax", "t", 0, 1), RULES) == "other"


def test_a_rule_with_an_unknown_category_is_refused():
    with pytest.raises(ValueError, match="unknown category 'gemm'"):
        Rule("x", "gemm")


def test_nested_events_own_their_self_time():
    # conv 0-100 us holds mm 20-50 and add 60-70: conv's self time is 100 - 30 - 10 = 60 us.
    b = attribute([ev("conv", "t", 0, 100), ev("mm", "t", 20, 30), ev("add", "t", 60, 10)], RULES, 100e-6, 1)
    assert b.per_step["convolution"] == pytest.approx(60e-6)
    assert b.per_step["matmul"] == pytest.approx(30e-6)
    assert b.per_step["elementwise"] == pytest.approx(10e-6)
    assert b.per_step["overhead"] == pytest.approx(0.0)
    assert b.busy_s == pytest.approx(100e-6)


def test_lanes_running_at_once_share_the_instant_and_idle_time_is_overhead():
    # Lane 1: conv 0-40. Lane 2: mm 20-60. Wall 100 us over 2 steps.
    # 0-20 conv alone, 20-40 shared (10 each), 40-60 mm alone, 60-100 nothing.
    b = attribute([ev("conv", "1", 0, 40), ev("mm", "2", 20, 40)], RULES, 100e-6, 2)
    assert b.per_step["convolution"] == pytest.approx(15e-6)  # (20 + 10) / 2 steps
    assert b.per_step["matmul"] == pytest.approx(15e-6)
    assert b.per_step["overhead"] == pytest.approx(20e-6)  # (100 - 60) / 2
    assert b.step_s == pytest.approx(50e-6)  # the categories add up to the wall time per step


def test_runtime_activity_counts_only_where_no_op_runs():
    # A host thread waits 0-100 while a device lane computes 10-70: the wait owns none of 10-70.
    b = attribute([ev("wait", "host", 0, 100), ev("conv", "dev", 10, 60)], RULES, 100e-6, 1)
    assert b.per_step["convolution"] == pytest.approx(60e-6)
    assert b.per_step["overhead"] == pytest.approx(40e-6)
    assert sum(b.per_step.values()) == pytest.approx(100e-6)


def test_a_child_that_outlives_its_parent_is_cut_at_the_parent_end():
    b = attribute([ev("conv", "t", 0, 50), ev("mm", "t", 40, 20)], RULES, 60e-6, 1)
    assert b.per_step["matmul"] == pytest.approx(10e-6)
    assert b.per_step["convolution"] == pytest.approx(40e-6)
    assert set(b.per_step) == set(CATEGORIES)


def test_top_ops_are_per_step_and_largest_first():
    events = [ev("conv1", "t", 0, 30), ev("conv2", "t", 30, 10), ev("conv1", "t", 40, 30)]
    b = attribute(events, RULES, 70e-6, 2)
    assert b.top_ops["convolution"] == [("conv1", pytest.approx(30e-6)), ("conv2", pytest.approx(5e-6))]
