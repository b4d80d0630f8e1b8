"""The packed per-call latency times (schema version 8, dlbench.store.latency_packs).

A percentile reads the packs of a trial only while they hold every time its rows hold:
these tests write trials in several batches, edit the rows with another client (sqlite3,
as a user would), migrate a version-7 file, and each time compare what the report reads
(Store.latency_samples) with the rows themselves (Store.latency_calls, and raw SQL).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from dlbench.analysis.rows import latency_percentiles_of
from dlbench.analysis.summary import latency_percentiles
from dlbench.store import MIGRATIONS, Measurement, Store
from dlbench.store.latency_packs import pack, unpack

CASE = {"framework": "torch", "variant": "eager", "model": "mlp", "dataset": "digits", "batch_size": 32}


def _store(path: Path) -> list[int]:
    """A run of three ok trials (two cases), written the way a worker writes: several
    batches per trial, warm-up calls, a NULL call, an energy row in a latency phase."""
    with Store(path) as store:
        run = store.create_run(
            name="packs", command="-", config_source="-", config_text="", experiment={}, environment={}, version="0"
        )
        ids = []
        for block, (key, batch) in enumerate([("a", 32), ("b", 1), ("a", 32)]):
            case = {**CASE, "batch_size": batch}
            tid = store.add_trial(run, case_key=key, block=block, position=0, case=case, protocol={})
            store.start_trial(tid)
            base = 0.01 * (block + 1)
            for part in range(3):  # three batches, each with both phases
                store.add_measurements(
                    tid,
                    [Measurement(0, True, "latency_b1", "time", 9.0, "s", 0)]  # a warm-up call
                    + [Measurement(1, False, "latency_b1", "time", base + part + i / 7, "s", i) for i in range(5)]
                    + [
                        Measurement(1, False, f"latency_b{batch}", "time", base * 2 + part + i / 3, "s", i)
                        for i in range(4)
                    ]
                    + [Measurement(1, False, "latency_b1", "time", None, "s", 5)]
                    + [Measurement(1, False, "latency_b1", "energy", 3.0, "J")]
                    + [Measurement(1, False, "train", "time", 1.5, "s")],
                )
            store.finish_trial(tid, status="ok", error=None, returncode=0, wall_s=1.0, stderr="")
            ids.append(tid)
    return ids


def _from_rows(path: Path) -> dict[str, dict[str, tuple[float, ...]]]:
    with Store(path, readonly=True) as store:
        return latency_percentiles(store.latency_calls(1))


def _from_samples(path: Path) -> dict[str, dict[str, tuple[float, ...]]]:
    with Store(path, readonly=True) as store:
        return latency_percentiles_of(store.latency_samples(1))


def _edit(path: Path, *statements: str) -> None:
    """Statements run by another client, as a user with the sqlite3 shell would."""
    with sqlite3.connect(path) as con:
        for statement in statements:
            con.execute(statement)


def _flags(path: Path) -> list[int]:
    with sqlite3.connect(path) as db:
        return [f for (f,) in db.execute("SELECT latency_packed FROM trials ORDER BY id")]


def test_pack_keeps_the_times_a_percentile_reads_in_order() -> None:
    rows = [
        Measurement(0, True, "latency_b1", "time", 5.0, "s"),
        Measurement(1, False, "latency_b8", "time", 0.25, "s"),
        Measurement(1, False, "latency_b1", "time", 0.5, "s"),
        Measurement(1, False, "latency_b1", "time", None, "s"),
        Measurement(1, False, "latency_b1", "energy", 2.0, "J"),
        Measurement(1, False, "infer", "time", 7.0, "s"),
        Measurement(1, False, "latency_b8", "time", 0.125, "s"),
    ]
    packs = pack(rows)
    assert [(phase, n) for phase, n, _ in packs] == [("latency_b8", 2), ("latency_b1", 1)]
    assert unpack(packs[0][2]).tolist() == [0.25, 0.125] and unpack(packs[1][2]).tolist() == [0.5]
    assert len(packs[0][2]) == 16  # 8 bytes a value, nothing else


def test_batches_keep_the_trial_packed_and_the_packs_equal_the_rows(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    _store(db)
    assert _flags(db) == [1, 1, 1]
    with sqlite3.connect(db) as con:
        # 3 trials x 3 batches x 2 phases (one phase in trial b: latency_b1 twice in a batch's pack)
        n_packs = con.execute("SELECT COUNT(*) FROM latency_packs").fetchone()[0]
        packed = con.execute("SELECT SUM(n) FROM latency_packs").fetchone()[0]
        rows = con.execute(
            "SELECT COUNT(*) FROM measurements WHERE phase LIKE 'latency%' AND metric='time' AND warmup=0"
            " AND value IS NOT NULL"
        ).fetchone()[0]
    assert n_packs == 3 * 3 * 2 - 3 and packed == rows == 3 * 3 * 9
    got = _from_samples(db)
    assert got == _from_rows(db)
    assert got["b"]["latency_b1"][0] == 3 * 9  # trial b's two sets of latency_b1 calls pooled


def test_samples_read_no_row_while_every_trial_is_packed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "r.db"
    _store(db)

    def refuse(*args: object) -> None:
        raise AssertionError("read the latency rows of a packed trial")

    monkeypatch.setattr(Store, "_latency_rows", refuse)
    assert _from_samples(db)["a"]["latency_b32"][0] == 2 * 3 * 4


@pytest.mark.parametrize(
    "edit",
    [
        "UPDATE measurements SET value = 100.0 WHERE id = (SELECT MIN(id) FROM measurements"
        " WHERE trial_id = 2 AND phase = 'latency_b1' AND warmup = 0)",
        "DELETE FROM measurements WHERE trial_id = 2 AND phase = 'latency_b1' AND seq = 4",
        "INSERT INTO measurements (trial_id, repeat, warmup, phase, metric, value, unit, seq)"
        " VALUES (2, 1, 0, 'latency_b1', 'time', 50.0, 's', 9)",
        "UPDATE measurements SET warmup = 0 WHERE trial_id = 2 AND warmup = 1",
        "UPDATE measurements SET trial_id = 2 WHERE trial_id = 3 AND phase = 'train'",
    ],
    ids=["update-value", "delete", "insert", "update-warmup", "update-other-phase"],
)
def test_an_edit_by_another_client_sends_that_trial_back_to_its_rows(tmp_path: Path, edit: str) -> None:
    db = tmp_path / "r.db"
    _store(db)
    before = _from_samples(db)
    _edit(db, edit)
    # Only the edited trial(s) lose their flag (an update marks the old and the new row's trial).
    assert _flags(db) == ([1, 0, 0] if "trial_id = 2 WHERE" in edit else [1, 0, 1])
    after = _from_samples(db)
    assert after == _from_rows(db)
    if "phase = 'train'" not in edit:
        assert after["b"] != before["b"] and after["a"] == before["a"]


def test_rows_of_another_phase_leave_the_flag_alone(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    _store(db)
    _edit(
        db,
        "INSERT INTO measurements (trial_id, warmup, phase, metric, value, unit) VALUES (2, 0, 'train', 'x', 1, 's')",
        "DELETE FROM measurements WHERE trial_id = 1 AND phase = 'train'",
    )
    assert _flags(db) == [1, 1, 1]


def test_a_trial_written_by_another_tool_is_read_from_its_rows(tmp_path: Path) -> None:
    """A trial inserted without the flag (its default is 0) has no packs: its rows count."""
    db = tmp_path / "r.db"
    _store(db)
    _edit(
        db,
        "INSERT INTO trials (run_id, case_key, block, position, framework, variant, model, dataset,"
        " batch_size, case_json, protocol_json, status) SELECT run_id, 'c', 9, 0, framework, variant,"
        " model, dataset, batch_size, case_json, protocol_json, 'ok' FROM trials WHERE id = 1",
        "INSERT INTO measurements (trial_id, repeat, warmup, phase, metric, value, unit, seq) VALUES "
        + ", ".join(f"(4, 1, 0, 'latency_b1', 'time', {0.5 + i}, 's', {i})" for i in range(6)),
    )
    assert _flags(db) == [1, 1, 1, 0]
    got = _from_samples(db)
    assert got == _from_rows(db) and got["c"]["latency_b1"][:2] == (6, 3.0)


def _downgrade_to_7(path: Path) -> None:
    """The file as dlbench wrote it at schema version 7: no packs, no flag, no triggers."""
    with sqlite3.connect(path) as con:
        for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type='trigger'").fetchall():
            con.execute(f"DROP TRIGGER {name}")
        con.execute("DROP TABLE latency_packs")
        con.execute("ALTER TABLE trials DROP COLUMN latency_packed")
        con.execute("PRAGMA user_version = 7")


def test_a_version_7_file_is_packed_on_upgrade(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    _store(db)
    expected = _from_rows(db)
    with sqlite3.connect(db) as con:
        packs = con.execute("SELECT trial_id, phase, n, times FROM latency_packs ORDER BY id").fetchall()
    _downgrade_to_7(db)
    assert len(MIGRATIONS) == 8
    # A reader upgrades a copy in memory: the file stays at version 7.
    assert _from_samples(db) == expected
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA user_version").fetchone()[0] == 7
    # A writer upgrades the file: one pack per trial and phase now, the same times.
    with Store(db) as store:
        assert store.version == 8
    assert _flags(db) == [1, 1, 1] and _from_samples(db) == expected
    with sqlite3.connect(db) as con:
        migrated = con.execute("SELECT trial_id, phase, n, times FROM latency_packs ORDER BY id").fetchall()
        triggers = {n for (n,) in con.execute("SELECT name FROM sqlite_master WHERE type='trigger'")}
    assert triggers == {"latency_unpacked_insert", "latency_unpacked_delete", "latency_unpacked_update"}
    for trial in (1, 2, 3):
        for phase in {p for t, p, _, _ in packs if t == trial}:
            written = np.concatenate([unpack(b) for t, p, _, b in packs if (t, p) == (trial, phase)])
            [(n, blob)] = [(n, b) for t, p, n, b in migrated if (t, p) == (trial, phase)]
            assert n == written.size and unpack(blob).tolist() == written.tolist()


def _checked(path: Path):
    with Store(path, readonly=True) as store:
        return store.latency_samples_checked(1)[1]


def _nan_first_value(path: Path) -> None:
    """Pack 1's first time replaced by NaN, as a blob (another tool's numpy)."""
    with sqlite3.connect(path) as con:
        (blob,) = con.execute("SELECT times FROM latency_packs WHERE id = 1").fetchone()
        values = unpack(blob).copy()
        values[0] = np.nan
        con.execute("UPDATE latency_packs SET times = ? WHERE id = 1", (values.tobytes(),))


# Edits of the packs themselves (the triggers watch only the rows) and of rows with a
# trigger dropped first: each must send the trial(s) back to their rows, and say so.
PACK_EDITS = {
    "packs-deleted": ["DELETE FROM latency_packs WHERE trial_id = 2"],
    "packs-duplicated": [
        "INSERT INTO latency_packs (trial_id, phase, n, times) SELECT trial_id, phase, n, times FROM latency_packs"
        " WHERE trial_id = 1"
    ],
    "blob-truncated": ["UPDATE latency_packs SET times = substr(times, 1, 7) WHERE id = 1"],
    "blob-shortened": ["UPDATE latency_packs SET times = substr(times, 1, 8), n = 1 WHERE id = 1"],
    "blob-text": ["UPDATE latency_packs SET times = 'not a number' WHERE id = 1"],
    "blob-text-undecodable": ["UPDATE latency_packs SET times = X'000000000000F87F' || substr(times, 9) WHERE id = 1"],
    "blob-empty": ["UPDATE latency_packs SET times = X'' WHERE id = 1"],
    "phase-renamed": ["UPDATE latency_packs SET phase = 'latency_b7' WHERE id = 1"],
    "moved-to-another-trial": ["UPDATE latency_packs SET trial_id = 2 WHERE trial_id = 1"],
    "flag-without-packs": ["DELETE FROM latency_packs WHERE trial_id = 3", "UPDATE trials SET latency_packed = 1"],
    "trigger-dropped-rows-scaled": [
        "DROP TRIGGER latency_unpacked_update",
        "UPDATE measurements SET value = value * 1000 WHERE trial_id = 2 AND phase LIKE 'latency%'",
    ],
}


@pytest.mark.parametrize("edit", [*PACK_EDITS, "nan-filled"])
def test_a_copy_that_does_not_match_its_rows_is_not_used(tmp_path: Path, edit: str) -> None:
    db = tmp_path / "r.db"
    _store(db)
    if edit == "nan-filled":
        _nan_first_value(db)
    else:
        _edit(db, *PACK_EDITS[edit])
    assert _from_samples(db) == _from_rows(db)  # the rows' numbers, whatever the copy holds
    check = _checked(db)
    assert not check.trusted
    if edit.startswith("trigger-dropped"):
        assert check.missing_triggers == ("latency_unpacked_update",) and check.stale == ()
    else:
        expected = {"packs-deleted": (2,), "moved-to-another-trial": (1, 2), "flag-without-packs": (3,)}
        assert check.stale == expected.get(edit, (1,)) and check.missing_triggers == ()


def test_an_untouched_copy_passes_its_check(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    _store(db)
    assert _checked(db).trusted


def test_the_report_says_the_copy_was_stale_and_how_to_rebuild_it(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from dlbench.cli import app

    db = tmp_path / "r.db"
    _store(db)
    _edit(db, *PACK_EDITS["packs-duplicated"])
    runner = CliRunner()
    result = runner.invoke(app, ["report", "--run", "1", "--db", str(db)], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())
    assert "LATENCY COPY STALE: the packed latency times of trial(s) 1 do not match their rows" in flat
    assert f"dlbench repack --db {db}" in flat
    rebuilt = runner.invoke(app, ["repack", "--db", str(db)])
    assert rebuilt.exit_code == 0 and "latency copy rebuilt from the rows" in rebuilt.output
    assert _checked(db).trusted and _from_samples(db) == _from_rows(db)
    again = runner.invoke(app, ["report", "--run", "1", "--db", str(db)], env={"COLUMNS": "400"})
    assert "LATENCY COPY" not in again.output
    missing = runner.invoke(app, ["repack", "--db", str(tmp_path / "absent.db")])
    assert missing.exit_code == 2 and "no such database file" in missing.output
    assert not (tmp_path / "absent.db").exists()


def test_a_writer_restores_dropped_triggers_and_packs_again(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    _store(db)
    _edit(db, *PACK_EDITS["trigger-dropped-rows-scaled"])
    expected = _from_rows(db)
    # A reader trusts no pack and leaves the file as it is.
    assert _from_samples(db) == expected and _checked(db).missing_triggers
    with Store(db) as store:
        assert store.missing_triggers == frozenset()
    with sqlite3.connect(db) as con:
        triggers = {n for (n,) in con.execute("SELECT name FROM sqlite_master WHERE type='trigger'")}
    assert triggers == {"latency_unpacked_insert", "latency_unpacked_delete", "latency_unpacked_update"}
    assert _flags(db) == [1, 1, 1] and _checked(db).trusted and _from_samples(db) == expected


def test_a_version_7_file_that_already_has_the_packs_table_migrates(tmp_path: Path) -> None:
    """Another tool (or a half-applied copy) left latency_packs and the flag in a version-7
    file: the migration skips what is there and packs every trial anew."""
    db = tmp_path / "r.db"
    _store(db)
    expected = _from_rows(db)
    _edit(db, "INSERT INTO latency_packs (trial_id, phase, n, times) VALUES (1, 'latency_b1', 1, X'0000000000000000')")
    with sqlite3.connect(db) as con:
        con.execute("PRAGMA user_version = 7")
    with Store(db) as store:
        assert store.version == 8
    assert _checked(db).trusted and _from_samples(db) == expected


def test_a_table_of_another_shape_in_the_way_is_refused_in_one_line(tmp_path: Path) -> None:
    from dlbench.store import StoreError

    db = tmp_path / "r.db"
    _store(db)
    _downgrade_to_7(db)
    _edit(db, "CREATE TABLE latency_packs (id INTEGER PRIMARY KEY, note TEXT)")
    with pytest.raises(
        StoreError,
        match=r"r\.db: the database already holds a table latency_packs .* without its"
        r" column\(s\) n, phase, times, trial_id .*nothing was changed",
    ):
        Store(db)
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA user_version").fetchone()[0] == 7
