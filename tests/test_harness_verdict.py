"""benchmarks/harness_vs_standalone.py's verdict: per-round ratios (one process a side per
round) and a distribution-free interval for their median, against hand-computed cases."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from harness_vs_standalone import median_interval, verdict  # type: ignore[import-not-found]  # noqa: E402


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
