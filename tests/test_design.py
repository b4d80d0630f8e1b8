"""`dlbench plan` and `dlbench run` say before running when a design cannot decide."""

from __future__ import annotations

from typer.testing import CliRunner

from dlbench import config
from dlbench.analysis.design import check
from dlbench.cli import app
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
    # alpha / 3 = 0.0167: paired, 6 pairs give 2/64 = 0.031, 7 give 2/128 = 0.0156.
    assert d.trials_needed == 7


def test_paired_trials_count_pairs_not_repeats():
    d = check(_plan(["torch", "jax"], 20, trials=3))
    assert d.paired and d.n == 3 and not d.decidable and abs(d.smallest_p - 0.25) < 1e-12  # 2 / 2**3
    assert check(_plan(["torch", "jax"], 5, trials=6)).decidable  # 2 / 2**6 = 0.031
    three = check(_plan(["torch", "tensorflow", "jax"], 2, trials=6))
    assert not three.decidable and abs(three.smallest_p - 3 * 2 / 64) < 1e-12 and three.trials_needed == 7


def test_a_design_that_can_decide_or_compares_nothing_says_nothing():
    assert check(_plan(["torch", "jax"], 2, trials=6)).decidable
    assert check(_plan(["torch"], 3)) is None


def test_plan_prints_the_smallest_design_that_can_decide():
    runner = CliRunner()
    out = runner.invoke(
        app, ["plan", "--framework", "torch,tensorflow,jax", "--model", "mlp", "--repeats", "3", "--trials", "1"]
    )
    assert out.exit_code == 0
    text = " ".join(out.output.split())
    assert "this design gives ratios but no verdict: each case runs in one process" in text
    assert "Smallest design that decides: --trials 7" in text
    few = runner.invoke(app, ["plan", "--framework", "torch,tensorflow,jax", "--model", "mlp", "--trials", "3"])
    text = " ".join(few.output.split())
    assert "this design cannot reach a verdict" in text and "p = 0.75 >= 0.05" in text and "--trials 7" in text
    quiet = runner.invoke(app, ["plan", "--framework", "torch,jax", "--model", "mlp", "--trials", "6"])
    assert "verdict" not in quiet.output
    # The embedded default decides: 3 frameworks per model, 7 trials (3 x 2/2^7 = 0.047).
    default = runner.invoke(app, ["plan"])
    assert default.exit_code == 0 and "verdict" not in default.output and "x 7 trial(s)" in default.output
