"""Adaptive repetition: blocks are added until every median's CI is narrow enough,
or max-repeats / the budget stops it; the reason is stored."""

from __future__ import annotations

from typer.testing import CliRunner

from dlbench.cli import app
from dlbench.store import Store

runner = CliRunner()


def _adaptive(db, plugin, seconds: float, *extra: str):
    (plugin / "dlbench_faulty" / "train_seconds").write_text(str(seconds))
    result = runner.invoke(
        app,
        [
            "run",
            "--trials",
            "1",
            "--framework",
            "faulty",
            "--model",
            "mlp",
            "--dataset",
            "synthetic",
            "--repeats",
            "2",
            "--warmup",
            "0",
            "--latency-batches",
            "0",
            "--samplers",
            "none",
            *extra,
            "--db",
            str(db),
        ],
    )
    assert result.exit_code == 0, result.output
    return result.output


def test_stops_when_converged_after_the_minimum_blocks(tmp_path, faulty_plugin):
    db = tmp_path / "a.db"
    out = _adaptive(db, faulty_plugin, 0.03, "--until-ci", "5", "--max-repeats", "12")
    with Store(db) as store:
        run = store.run()
        blocks = {t["block"] for t in store.trials(run["id"])}
        # A steady 30 ms sleep converges as soon as the rule may look (6 trial medians).
        assert blocks == set(range(6))
        assert run["stop_reason"].startswith("converged: every median's 95% CI within ±5%")
        assert all(t["status"] == "ok" for t in store.trials(run["id"]))
    assert "adding block 5" in out and "adaptive: converged" in out


def test_max_repeats_caps_the_blocks(tmp_path, faulty_plugin):
    db = tmp_path / "b.db"
    _adaptive(db, faulty_plugin, 0.0, "--until-ci", "0.001", "--max-repeats", "3")
    with Store(db) as store:
        run = store.run()
        assert {t["block"] for t in store.trials(run["id"])} == {0, 1, 2}
        assert run["stop_reason"].startswith("max-repeats reached: 3 blocks")
        assert run["stop_reason"].endswith("(a median's CI counts from 6 blocks on)")


def test_stop_reason_names_the_widest_median_and_the_blocks_it_would_need():
    import json
    import math

    from dlbench.analysis import stats
    from dlbench.runner import _widest

    case = {
        "framework": "torch", "variant": "eager", "model": "mlp", "dataset": "digits", "batch_size": 32,
        "runtime": "defaults",
    }  # fmt: skip
    trials = [
        {"case_key": "a", "case_json": json.dumps(case)},
        {"case_key": "b", "case_json": json.dumps(dict(case, framework="jax", variant="jit"))},
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


def test_fixed_design_has_no_stop_reason(tmp_path, faulty_plugin):
    db = tmp_path / "c.db"
    _adaptive(db, faulty_plugin, 0.0, "--trials", "2")
    with Store(db) as store:
        run = store.run()
        assert {t["block"] for t in store.trials(run["id"])} == {0, 1} and run["stop_reason"] is None


def test_watched_metrics_are_stored_and_named_in_the_stop_reason(tmp_path, faulty_plugin):
    db = tmp_path / "d.db"
    _adaptive(
        db,
        faulty_plugin,
        0.03,
        "--until-ci",
        "5",
        "--max-repeats",
        "8",
        "--until-ci-metrics",
        "train.time,train.throughput",
    )
    with Store(db) as store:
        run = store.run()
        assert run["stop_reason"].endswith("(train.time, train.throughput)")


def test_unknown_watched_metric_is_refused_with_the_allowed_ones(tmp_path, faulty_plugin):
    result = runner.invoke(
        app,
        [
            "run",
            "--trials",
            "1",
            "--framework",
            "faulty",
            "--model",
            "mlp",
            "--dataset",
            "synthetic",
            "--until-ci",
            "5",
            "--until-ci-metrics",
            "train.loss",
            "--db",
            str(tmp_path / "e.db"),
        ],
    )
    assert result.exit_code != 0
    assert "'train.loss' is not a timed phase.metric" in result.output
    assert "train.time" in result.output and "latency_b<B>.time" in result.output
    assert not (tmp_path / "e.db").exists() or Store(tmp_path / "e.db").runs() == []
