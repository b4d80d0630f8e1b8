"""`--format json` of report, compare, runs, plan and env: one JSON document and nothing else on
standard output, valid against src/dlbench/schemas/output.schema.json (draft 2020-12), holding
the numbers the analysis computed, with compare's exit statuses unchanged."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from dlbench.report.json_out import KINDS, SCHEMA_FILE, SCHEMA_VERSION
from dlbench.store import Measurement, Store
from stored_cases import stored_case

BLOCKS = 8  # paired Wilcoxon over 8 blocks reaches p = 2/256, clear of alpha 0.05
CASES = {"torch": stored_case("torch", "eager"), "jax": stored_case("jax", "jit")}
TRAIN = {"torch": 1.0, "jax": 1.5}  # train seconds per repeat, before the per-block drift
INFER = {"torch": 0.010, "jax": 0.012}  # inference seconds


@pytest.fixture(scope="module")
def validator() -> Draft202012Validator:
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _valid(validator: Draft202012Validator, document: dict, kind: str) -> dict:
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(document)]
    assert not errors, errors[:5]
    assert document["schema"] == f"dlbench/{kind}" and document["schema_version"] == SCHEMA_VERSION
    return document


def _trial(store: Store, run_id: int, key: str, block: int, pos: int, train: float, ok: bool = True) -> None:
    """One trial: three repeats of train and inference time (INFER), each x (1 + 1% per block)."""
    tid = store.add_trial(run_id, case_key=key, block=block, position=pos, case=CASES[key], protocol={})
    store.start_trial(tid)
    if not ok:
        store.finish_trial(tid, status="failed", error="RuntimeError: boom", returncode=1, wall_s=0.1, stderr="")
        return
    drift = 1 + 0.01 * block
    rows = [Measurement(r, False, "train", "time", train * drift * (1 + 0.001 * r), "s") for r in range(3)]
    rows += [Measurement(r, False, "infer", "time", INFER[key] * drift, "s") for r in range(3)]
    store.add_measurements(tid, rows)
    store.finish_trial(tid, status="ok", error=None, returncode=0, wall_s=1.0, stderr="")


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    """Run 1 and run 2 taken in turns block by block (torch 1.0 s, jax 1.5 s a train; in run 2
    torch trains 30% slower), then run 3, the times of run 1 but every jax trial failed."""
    path = tmp_path_factory.mktemp("json") / "j.db"
    store = Store(path)
    ids = [
        store.create_run(
            name=name,
            command=f"dlbench run {name}.toml",
            config_source=f"{name}.toml",
            config_text="",
            experiment={"protocol": {"repeats": 3, "warmup": 0, "trials": BLOCKS}},
            environment={"hostname": "test", "packages": {"numpy": "2"}},
            version="0.1.0",
        )
        for name in ("before", "after")
    ]
    for block in range(BLOCKS):
        for run_id, slower in zip(ids, (1.0, 1.3)):
            for pos, key in enumerate(CASES):
                _trial(store, run_id, key, block, pos, TRAIN[key] * (slower if key == "torch" else 1.0))
    third = store.create_run(
        name="no jax", command="", config_source="", config_text="", experiment={}, environment={}, version="0.1.0"
    )
    for block in range(2):
        for pos, key in enumerate(CASES):
            _trial(store, third, key, block, pos, TRAIN[key], ok=key == "torch")
    for run_id in (*ids, third):
        store.finish_run(run_id, "finished")
    store.close()
    return path


def _json(cli, *args: object, code: int = 0) -> dict:
    """The command's standard output, parsed whole as one JSON document, after checking its exit status."""
    result = cli.result(*args)
    assert result.exit_code == code, result.output
    return json.loads(result.stdout)


def test_schema_has_one_definition_per_kind_and_ships_as_package_data(validator):
    schema = validator.schema
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert set(KINDS) <= set(schema["$defs"])
    assert [ref["$ref"] for ref in schema["oneOf"]] == [f"#/$defs/{k}" for k in KINDS]
    assert SCHEMA_FILE.is_relative_to(Path(__file__).resolve().parents[1] / "src" / "dlbench")
    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    assert '"schemas/*.json"' in pyproject
    # A document that names no kind, or another version, is refused.
    from jsonschema import ValidationError

    with pytest.raises(ValidationError):
        validator.validate({"schema": "dlbench/runs", "schema_version": 2, "runs": []})


