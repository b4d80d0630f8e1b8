"""The console says each thing once, at the width it is given: one samplers line, one busy
note with a marker on the rows it concerns, case names without the shared settings, one
unit per time chosen for its size, what each time covers, hanging indents, no progress
residue off a terminal, and the stored measurements no other table showed."""

from __future__ import annotations

import io
import os
import statistics
import subprocess
import sys

import pytest
from rich.console import Console

from dlbench.analysis import stats
from dlbench.analysis.comparisons import Groups, rankings
from dlbench.report.answer import BUSY_MARK, build_answer
from dlbench.report.console import print_report, wrapped
from dlbench.terminal import drop_shared, duration, time_unit

WIDTH = 100


def test_a_time_is_written_in_the_unit_its_size_reads_best_in():
    # The issue's own numbers: 0.1715 s is 172 ms, 0.0427 s is 42.7 ms, wherever it is printed.
    assert duration(0.1715) == "172 ms"
    assert duration(0.0427) == "42.7 ms"
    assert duration(3.02e-4) == "302 µs"
    assert duration(5.032) == "5.03 s"
    assert duration(171.5) == "2.86 min"
    assert duration(1.25) == "1.25 s" and duration(float("nan")) == "—"
    # One unit for a set of times, from its smallest: every value at least 1 in it.
    assert time_unit([0.0136, 5.03]) == ("ms", 1e-3) and time_unit([130.0, 400.0]) == ("min", 60.0)


def test_case_names_leave_out_the_words_every_case_shares():
    labels = ["jax:jit mlp digits b32 adam 3 ep", "torch:eager mlp digits b32 adam 3 ep"]
    assert drop_shared(labels) == ["jax:jit", "torch:eager"]
    assert drop_shared(["torch:eager mlp digits", "torch:eager cnn digits"]) == ["mlp", "cnn"]
    assert drop_shared(["only mlp"]) == ["only"]  # a single case keeps its first word


def test_wrapped_sentences_get_a_hanging_indent_and_keep_a_number_with_its_unit():
    text = "  " + "tensorflow:graph 13.5× slower than jax:jit, median 302 µs; " * 5
    lines = wrapped(text, 60)
    assert len(lines) > 2 and all(len(line) <= 60 for line in lines), lines
    assert lines[0].startswith("  tensorflow") and all(line.startswith("      ") for line in lines[1:])
    assert not any(line.rstrip().endswith(" 302") for line in lines)  # "302 µs" never split


def _busy_answer():
    fast = [1.0, 1.1, 0.9, 1.05, 0.95, 1.02]
    values = {"torch:eager": [5 * v for v in fast], "jax:jit": fast, "tensorflow:graph": [2 * v for v in fast]}
    groups = [
        (Groups(subject, "train", "train time", values, paired=False), stats.compare_many(values, paired=False))
        for subject in ("mlp digits b32 adam 3 ep", "cnn digits b32 adam 3 ep")
    ]
    busy = {"torch:eager mlp digits b32 adam 3 ep": 40.0, "jax:jit cnn digits b32 adam 3 ep": 60.0}
    return build_answer(rankings(groups), busy=busy, per={"train": "3 epochs"}, cases=6)


def test_the_busy_warning_is_said_once_with_its_remedy_and_marks_the_lines_it_concerns():
    answer = _busy_answer()
    text = "\n".join(answer.lines() + answer.notes)
    assert text.count("measured on a busy machine") == 1
    assert "re-measure on a quiet machine" in text and "during 2 of 6 cases" in text
    marked = [line for line in answer.lines() if BUSY_MARK in line]
    # torch:eager in mlp (a line of its own) and jax:jit, the fastest, in cnn (the head line).
    assert len(marked) == 2, marked
    assert marked[0].strip().startswith("torch:eager") and "is fastest" in marked[1]
    # The subjects name what differs (mlp / cnn), not the settings every case shares.
    subjects = [line for line in answer.lines() if not line.startswith(" ")]
    assert subjects == ["mlp", "cnn"]
    assert all(i.metric == "train time (3 epochs)" for i in answer.items)
    # No full case label in the note: "adam 3 ep" is said once, in the shared settings.
    assert "adam" not in answer.notes[0]
    # One busy case of several: "1 of 3 cases", not "1 of 3 case".
    fast = [1.0, 1.1, 0.9, 1.05, 0.95, 1.02]
    values = {"torch:eager": [5 * v for v in fast], "jax:jit": fast}
    groups = [(Groups("mlp", "train", "train time", values, paired=False), stats.compare_many(values, paired=False))]
    one = build_answer(rankings(groups), busy={"torch:eager mlp": 40.0}, cases=3)
    assert "during 1 of 3 cases (" in one.notes[0], one.notes[0]


