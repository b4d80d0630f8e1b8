"""The answer block: who is fastest, by how much, whether it is real, in words a
reader can check by hand; and the console fitting tables without breaking words."""

from __future__ import annotations

import io

from rich.console import Console

from dlbench.analysis import stats
from dlbench.analysis.comparisons import Groups, rankings
from dlbench.report.answer import build_answer, duration
from dlbench.report.console import rich_table
from dlbench.report.render import TableData


def _analysed(values: dict[str, list[float]], metric: str = "train time", phase: str = "train"):
    g = Groups("mlp digits b32", phase, metric, values, paired=False)
    return [(g, stats.compare_many(values, paired=False))]


def test_two_separated_samples_read_as_a_ratio_with_exact_p():
    fast = [1.0, 1.1, 0.9, 1.05, 0.95, 1.02]
    slow = [5 * v for v in fast]
    answer = build_answer(rankings(_analysed({"torch:eager": slow, "jax:jit": fast})))
    (item,) = answer.items
    assert item.best == f"jax:jit is fastest: median {duration(sorted(fast)[2] / 2 + sorted(fast)[3] / 2)}"
    (line,) = item.others
    # medians 5.05 / 1.01 = 5.00; Mann-Whitney 6 vs 6 fully separated: p = 2 / C(12, 6) = 2 / 924
    assert line.startswith("torch:eager 5.00× slower than jax:jit [95% CI ")
    assert line.endswith("p = 0.0022 (the smallest 6+6 values can give): slower"), line


def test_one_process_per_case_gives_a_ratio_and_says_why_there_is_no_verdict():
    fast = [1.0, 1.1, 0.9, 1.05, 0.95, 1.02]
    values = {"torch:eager": [5 * v for v in fast], "jax:jit": fast}
    g = Groups("mlp digits b32", "train", "train time", values, paired=False)
    answer = build_answer(rankings([(g, stats.compare_many(values, paired=False, independent=False))]))
    (item,) = answer.items
    assert item.best.startswith("no framework is decided fastest here (lowest median: jax:jit")
    (line,) = item.others
    assert "[within-process 95% CI" in line and line.endswith("no verdict: one process per case"), line
    assert "p =" not in line  # a p-value over one process's repeats is no evidence about the code
    note = " ".join(answer.notes)
    assert "compares two processes, not two codes" in note and "--trials 4" in note


def test_too_few_trials_says_how_many_would_decide():
    answer = build_answer(rankings(_analysed({"a:x": [1.0, 1.1, 1.2], "b:y": [2.0, 2.1, 2.2]})))
    (line,) = answer.items[0].others
    # 3 + 3 values: the smallest exact two-sided p is 2 / C(6, 3) = 0.1 >= 0.05; 4 + 4 reaches 2/70.
    assert "undecided: too few trials; the exact test needs at least 4 trials per framework" in line, line
    assert "p = 0.1 (the smallest 3+3 values can give)" in line


def test_three_frameworks_count_the_holm_family():
    base = [1.0, 1.01, 0.99, 1.02, 0.98]
    answer = build_answer(
        rankings(_analysed({"a:x": base, "b:y": [2 * v for v in base], "c:z": [3 * v for v in base]}))
    )
    lines = answer.items[0].others
    assert [line.split()[0] for line in lines] == ["b:y", "c:z"]  # fastest first, then in order
    # 5 + 5 separated: p = 2/252 = 0.0079, times 3 for Holm is 0.024 < 0.05: still decidable
    assert all(line.endswith(": slower") for line in lines), lines


def test_accuracy_is_stated_in_percentage_points():
    hi, lo = [0.95, 0.951, 0.949, 0.952, 0.948, 0.95], [0.90, 0.901, 0.899, 0.902, 0.898, 0.90]
    g = Groups("mlp digits b32", "accuracy", "accuracy", {"a:x": lo, "b:y": hi}, paired=False)
    answer = build_answer(rankings([], [(g, stats.compare_many(g.values, paired=False))]))
    item = answer.items[0]
    assert item.best == "b:y is most accurate: median 95.00%"  # decided: 6 + 6 separated, CI outside ±2%
    assert item.others[0].startswith("a:x 5.00 pp lower [95% CI ") and item.others[0].endswith("less accurate")


def test_most_accurate_only_when_decided():
    # Overlapping accuracies of independent trials: the best median is not "most accurate".
    a, b = [0.95, 0.93, 0.96, 0.94, 0.95, 0.97], [0.94, 0.96, 0.95, 0.93, 0.96, 0.95]
    g = Groups("mlp digits b32", "accuracy", "accuracy", {"a:x": a, "b:y": b}, paired=True)
    answer = build_answer(rankings([], [(g, stats.compare_many(g.values, paired=True))]))
    item = answer.items[0]
    assert item.best.startswith("no framework is more accurate here (highest median: "), item.best
    assert "most accurate" not in item.best


def test_the_answer_states_its_band_and_alpha():
    fast = [1.0, 1.1, 0.9, 1.05, 0.95, 1.02]
    values = {"torch:eager": [5 * v for v in fast], "jax:jit": fast}
    g = Groups("mlp digits b32", "train", "train time", values, paired=True)
    answer = build_answer(
        rankings([(g, stats.compare_many(values, paired=True, band=0.05, alpha=0.01))]), band=0.05, alpha=0.01
    )
    assert "verdicts at band ±5% and alpha 0.01" in answer.notes[0]


def test_durations_keep_three_digits_with_a_unit():
    assert [duration(x) for x in (1.523, 0.0382, 0.000682, 12.0)] == ["1.52 s", "38.2 ms", "682 µs", "12 s"]


def test_console_never_breaks_a_word_and_drops_optional_columns_first():
    t = TableData("t", ["framework", "model", "train s", "n", "note"], optional=("n",), nowrap=frozenset({"train s"}))
    for _ in range(3):
        t.add_row("tensorflow:eager", "mobilenet_v2", "0.03822", "6", "noisy; 1 process; measured on a busy machine")
    buf = io.StringIO()
    Console(file=buf, width=58).print(rich_table(t, 58))
    text = buf.getvalue()
    for word in ("tensorflow:eager", "mobilenet_v2", "0.03822", "process", "machine"):
        assert word in text, text
    assert "left out to fit 58 columns: n" in text
    assert max(len(line) for line in text.splitlines()) <= 58


def test_the_busy_note_does_not_advise_one_thread_to_cases_that_ran_one_thread():
    from dlbench.report.answer import build_answer

    one = build_answer([], busy={"torch:eager mlp": 40.0}, busy_threads=frozenset({1}))
    two = build_answer([], busy={"torch:eager mlp": 40.0}, busy_threads=frozenset({1, 2}))
    assert "--threads 1" not in one.notes[0] and "already ran one intra-op thread" in one.notes[0]
    assert "pin a 1-thread worker (--threads 1 under taskset)" in two.notes[0]
    assert one.notes[0].startswith("[BUSY] measured on a busy machine: other processes took up to 40% of the CPU")
