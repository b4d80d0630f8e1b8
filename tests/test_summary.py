"""Summaries against hand-computed values."""

from __future__ import annotations

import math

import pytest

from dlbench.analysis.summary import describe, latency_percentiles, summarize


def test_describe_matches_hand_computation():
    s = describe([4.0, 1.0, 3.0, 2.0])
    assert (s.n, s.mean, s.median) == (4, 2.5, 2.5)
    # Linear-interpolated quartiles (numpy's default, Hyndman & Fan type 7).
    assert (s.q1, s.q3, s.iqr) == (1.75, 3.25, 1.5)
    assert s.sd == pytest.approx(math.sqrt(5 / 3))  # sample sd: sum of squares 5, n - 1 = 3
    assert (s.min, s.max) == (1.0, 4.0)
    assert s.noisy  # IQR / median = 0.6 > 0.10
    assert not describe([10.0, 10.1, 10.2]).noisy
    assert describe([]) is None
    assert math.isnan(describe([3.0]).sd)


def _m(trial, key, repeat, warmup, phase, metric, value, status="ok"):
    return {
        "trial_id": trial,
        "case_key": key,
        "repeat": repeat,
        "warmup": warmup,
        "phase": phase,
        "metric": metric,
        "value": value,
        "status": status,
    }


def _t(trial, key, status="ok"):
    return {"id": trial, "case_key": key, "status": status, "case_json": '{"framework": "x"}'}


def test_warmups_excluded_and_trials_become_independent_samples():
    one_trial = [_m(1, "a", 0, 1, "train", "time", 100.0)] + [
        _m(1, "a", r, 0, "train", "time", v) for r, v in ((1, 1.0), (2, 2.0), (3, 3.0))
    ]
    (s,) = summarize([_t(1, "a")], one_trial)
    assert s.within_process and s.stats[("train", "time")].median == 2.0 and s.stats[("train", "time")].n == 3
    two_trials = one_trial + [_m(2, "a", r, 0, "train", "time", v) for r, v in ((1, 5.0), (2, 7.0), (3, 9.0))]
    (s,) = summarize([_t(1, "a"), _t(2, "a")], two_trials)
    # One median per trial: 2.0 and 7.0.
    assert not s.within_process and s.stats[("train", "time")].n == 2
    assert s.stats[("train", "time")].mean == 4.5
    failed = summarize(
        [_t(1, "a"), _t(3, "a", "failed")], one_trial + [_m(3, "a", 1, 0, "train", "time", 50.0, "failed")]
    )
    assert failed[0].statuses == {"ok": 1, "failed": 1} and failed[0].stats[("train", "time")].median == 2.0


def test_values_that_could_not_be_measured_are_no_sample():
    """A test split smaller than one batch stores infer.time None in every repeat; with
    two trials the per-trial median of those Nones raised TypeError in every report."""
    rows = [_m(t, "a", r, 0, "infer", "time", None) for t in (1, 2) for r in (1, 2)]
    rows += [_m(t, "a", r, 0, "train", "time", float(t + r)) for t in (1, 2) for r in (1, 2)]
    (s,) = summarize([_t(1, "a"), _t(2, "a")], rows)
    assert ("infer", "time") not in s.stats
    assert s.stats[("train", "time")].median == 3.0  # trial medians 2.5 and 3.5


def test_latency_percentiles_pool_measured_calls():
    rows = [_m(1, "a", 1, 0, "latency_b1", "time", float(v)) for v in range(1, 101)]
    rows.append(_m(1, "a", 0, 1, "latency_b1", "time", 1e6))  # warm-up: ignored
    n, p50, p90, p99 = latency_percentiles(rows)["a"]["latency_b1"]
    assert n == 100 and p50 == 50.5 and p90 == pytest.approx(90.1) and p99 == pytest.approx(99.01)


def test_energy_table_gives_inference_energy_per_pass_and_reads_older_runs():
    import json

    from dlbench.report.tables import energy_table

    def trial(tid, framework):
        case = {"framework": framework, "variant": "eager", "model": "mlp", "dataset": "digits", "batch_size": 32}
        return {"id": tid, "case_key": framework, "case_json": json.dumps(case), "status": "ok", "block": 0}

    def row(tid, key, phase, metric, value, repeat=1):
        return {
            "trial_id": tid,
            "case_key": key,
            "phase": phase,
            "metric": metric,
            "value": value,
            "repeat": repeat,
            "warmup": False,
            "status": "ok",
            "flag": None,
        }

    trials = [trial(1, "torch"), trial(2, "jax")]
    measurements = [
        # torch: a calibrated run, 40 passes in the window (2 J), so 0.05 J a pass.
        row(1, "torch", "train", "energy:rapl.0.package-0", 30.0),
        row(1, "torch", "train", "energy_per_sample:rapl.0.package-0", 0.01),
        row(1, "torch", "infer", "energy:rapl.0.package-0", 2.0),
        row(1, "torch", "infer", "energy_per_pass:rapl.0.package-0", 0.05),
        # jax: stored before passes were counted: its window was one pass.
        row(2, "jax", "train", "energy:rapl.0.package-0", 20.0),
        row(2, "jax", "infer", "energy:rapl.0.package-0", 0.07),
    ]
    table = energy_table(summarize(trials, measurements), measurements, [])
    assert table.title.endswith("train J, train J/sample, infer J/pass")
    cpu = table.columns.index("CPU package")
    by_framework = {r[table.columns.index("framework")]: r[cpu] for r in table.rows}
    assert by_framework == {"torch": "30 / 0.01 / 0.05", "jax": "20 / — / 0.07"}
