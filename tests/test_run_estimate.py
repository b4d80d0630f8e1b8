"""`dlbench run` says about how long it will take before its first trial: from earlier
trials of the same cases in the run's database (this machine's own measurement), else
from the project's committed smoke runs, else "unknown"."""

from __future__ import annotations

import pytest

from dlbench.service import runs
from dlbench.studies import estimate


def _plan(trials: int = 2):
    exp = runs.experiment(
        None,
        {"framework": ["numpy", "sklearn"], "model": ["mlp", "knn"], "dataset": ["digits"]},
        {"trials": trials, "repeats": 3, "warmup": 1, "epochs": 2},
    )
    return runs.plan(exp)


def test_earlier_trials_of_the_same_case_give_their_median():
    plan = _plan()
    keys = {t.case.key for t in plan.trials}
    assert len(plan.trials) == 4 and len(keys) == 2
    earlier = {(k, 3, 1): [10.0, 30.0, 12.0] for k in keys}  # median 12 s a trial
    got = estimate.estimate_run(plan, earlier)
    assert got is not None
    assert got.seconds == pytest.approx(4 * 12.0) and got.here == 4 and got.processes == 4
    assert got.basis == "the median wall time of earlier trials of the same cases in this database"


def test_trials_of_other_repeats_are_not_the_same_measurement():
    plan = _plan()
    earlier = {(t.case.key, 5, 1): [10.0] for t in plan.trials}  # 5 repeats then, 3 now
    got = estimate.estimate_run(plan, earlier)
    assert got is not None and got.here == 0
    assert got.basis.startswith("the project's smoke runs on a 2-core VM")


def test_the_rest_come_from_the_smoke_runs_and_it_says_how_many(monkeypatch):
    if estimate.pooled_smoke() is None:
        pytest.skip("the committed smoke runs (docs/studies/data) are not in this install")
    plan = _plan(trials=1)
    numpy_key = next(t.case.key for t in plan.trials if t.case.framework == "numpy")
    got = estimate.estimate_run(plan, {(numpy_key, 3, 1): [7.0]})
    assert got is not None and got.here == 1 and got.seconds > 7.0
    assert got.basis.startswith("1 of 2 trials from earlier trials of their case in this database, the rest from")


def test_without_earlier_trials_or_smoke_runs_it_is_unknown(monkeypatch, tmp_path):
    monkeypatch.setattr(estimate, "DATA", tmp_path)
    assert estimate.estimate_run(_plan(), {}) is None
