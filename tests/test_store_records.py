"""The store speaks records (issue 34 item 5): reads return typed, frozen records whose
JSON columns the store decoded, once; no module outside dlbench.store parses a stored
JSON column; an explain run's pairs have a column of their own, and migration 6 moves
an older run's pairs there from its experiment's description."""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import sqlite3
from pathlib import Path

import pytest

from dlbench.store import (
    MIGRATIONS,
    LatencyCall,
    Measurement,
    MeasurementRecord,
    RunRecord,
    SkippedRecord,
    Store,
    StoreError,
    TrialRecord,
    trial_record,
)

SRC = Path(__file__).resolve().parents[1] / "src" / "dlbench"
CASE = {"framework": "numpy", "variant": "reference", "model": "mlp", "dataset": "digits", "batch_size": 8}
PAIRS = {"explain": [{"a": "k1", "b": "k2", "toggles": [["threads", 1, 2, "b"]]}], "from_run": 1}


def _run(store: Store, **extra) -> int:
    return store.create_run(
        name="r",
        command="dlbench run",
        config_source="s",
        config_text="x",
        experiment=extra.pop("experiment", {"name": "r", "description": "plain words"}),
        environment={"cpu": "x"},
        version="0",
        trials=[{"case_key": "k1", "block": 0, "position": 0, "case": CASE, "protocol": {"repeats": 2, "warmup": 1}}],
        skipped=[({"model": "cnn"}, "not for numpy")],
        **extra,
    )


