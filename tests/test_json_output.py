"""`--format json` of report, run, compare, runs, plan, study plan, env and export: one JSON
document and nothing else on standard output, valid against src/dlbench/schemas/output.schema.json
(draft 2020-12), holding the numbers the analysis computed, with compare's exit statuses
unchanged; and a schema strict enough that a renamed field or a value of the wrong type fails."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from conftest import TINY_RUN
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
    # and each sample size (the old n_a is run B's, n_b run A's: deprecated aliases)
    c = slow["comparison"]
    assert (c["n_run_a"], c["n_run_b"]) == (c["n_b"], c["n_a"]) == (BLOCKS, BLOCKS)
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


# -- export, and every document from real runs ---------------------------------------------


def test_export_json_is_a_document_that_reads_back_exactly(db, cli, validator, tmp_path):
    """`export --format json`: the dlbench/export document, to a file and to standard output,
    its records exactly the rows of dlbench.results (every float bit for bit)."""
    import pandas as pd

    from dlbench import results

    out = tmp_path / "m.json"
    said = cli("export", out, "--run", 3, "--db", db)
    assert f"to {out} (json)" in said
    doc = _valid(validator, json.loads(out.read_text(encoding="utf-8")), "export")
    piped = cli.result("export", "-", "--format", "json", "--run", 3, "--db", db)
    assert piped.exit_code == 0 and json.loads(piped.stdout) == doc
    with results.load(db) as data:
        want = data.measurements(3)
    assert doc["runs"] == [3] and doc["columns"] == list(results.MEASUREMENT_COLUMNS) == list(want.columns)
    back = pd.DataFrame(doc["measurements"], columns=doc["columns"])
    assert len(back) == len(want) == 2 * 6  # torch's two trials, three train and three inference values each
    assert back["value"].tolist() == want["value"].tolist()
    assert all(list(r) == doc["columns"] for r in doc["measurements"])
    # A model option is a column of its own, option.<name>; any other unknown column is refused.
    record = doc["measurements"][0]
    assert validator.is_valid({**doc, "measurements": [{**record, "option.width": 4}]})
    assert not validator.is_valid({**doc, "measurements": [{**record, "options.width": 4}]})
    schema = validator.schema["$defs"]["export"]["properties"]["measurements"]["items"]
    assert schema["required"] == list(results.MEASUREMENT_COLUMNS)  # a new column needs the schema too


@pytest.fixture(scope="module")
def real_documents(tmp_path_factory, cli, tiny_run, db) -> dict[str, dict]:
    """Every document kind from real runs (the numpy MLP on digits, one trial each: run 1 with
    `run --format json`, run 2 as tiny_run makes it), plus the module's two-framework runs,
    whose report and compare hold rankings and decided comparisons."""
    path = tmp_path_factory.mktemp("real") / "real.db"
    first = cli.result("run", *cli.flags(**TINY_RUN), "--format", "json", "--db", path)
    assert first.exit_code == 0, first.output
    tiny_run(path)
    docs = {"run": json.loads(first.stdout)}
    for name, args, code in (
        ("report", ("report", "--run", 2, "--format", "json", "--db", path), 0),
        ("compare", ("compare", "1", "2", "--format", "json", "--db", path), None),
        ("runs", ("runs", "--format", "json", "--db", path), 0),
        ("trials", ("runs", "--run", 1, "--format", "json", "--db", path), 0),
        ("plan", ("plan", *cli.flags(**TINY_RUN), "--format", "json"), 0),
        ("study plan", ("study", "plan", "germino", "--format", "json", "--db", path), 0),
        ("env", ("env", "--format", "json"), 0),
        ("export", ("export", "-", "--format", "json", "--run", 1, "--db", path), 0),
        ("report, two frameworks", ("report", "--run", 1, "--format", "json", "--db", db), 0),
        ("report, failed trials", ("report", "--run", 3, "--format", "json", "--db", db), 0),
        ("compare, paired", ("compare", "1", "2", "--format", "json", "--db", db), 1),
        ("compare, missing", ("compare", "1", "3", "--format", "json", "--db", db), 3),
        # Last: the gate adds blocks to runs 1 and 2 of real.db.
        ("gate", ("gate", "1", "2", "--max-blocks", "2", "--format", "json", "--db", path), None),
    ):
        result = cli.result(*args)
        assert code is None or result.exit_code == code, (name, result.output)
        docs[name] = json.loads(result.stdout)
    return docs


# What each document's name holds ("study plan" is a dlbench/plan document, ...).
REAL_KINDS = {
    "run": "report",
    "report": "report",
    "compare": "compare",
    "runs": "runs",
    "trials": "trials",
    "plan": "plan",
    "study plan": "plan",
    "env": "env",
    "export": "export",
    "report, two frameworks": "report",
    "report, failed trials": "report",
    "compare, paired": "compare",
    "compare, missing": "compare",
    "gate": "gate",
}
# Objects the schema leaves open: what a run recorded (case factors, fingerprint, packages,
# protocol, a skipped cell) and a count per status.
OPEN = {"case", "machine", "packages", "protocol", "cell", "statuses"}
WRONG = [{"wrong": "type"}]  # a value no field of any document takes


def _trimmed(value: object, keep: int = 1) -> object:
    """`value` with every list cut to its first item (a ranking's members to two: it has two
    at least), so that each kind of object is broken once."""
    if isinstance(value, dict):
        return {k: _trimmed(v, 2 if k == "members" else 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_trimmed(v) for v in value[:keep]]
    return value


def _fields(value: object, path: tuple = ()) -> Iterator[tuple[tuple, object]]:
    """(path, key) of every field of every object dlbench defines, and (path, index) of every
    item of its lists; none inside an OPEN object."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        yield path, key
        if key not in OPEN:
            yield from _fields(item, (*path, key))