def test_report_json_holds_the_analysis_numbers(db, cli, validator):
    from dlbench.analysis.comparisons import analyse, rankings

    doc = _valid(validator, _json(cli, "report", "--run", 1, "--format", "json", "--db", db), "report")
    with Store(db) as store:
        trials, rows = store.trials(1), store.measurements(1, latency=False)
    expected = {(r.metric, s.name): s.comparison for r in rankings(analyse(trials, rows)) for s in r.standings[1:]}
    got = {(r["metric"], m["name"]): m["versus_best"] for r in doc["answer"]["rankings"] for m in r["members"][1:]}
    assert set(got) == set(expected) == {("train time", "jax:jit"), ("inference time", "jax:jit")}
    for key, c in expected.items():
        assert got[key]["ratio"] == c.ratio and got[key]["p"] == c.p and got[key]["verdict"] == c.verdict
        assert (got[key]["ci_low"], got[key]["ci_high"]) == c.ratio_ci
    train = next(r for r in doc["answer"]["rankings"] if r["metric"] == "train time")
    # jax trains 1.5x torch's time in every block: the ratio of medians, decided slower.
    assert train["winner"] == train["best"] == "torch:eager" and train["paired"] is True
    jax = train["members"][1]["versus_best"]
    assert jax["ratio"] == pytest.approx(1.5, rel=1e-12) and jax["verdict"] == "slower"
    assert jax["p"] < jax["alpha"] == 0.05 and jax["band"] == 0.02 and jax["ci_low"] > 1.02
    # Every pairwise comparison of the verdict table, with its criteria.
    assert {(c["metric"], c["a"], c["b"]) for c in doc["comparisons"]} == {
        ("train time", "torch:eager", "jax:jit"),
        ("inference time", "torch:eager", "jax:jit"),
    }
    assert all(c["band"] == 0.02 and c["alpha"] == 0.05 and c["independent"] for c in doc["comparisons"])
    # Per case: the median of the trial medians, n = one per trial, in seconds.
    torch = next(c for c in doc["cases"] if c["case"]["framework"] == "torch")
    t = next(m for m in torch["metrics"] if (m["phase"], m["metric"]) == ("train", "time"))
    per_block = sorted((1 + 0.01 * b) * 1.001 for b in range(BLOCKS))
    assert t["n"] == BLOCKS and t["unit"] == "s" and t["median"] == pytest.approx(sum(per_block[3:5]) / 2)
    # Its interval: 8 trial medians; the 1st and 8th order statistics cover the median with
    # 1 - 2 * 2**-8 = 99.2% (the 2nd and 7th only 93.0%, short of 95%).
    ci = t["median_ci"]
    assert ci["low"] == pytest.approx(per_block[0]) and ci["high"] == pytest.approx(per_block[-1])
    assert ci["coverage"] == pytest.approx(1 - 2 / 2**BLOCKS) and ci["level"] == 0.95 and ci["why"] is None
    assert ci["method"].startswith("distribution-free order-statistic interval")
    assert torch["independent"] is True and torch["trials"] == BLOCKS
    assert doc["design"] == {
        "independent_processes": True,
        "one_process_cases": [],
        "paired_by_block": True,
        "blocks": BLOCKS,
        "trials": 2 * BLOCKS,
    }
    assert doc["run"]["id"] == 1 and doc["packages"] == {"numpy": "2"} and doc["protocol"]["trials"] == BLOCKS
    assert doc["answer"]["lines"][0].strip() and any("slower" in line for line in doc["answer"]["lines"])
    # Criteria given on the command line reach every comparison.
    strict = _json(cli, "report", "--run", 1, "--format", "json", "--band", "0.6", "--alpha", "0.01", "--db", db)
    assert strict["criteria"] == {"band": 0.6, "alpha": 0.01}
    assert {c["verdict"] for c in strict["comparisons"] if c["metric"] == "train time"} == {"no meaningful difference"}


