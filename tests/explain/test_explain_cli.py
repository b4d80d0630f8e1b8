"""`dlbench explain` end to end: a gap made by a known setting is explained by that
setting, every profiled trial's categories add up to its step time, and bad input
gets one line."""

from __future__ import annotations

import json
import os

import pytest
from typer.testing import CliRunner

from dlbench.cli import app
from dlbench.explain import ablation
from dlbench.store import Store
from dlbench.trial.spec import case_from_dict

pytest.importorskip("torch", reason="PyTorch is not installed")
runner = CliRunner()

# The two source runs give explain its cases (A and B are named with --case/--vs, not
# chosen by their step times): one repeat each; the gap is measured by the explain run.
RUN = [
    "run", "--trials", "1", "--framework", "torch", "--model", "lenet5", "--dataset", "synthetic",
    "--batch-size", "128",
    "--steps", "12", "--repeats", "1", "--warmup", "0", "--train-samples", "1024", "--test-samples", "64",
    "--latency-batches", "0", "--infer-min-time", "0", "--samplers", "none",
]  # fmt: skip


def _invoke(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def explained(tmp_path_factory):
    """B: 1 thread, glorot-uniform (run 1); A: 2 threads, framework-default init (run 2);
    the explain run (3) toggles B's threads and init toward A's.

    Threads, because the other settings dlbench controls do not slow this case down on
    this CPU (measured, 1 thread, batch 128: the numpy pipeline 0.80x and bf16-mixed
    0.79x of preloaded float32's train time). Two OpenMP threads are at the mercy of
    anything else running on the machine (docs/troubleshooting.md, "A busy machine"): run this alone.
    Ten blocks: with eight, a CI run found threads closing 0.97 of the gap, CI [0.90, 1.17],
    yet not decided by the paired test (its projection asked for nine blocks)."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("the known gap is 1 thread against 2: this process may use one core only")
    tmp = tmp_path_factory.mktemp("explain")
    db = str(tmp / "e.db")
    _invoke(*RUN, "--threads", "1", "--db", db)
    _invoke(*RUN, "--threads", "2", "--init", "framework-default", "--db", db)
    out = tmp / "explain.md"
    _invoke(
        "explain", "2", "--case", "torch", "--vs", "torch", "--vs-run", "1", "--only", "threads,init",
        "--blocks", "10", "--repeats", "1", "--warmup", "1", "--profile-steps", "4", "--profile-calls", "1",
        "--traces", str(tmp / "traces"),
        "--format", "markdown", "--out", str(out), "--db", db,
    )  # fmt: skip
    with Store(db) as store:
        trials, rows = store.trials(3), store.measurements(3, latency=False)
        stored_pairs = store.explain(3)
        command = store.run(3).command
    cases = {t.case_key: case_from_dict(t.case) for t in trials}
    (pair,) = ablation.pairs_from(stored_pairs, cases)
    return {
        "gap": ablation.analyse(pair, ablation.step_times(trials, rows)),
        "trials": trials,
        "rows": rows,
        "markdown": out.read_text(),
        "traces": sorted((tmp / "traces").iterdir()),
        "db": db,
        "command": command,
    }


def test_the_setting_that_made_the_gap_closes_the_largest_share(explained):
    gap = explained["gap"]
    assert gap.significant, (gap.a_median_s, gap.b_median_s)
    effects = {e.role: e for e in gap.effects}
    assert set(effects) == {"threads", "init"}  # B with both toggles is A itself: not rerun
    threads, init = effects["threads"], effects["init"]
    assert threads.measurable and threads.closure > 0.5, (threads.closure, threads.ci)
    assert threads.closure > init.closure
    # Initialization changes no work: its share is indistinguishable from zero or small.
    assert not init.measurable or abs(init.closure) < 0.25, (init.closure, init.ci)
    text = explained["markdown"]
    assert "The largest share is threads" in text
    assert "B with every toggle at once is A itself" in text


def test_the_explain_run_records_the_command_as_typed(explained):
    words = explained["command"].split()
    assert words[:3] == ["dlbench", "explain", "2"]
    assert "--format markdown" in explained["command"] and "--fmt" not in words and "--run-id" not in words


def test_every_profiled_trial_adds_up_and_keeps_its_trace(explained):
    from dlbench.explain.categories import CATEGORIES

    profiled: dict[int, dict[str, float]] = {}
    for m in explained["rows"]:
        if m["phase"] == "profile":
            profiled.setdefault(m["trial_id"], {})[m["metric"]] = m["value"]
    ok = [t for t in explained["trials"] if t["status"] == "ok"]
    assert set(profiled) == {t["id"] for t in ok}
    for values in profiled.values():
        assert sum(values[c] for c in CATEGORIES) == pytest.approx(values["step_time"], rel=1e-9)
        assert values["steps"] == 4
        assert values["busy_time"] <= values["step_time"] * 1.0001
    for t in ok:
        manifest = json.loads(t["manifest_json"])
        assert manifest["profile"].startswith("torch.profiler")
        assert manifest["profile_trace"].endswith(".trace.json.gz")
        assert manifest["timed_threads"] == json.loads(t["case_json"])["threads"]
        # The default runtime imposes nothing: glibc's own thresholds, as a plain script has them.
        assert manifest["runtime"] == "defaults" and manifest["runtime_applied"] == []
        if not any(k.startswith("MALLOC_") for k in os.environ):
            assert manifest["allocator"]["malloc_thresholds_set_by"] == "nobody: glibc's dynamic ones"
    assert len(explained["traces"]) == len(ok)


def test_the_report_renders_in_every_format(explained, tmp_path):
    db = explained["db"]
    console = _invoke("explain", "--show", "3", "--db", db)
    assert "slower than" in console and "gap closed" in console
    html = tmp_path / "e.html"
    _invoke("explain", "--show", "3", "--format", "html", "--out", str(html), "--db", db)
    text = html.read_text()
    assert text.startswith("<!DOCTYPE html>") and "data:image/svg+xml;base64," in text
    assert "profile: ms per step by category" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--case", "torch"], "--case and --vs go together"),
        (["--case", "mxnet", "--vs", "torch"], "--case 'mxnet': no case of the run matches"),
        (["--case", "torch", "--vs", "colour=red"], "unknown setting 'colour'"),
        (["--case", "torch", "--vs", "torch", "--vs-run", "2", "--only", "speed"], "unknown setting 'speed'"),
        (["--blocks", "1"], "--blocks 1: allowed 2..1000 (a CI needs two blocks)"),
        (["--repeats", "20000"], "repeats = 20000: must be >= 1 and <= 10000"),
        (["--show", "1"], "this run is not an explain run"),
        (["--format", "latex"], "explain writes console, markdown or html"),
    ],
)
def test_bad_input_is_one_line(explained, args, message):
    result = runner.invoke(app, ["explain", "1", *args, "--db", explained["db"]])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output
    with Store(explained["db"]) as store:
        assert len(store.runs()) == 3  # nothing stored, nothing lost
