"""SQLite store: schema version and migrations, bad files, CSV export."""

from __future__ import annotations

import json
import sqlite3

import pytest

from dlbench.store import MIGRATIONS, Measurement, Store, StoreError


def _run(store: Store) -> int:
    return store.create_run(
        name="t", command="c", config_source="s", config_text="x", experiment={}, environment={"cpu": "x"}, version="0"
    )


def test_fresh_database_is_at_latest_version(tmp_path):
    with Store(tmp_path / "a.db") as s:
        assert s.version == len(MIGRATIONS)
        tables = {r[0] for r in s.db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert {"runs", "trials", "measurements", "series", "skipped"} <= tables


def test_migrations_apply_in_order_and_keep_data(tmp_path):
    path = tmp_path / "m.db"
    with Store(path, migrations=MIGRATIONS[:1]) as s:
        # The version-1 schema, written as that version wrote it (today's create_run needs later columns).
        with s.db:
            run_id = s.db.execute("INSERT INTO runs (name, status, started_at) VALUES ('t', 'finished', 'x')").lastrowid
    extra = MIGRATIONS[:1] + ["ALTER TABLE runs ADD COLUMN note TEXT"]
    with Store(path, migrations=extra) as s:
        assert s.version == 2
        assert s.run(run_id)["note"] is None
        assert s.run(run_id)["name"] == "t"


def test_newer_schema_and_foreign_files_are_refused_clearly(tmp_path):
    path = tmp_path / "new.db"
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version = 99")
    db.close()
    with pytest.raises(StoreError, match=r"new\.db: schema version 99 is newer"):
        Store(path)
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match=r"junk\.db: not a dlbench database"):
        Store(junk)


def test_measurements_round_trip_and_export(tmp_path):
    with Store(tmp_path / "e.db") as s:
        run_id = _run(s)
        case = {
            "framework": "torch",
            "variant": "eager",
            "model": "mlp",
            "dataset": "digits",
            "batch_size": 8,
            "init": "glorot-uniform",
            "optimizer": "sgd",
            "lr": 0.1,
            "epochs": 1,
            "steps": None,
            "threads": 2,
            "device": "cpu",
            "precision": "float32",
        }
        tid = s.add_trial(run_id, case_key="k", block=0, position=0, case=case, protocol={"repeats": 1})
        s.start_trial(tid)
        s.add_measurements(
            tid,
            [
                Measurement(0, True, "train", "time", 1.5, "s"),
                Measurement(1, False, "train", "time", 1.25, "s"),
                Measurement(1, False, "latency_b8", "time", 0.01, "s", seq=0),
            ],
        )
        s.finish_trial(tid, status="ok", error=None, returncode=0, wall_s=3.0, stderr="")
        from dlbench import results

        data = results.load(s.path)
        rows = data.measurements(run_id)
        data.close()
        assert len(rows) == 3
        assert rows["value"].tolist() == [1.5, 1.25, 0.01]
        assert rows["warmup"].tolist() == [True, False, False]
        assert rows.loc[2, "seq"] == 0 and rows.loc[0, "framework"] == "torch" and rows.loc[0, "lr"] == 0.1
        # The split reads the report uses: the per-call latency rows apart from the rest.
        # "latency_bx" has the prefix but not the escaped "_": it must stay with the rest.
        s.add_measurements(tid, [Measurement(1, False, "latencyXb8", "time", 0.5, "s")])
        assert [r["phase"] for r in s.measurements(run_id, latency=False)] == ["train", "train", "latencyXb8"]
        calls = s.latency_calls(run_id)
        assert [(r["case_key"], r["status"], r["warmup"], r["phase"], r["metric"], r["value"]) for r in calls] == [
            ("k", "ok", 0, "latency_b8", "time", 0.01)
        ]
        assert len(s.measurements(run_id)) == 4
        with pytest.raises(StoreError, match="no run 42"):
            s.run(42)
        with pytest.raises(ValueError, match="status 'great'"):
            s.finish_trial(tid, status="great", error=None, returncode=0, wall_s=0, stderr="")


def test_migration_4_rebuilds_trials_with_attempts_and_keeps_every_row(tmp_path):
    """Version 3 -> 4 rebuilds the trials table (its UNIQUE constraint gains the
    attempt): ids, measurements and foreign keys come through unchanged."""
    path = tmp_path / "v3.db"
    with Store(path, migrations=MIGRATIONS[:3]) as s, s.db:
        run_id = s.db.execute("INSERT INTO runs (name, status, started_at) VALUES ('t', 'finished', 'x')").lastrowid
        for block in range(2):
            tid = s.db.execute(
                "INSERT INTO trials (run_id, case_key, block, position, framework, variant, model, dataset,"
                " batch_size, case_json, protocol_json, status, telemetry_notes)"
                " VALUES (?, 'k', ?, 0, 'torch', 'eager', 'mlp', 'digits', 8, '{}', '{}', 'ok', 'n')",
                (run_id, block),
            ).lastrowid
            s.db.execute(
                "INSERT INTO measurements (trial_id, repeat, warmup, phase, metric, value, unit)"
                " VALUES (?, 0, 0, 'train', 'time', ?, 's')",
                (tid, 1.5 + block),
            )
    with Store(path) as s:
        assert s.version == len(MIGRATIONS) == 8
        trials = s.trials(run_id)
        assert [(t["id"], t["block"], t["attempt"], t["retired"], t["telemetry_notes"]) for t in trials] == [
            (1, 0, 1, 0, "n"),
            (2, 1, 1, 0, "n"),
        ]
        assert [m["value"] for m in s.measurements(run_id)] == [1.5, 2.5]
        assert s.db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        with pytest.raises(sqlite3.IntegrityError, match="FOREIGN KEY"):
            s.db.execute(
                "INSERT INTO measurements (trial_id, warmup, phase, metric, unit) VALUES (99, 0, 'p', 'm', 'u')"
            )
        # A second attempt of the same case and block is now allowed; a duplicate attempt is not.
        s.db.execute("UPDATE trials SET status='interrupted' WHERE id=1")
        assert s.retire_unfinished(run_id) == 1
        current = s.trials(run_id)
        assert [(t["block"], t["attempt"], t["status"]) for t in current] == [(0, 2, "pending"), (1, 1, "ok")]
        assert [t["retired"] for t in s.trials(run_id, retired=True)] == [1, 0, 0]
        # Version 5: where each trial ran, empty for the trials stored before it.
        assert [t["placement_json"] for t in current] == [None, None]
        s.set_placement(current[0]["id"], {"executor": "ray", "host": "n1"})
        s.set_placement(current[0]["id"], {"machine": {"cpu_model": "x"}})
        assert json.loads(s.trials(run_id)[0]["placement_json"]) == {
            "executor": "ray",
            "host": "n1",
            "machine": {"cpu_model": "x"},
        }
        assert s.runs()[0]["placements"] == "ray:n1=1"
        assert [m["value"] for m in s.measurements(run_id)] == [2.5]  # the retired attempt's values are kept apart
        with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"):
            s.db.execute("UPDATE trials SET attempt=1 WHERE id=3")
