"""Quality metrics beyond accuracy (analysis.quality): a regression model's test MSE and a
next-token model's perplexity are tabled, put into the answer and compared run vs run
with their own label and direction (lower is better), never as a percentage."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest

from dlbench.analysis import quality
from dlbench.report.model import build_report
from dlbench.store import Measurement, Store
from stored_cases import stored_case

BLOCKS = 8  # paired Wilcoxon over 8 blocks: p = 2/256, clear of alpha 0.05


# case key -> (case, its quality rows per block: (metric, unit, value))
REGRESS = {
    "reg-torch": (stored_case("torch", "eager", "mlp", "housing"), (("mse", "squared target units", 0.040),)),
    "reg-jax": (stored_case("jax", "jit", "mlp", "housing"), (("mse", "squared target units", 0.060),)),
}
NEXT_TOKEN = {
    "lm-torch": (
        stored_case("torch", "eager", "lstm", "tokens"),
        (("accuracy", "fraction", 0.40), ("perplexity", "", 12.0)),
    ),
    "lm-jax": (
        stored_case("jax", "jit", "lstm", "tokens"),
        (("accuracy", "fraction", 0.35), ("perplexity", "", 15.0)),
    ),
}


def _new_run(store: Store, name: str) -> int:
    return store.create_run(
        name=name,
        command=f"dlbench run {name}.toml",
        config_source=f"{name}.toml",
        config_text=f'[experiment]\nname = "{name}"\n',
        experiment={},
        environment={"hostname": "test", "packages": {"numpy": "2"}},
        version="0.1.0",
    )


def _trial(store: Store, run_id: int, key: str, case: dict, block: int, pos: int, rows: tuple, worse: float) -> None:
    """One ok trial: three repeats of train/infer time (the same in every run) and of its
    quality rows, each value x (1 + 1% per block), a quality value x `worse`."""
    tid = store.add_trial(run_id, case_key=key, block=block, position=pos, case=case, protocol={})
    store.start_trial(tid)
    drift = 1 + 0.01 * block
    values = [Measurement(r, False, "train", "time", 1.0 * drift * (1 + 0.001 * r), "s") for r in range(3)]
    values += [Measurement(r, False, "infer", "time", 0.01 * drift, "s") for r in range(3)]
    for metric, unit, value in rows:
        values += [Measurement(r, False, "accuracy", metric, value * drift * worse, unit) for r in range(3)]
    store.add_measurements(tid, values)
    store.finish_trial(tid, status="ok", error=None, returncode=0, wall_s=1.0, stderr="")


@pytest.fixture(scope="module")
def mixed_run(tmp_path_factory) -> Path:
    """One run of two tasks: a regression set (torch's test MSE 0.04, jax's 0.06) and a
    next-token set (torch: token accuracy 40%, perplexity 12; jax: 35%, 15)."""
    db = tmp_path_factory.mktemp("quality") / "q.db"
    store = Store(db)
    run_id = _new_run(store, "mixed")
    for block in range(BLOCKS):
        for pos, (key, (case, rows)) in enumerate({**REGRESS, **NEXT_TOKEN}.items()):
            _trial(store, run_id, key, case, block, pos, rows, 1.0)
    store.finish_run(run_id, "finished")
    store.close()
    return db


def _item(report, metric: str, model: str):
    (item,) = [i for i in report.answer.items if i.metric == metric and model in i.subject]
    return item


def test_the_declaration_names_direction_label_and_unit():
    mse = quality.quality("accuracy", "mse")
    assert mse is not None and not mse.higher_is_better and mse.title == "test MSE" and mse.tasks == ("regress",)
    assert mse.worse_verdict == "slower" and mse.value(0.04213) == "0.04213"
    acc = quality.quality("accuracy", "accuracy")
    assert acc is not None and acc.higher_is_better and acc.title == "accuracy (%)" and acc.value(0.9) == "90.00%"
    assert acc.worse_verdict == "faster"
    assert quality.quality("train", "mse") is None  # a quality metric lives under phase "accuracy" only
    assert [q.metric for q in quality.for_task("next-token")] == ["accuracy", "perplexity"]


def test_the_answer_names_the_lowest_test_mse_and_lowest_perplexity(mixed_run):
    store = Store(mixed_run, readonly=True)
    report = build_report(store, 1, hypotheses=False)
    store.close()
    mse = _item(report, "test MSE", "mlp")
    # torch's median: 0.04 x the median drift over 8 blocks (1.035); jax's 0.06 x 1.035.
    assert mse.best == "torch:eager has the lowest test MSE: median 0.0414", mse.best
    (line,) = mse.others
    # The difference of medians in the metric's own units, higher (not "pp lower"), and the
    # engine's verdict read in MSE's direction: worse, not "faster" or "less accurate".
    match = re.fullmatch(r"jax:jit 0\.0207 higher \[95% CI \+([\d.]+), \+([\d.]+)\], p = 0\.0078[^:]*: worse", line)
    assert match, line
    assert float(match[1]) <= 0.0207 <= float(match[2])
    assert not re.search(r"\d%", mse.best + line.replace("95% CI", "")) and "pp" not in line
    # The next-token set: token accuracy highest first in %, perplexity lowest first, plain.
    acc = _item(report, "accuracy", "lstm")
    assert acc.best == "torch:eager is most accurate: median 41.40%", acc.best
    assert acc.others[0].startswith("jax:jit 5.18 pp lower") and acc.others[0].endswith(": less accurate")
    ppl = _item(report, "perplexity", "lstm")
    assert ppl.best == "torch:eager has the lowest perplexity: median 12.42", ppl.best
    assert ppl.others[0].startswith("jax:jit 3.11 higher") and ppl.others[0].endswith(": worse")
    # Times first within a subject, quality metrics after them; no accuracy for the regression set.
    # (A time says per what where the store tells it: "train time (1 epoch)".)
    lstm = [i.metric.split(" (")[0] for i in report.answer.items if "lstm" in i.subject]
    assert lstm == ["train time", "inference time", "accuracy", "perplexity"], lstm
    mlp = [i.metric.split(" (")[0] for i in report.answer.items if "mlp" in i.subject]
    assert mlp == ["train time", "inference time", "test MSE"], mlp


def _table(text: str, title: str) -> str:
    """The Markdown table under the bold `title` (up to the next blank line after it)."""
    start = text.index(f"**{title}**")
    end = text.find("\n\n", text.index("|", start))
    return text[start : end if end > 0 else None]


def test_markdown_tables_show_test_mse_and_perplexity_as_plain_numbers(mixed_run, cli, tmp_path):
    out = tmp_path / "r.md"
    cli("report", "--format", "markdown", "--out", out, "--db", mixed_run)
    text = out.read_text(encoding="utf-8")
    assert "has the lowest test MSE: median 0.0414" in text
    mse = _table(text, "test MSE")
    assert "%" not in mse and "| 0.0414 |" in mse and "| 0.0621 |" in mse, mse
    assert "lstm" not in mse  # the next-token cases have no MSE: no rows of dashes for them
    accuracy = _table(text, "accuracy (%)")
    assert "| 41.40 |" in accuracy and "| 36.22 |" in accuracy and "housing" not in accuracy, accuracy
    perplexity = _table(text, "perplexity")
    assert "| 12.42 |" in perplexity and "| 15.53 |" in perplexity and "%" not in perplexity, perplexity


def test_console_and_html_name_test_mse_without_percent(mixed_run, cli, tmp_path):
    console = " ".join(cli("report", "--db", mixed_run).split())
    assert "torch:eager has the lowest test MSE: median 0.0414" in console
    assert "torch:eager has the lowest perplexity: median 12.42" in console
    assert "0.0414%" not in console and "4.14%" not in console
    out = tmp_path / "r.html"
    cli("report", "--format", "html", "--out", out, "--db", mixed_run)
    html = out.read_text(encoding="utf-8")
    assert "has the lowest test MSE: median 0.0414" in html and "test MSE (%)" not in html


def test_csv_writes_each_quality_metric_in_its_stored_unit(mixed_run, cli, tmp_path):
    out = tmp_path / "r.csv"
    cli("report", "--format", "csv", "--out", out, "--db", mixed_run)
    rows = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8"))))
    got = {(r["framework"], r["model"], r["metric"]): r for r in rows if r["phase"] == "accuracy"}
    assert set(got) == {
        ("torch", "mlp", "test MSE"),
        ("jax", "mlp", "test MSE"),
        ("torch", "lstm", "accuracy"),
        ("jax", "lstm", "accuracy"),
        ("torch", "lstm", "perplexity"),
        ("jax", "lstm", "perplexity"),
    }
    assert got[("torch", "mlp", "test MSE")]["unit"] == "squared target units"
    assert float(got[("torch", "mlp", "test MSE")]["median"]) == pytest.approx(0.0414)
    assert got[("jax", "lstm", "accuracy")]["unit"] == "fraction"
    assert float(got[("jax", "lstm", "perplexity")]["median"]) == pytest.approx(15.525)


def test_the_quality_figure_draws_test_mse_on_its_own_axis(mixed_run, tmp_path):
    from dlbench.report.plots import make_figures

    store = Store(mixed_run, readonly=True)
    figures = make_figures(store, 1, tmp_path, formats=("svg",), only=("06_accuracy_runs",))
    store.close()
    (figure,) = figures
    assert figure.title == "Test-set quality of every repeat (accuracy (%), test MSE, perplexity)"
    mse = {k: v for k, v in figure.data.items() if k.endswith("— test MSE")}
    assert mse and all("lstm" not in k for k in mse), list(figure.data)
    # The test MSE panel holds the stored values unscaled (0.04, not 4%).
    values = [v for panel in mse.values() for case in panel.values() for v in _numbers(case)]
    assert values and max(values) < 0.1, values


def _numbers(value) -> list[float]:
    if isinstance(value, float | int) and not isinstance(value, bool):
        return [float(value)]
    if isinstance(value, dict):
        return [n for v in value.values() for n in _numbers(v)]
    if isinstance(value, list | tuple):
        return [n for v in value for n in _numbers(v)]
    return []


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> Path:
    """Run 1 and run 2 taken in turns block by block (as `dlbench extend` takes them), the
    same times; in run 2 the test MSE is 50% higher, the token accuracy 10% higher and
    the perplexity 30% higher."""
    db = tmp_path_factory.mktemp("quality-compare") / "c.db"
    store = Store(db)
    first, second = _new_run(store, "before"), _new_run(store, "after")
    cases = {"reg-torch": REGRESS["reg-torch"], "lm-torch": NEXT_TOKEN["lm-torch"]}
    for block in range(BLOCKS):
        for run_id in (first, second):
            for pos, (key, (case, rows)) in enumerate(cases.items()):
                if run_id == second:
                    factor = {"mse": 1.5, "accuracy": 1.1, "perplexity": 1.3}
                    rows = tuple((m, u, v * factor[m]) for m, u, v in rows)
                _trial(store, run_id, key, case, block, pos, rows, 1.0)
    for run_id in (first, second):
        store.finish_run(run_id, "finished")
    store.close()
    return db


def _verdicts(output: str) -> dict[tuple[str, str], str]:
    """(model, metric) -> verdict of every compare row."""
    found = {}
    for line in output.splitlines():
        for model in ("mlp", "lstm"):
            for metric in ("train time", "inference time", "test MSE", "accuracy", "perplexity"):
                if model in line and f" {metric} " in line:
                    verdict = re.search(r"(REGRESSION|no meaningful difference|better|worse|faster|slower)", line)
                    found[(model, metric)] = verdict[1] if verdict else line
    return found


def test_compare_reads_a_higher_mse_as_a_regression(two_runs, cli, monkeypatch):
    from dlbench import cli as cli_module

    monkeypatch.setattr(cli_module.console, "width", 400)
    # Times only (the default): the same times, no regression.
    times = cli("compare", "1", "2", "--db", two_runs)
    assert "4 comparisons, 0 regressions" in " ".join(times.split()), times
    assert "test MSE" not in times
    # With the quality metrics: a higher MSE and perplexity are regressions, exit 1; a
    # higher token accuracy is better. Times carry their unit beside the plain quality values.
    worse = cli("compare", "1", "2", "--quality", "--db", two_runs, code=1)
    assert "7 comparisons, 2 regressions" in " ".join(worse.split()), worse
    verdicts = _verdicts(worse)
    assert verdicts[("mlp", "test MSE")] == "REGRESSION", worse
    assert verdicts[("lstm", "perplexity")] == "REGRESSION", worse
    assert verdicts[("lstm", "accuracy")] == "better", worse
    assert verdicts[("mlp", "train time")] == "no meaningful difference", worse
    assert "1.036 s" in worse and "median A (s)" not in worse
    assert "0.0414" in worse and "0.0621" in worse and "41.40%" in worse and "45.54%" in worse
    assert "moved" not in worse  # the machine-drift note weighs times, not a model's quality
    # The other way round: a lower MSE is better, a lower token accuracy a regression.
    back = cli("compare", "2", "1", "--quality", "--db", two_runs, code=1)
    verdicts = _verdicts(back)
    assert verdicts[("mlp", "test MSE")] == "better" and verdicts[("lstm", "perplexity")] == "better", back
    assert verdicts[("lstm", "accuracy")] == "REGRESSION", back
