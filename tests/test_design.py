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


def test_three_frameworks_by_three_repeats_cannot_decide():
    d = check(_plan(["torch", "tensorflow", "jax"], 3))
    # 3 pairs, Holm: 3 x the exact Mann-Whitney minimum 2 / C(6, 3) = 0.1 -> 0.3
    assert (d.decidable, d.members, d.family, d.paired, d.n) == (False, 3, 3, False, 3)
    assert abs(d.smallest_p - 0.3) < 1e-12
    # alpha / 3 = 0.0167: 4 + 4 gives 2/70 = 0.029 (too big), 5 + 5 gives 2/252 = 0.0079;
    # paired, 6 pairs give 2/64 = 0.031, 7 give 2/128 = 0.0156.
    assert (d.repeats_needed, d.trials_needed) == (5, 7)


def test_paired_trials_count_pairs_not_repeats():
    d = check(_plan(["torch", "jax"], 20, trials=3))
    assert d.paired and d.n == 3 and not d.decidable and abs(d.smallest_p - 0.25) < 1e-12  # 2 / 2**3
    assert check(_plan(["torch", "jax"], 5, trials=6)).decidable  # 2 / 2**6 = 0.031


def test_a_design_that_can_decide_or_compares_nothing_says_nothing():
    assert check(_plan(["torch", "jax"], 6)).decidable  # 2 / C(12, 6) = 0.0022
    assert check(_plan(["torch"], 3)) is None


def test_plan_prints_the_smallest_design_that_can_decide():
    runner = CliRunner()
    out = runner.invoke(app, ["plan", "--framework", "torch,tensorflow,jax", "--model", "mlp", "--repeats", "3"])
    assert out.exit_code == 0
    text = " ".join(out.output.split())
    assert "this design cannot reach a verdict" in text and "p = 0.3 >= 0.05" in text
    assert "--repeats 5, or --trials 7" in text
    quiet = runner.invoke(app, ["plan", "--framework", "torch,jax", "--model", "mlp", "--repeats", "6"])
    assert "cannot reach a verdict" not in quiet.output