def test_report_json_to_a_file_and_of_a_run_with_failures(db, cli, validator, tmp_path):
    out = tmp_path / "r.json"
    said = cli.result("report", "--run", 3, "--format", "json", "--out", out, "--db", db)
    assert said.exit_code == 0 and f"wrote the json report of run 3 to {out}" in said.stdout
    doc = _valid(validator, json.loads(out.read_text(encoding="utf-8")), "report")
    assert [t["status"] for t in doc["failed_trials"]] == ["failed", "failed"]
    # torch's 2 trial medians are too few for a 95% interval of the median: [min, max], which
    # covers it with 1 - 2 * 2**-2 = 50%, and why.
    (torch,) = [c for c in doc["cases"] if c["metrics"]]
    train = next(m for m in torch["metrics"] if (m["phase"], m["metric"]) == ("train", "time"))
    ci = train["median_ci"]
    assert (ci["low"], ci["high"]) == (train["min"], train["max"]) and ci["low"] < ci["high"]
    assert ci["coverage"] == 0.5 and ci["why"] == "2 values: [min, max] covers 50.0%, short of 95% (6 values reach it)"
    assert doc["answer"]["rankings"] == [] and doc["answer"]["empty"]


def test_compare_json_flags_the_regression_and_keeps_the_exit_status(db, cli, validator):
    doc = _valid(validator, _json(cli, "compare", "1", "2", "--format", "json", "--db", db, code=1), "compare")
    rows = {(r["case"]["framework"], r["metric"]): r for r in doc["comparisons"]}
    slow = rows[("torch", "train time")]
    assert slow["regression"] is True and slow["verdict"] == "slower"
    assert slow["comparison"]["ratio"] == pytest.approx(1.3, rel=1e-9) and slow["comparison"]["paired"] is True
    assert slow["b_value"] / slow["a_value"] == pytest.approx(slow["comparison"]["ratio"])
    # each estimate named by its run (the comparison's own estimate_a is run B's)
    assert slow["comparison"]["estimate_run_a"] == slow["a_value"] == slow["comparison"]["estimate_b"]
    assert slow["comparison"]["estimate_run_b"] == slow["b_value"] == slow["comparison"]["estimate_a"]
    assert slow["comparison"]["quantile"] == 0.5 and slow["comparison"]["alpha"] == 0.05
    assert not rows[("jax", "train time")]["regression"]
    assert doc["summary"] == {
        "comparisons": 4,
        "regressions": 1,
        "missing": 0,
        "no_verdict": 0,
        "allow_missing": False,
        "exit_status": 1,
    }
    assert doc["a"]["run"] == 1 and doc["b"]["run"] == 2 and doc["criteria"]["quantile"] == 0.5
    assert doc["a"]["baseline"] is None
    # No regression the other way round: exit 0, and the document says 0.
    back = _json(cli, "compare", "2", "1", "--format", "json", "--db", db)
    assert back["summary"]["regressions"] == 0 and back["summary"]["exit_status"] == 0


def test_compare_json_against_a_named_baseline(db, tmp_path, cli, validator):
    import shutil

    copy = tmp_path / "b.db"  # the module's database stays without baselines
    shutil.copy(db, copy)
    cli("baseline", "save", "main", "--run", 1, "--db", copy)
    result = cli.result("compare", "--baseline", "main", "2", "--format", "json", "--db", copy)
    assert result.exit_code == 1, result.output
    doc = _valid(validator, json.loads(result.stdout), "compare")
    assert doc["a"]["baseline"] == "main" and doc["a"]["run"] == 1 and doc["summary"]["regressions"] == 1


def test_compare_json_with_values_missing_exits_3_and_says_why_on_stderr(db, cli, validator):
    result = cli.result("compare", "1", "3", "--format", "json", "--db", db)
    assert result.exit_code == 3, result.output
    doc = _valid(validator, json.loads(result.stdout), "compare")
    missing = [r for r in doc["comparisons"] if r["missing"]]
    assert {r["case"]["framework"] for r in missing} == {"jax"} and all(r["comparison"] is None for r in missing)
    assert doc["summary"]["missing"] == 2 and doc["summary"]["exit_status"] == 3
    assert "Exit 3" in result.stderr
    allowed = _json(cli, "compare", "1", "3", "--format", "json", "--allow-missing", "--db", db)
    assert allowed["summary"]["exit_status"] == 0


def test_runs_and_trials_json(db, cli, validator):
    doc = _valid(validator, _json(cli, "runs", "--format", "json", "--db", db), "runs")
    assert [(r["id"], r["name"], r["trials"], r["ok"]) for r in doc["runs"]] == [
        (1, "before", 2 * BLOCKS, 2 * BLOCKS),
        (2, "after", 2 * BLOCKS, 2 * BLOCKS),
        (3, "no jax", 4, 2),
    ]
    trials = _valid(validator, _json(cli, "runs", "--run", 3, "--format", "json", "--db", db), "trials")
    assert [(t["block"], t["case"]["framework"], t["status"]) for t in trials["trials"]] == [
        (0, "torch", "ok"),
        (0, "jax", "failed"),
        (1, "torch", "ok"),
        (1, "jax", "failed"),
    ]
    # when each ran, as stored: started before it finished, its wall time as the store holds it
    for t in trials["trials"]:
        assert t["started_at"] and t["finished_at"] and t["started_at"] <= t["finished_at"]
    assert [t["wall_s"] for t in trials["trials"]] == [1.0, 0.1, 1.0, 0.1]


