"""Planning is bounded (issue 33 item 2): counts are checked before a matrix is
expanded, exclusions are bounded in number and in checks, and a large plan's table
lists its first trials instead of all of them."""

from __future__ import annotations

import pytest

from dlbench import config
from dlbench.plan import expand
from dlbench.report.tables import PLAN_ROWS, plan_table


def _toml(batches: int, lrs: int, excludes: int = 0, trials: int = 1) -> str:
    lines = [
        "[matrix]",
        "framework = ['numpy']",
        "model = ['mlp']",
        f"batch_size = {list(range(1, batches + 1))}",
        f"lr = {[round(0.001 * i, 4) for i in range(1, lrs + 1)]}",
        f"[protocol]\ntrials = {trials}",
    ]
    lines += [f"[[exclude]]\nbatch_size = {100_000 + i}" for i in range(excludes)]
    return "\n".join(lines) + "\n"


def test_more_exclusion_tables_than_the_limit_are_refused_with_the_limit():
    with pytest.raises(config.ConfigError, match=r"t.toml: 1001 \[\[exclude\]\] tables: at most 1000"):
        config.parse(_toml(2, 2, excludes=config.MAX_RULES + 1), "t.toml")


def test_cells_times_exclusions_beyond_the_limit_are_refused_before_expanding():
    # 101 x 100 cells x 1000 exclusions = 10,100,000 checks > 10,000,000.
    with pytest.raises(config.ConfigError, match=r"10100 matrix cells x 1000 \[\[exclude\]\] tables = 10100000 checks"):
        config.parse(_toml(101, 100, excludes=1000), "t.toml")
    assert len(expand(config.parse(_toml(10, 10, excludes=1000), "t.toml")).trials) == 100  # under it: planned


def test_trials_per_run_are_bounded_before_expanding():
    with pytest.raises(config.ConfigError, match=r"10100 matrix cells x 10 trials = 101000 trials: at most 100000"):
        config.parse(_toml(101, 100, trials=10), "t.toml")


def test_a_large_plan_lists_its_first_trials_and_says_how_many_more():
    plan = expand(config.parse(_toml(50, 30, trials=1), "t.toml"))
    table = plan_table(plan)
    assert len(plan.trials) == 1500 and len(table.rows) == PLAN_ROWS + 1
    assert table.rows[-1][2] == f"{1500 - PLAN_ROWS} more trials (the first {PLAN_ROWS} are shown)"
