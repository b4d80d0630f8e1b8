"""benchmarks/harness_vs_standalone.py's verdicts: per-round ratios of time and per-round
differences of accuracy and loss (one process a side per round), a distribution-free interval
for their median, the per-seed pairs and the results database's rows, against hand-computed
cases."""

from __future__ import annotations

import sys
from argparse import Namespace
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from harness_vs_standalone import (  # type: ignore[import-not-found]  # noqa: E402
    band_verdict,
    dlbench_values,
    measured_seeds,
    median_interval,
    quality_summary,
    round_differences,
    round_seed,
    verdict,
)


def test_five_rounds_give_no_95_percent_interval() -> None:
    # The extremes of 5 cover the median with 1 - 2/32 = 0.9375 < 0.95.
    assert median_interval([1.0, 2.0, 3.0, 4.0, 5.0]) is None
    assert verdict(None, 5) == "UNDECIDED (5 rounds: a 95% interval needs 6)"


def test_six_rounds_give_the_extremes() -> None:
    # 1 - 2/64 = 0.969 >= 0.95; with the 2nd and 5th: 1 - 2 * 7/64 = 0.78.
    assert median_interval([6.0, 1.0, 5.0, 2.0, 4.0, 3.0]) == (1.0, 6.0)


def test_forty_rounds_give_the_14th_and_27th() -> None:
    # Binomial(40, 1/2): P(B <= 13) = 0.0192 (coverage 0.962), P(B <= 14) = 0.0403 (0.919).
    values = [float(v) for v in range(40, 0, -1)]
    assert median_interval(values) == (14.0, 27.0)


@pytest.mark.parametrize(
    ("ci", "expected"),
    [
        ((0.985, 1.015), "PASS"),
        ((0.98, 1.02), "PASS"),
        ((1.021, 1.05), "FAIL (dlbench slower)"),
        ((0.90, 0.979), "FAIL (dlbench faster)"),
        ((0.99, 1.03), "UNDECIDED (interval crosses the band: add rounds)"),
        ((0.97, 1.01), "UNDECIDED (interval crosses the band: add rounds)"),
    ],
)
def test_the_whole_interval_decides(ci: tuple[float, float], expected: str) -> None:
    assert verdict(ci, 8) == expected


@pytest.mark.parametrize(
    ("ci", "expected"),
    [
        ((-0.5, 0.8), "PASS"),
        ((-1.0, 1.0), "PASS"),
        ((1.2, 4.0), "FAIL (dlbench more accurate)"),
        ((-4.6, -1.01), "FAIL (dlbench less accurate)"),
        ((-1.5, 0.2), "UNDECIDED (interval crosses the band: add rounds)"),
        (None, "UNDECIDED (3 rounds: a 95% interval needs 6)"),
    ],
)
def test_accuracy_band_in_points(ci: tuple[float, float] | None, expected: str) -> None:
    assert band_verdict(ci, 3, (-1.0, 1.0), "dlbench more accurate", "dlbench less accurate") == expected


def _rounds(dl: list[list[float]], sa: list[list[float]], first_seed: int = 1) -> list[dict[str, dict[str, object]]]:
    out = []
    for k, (a, b) in enumerate(zip(dl, sa)):
        seeds = [first_seed + k * 10 + i for i in range(len(a))]
        out.append({"dlbench": {"acc": a, "seeds": seeds}, "standalone": {"acc": b, "seeds": seeds}})
    return out


def test_round_differences_are_differences_of_the_rounds_medians() -> None:
    # medians: 0.70 - 0.72 = -0.02, 0.75 - 0.73 = 0.02 (x 100 = points)
    rounds = _rounds([[0.69, 0.70, 0.71], [0.75, 0.74, 0.80]], [[0.72, 0.71, 0.73], [0.73, 0.70, 0.76]])
    assert round_differences(rounds, "acc", 100.0) == pytest.approx([-2.0, 2.0])