def test_plan_json_lists_the_trials_and_the_design(cli, validator):
    args = ("plan", "--framework", "torch,jax", "--model", "mlp", "--dataset", "digits", "--trials", "2")
    doc = _valid(validator, _json(cli, *args, "--format", "json"), "plan")
    assert len(doc["cases"]) == 2 and len(doc["trials"]) == 4 and doc["protocol"]["trials"] == 2
    assert [t["block"] for t in doc["trials"]] == [0, 0, 1, 1]
    # Two trials a case, two members: the exact test cannot go below alpha, as `dlbench plan` warns.
    design = doc["design"]
    assert design["decidable"] is False and design["independent_processes"] is True and design["members"] == 2
    assert design["smallest_p"] >= design["alpha"] and design["trials_needed"] > 2
    one = _json(cli, *args[:-1], "1", "--format", "json")
    assert one["design"]["independent_processes"] is False


def test_env_json_alone_on_stdout_and_the_table_without_json():
    """A real process: `dlbench env --format json | python3 -m json.tool` must work."""
    cmd = [sys.executable, "-m", "dlbench", "env"]
    doc = json.loads(subprocess.run([*cmd, "--format", "json"], capture_output=True, text=True, check=True).stdout)
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    Draft202012Validator(schema).validate(doc)
    assert doc["schema"] == "dlbench/env" and doc["machine"]["python"] == ".".join(map(str, sys.version_info[:3]))
    assert {s["name"] for s in doc["samplers"]} >= {"cpu", "memory"}
    table = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    assert not table.lstrip().startswith("{") and "this machine" in table and "telemetry samplers" in table


def test_bad_formats_are_one_line(db, cli):
    assert "--format 'yaml': allowed: console, json" in cli.error_line("runs", "--format", "yaml", "--db", db)
    assert "allowed: console, json" in cli.error_line("compare", "1", "2", "--format", "csv", "--db", db)
    assert "allowed: console, json" in cli.error_line("env", "--format", "xml")
    assert "allowed: console, json" in cli.error_line("run", "--framework", "numpy", "--format", "yaml")


def test_a_model_that_prints_at_import_leaves_the_plan_document_alone(tmp_path):
    """`plan --format json` of a user model whose module prints when imported: the print goes
    to standard error, standard output is the document and nothing else."""
    import subprocess
    import sys

    (tmp_path / "noisy.py").write_text(
        "import dlbench\nprint('loading noisy model')\n\n\ndef build(shape, classes):\n    ...\n\n\n"
        "MODEL = dlbench.Model('noisy', {'torch': build}, input_kind='features')\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "dlbench", "plan", "--model", "noisy.py:MODEL", "--framework", "torch",
         "--dataset", "digits", "--format", "json"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["schema"] == "dlbench/plan", done.stdout[:200]
    assert "loading noisy model" in done.stderr


def test_run_format_json_prints_the_finished_runs_report_alone(tmp_path, validator):
    """`dlbench run --format json`: the report's document on standard output and nothing else
    (its run id in it), the progress on standard error; the exit status as without it."""
    import subprocess
    import sys

    db = tmp_path / "r.db"
    flags = ["--framework", "numpy", "--model", "mlp", "--dataset", "digits", "--epochs", "1", "--repeats", "2"]
    flags += ["--warmup", "0", "--trials", "1", "--samplers", "none", "--format", "json", "--db", str(db)]
    done = subprocess.run([sys.executable, "-m", "dlbench", "run", *flags], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    doc = _valid(validator, json.loads(done.stdout), "report")
    assert doc["run"]["id"] == 1 and doc["run"]["status"] == "finished"
    assert "run 1: 1 trials" in done.stderr and "trials: 1 ok" in done.stderr
    study = subprocess.run(
        [sys.executable, "-m", "dlbench", "study", "run", "germino", "--format", "json", "--db", str(db)],
        capture_output=True,
        text=True,
    )
    assert study.returncode == 2 and "dlbench study report germino --format json" in study.stderr
