"""`dlbench plan` and `dlbench run` say before running when a design cannot decide."""

from __future__ import annotations

from dlbench import config
from dlbench.analysis.design import check
from dlbench.plan import expand


def _plan(frameworks: list[str], repeats: int, trials: int = 1):
    exp = config.override(
        config.default(), {"framework": frameworks, "model": ["mlp"]}, {"repeats": repeats, "trials": trials}
    )
    return expand(exp)


def test_one_trial_per_case_never_decides_and_names_the_trials_that_would():
    d = check(_plan(["torch", "tensorflow", "jax"], 20))
    # Repeats of one process per case: a ratio, no verdict, however many repeats.
    assert (d.decidable, d.one_process, d.members, d.family, d.n) == (False, True, 3, 3, 20)
    # alpha / 3 = 0.0167: unpaired trial medians, 4 + 4 give 2/70 = 0.029, 5 + 5 give 2/252 = 0.0079;
    # paired, 6 pairs give 2/64 = 0.031, 7 give 2/128 = 0.0156. The fewer: 5 trials.
    assert d.trials_needed == 5


def test_trials_are_paired_by_block_only_where_the_paired_test_can_decide():
    two = check(_plan(["torch", "jax"], 20, trials=3))
    # 3 trials: neither 3 pairs (2/8 = 0.25) nor 3 + 3 (2/20 = 0.1) can decide
    assert not two.paired and two.n == 3 and not two.decidable and abs(two.smallest_p - 0.1) < 1e-12
    four = check(_plan(["torch", "jax"], 1, trials=4))
    assert not four.paired and four.decidable and abs(four.smallest_p - 2 / 70) < 1e-12  # Mann-Whitney 4 + 4
    six = check(_plan(["torch", "jax"], 1, trials=6))
    assert six.paired and six.decidable and abs(six.smallest_p - 2 / 64) < 1e-12  # Wilcoxon, 6 pairs
    three = check(_plan(["torch", "tensorflow", "jax"], 1, trials=4))
    assert not three.decidable and abs(three.smallest_p - 3 * 2 / 70) < 1e-12 and three.trials_needed == 5
    assert check(_plan(["torch", "tensorflow", "jax"], 1, trials=5)).decidable
    seven = check(_plan(["torch", "tensorflow", "jax"], 1, trials=7))
    assert seven.paired and abs(seven.smallest_p - 3 * 2 / 128) < 1e-12


def test_a_design_that_can_decide_or_compares_nothing_says_nothing():
    assert check(_plan(["torch", "jax"], 2, trials=6)).decidable
    assert check(_plan(["torch"], 3)) is None


def test_plan_prints_the_smallest_design_that_can_decide(cli):
    out = cli("plan", "--framework", "torch,tensorflow,jax", "--model", "mlp", "--repeats", "3", "--trials", "1")
    text = " ".join(out.split())
    assert "this design gives ratios but no verdict: each case runs in one process" in text
    assert "Smallest design that decides: --trials 5" in text
    few = cli("plan", "--framework", "torch,tensorflow,jax", "--model", "mlp", "--trials", "3", code=None)
    text = " ".join(few.split())
    assert "this design cannot reach a verdict" in text and "p = 0.3 >= 0.05" in text and "--trials 5" in text
    assert "verdict" not in cli("plan", "--framework", "torch,jax", "--model", "mlp", "--trials", "6", code=None)
    # The embedded default decides: 3 frameworks per model, 5 trials (3 x 2/252 = 0.024).
    default = cli("plan")
    assert "verdict" not in default and "x 5 trial(s)" in default