def test_where_every_case_ran_busy_the_note_says_every_and_no_line_is_marked():
    fast = [1.0, 1.1, 0.9, 1.05, 0.95, 1.02]
    values = {"torch:eager": [5 * v for v in fast], "jax:jit": fast}
    groups = [
        (Groups("mlp digits", "train", "train time", values, paired=False), stats.compare_many(values, paired=False))
    ]
    busy = {"torch:eager mlp digits": 40.0, "jax:jit mlp digits": 90.0}
    answer = build_answer(rankings(groups), busy=busy, cases=2)
    assert not [line for line in answer.lines() if BUSY_MARK in line]
    assert "up to 90% of the CPU during every case (2): every number here" in answer.notes[0]


@pytest.fixture(scope="module")
def stored(small_db):
    from dlbench.report.model import build_report
    from dlbench.store import Store

    with Store(small_db, readonly=True) as store:
        report = build_report(store, store.run()["id"], hypotheses=False)
        rows = store.measurements(report.run["id"], latency=False)
    out = io.StringIO()
    print_report(Console(file=out, width=WIDTH, markup=False, color_system=None), report)
    return report, rows, out.getvalue()


def test_the_report_keeps_to_its_width_and_prints_samplers_in_one_line(stored):
    _, _, text = stored
    assert max(map(len, text.splitlines())) <= WIDTH, text
    assert "telemetry samplers" not in text  # the table: dlbench env, report --details
    assert len([line for line in text.splitlines() if line.startswith("telemetry:")]) <= 1


def _median(rows, phase: str, metric: str) -> float:
    return statistics.median(
        r["value"] for r in rows if r["phase"] == phase and r["metric"] == metric and not r["warmup"]
    )


def test_the_stored_measurements_are_shown_with_their_stored_values(stored):
    report, rows, text = stored
    table = report.measured
    assert table is not None and table in report.summary  # the written formats and HTML show it too
    (row,) = table.rows  # one case
    cells = dict(zip(table.columns, row))
    assert cells["compile"] == duration(_median(rows, "compile", "time"))
    assert cells["parameters"] == f"{_median(rows, 'build', 'parameters'):,.0f}"
    assert float(cells["samples/s"].replace(",", "")) == pytest.approx(_median(rows, "train", "throughput"), rel=1e-3)
    # small_db ran with --samplers none: no memory peak was read, and the cells say so.
    assert not [r for r in rows if r["metric"] == "memory.peak_rss"]
    assert cells["peak RSS"] == cells["device"] == "not measured: no memory peak stored (the memory sampler was off)"
    epochs = report.summaries[0].case["epochs"]
    compile_s, train_s = _median(rows, "compile", "time"), _median(rows, "train", "time")
    assert cells["% epoch 1"] == f"{compile_s / (compile_s + train_s / epochs):.0%}"
    losses = [r for r in rows if r["phase"] == "train" and r["metric"] == "loss"]
    assert cells["final loss"] == f"{max(losses, key=lambda r: r['seq'])['value']:.4g}"
    # The console: the reason once under the table, the cell a mark pointing to it.
    assert "what else was measured" in text and "(a) not measured: " in text


def test_each_time_says_what_it_covers(stored):
    report, rows, text = stored
    epochs = report.summaries[0].case["epochs"]
    passes = {
        round(t["value"] * r["value"])
        for t in rows
        if t["phase"] == "infer" and t["metric"] == "time"
        for r in rows
        if r["phase"] == "infer"
        and r["metric"] == "throughput"
        and (r["trial_id"], r["repeat"]) == (t["trial_id"], t["repeat"])
    }
    (samples,) = passes
    (covers,) = [n for n in report.glance.notes if n.startswith("one time = ")]  # under the table, not its title
    assert f"train: {epochs} epoch" in covers and f"infer: a pass over {samples:,} test samples" in covers
    assert [t.title for t in report.summary][:2] == [
        f"train time, {epochs} epoch{'s' if epochs != 1 else ''}",
        f"infer time, a pass over {samples:,} test samples in batches of {report.summaries[0].case['batch_size']}",
    ]