def test_reads_are_frozen_records_holding_decoded_values(tmp_path: Path):
    with Store(tmp_path / "r.db") as store:
        run_id = _run(store)
        (t,) = store.trials(run_id)
        store.set_manifest(t.id, {"threads": 1})
        store.set_placement(t.id, {"host": "h"})
        store.add_measurements(t.id, [Measurement(0, False, "train", "time", 1.5, "s")])
        store.add_measurements(t.id, [Measurement(0, False, "latency_b1", "p50", 0.1, "s")])
        run, (t,), (m, _) = store.run(run_id), store.trials(run_id), store.measurements(run_id)
        (skipped,), (call,) = store.skipped(run_id), store.latency_calls(run_id)

    assert isinstance(run, RunRecord) and run.environment == {"cpu": "x"} and run.idle == {}
    assert run.experiment["description"] == "plain words" and run.explain is None
    assert isinstance(t, TrialRecord) and t.case == CASE and t.protocol == {"repeats": 2, "warmup": 1}
    assert t.manifest == {"threads": 1} and t.placement == {"host": "h"} and t.retired is False
    assert isinstance(m, MeasurementRecord) and (m.phase, m.metric, m.value, m.attempt) == ("train", "time", 1.5, 1)
    assert isinstance(skipped, SkippedRecord) and skipped.cell == {"model": "cnn"}
    assert isinstance(call, LatencyCall) and call.value == 0.1
    for record, name in ((run, "status"), (t, "case"), (skipped, "reason")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(record, name, "changed")
    for record in (m, call):
        with pytest.raises(AttributeError):
            record.value = 2.0  # type: ignore[misc]
    # The old way still reads (until every caller has moved): the column as stored.
    assert json.loads(t["case_json"]) == CASE and t["id"] == t.id and "manifest_json" in t.keys()
    assert m["phase"] == "train" and run["environment_json"] == '{"cpu": "x"}'


def test_a_hand_built_row_becomes_a_record_decoded_by_the_store():
    row = {"id": 7, "case_key": "k", "status": "ok", "case_json": json.dumps(CASE), "protocol_json": "{}"}
    record = trial_record(row)
    assert record.case == CASE and record.manifest is None and record.batch_size == 8
    assert trial_record(record) is record
    with pytest.raises(StoreError, match="trial 7: manifest_json is not JSON"):
        trial_record({**row, "manifest_json": "{oops"})


# -- no json.loads of a store column outside dlbench.store -----------------------------
# A JSON column's name (what a store row is read by), or the Store's decoded-record text.
COLUMN = re.compile(r"_json\b|\btelemetry_notes\b|\bdescription")

# json.loads outside dlbench.store that decode what is no store column: (module, argument),
# the module being the top-level one under dlbench (a package counts as one: cli/... is cli).
NOT_A_COLUMN = {
    ("trial", "line"): "one event line of the worker's stdout",
    ("launchers", "line"): "one event line of a rank's stdout",
    ("param_counts", "cache.read_text()"): "the parameter-count cache file",
    ("param_counts", "out.strip().splitlines()[-1]"): "a counting subprocess's output",
    ("frameworks", "os.environ.get('TF_CONFIG') or '{}'"): "TensorFlow's cluster variable",
    ("conformance", "lines[-1]"): "a conformance probe's output",
    ("conformance", "sys.stdin.read()"): "the probe's input",
    ("conformance", "text"): "a check record in the user's cache folder (conformance.record)",
    ("trial", "text"): "a trial spec file (--trial-spec)",
    ("report", "values.pop()"): "json.dumps of a case value, made a few lines up (common_settings)",
    ("report", "t"): "json.dumps of a setting (analysis.comparisons._flatten), made in dlbench",
}

# Sites in modules that other work owns, which still parse a column that the store now
# decodes; each has its record field to switch to (the report of issue 34 item 5).
PENDING: set[tuple[str, str]] = set()  # every caller reads the records' decoded fields now


def _json_loads_calls() -> list[tuple[str, str, str, int]]:
    """(top-level module, the argument's source, file under src/dlbench, line) of every
    json.loads outside dlbench.store."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        name = path.relative_to(SRC).as_posix()
        if name.startswith("store/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "loads"
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "json"
                and node.args
            ):
                found.append((name.split("/")[0].removesuffix(".py"), ast.unparse(node.args[0]), name, node.lineno))
    return found


def test_no_module_outside_the_store_parses_a_store_column():
    calls = _json_loads_calls()
    column = [(f, arg, line) for m, arg, f, line in calls if COLUMN.search(arg) and (m, arg) not in PENDING]
    assert not column, f"a stored JSON column parsed outside dlbench.store (read the record's field): {column}"
    unknown = [(f, arg, line) for m, arg, f, line in calls if (m, arg) not in NOT_A_COLUMN and (m, arg) not in PENDING]
    assert not unknown, (
        f"json.loads outside dlbench.store, not known to parse anything but a store column: {unknown}; "
        "a store column: read the record's decoded field; anything else: add it to NOT_A_COLUMN with why"
    )


def test_the_store_readers_never_see_a_column_text():
    """The modules the store's records were made for (report, analysis, results, progress,
    cases) read decoded fields, never a JSON column by its name."""
    mine = [*(SRC / "report").rglob("*.py"), *(SRC / "analysis").rglob("*.py")]
    mine += [SRC / "results.py", SRC / "progress.py", SRC / "cases.py"]
    seen = []
    for path in mine:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Subscript)
                and isinstance(node.slice, ast.Constant)
                and isinstance(node.slice.value, str)
                and (node.slice.value.endswith("_json") or node.slice.value == "telemetry_notes")
            ):
                seen.append((path.relative_to(SRC).as_posix(), node.lineno, node.slice.value))
    assert not seen, seen


# -- the explain pairs' column (migration 6) -------------------------------------------
def _old_database(path: Path) -> None:
    """A version-5 database holding an explain run (its pairs in its description, as
    dlbench explain kept them), a run with plain words there, and one with none."""
    with Store(path, migrations=MIGRATIONS[:5]) as s, s.db:
        for name, experiment in (
            ("explain run 1", {"name": "e", "description": json.dumps(PAIRS, sort_keys=True)}),
            ("plain", {"name": "p", "description": "a study of {things}"}),
            ("bare", None),
        ):
            s.db.execute(
                "INSERT INTO runs (name, status, started_at, experiment_json) VALUES (?, 'finished', 'x', ?)",
                (name, None if experiment is None else json.dumps(experiment)),
            )
    with Store(path, migrations=MIGRATIONS[:5]) as s:
        s.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def test_migration_6_moves_the_explain_pairs_into_their_column(tmp_path: Path):
    path = tmp_path / "v5.db"
    _old_database(path)
    before = path.read_bytes()
    with Store(path, readonly=True) as s:  # an older file read: upgraded in a copy in memory
        assert s.version == len(MIGRATIONS) == 8 and s.explain(1) == PAIRS
    assert path.read_bytes() == before
    with Store(path) as s:
        assert s.version == 8
        assert [s.explain(i) for i in (1, 2, 3)] == [PAIRS, None, None]
        assert [r.explain for r in s.runs()] == [PAIRS, None, None]
    with sqlite3.connect(path) as con:
        stored = con.execute("SELECT explain_json, experiment_json FROM runs ORDER BY id").fetchall()
    assert json.loads(stored[0][0]) == PAIRS and stored[1][0] is None and stored[2][0] is None
    # The description stays as it was: still readable, still the same text.
    assert json.loads(json.loads(stored[0][1])["description"]) == PAIRS
    assert json.loads(stored[1][1])["description"] == "a study of {things}"


def test_explain_pairs_are_written_to_their_column_and_read_back(tmp_path: Path):
    with Store(tmp_path / "e.db") as s:
        given = _run(s, explain=PAIRS)
        legacy = _run(s, experiment={"name": "e", "description": json.dumps(PAIRS)})  # as explain writes today
        later = _run(s)
        s.set_explain(later, {"explain": [], "from_run": given})
        assert s.explain(given) == PAIRS and s.explain(legacy) == PAIRS
        assert s.explain(later) == {"explain": [], "from_run": given}
        s.db.execute("UPDATE runs SET explain_json=NULL WHERE id=?", (legacy,))
        s.db.commit()
        assert s.explain(legacy) == PAIRS  # not in the column: read from the description
        s.db.execute("UPDATE runs SET explain_json='[1' WHERE id=?", (given,))
        s.db.commit()
        with pytest.raises(StoreError, match=f"run {given}: explain_json is not JSON"):
            s.explain(given)
