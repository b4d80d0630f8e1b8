"""Matrix expansion: crossing, include/exclude, skipped cells with reasons, interleaved blocks."""

from __future__ import annotations

from dlbench import config
from dlbench.plan import Case, expand


def _exp(text: str):
    return config.parse(text, "p.toml")


def test_matrix_is_crossed_and_skips_say_why():
    plan = expand(
        _exp("""
[matrix]
framework = ["torch", "sklearn"]
model = ["mlp", "lenet5", "knn"]
dataset = ["digits"]
batch_size = [16, 32]
""")
    )
    labels = {(t.case.framework, t.case.model, t.case.batch_size) for t in plan.trials}
    assert labels == {("torch", "mlp", 16), ("torch", "mlp", 32), ("sklearn", "knn", 16), ("sklearn", "knn", 32)}
    reasons = {(s.cell["framework"], s.cell["model"]): s.reason for s in plan.skipped}
    assert "lenet5 needs input of at least 12x12" in reasons[("torch", "lenet5")]
    assert "got 8x8" in reasons[("torch", "lenet5")]
    assert reasons[("torch", "knn")].startswith("torch has no implementation of knn")
    assert reasons[("sklearn", "mlp")].startswith("sklearn has no implementation of mlp")


def test_exclude_and_include():
    plan = expand(
        _exp("""
[matrix]
framework = ["torch", "jax"]
model = ["mlp", "cnn"]
[[exclude]]
framework = "jax"
model = "cnn"
[[include]]
framework = "torch:compile"
model = ["cnn"]
""")
    )
    cells = {(t.case.framework, t.case.variant, t.case.model) for t in plan.trials}
    assert cells == {
        ("torch", "eager", "mlp"),
        ("torch", "eager", "cnn"),
        ("jax", "jit", "mlp"),
        ("torch", "compile", "cnn"),
    }


def test_trials_form_interleaved_blocks_in_seeded_random_order():
    text = '[matrix]\nframework = ["torch", "tensorflow", "jax"]\n[protocol]\ntrials = 4\nseed = 7'
    a, b = expand(_exp(text)), expand(_exp(text))
    assert [t.case.key for t in a.trials] == [t.case.key for t in b.trials]
    assert len(a.trials) == 12
    for block in range(4):
        in_block = [t.case.framework for t in a.trials if t.block == block]
        assert sorted(in_block) == ["jax", "tensorflow", "torch"]
    orders = {tuple(t.case.framework for t in a.trials if t.block == blk) for blk in range(4)}
    assert len(orders) > 1  # shuffled, not a fixed order


def test_case_key_is_stable_and_content_addressed():
    kw = dict(
        framework="torch",
        variant="eager",
        model="mlp",
        dataset="digits",
        batch_size=32,
        init="glorot-uniform",
        optimizer="sgd",
        lr=0.01,
        momentum=0.0,
        epochs=1,
        steps=None,
        device="cpu",
        threads=2,
    )
    assert Case(**kw).key == Case(**kw).key
    assert Case(**kw).key != Case(**{**kw, "batch_size": 64}).key
    assert len(Case(**kw).key) == 16


def test_classical_cases_ignore_training_settings():
    plan = expand(_exp('[matrix]\nframework = ["sklearn"]\nmodel = ["knn"]\noptimizer = ["sgd", "adam"]'))
    assert len(plan.trials) == 1
    case = plan.trials[0].case
    assert (case.optimizer, case.init, case.epochs) == ("none", "none", None)


def test_framework_not_installed_is_listed_and_skipped_with_reason(faulty_plugin, cli):
    plan = expand(_exp('[matrix]\nframework = ["ghost", "faulty"]\nmodel = ["mlp"]\ndataset = ["synthetic"]'))
    assert [t.case.framework for t in plan.trials] == ["faulty"]
    (skip,) = plan.skipped
    assert skip.reason == ("ghost is not installed (missing: dlbench_ghost_runtime; pip install dlbench-ghost-runtime)")
    assert "ghost is not installed" in cli("list")


def test_threads_0_never_means_more_threads_than_the_cores_allowed(monkeypatch):
    import os

    from dlbench import plan

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    assert plan.physical_cores() == 1


def test_a_long_skipped_list_is_cut_and_its_reasons_counted():
    from dlbench.report.tables import PLAN_ROWS, skipped_table

    cells = [
        ({"framework": "sklearn", "model": "mlp", "dataset": "digits", "lr": i}, "no such model") for i in range(2500)
    ]
    cells += [({"framework": "numpy", "model": "cnn", "dataset": "digits", "lr": i}, "not built") for i in range(500)]
    t = skipped_table(cells)
    assert t is not None and t.title == "3000 skipped cells"
    assert len(t.rows) == PLAN_ROWS + 1 and t.rows[-1][-1] == f"{3000 - PLAN_ROWS} more (the first {PLAN_ROWS} shown)"
    assert t.notes[:2] == ["2500 cells: no such model", "500 cells: not built"]
    short = skipped_table(cells[:3])
    assert short is not None and len(short.rows) == 3 and not short.notes