def _console_width(env: dict[str, str]) -> int:
    code = "from dlbench.cli.common import console; print(console.width)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return int(out.stdout)


def test_off_a_terminal_the_width_is_columns_else_100():
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    assert _console_width(env) == 100
    assert _console_width({**env, "COLUMNS": "123"}) == 123


def test_no_progress_bar_is_drawn_off_a_terminal():
    from dlbench.progress import RunProgress

    log = Console(file=io.StringIO(), width=WIDTH)
    terminal = Console(file=io.StringIO(), width=WIDTH, force_terminal=True)
    assert RunProgress(log, None, 1).progress.disable
    assert not RunProgress(terminal, None, 1).progress.disable


def test_threads_a_framework_did_not_run_leave_the_shared_settings_line():
    import json

    from dlbench.report.coverage import partial_settings, row_notes
    from dlbench.report.tables import common_settings

    def trial(key: str, manifest: dict) -> dict:
        return {"case_key": key, "manifest_json": json.dumps(manifest)}

    partial = partial_settings(
        [
            trial("a", {"threads_requested": 2, "intra_op_threads": 2}),
            trial("b", {"threads_requested": 2, "intra_op_threads": 1}),
            trial("c", {"threads_requested": 2, "intra_op_threads": "shared with intra-op pool"}),
        ]
    )
    assert partial == {"b": {"threads": "ran 1 intra-op thread"}}
    cases = [{"framework": "torch", "threads": 2}, {"framework": "jax", "threads": 2}]
    assert "threads=2" in common_settings(cases)
    assert "threads=" not in common_settings(cases, leave_out={"threads"})
    assert row_notes(partial, {"b": cases[1]}) == {"b": ["threads=2 (ran 1 intra-op thread)"]}


def test_settings_a_knn_lacks_are_shared_only_by_the_cases_that_have_them():
    from dlbench.report.tables import common_settings

    nn = {"framework": "torch", "variant": "eager", "model": "mlp", "dataset": "digits", "batch_size": 32}
    nn |= {"threads": 2, "device": "cpu", "init": "glorot-uniform", "optimizer": "adam", "lr": 0.001, "epochs": 3}
    knn = {"framework": "sklearn", "variant": "default", "model": "knn", "dataset": "digits", "batch_size": 32}
    knn |= {"threads": 2, "device": "cpu", "init": None, "optimizer": "none", "lr": None, "epochs": None}
    both = common_settings([nn, knn, nn | {"framework": "jax", "variant": "jit"}])
    every, some = both.split("; by every case but knn (which takes none of them): ")
    assert "init=" not in every and "optimizer=" not in every and "threads=2" in every
    assert "init=glorot-uniform" in some and "optimizer=adam" in some and "epochs=3" in some
    # Without the k-NN every setting is every case's.
    assert "; by every case but" not in common_settings([nn, nn | {"framework": "jax"}])


def test_a_table_printed_by_a_command_fits_the_width_without_losing_its_last_column():
    """show_table fits a table to the console: unfitted, compare's 8 columns rendered past 100
    columns and the log cut the last one off (its border and the 'sample' column gone)."""
    import io

    from rich.console import Console

    from dlbench.cli import common
    from dlbench.report.render import TableData

    t = TableData(
        "B relative to A",
        ["case", "metric", "median A", "median B", "ratio B/A [95% CI]", "p", "verdict", "sample"],
        nowrap=frozenset({"ratio B/A [95% CI]", "verdict", "median A", "median B"}),
        optional=("sample",),
    )
    t.add_row("tensorflow:graph", "inference time", "3.606 ms", "4.323 ms", "1.199 [0.917, 1.369]",
              "— (not in turns)", "no verdict", "5+5 trial medians, unpaired")  # fmt: skip
    out = io.StringIO()
    console = Console(file=out, width=100, force_terminal=False, color_system=None)
    original = common.console
    common.console = console
    try:
        common.show_table(t)
    finally:
        common.console = original
    lines = out.getvalue().splitlines()
    assert max(map(len, lines)) <= 100
    table = [line for line in lines if line[:1] in "┏┃┡│└"]
    assert table and all(line[-1] in "┓┃┩│┘" for line in table), table  # every row closed: nothing cut off
    assert "4.323 ms" in out.getvalue()  # a value keeps its unit on its line
    assert "(left out to fit 100 columns: sample)" in out.getvalue()