def _broken(document: dict) -> Iterator[str]:
    """Breaks `document` in place, one field at a time, saying how, and mends it before the
    next: each field renamed, and each value replaced by one of a type no field takes."""
    for path, key in list(_fields(document)):  # listed first: a rename reorders a dict's keys
        at = document
        for step in path:
            at = at[step]
        where = ".".join(map(str, (*path, key)))
        if isinstance(key, str) and not key.startswith("option."):  # option.<name> is any name
            at[f"{key}_renamed"] = at.pop(key)
            yield f"{where} renamed"
            at[key] = at.pop(f"{key}_renamed")
        if not isinstance(at[key], dict | list) and key not in OPEN:
            value, at[key] = at[key], WRONG
            yield f"{where} as a list"
            at[key] = value


@pytest.mark.parametrize("name", REAL_KINDS)
def test_every_document_is_valid_and_a_renamed_field_or_a_wrong_type_is_not(name, real_documents, validator):
    """Each document kind from a real run validates against the shipped schema; the same
    document with any field renamed (a field the schema does not know, or a required one
    missing) or any value replaced by one of another type does not."""
    document = _valid(validator, real_documents[name], REAL_KINDS[name])
    small = _trimmed(document)
    assert validator.is_valid(small)
    passed = [what for what in _broken(small) if validator.is_valid(small)]
    assert not passed, f"{name}: the schema accepts {passed[:10]}"
    assert small == _trimmed(document)  # mended after each break


def test_the_documents_cover_every_kind(real_documents):
    assert set(REAL_KINDS.values()) == set(KINDS)
    # compare of two runs taken one after the other: a comparison on each row, no verdict.
    rows = real_documents["compare"]["comparisons"]
    assert rows and all(r["comparison"] is not None and not r["comparison"]["interleaved"] for r in rows)
    assert real_documents["study plan"]["study"]["name"] == "germino"
    assert len(real_documents["export"]["measurements"]) > 0 and real_documents["export"]["runs"] == [1]


def test_compares_old_names_are_deprecated_in_the_schema_and_the_docs(validator):
    """compare's comparison keeps estimate_a, estimate_b, n_a and n_b (the comparison's own
    order: a is run B) for one more schema version, marked deprecated, beside the run-named ones."""
    props = validator.schema["$defs"]["run_comparison"]["properties"]
    for old, new in (("estimate_a", "estimate_run_b"), ("estimate_b", "estimate_run_a"), ("n_a", "n_run_b")):
        assert props[old]["deprecated"] is True and new in props[old]["description"]
        assert "next schema_version" in props[old]["description"]
    assert props["n_b"]["deprecated"] is True and not props["estimate_run_a"].get("deprecated")
    docs = (Path(__file__).resolve().parents[1] / "docs" / "json.md").read_text(encoding="utf-8")
    assert "deprecated" in docs and "removed at the next schema version" in docs
    for name in ("estimate_a", "estimate_b", "n_a", "n_b", "estimate_run_a", "n_run_a"):
        assert f"`{name}`" in docs
    for kind in KINDS:
        assert f"`dlbench/{kind}`" in docs
