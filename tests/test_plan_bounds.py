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


def test_exclusions_naming_too_many_cells_in_all_are_refused_before_expanding():
    # Each of 1000 exclusions names lr = 0.001 (all 2000 batch sizes): 2,000,000 marks, fine; naming
    # every lr (10 values) makes each name 20,000 cells: 20,000,000 > 10,000,000.
    lines = _toml(2000, 10).replace("[protocol]", "[protocol]")
    wide = lines + "".join(f"[[exclude]]\nlr = {[round(0.001 * i, 4) for i in range(1, 11)]}\n" for _ in range(1000))
    with pytest.raises(config.ConfigError, match=r"1000 \[\[exclude\]\] tables name 20000000 matrix cells in all"):
        config.parse(wide, "t.toml")
    narrow = lines + "".join("[[exclude]]\nlr = 0.001\nbatch_size = 1\n" for _ in range(1000))
    assert len(expand(config.parse(narrow, "t.toml")).trials) == 2000 * 10 - 1  # under it: planned


def test_a_million_cell_matrix_narrowed_by_exclusions_plans():
    # 1000 batch sizes x 1000 learning rates = 10^6 cells; the exclusions keep 10 learning rates.
    lrs = [round(0.0001 * i, 4) for i in range(1, 1001)]
    toml = _toml(1000, 1000).replace(f"lr = {[round(0.001 * i, 4) for i in range(1, 1001)]}", f"lr = {lrs}")
    toml += f"[[exclude]]\nlr = {lrs[10:]}\n"
    plan = expand(config.parse(toml, "t.toml"))
    assert len(plan.trials) == 1000 * 10 and {t.case.lr for t in plan.trials} == set(lrs[:10])
    # Without the exclusion the same matrix is 10^6 trials: refused, counted before expanding.
    with pytest.raises(config.ConfigError, match=r"1000000 matrix cells x 1 trials = 1000000 trials: at most"):
        config.parse(_toml(1000, 1000), "t.toml")
    with pytest.raises(config.ConfigError, match=r"10000 matrix cells \(of 1000000, after exclusions\) x 20 trials"):
        config.parse(toml.replace("trials = 1", "trials = 20"), "t.toml")


def test_trials_per_run_are_bounded_before_expanding():
    with pytest.raises(config.ConfigError, match=r"10100 matrix cells x 10 trials = 101000 trials: at most 100000"):
        config.parse(_toml(101, 100, trials=10), "t.toml")


def test_a_large_plan_lists_its_first_trials_and_says_how_many_more():
    plan = expand(config.parse(_toml(50, 30, trials=1), "t.toml"))
    table = plan_table(plan)
    assert len(plan.trials) == 1500 and len(table.rows) == PLAN_ROWS + 1
    assert table.rows[-1][2] == f"{1500 - PLAN_ROWS} more trials (the first {PLAN_ROWS} are shown)"
