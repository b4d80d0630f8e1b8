"""dlbench.results (stored results as pandas DataFrames) and `dlbench export` csv/json/parquet,
checked against raw SQL on real runs: numpy and torch on digits (run 1), numpy again (run 2)."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dlbench import results
from dlbench.analysis.comparisons import run_vs_run, within_run
from dlbench.analysis.stats import reverse
from dlbench.plan import DISTRIBUTION_DEFAULTS
from dlbench.store import Store

# Small and quick, but real: every phase, warm-up rows, one latency batch (a few rows with seq).
FLAGS = {
    "repeats": 3,
    "warmup": 1,
    "train_samples": 256,
    "test_samples": 128,
    "latency_batches": 1,
    "infer_min_time": 0,
    "threads": 1,
}


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory, tiny_run) -> Path:
    """Run 1: numpy and torch (one comparison set); run 2: numpy alone (a case both runs share)."""
    path = tmp_path_factory.mktemp("results") / "r.db"
    tiny_run(path, framework="numpy,torch", **FLAGS)  # the mlp on digits, 1 epoch, 1 trial, no samplers
    tiny_run(path, **FLAGS)
    return path


def _sql(db: Path, sql: str, *args: object) -> list[tuple]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def _normal(frame: pd.DataFrame) -> pd.DataFrame:
    """Values only: every column as objects, missing as None (each format has its own dtypes)."""
    return frame.astype(object).where(frame.notna(), None).reset_index(drop=True)


def _read(path: Path, fmt: str) -> pd.DataFrame:
    # case_key is text: a key of 16 digits, or like '12e4...', would otherwise be read as a number.
    if fmt == "csv":
        return pd.read_csv(path, dtype={"case_key": str})  # pandas 3 reads floats back exactly by default
    if fmt == "json":  # the dlbench/export document: its records, in its columns' order
        return _from_document(json.loads(path.read_text(encoding="utf-8")))
    return pd.read_parquet(path)


def _from_document(doc: dict) -> pd.DataFrame:
    assert (doc["schema"], doc["schema_version"]) == ("dlbench/export", 1)
    return pd.DataFrame(doc["measurements"], columns=doc["columns"])


def test_measurements_round_trip_every_stored_value(db: Path):
    with results.load(db) as data:
        m = data.measurements()
    assert len(m) == _sql(db, "SELECT COUNT(*) FROM measurements")[0][0]
    assert list(m.columns) == list(results.MEASUREMENT_COLUMNS)  # the mlp has no options
    fields = ("trial_id", "repeat", "warmup", "phase", "metric", "value", "unit", "seq", "method", "flag")
    raw = _sql(
        db,
        f"SELECT {', '.join('m.' + f for f in fields)} FROM measurements m JOIN trials t ON t.id = m.trial_id"
        " ORDER BY t.run_id, t.block, t.position, t.attempt, m.id",
    )
    got = _normal(m[list(fields)].assign(warmup=m["warmup"].astype(int)))
    # Exactly the stored values (None for NULL), row by row in the frame's order.
    assert list(got.itertuples(index=False, name=None)) == raw
    assert m["warmup"].any() and (m["seq"].notna()).any()
    cases = {tid: json.loads(c) for tid, c in _sql(db, "SELECT id, case_json FROM trials")}
    for column in ("layout", "pipeline", "input_shape", "lr", "seed", "train_samples"):
        assert m[column].tolist() == [cases[t][column] for t in m["trial_id"]]
    assert set(m["synthetic"].map(lambda v: v is None)) == {True}


def test_trials_one_row_per_trial_with_every_factor(db: Path):
    with results.load(db) as data:
        trials, runs = data.trials(), data.runs()
        first = data.trials(run=1)
        with pytest.raises(ValueError, match=r"no run 9; runs here: 1, 2$"):
            data.trials(run=9)
    assert len(trials) == _sql(db, "SELECT COUNT(*) FROM trials")[0][0] == 3
    assert list(trials.columns) == list(results.TRIAL_COLUMNS)
    assert sorted(first["framework"]) == ["numpy", "torch"] and set(first["status"]) == {"ok"}
    for _, t in trials.iterrows():
        case = json.loads(_sql(db, "SELECT case_json FROM trials WHERE id=?", int(t["trial_id"]))[0][0])
        # A single-device case stores no strategy, world size or batch scope: their defaults.
        case = {**DISTRIBUTION_DEFAULTS, **case}
        for factor in results.FACTOR_COLUMNS:
            assert (t[factor] is None or t[factor] is pd.NA) if case[factor] is None else t[factor] == case[factor]
    assert runs["id"].tolist() == [1, 2] and list(runs.columns) == list(results.RUN_COLUMNS)
    assert set(runs["status"]) == {"finished"}


def test_summary_medians_are_the_raw_values_medians(db: Path):
    with results.load(db) as data:
        summary = data.summary()
    assert list(summary.columns) == list(results.SUMMARY_COLUMNS)
    for _, row in summary[summary["metric"] == "time"].iterrows():
        values = [
            v
            for (v,) in _sql(
                db,
                "SELECT m.value FROM measurements m JOIN trials t ON t.id = m.trial_id WHERE t.run_id=?"
                " AND t.case_key=? AND m.phase=? AND m.metric=? AND m.warmup=0 AND t.status='ok'"
                " AND m.repeat IS NOT NULL",
                int(row["run_id"]),
                row["case_key"],
                row["phase"],
                row["metric"],
            )
        ]
        assert row["n"] == len(values) == 3
        assert row["median"] == float(np.median(values))
        assert row["q1"] <= row["median"] <= row["q3"] and row["min"] == min(values) and row["max"] == max(values)
        assert row["cv"] == pytest.approx(np.std(values, ddof=1) / np.mean(values))
    assert summary["within_process"].all()  # one trial per case: its repeats are the sample


def test_summary_of_several_trials_takes_each_trials_median(tiny_run, tmp_path: Path):
    path = tmp_path / "t.db"
    tiny_run(path, trials=2, repeats=3, threads=1)
    with results.load(path) as data:
        row = data.summary().query("phase == 'train' and metric == 'time'")
    per_trial = {}
    for tid, v in _sql(
        path,
        "SELECT m.trial_id, m.value FROM measurements m WHERE m.phase='train' AND m.metric='time' AND m.warmup=0",
    ):
        per_trial.setdefault(tid, []).append(v)
    assert len(per_trial) == 2 and not row["within_process"].item()
    assert row["median"].item() == float(np.median([np.median(v) for v in per_trial.values()]))


def test_compare_two_frameworks_reuses_the_reports_statistics(db: Path):
    with results.load(db) as data:
        compared = data.compare("torch", "numpy", run=1)
        inference = data.compare("numpy", "torch:eager", metric="infer.time", run=1)
        with pytest.raises(ValueError, match=r"^run 1: no 'jax' to compare; frameworks in it: numpy:reference, torch"):
            data.compare("torch", "jax", run=1)
        with pytest.raises(ValueError, match=r"^run 1: no metric 'train.tme'; measured: .*train\.time"):
            data.compare("torch", "numpy", metric="train.tme", run=1)
        with pytest.raises(ValueError, match="no 'torch' to compare"):
            data.compare("torch", "numpy")  # the latest run, 2, has numpy alone
    assert list(compared.columns) == list(results.COMPARE_COLUMNS)
    row = compared.iloc[0]
    assert len(compared) == 1 and (row["a"], row["b"], row["metric"]) == (
        "torch:eager",
        "numpy:reference",
        "train.time",
    )
    for side, framework in (("median_a", "torch"), ("median_b", "numpy")):
        values = _sql(
            db,
            "SELECT m.value FROM measurements m JOIN trials t ON t.id = m.trial_id WHERE t.run_id=1"
            " AND t.framework=? AND m.phase='train' AND m.metric='time' AND m.warmup=0",
            framework,
        )
        assert row[side] == float(np.median([v for (v,) in values]))
    assert row["ratio_a_over_b"] == pytest.approx(row["median_a"] / row["median_b"])
    assert row["ratio_b_over_a"] == pytest.approx(1 / row["ratio_a_over_b"])
    assert row["ci_low"] <= row["ratio_a_over_b"] <= row["ci_high"]
    assert row["ratio_b_over_a_ci_low"] <= row["ratio_b_over_a"] <= row["ratio_b_over_a_ci_high"]
    assert row["model"] == "mlp" and row["framework"] is None and row["n_a"] == row["n_b"] == 3
    # The same numbers as the report's verdicts (dlbench.analysis.comparisons.within_run).
    with Store(db, readonly=True) as store:
        verdicts, _ = within_run(store.trials(1), store.measurements(1, latency=False))
    (v,) = [v for v in verdicts if v.metric == "train time"]
    comp = v.comparison if v.a == "torch:eager" else reverse(v.comparison)  # the report may hold it either way
    assert (row["p_value"], row["p_adjusted"], row["verdict"]) == (comp.p_value, comp.p_adjusted, comp.verdict)
    assert row["ratio_a_over_b"] == pytest.approx(comp.ratio)
    assert inference.iloc[0]["a"] == "numpy:reference" and inference.iloc[0]["metric"] == "infer.time"


def test_compare_two_runs_is_dlbench_compare(db: Path):
    with results.load(db) as data:
        compared = data.compare(1, 2)
        with pytest.raises(ValueError, match="runs are compared on train.time, infer.time, tta.time"):
            data.compare(1, 2, metric="accuracy.accuracy")
        with pytest.raises(ValueError, match="no run 7"):
            data.compare(1, 7)
    row = compared.iloc[0]
    assert len(compared) == 1 and (row["a"], row["b"], row["framework"]) == ("run 1", "run 2", "numpy")
    with Store(db, readonly=True) as store:
        diffs = run_vs_run(
            store.trials(1), store.measurements(1), store.trials(2), store.measurements(2)
        )  # B relative to A
    (d,) = [d for d in diffs if d.metric == "train time"]
    assert d.comparison is not None
    assert row["ratio_b_over_a"] == d.comparison.ratio and row["p_value"] == d.comparison.p_value
    assert (row["median_a"], row["median_b"]) == (d.comparison.estimate_b, d.comparison.estimate_a)


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_export_reads_back_equal_to_measurements(db: Path, tmp_path: Path, fmt: str, cli):
    with results.load(db) as data:
        want = data.measurements(1)
    by_suffix = tmp_path / f"m.{fmt}"
    cli("export", by_suffix, "--run", "1", "--db", db)
    back = _read(by_suffix, fmt)
    assert list(back.columns) == list(want.columns)
    pd.testing.assert_frame_equal(_normal(back), _normal(want), check_exact=True)
    np.testing.assert_array_equal(back["value"].to_numpy(float), want["value"].to_numpy(float))  # bit for bit
    named = tmp_path / "m.out"  # --format wins over the suffix
    cli("export", named, "--format", fmt.upper(), "--run", "1", "--db", db)
    pd.testing.assert_frame_equal(_normal(_read(named, fmt)), _normal(want), check_exact=True)


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_export_to_standard_output_is_the_data_alone(db: Path, tmp_path: Path, fmt: str):
    """`export - --format F`: the document on standard output, the note on standard error."""
    import io
    import subprocess
    import sys

    with results.load(db) as data:
        want = data.measurements(1)
    done = subprocess.run(
        [sys.executable, "-m", "dlbench", "export", "-", "--format", fmt, "--run", "1", "--db", str(db)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "-").exists()
    assert f"wrote {len(want)} measurements of run 1 to standard output ({fmt})" in done.stderr
    text = io.StringIO(done.stdout)
    back = pd.read_csv(text, dtype={"case_key": str}) if fmt == "csv" else _from_document(json.load(text))
    assert len(back) == len(want) and list(back.columns) == list(want.columns)
    np.testing.assert_array_equal(back["value"].to_numpy(float), want["value"].to_numpy(float))
    refused = subprocess.run(
        [sys.executable, "-m", "dlbench", "export", "-", "--format", "parquet", "--db", str(db)],
        capture_output=True,
        text=True,
    )
    assert refused.returncode == 2 and "parquet is binary" in refused.stderr and not refused.stdout


def test_export_columns_name_every_factor(db: Path, tmp_path: Path, cli):
    out = tmp_path / "latest.csv"
    assert "of run 2" in cli("export", out, "--db", db)  # the latest run by default
    header = out.read_text().splitlines()[0].split(",")
    assert {"layout", "pipeline", "input_shape", "synthetic", "train_samples", "momentum"} <= set(header)
    assert header == list(results.MEASUREMENT_COLUMNS)


def test_export_unknown_format_is_one_line_and_writes_nothing(db: Path, tmp_path: Path, cli):
    out = tmp_path / "m.xml"
    assert cli("export", out, "--format", "xml", "--db", db, code=2).strip() == (
        "error: --format 'xml': allowed: csv, json, parquet"
    )
    assert not out.exists()
    assert len(cli("export", tmp_path / "m.csv", "--db", tmp_path / "none.db", code=2).strip().splitlines()) == 1
    assert not (tmp_path / "none.db").exists()


def test_load_of_a_missing_file_is_one_line_and_creates_nothing(tmp_path: Path):
    missing = tmp_path / "missing.db"
    with pytest.raises(FileNotFoundError) as info:
        results.load(missing)
    assert str(info.value).startswith(f"{missing}: no such database file") and "\n" not in str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_model_options_synthetic_and_retired_attempts_are_columns(db: Path, tmp_path: Path):
    """Options, a synthetic spec and a retired attempt written into a copy (the numpy mlp has no options)."""
    copy = tmp_path / "copy.db"
    shutil.copy(db, copy)
    con = sqlite3.connect(copy)
    with con:
        for tid, options in ((1, {"blocks": [2, 2, 2, 2], "act": "relu", "width": 4}), (2, {"width": "wide"})):
            case = json.loads(con.execute("SELECT case_json FROM trials WHERE id=?", (tid,)).fetchone()[0])
            case.update(model_options=options, synthetic=[28, 28, 1, 10, 1000, 200])
            con.execute("UPDATE trials SET case_json=? WHERE id=?", (json.dumps(case), tid))
        con.execute("UPDATE trials SET retired=1, status='interrupted' WHERE id=3")
    con.close()
    with results.load(copy) as data:
        trials, m, summary = data.trials(), data.measurements(), data.summary()
    options = ["option.act", "option.blocks", "option.width"]
    assert list(trials.columns) == [*results.TRIAL_COLUMNS, *options]
    first = trials.set_index("trial_id").loc[1]
    assert (first["option.blocks"], first["option.act"], first["synthetic"]) == (
        "2x2x2x2",
        "relu",
        "28x28x1/10/1000/200",
    )
    # A number for one model and text for another: text in every row, so parquet can hold it.
    assert trials["option.width"].tolist()[:2] == ["4", "wide"] and pd.isna(trials["option.width"].iloc[2])
    assert {*options, "layout"} <= set(m.columns)
    assert set(m.loc[m["trial_id"] == 3, "retired"]) == {True} and not m.loc[m["trial_id"] != 3, "retired"].any()
    assert 2 not in set(summary["run_id"])  # a retired attempt is kept, but out of the statistics
    for fmt in results.FORMATS:
        out = tmp_path / f"o.{fmt}"
        results.export(m, out, fmt)
        pd.testing.assert_frame_equal(_normal(_read(out, fmt)), _normal(m), check_exact=True)
    # The JSON document of both runs, its option.<name> columns and cells as the shipped schema takes them.
    from jsonschema import Draft202012Validator

    from dlbench.documents import SCHEMA_FILE

    doc = json.loads((tmp_path / "o.json").read_text(encoding="utf-8"))
    Draft202012Validator(json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))).validate(doc)
    assert doc["runs"] == [1, 2] and doc["columns"][-3:] == options


def test_importing_results_imports_no_framework():
    code = "import sys, dlbench.results\nprint([m for m in ('torch', 'tensorflow', 'jax') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
