"""Adaptive repetition: blocks are added until every median's CI is narrow enough,
or max-repeats / the budget stops it; the reason is stored."""

from __future__ import annotations

from dlbench.store import Store


def test_stops_when_converged_after_the_minimum_blocks(tmp_path, faulty_run, stored):
    db = tmp_path / "a.db"
    out = faulty_run(db, train_seconds=0.03, until_ci=5, max_repeats=12)
    run, trials = stored(db)
    # A steady 30 ms sleep converges as soon as the rule may look (6 trial medians).
    assert {t["block"] for t in trials} == set(range(6))
    assert run["stop_reason"].startswith("converged: every median's 95% CI within ±5%")
    assert all(t["status"] == "ok" for t in trials)
    assert "adding block 5" in out and "adaptive: converged" in out


def test_max_repeats_caps_the_blocks(tmp_path, faulty_run, stored):
    db = tmp_path / "b.db"
    faulty_run(db, train_seconds=0.0, until_ci=0.001, max_repeats=3)
    run, trials = stored(db)
    assert {t["block"] for t in trials} == {0, 1, 2}
    assert run["stop_reason"].startswith("max-repeats reached: 3 blocks")
    assert run["stop_reason"].endswith("(a median's CI counts from 6 blocks on)")


def test_stop_reason_names_the_widest_median_and_the_blocks_it_would_need():
    import json
    import math

    from dlbench.analysis import stats
    from dlbench.runner import _widest
    from dlbench.store import trial_record

    case = {
        "framework": "torch", "variant": "eager", "model": "mlp", "dataset": "digits", "batch_size": 32,
        "runtime": "defaults",
    }  # fmt: skip
    trials = [
        trial_record({"case_key": "a", "case_json": json.dumps(case)}),
        trial_record({"case_key": "b", "case_json": json.dumps(dict(case, framework="jax", variant="jit"))}),
    ]
    steady = [1.0, 1.01, 0.99, 1.0, 1.02, 0.98, 1.0, 1.01]
    spread = [1.0, 1.3, 0.8, 1.1, 0.9, 1.2, 1.05, 0.95]
    half = stats.median_ci_halfwidth(spread)
    assert half > stats.median_ci_halfwidth(steady)
    reason = _widest(
        trials, [("a", "train.time", steady), ("b", "train.time", spread), ("a", "x", [1.0, 2.0])], pct=0.02
    )
    # The CI half-width shrinks as 1/sqrt(n): n * (half / pct)^2 blocks reach ±pct.
    assert reason == (
        f" (widest: train.time of jax:jit mlp digits b32, ±{100 * half:.1f}%; at this spread "
        f"about {math.ceil(8 * (half / 0.02) ** 2)} blocks would be needed)"
    )


def test_fixed_design_has_no_stop_reason(tmp_path, faulty_run, stored):
    db = tmp_path / "c.db"
    faulty_run(db, train_seconds=0.0, trials=2)
    run, trials = stored(db)
    assert {t["block"] for t in trials} == {0, 1} and run["stop_reason"] is None


def test_watched_metrics_are_stored_and_named_in_the_stop_reason(tmp_path, faulty_run, stored):
    db = tmp_path / "d.db"
    faulty_run(db, train_seconds=0.03, until_ci=5, max_repeats=8, until_ci_metrics="train.time,train.throughput")
    run, _ = stored(db)
    assert run["stop_reason"].endswith("(train.time, train.throughput)")


def test_unknown_watched_metric_is_refused_with_the_allowed_ones(tmp_path, faulty_plugin, cli):
    flags = cli.flags(trials=1, framework="faulty", model="mlp", dataset="synthetic", until_ci=5)
    result = cli.result("run", *flags, "--until-ci-metrics", "train.loss", "--db", tmp_path / "e.db")
    assert result.exit_code != 0
    assert "'train.loss' is not a timed phase.metric" in result.output
    assert "train.time" in result.output and "latency_b<B>.time" in result.output
    assert not (tmp_path / "e.db").exists() or Store(tmp_path / "e.db").runs() == []
