"""The column-wise read paths give what the record paths gave.

A report, `dlbench.load(db).measurements()` and the latency table read a run column-wise
(Store.measurement_columns, Store.latency_samples) since a 10^6-measurement store took
tens of seconds through one record per row. Here a small synthetic store (the scale
benchmark's own writer, two blocks) with the awkward rows added (a failed trial, a
retired attempt, NULL values, method and flag set) is read both ways, and the latency
percentiles are also checked against pandas over the raw SQL rows.
"""

from __future__ import annotations

import glob
import os
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dlbench
from dlbench.analysis.rows import columns, latency_percentiles_of
from dlbench.analysis.summary import latency_percentiles
from dlbench.report import model
from dlbench.report.formats import REGISTRY
from dlbench.report.model import build_report
from dlbench.store import Measurement, Store
from dlbench.store.records import Records

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from report_scale import populate  # type: ignore[import-not-found]  # noqa: E402


@pytest.fixture(scope="module")
def scale_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("scale") / "s.db"
    with Store(path) as store:
        populate(store, blocks=2, latency=5)
        run_id = store.run()["id"]
        trials = store.trials(run_id)
        # A failed trial's rows (kept, left out of statistics) and a value that is NULL.
        store.finish_trial(trials[0].id, status="failed", error="boom", returncode=1, wall_s=1.0, stderr="")
        store.add_measurements(
            trials[1].id,
            [
                Measurement(2, False, "infer", "time", None, "s"),
                Measurement(None, False, "train", "energy", 3.5, "J", method="counter", flag="unreliable: short"),
                Measurement(1, False, "latency_b32", "time", None, "s", 7),
            ],
        )
        # An interrupted attempt that stored rows: retired, and planned again.
        store.start_trial(trials[2].id)
        store.add_measurements(trials[2].id, [Measurement(9, False, "train", "time", 1.25, "s")])
        store.mark_interrupted(run_id)
        store.retire_unfinished(run_id)
        populate(store, blocks=1, latency=2)  # a second run: load() reads every run into one frame
    return path


def test_measurement_columns_equal_the_records(scale_db: Path) -> None:
    with Store(scale_db, readonly=True) as store:
        for latency in (True, False):
            for retired in (True, False):
                records = store.measurements(1, latency=latency, retired=retired)
                columns = store.measurement_columns(1, latency=latency, retired=retired)
                assert len(records) > 100 and len(columns["id"]) == len(records)
                for i, name in enumerate(records[0]._fields):
                    got = columns[name].tolist()
                    if name == "value":  # NULL reads as nan in the float column
                        got = [None if v != v else v for v in got]
                    assert got == [r[i] for r in records], name
        assert any(r.retired for r in store.measurements(1, retired=True))