def test_quality_summary_six_rounds() -> None:
    # Per-round differences (points): -0.5, 0.2, 0.0, 0.4, -0.3, 0.1 -> median 0.05, the 95%
    # interval of 6 is the extremes [-0.5, 0.4], inside +/-1: PASS.
    base = [0.70, 0.71, 0.72, 0.73, 0.74, 0.75]
    shifts = [-0.005, 0.002, 0.0, 0.004, -0.003, 0.001]
    rounds = _rounds([[b + d] for b, d in zip(base, shifts)], [[b] for b in base])
    q = quality_summary(rounds, "acc", 1.0, 100.0, "dlbench more accurate", "dlbench less accurate")
    assert q["diff"] == pytest.approx(0.05)
    assert q["ci95"] == pytest.approx((-0.5, 0.4))
    assert q["verdict"] == "PASS"
    # dlbench: 0.695 0.712 0.720 0.734 0.737 0.751 -> median (0.720 + 0.734) / 2
    assert q["dlbench_median"] == pytest.approx(72.7)
    assert q["standalone_median"] == pytest.approx(72.5)
    assert q["max_abs_seed_diff"] == pytest.approx(0.5)
    assert [p["seed"] for p in q["per_seed"]] == [1, 11, 21, 31, 41, 51]


def test_quality_summary_pairs_each_seed_with_its_own() -> None:
    # Same seeds give the same accuracies but the repeats' order differs across seeds: the
    # medians agree, each pair agrees, no interval from 2 rounds.
    rounds = _rounds([[0.68, 0.73], [0.70, 0.74]], [[0.68, 0.73], [0.70, 0.7410]])
    q = quality_summary(rounds, "acc", 1.0, 100.0)
    assert q["ci95"] is None
    assert q["verdict"] == "UNDECIDED (2 rounds: a 95% interval needs 6)"
    assert [p["seed"] for p in q["per_seed"]] == [1, 2, 11, 12]
    assert [p["diff"] for p in q["per_seed"]] == pytest.approx([0.0, 0.0, 0.0, -0.1])
    assert q["max_abs_seed_diff"] == pytest.approx(0.1)


def test_seeds_of_rounds_and_repeats() -> None:
    args = Namespace(seed=5, warmup=1, repeats=3, round_seeds="distinct")
    assert [round_seed(args, k) for k in range(3)] == [5, 9, 13]
    # dlbench's repeat_seed in block 0 and the scripts: seed + repeat, warm-up repeats first.
    assert measured_seeds(9, 1, 3) == [10, 11, 12]
    args.round_seeds = "same"
    assert [round_seed(args, k) for k in range(3)] == [5, 5, 5]


def _row(repeat: int, warmup: int, phase: str, metric: str, value: float, seq: int | None = None) -> dict[str, object]:
    return {"repeat": repeat, "warmup": warmup, "phase": phase, "metric": metric, "value": value, "seq": seq}


def test_dlbench_values_per_repeat_last_epoch_loss() -> None:
    rows = [
        _row(2, 0, "accuracy", "accuracy", 0.71),
        _row(2, 0, "train", "loss", 0.9, 1),
        _row(2, 0, "train", "loss", 1.4, 0),
        _row(2, 0, "train", "time", 3.0),
        _row(1, 0, "train", "time", 2.0),
        _row(1, 0, "train", "loss", 1.5, 0),
        _row(1, 0, "train", "loss", 1.0, 1),
        _row(1, 0, "accuracy", "accuracy", 0.68),
        _row(1, 0, "infer", "time", 9.0),
        {"repeat": None, "warmup": 0, "phase": "process", "metric": "setup_time", "value": 4.0, "seq": None},
    ]
    assert dlbench_values(rows, 2) == {
        "train_times": [2.0, 3.0],
        "train_losses": [1.0, 0.9],
        "test_accuracies": [0.68, 0.71],
    }
    with pytest.raises(RuntimeError, match="expected 3 measured train times"):
        dlbench_values(rows, 3)
    with pytest.raises(RuntimeError, match="has no accuracy"):
        dlbench_values([r for r in rows if r["phase"] != "accuracy"], 2)
