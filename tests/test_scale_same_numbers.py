"""The report of a store is the same, number for number, whether the statistics use
scipy.stats.bootstrap per comparison and the analyses read the records by column name
(the code before the scale work) or the drawn-once bootstrap counts and column-wise
reads: the JSON report (every ratio, interval, p and summary) of one synthetic run of
3 frameworks x 4 models x 3 batch sizes in 8 interleaved blocks, rendered both ways."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _populate(path: Path) -> None:
    spec = importlib.util.spec_from_file_location("report_scale", ROOT / "benchmarks" / "report_scale.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    from dlbench.store import Store

    store = Store(path)
    try:
        # 8 blocks: trial medians paired by block; with 3 the bootstrap distribution of a
        # median of 3 takes so few values that its percentiles do not depend on the draws
        module.populate(store, blocks=8, latency=2)
    finally:
        store.close()


def _old_ratio_ci(a: np.ndarray, b: np.ndarray, paired: bool, n_boot: int, seed: int, quantile: float = 0.5) -> Any:
    import scipy.stats as sst

    from dlbench.analysis import stats

    if min(a.size, b.size) < 2 or stats.location(b, quantile) <= 0:
        return math.nan, math.nan

    def ratio(x: np.ndarray, y: np.ndarray, axis: int = -1) -> Any:
        return stats.location(x, quantile, axis) / stats.location(y, quantile, axis)

    res = sst.bootstrap(
        (a, b), ratio, paired=paired, vectorized=True, n_resamples=n_boot, method="percentile",
        rng=np.random.default_rng(seed),
    )  # fmt: skip
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def _old_difference_ci(a: Any, b: Any, paired: bool, n_boot: int = 9999, seed: int = 0) -> Any:
    import scipy.stats as sst

    from dlbench.analysis import stats

    a, b = stats.finite_pairs(a, b) if paired else (stats._finite(a), stats._finite(b))
    if min(a.size, b.size) < 2:
        return math.nan, math.nan

    def diff(x: np.ndarray, y: np.ndarray, axis: int = -1) -> Any:
        return np.median(x, axis=axis) - np.median(y, axis=axis)

    res = sst.bootstrap(
        (a, b), diff, paired=paired, vectorized=True, n_resamples=n_boot, method="percentile",
        rng=np.random.default_rng(seed),
    )  # fmt: skip
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def _by_name(rows: Any, names: tuple[str, ...]) -> tuple[list[Any], ...]:
    rows = list(rows)
    return tuple([r[n] for r in rows] for n in names)


@pytest.fixture(scope="module")
def scale_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("scale_same") / "s.db"
    _populate(path)
    return path


def _strip_times(doc: Any) -> Any:
    """The document without what differs between two renderings of one store: when it was made."""
    if isinstance(doc, dict):
        return {k: _strip_times(v) for k, v in doc.items() if k not in ("generated", "generated_at", "created")}
    if isinstance(doc, list):
        return [_strip_times(v) for v in doc]
    return doc


def test_report_numbers_unchanged(scale_db: Path, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from dlbench.analysis import busy, comparisons, stats, summary

    new = json.loads(cli("report", "--db", scale_db, "--format", "json"))
    with monkeypatch.context() as m:
        m.setattr(stats, "_ratio_ci", _old_ratio_ci)
        m.setattr(stats, "difference_ci", _old_difference_ci)
        for module in (busy, comparisons, summary):
            m.setattr(module, "columns", _by_name)
        old = json.loads(cli("report", "--db", scale_db, "--format", "json"))
    assert _strip_times(new) == _strip_times(old)
    # Not vacuous: 12 cases x 3 timed/quality metrics, each with its three pairs and
    # their bootstrap intervals, and the rankings' difference intervals of accuracy.
    pairs = new["comparisons"]
    assert len(pairs) >= 72
    assert all(math.isfinite(c["ci_low"]) and c["ci_low"] < c["ci_high"] for c in pairs)
    assert "difference_ci" in json.dumps(new["answer"])