def test_parts_the_same_whoever_numbers_the_kinds(scale_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """measurement_parts numbers each row's (phase, metric, unit, method, flag) in SQL (a
    CASE over the run's distinct kinds) or, past CASE_KINDS kinds, in Python as before:
    the same arrays and kinds either way."""
    from dlbench.store import core

    with Store(scale_db, readonly=True) as store:
        in_sql = store.measurement_parts(1, retired=True)
        monkeypatch.setattr(core, "CASE_KINDS", 0)
        in_python = store.measurement_parts(1, retired=True)
    assert len(in_sql["texts"]) >= 8 and in_sql["texts"] == in_python["texts"]
    for name in ("trial", "repeat", "warmup", "text", "value", "seq", "id"):
        assert np.array_equal(in_sql[name], in_python[name], equal_nan=name == "value"), name
    assert (in_sql["text"] >= 0).all()


def test_load_measurements_equal_the_record_path(scale_db: Path) -> None:
    with dlbench.load(scale_db) as results:
        frame = results.measurements()
        pd.testing.assert_frame_equal(frame, results._measurements_by_record())
        pd.testing.assert_frame_equal(results.measurements(2), results._measurements_by_record(2))
    assert sorted(set(frame["run_id"])) == [1, 2]
    assert frame["retired"].any() and frame["value"].isna().sum() == 2
    assert frame.loc[frame["metric"] == "energy", "flag"].tolist() == ["unreliable: short"]


def test_latency_percentiles_equal_records_and_raw_sql(scale_db: Path) -> None:
    with Store(scale_db, readonly=True) as store:
        columnwise = latency_percentiles_of(store.latency_samples(1))
        assert columnwise == latency_percentiles(store.latency_calls(1))
    # Independently: pandas over the raw rows.
    with sqlite3.connect(scale_db) as db:
        raw = pd.read_sql(
            "SELECT t.case_key, m.phase, m.value FROM measurements m JOIN trials t ON t.id=m.trial_id"
            " WHERE t.run_id=1 AND t.status='ok' AND t.retired=0 AND m.warmup=0 AND m.metric='time'"
            " AND m.phase LIKE 'latency%' AND m.value IS NOT NULL",
            db,
        )
    expected = raw.groupby(["case_key", "phase"])["value"].agg(["size", "median", lambda v: np.percentile(v, 99)])
    # Every case has an ok trial in one of its two blocks at least: 36 cases, one phase each.
    assert len(expected) == sum(len(phases) for phases in columnwise.values()) == 36
    for (key, phase), (n, median, p99) in expected.iterrows():
        got = columnwise[key][phase]
        assert got[0] == n and got[1] == pytest.approx(median, rel=1e-12) and got[3] == pytest.approx(p99, rel=1e-12)


def test_a_stored_list_keeps_its_columns_until_it_changes(scale_db: Path) -> None:
    """Store.measurements' list keeps the columns analyses read from it (Records), the same
    as a plain list's, and any in-place change of the list drops them."""
    with Store(scale_db, readonly=True) as store:
        rows = store.measurements(1)
    assert isinstance(rows, Records) and len(rows) > 100
    plain = list(rows)
    names = ("phase", "value", "trial_id")
    first = columns(rows, names)
    assert [list(c) for c in first] == [list(c) for c in columns(plain, names)]
    assert columns(rows, names)[0] is first[0]  # read once, handed back after
    assert set(rows.column_cache) == set(names)
    changes = [
        lambda r: r.append(r[0]),
        lambda r: r.sort(key=lambda m: -m.id),
        lambda r: r.__setitem__(0, r[-1]),
        lambda r: r.__delitem__(slice(0, 3)),
        lambda r: r.reverse(),
        lambda r: r.pop(),
        lambda r: r.extend(r[:2]),
        lambda r: r.__iadd__(r[:1]),
        lambda r: r.insert(1, r[5]),
        lambda r: r.remove(r[3]),
    ]
    for change in changes:
        columns(rows, names)
        change(rows)
        assert rows.column_cache == {}
        assert list(columns(rows, ("id",))[0]) == [m.id for m in rows]


def test_every_format_unchanged(scale_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The written formats and the console tables, read column-wise and through the
    records as before: Store.latency_samples replaced by a grouping of latency_calls'
    records, and the comparisons handed every row instead of their metrics' rows."""

    def by_records(store: Store, run_id: int) -> list:
        pooled: dict = {}
        for m in store.latency_calls(run_id):
            if m.metric == "time" and not m.warmup and m.status == "ok" and m.value is not None:
                pooled.setdefault((m.case_key, m.phase), []).append(m.value)
        return [(k, p, np.asarray(v)) for (k, p), v in pooled.items()]

    def outputs() -> dict[str, Any]:
        # One report per path, every written format laid out from it (a report is the
        # costly part: its bootstraps), the console's tables beside them.
        with Store(scale_db, readonly=True) as store:
            report = build_report(store, 1)
        out: dict[str, Any] = {"console": [(t.title, t.rows) for t in report.console_tables(details=True)]}
        for fmt in ("markdown", "latex", "csv", "html"):
            out[fmt] = REGISTRY[fmt].write(report, [], None)
        return out

    columnwise = outputs()
    with monkeypatch.context() as plain:
        # The records as plain lists: every analysis reads its columns anew (no column cache).
        plain.setattr(Store, "_records", staticmethod(lambda kind, rows: [tuple.__new__(kind, r) for r in rows]))
        assert outputs() == columnwise
    monkeypatch.setattr(Store, "latency_samples", by_records)
    monkeypatch.setattr(model, "_by_metric", lambda measurements: lambda metrics: list(measurements))
    assert outputs() == columnwise
    latency = [rows for title, rows in columnwise["console"] if title.startswith("inference latency")]
    assert latency and len(latency[0]) == 36
    # The comparisons compared: three frameworks per set, each pair both ways, per timed metric.
    verdicts = [rows for title, rows in columnwise["console"] if title.startswith("framework vs framework")]
    assert verdicts and len(verdicts[0]) == 72


# PostgreSQL: a throwaway server of this module's own (port and folder apart from
# tests/test_store_postgres.py's, so that the two files never stop each other's server).
PG_PORT = 55433
PG_DIR = "/tmp/dlbench-pg-scale"


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install -r requirements-cluster.txt)")
    if os.geteuid() != 0 and not glob.glob("/usr/lib/postgresql/*/bin/postgres"):
        pytest.skip("no PostgreSQL server installed and not root to install it (scripts/services/postgres.sh up)")
    import psycopg

    script = Path(__file__).resolve().parents[1] / "scripts" / "services" / "postgres.sh"
    env = {**os.environ, "DLBENCH_PG_PORT": str(PG_PORT), "DLBENCH_PG_DIR": PG_DIR}
    up = subprocess.run(["bash", str(script), "up"], capture_output=True, text=True, timeout=600, env=env)
    assert up.returncode == 0, f"postgres.sh up failed:\n{up.stdout}\n{up.stderr}"
    server = f"postgresql://postgres@127.0.0.1:{PG_PORT}"
    name = f"dlbench_scale_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    yield f"{server}/{name}"
    subprocess.run(["bash", str(script), "down"], capture_output=True, text=True, timeout=120, env=env)


def test_postgres_reads_column_wise_as_records(pg_url: str) -> None:
    """The batched server-side reads give what the record reads give, on PostgreSQL."""
    with Store(pg_url) as store:
        populate(store, blocks=1, latency=3)
        store.add_measurements(store.trials(1)[0].id, [Measurement(None, False, "train", "x", None, "s", flag="f")])
        populate(store, blocks=1, latency=2)
    with Store(pg_url, readonly=True) as store:
        assert latency_percentiles_of(store.latency_samples(1)) == latency_percentiles(store.latency_calls(1))
        records = store.measurements(1)
        columns = store.measurement_columns(1)
        for i, name in enumerate(records[0]._fields):
            got = [None if v != v else v for v in columns[name].tolist()] if name == "value" else columns[name].tolist()
            assert got == [r[i] for r in records], name
    with dlbench.load(pg_url) as results:
        frame = results.measurements()
        pd.testing.assert_frame_equal(frame, results._measurements_by_record())
    assert len(frame) == 2 * 36 * 6 * 7 + 36 * 6 * 3 + 36 * 6 * 2 + 1
    # The latency packs (migration 8) on PostgreSQL: every trial packed as written; an edit
    # of a latency row by another client (plain SQL) sends its trial back to its rows.
    with Store(pg_url) as store:
        flags = store.db.execute("SELECT latency_packed FROM trials WHERE run_id=1 ORDER BY id").fetchall()
        assert [f[0] for f in flags] == [1] * 36
        first = store.trials(1)[0].id
        before = latency_percentiles_of(store.latency_samples(1))
        with store.db:
            store.db.execute(
                "UPDATE measurements SET value = 100 WHERE trial_id = ? AND phase LIKE 'latency%' AND warmup = 0",
                (first,),
            )
        flags = store.db.execute("SELECT latency_packed FROM trials WHERE run_id=1 ORDER BY id").fetchall()
        assert [f[0] for f in flags] == [0] + [1] * 35
        after = latency_percentiles_of(store.latency_samples(1))
        assert after == latency_percentiles(store.latency_calls(1)) and after != before
