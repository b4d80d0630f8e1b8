"""SQLite store: every raw value, committed as it arrives.

Tables (DESIGN.md "Storage"): runs (config text verbatim, environment
fingerprint), trials (full case and fairness manifest, status, error text),
measurements (long format: trial, repeat, warm-up flag, phase, metric, value,
unit), series (polled time series, for telemetry), skipped (cells not run,
with the reason). Schema versions live in `PRAGMA user_version` and are
upgraded by the ordered MIGRATIONS below (sqlite-utils' approach). WAL mode
lets `dlbench report` read while a run writes.
"""

from __future__ import annotations

import csv
import json
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

MIGRATIONS: list[str] = [
    # 1: the initial schema
    """
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        status TEXT NOT NULL,
        started_at TEXT NOT NULL,
        finished_at TEXT,
        command TEXT,
        config_source TEXT,
        config_text TEXT,
        experiment_json TEXT,
        environment_json TEXT,
        dlbench_version TEXT
    );
    CREATE TABLE trials (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id),
        case_key TEXT NOT NULL,
        block INTEGER NOT NULL,
        position INTEGER NOT NULL,
        framework TEXT NOT NULL,
        variant TEXT NOT NULL,
        model TEXT NOT NULL,
        dataset TEXT NOT NULL,
        batch_size INTEGER NOT NULL,
        case_json TEXT NOT NULL,
        protocol_json TEXT NOT NULL,
        manifest_json TEXT,
        status TEXT NOT NULL,
        error TEXT,
        returncode INTEGER,
        started_at TEXT,
        finished_at TEXT,
        wall_s REAL,
        stderr TEXT,
        UNIQUE (run_id, case_key, block)
    );
    CREATE TABLE measurements (
        id INTEGER PRIMARY KEY,
        trial_id INTEGER NOT NULL REFERENCES trials(id),
        repeat INTEGER,
        warmup INTEGER NOT NULL DEFAULT 0,
        phase TEXT NOT NULL,
        metric TEXT NOT NULL,
        value REAL,
        unit TEXT NOT NULL,
        seq INTEGER
    );
    CREATE INDEX measurements_trial ON measurements(trial_id);
    CREATE TABLE series (
        id INTEGER PRIMARY KEY,
        trial_id INTEGER NOT NULL REFERENCES trials(id),
        name TEXT NOT NULL,
        t REAL NOT NULL,
        value REAL,
        unit TEXT NOT NULL
    );
    CREATE INDEX series_trial ON series(trial_id);
    CREATE TABLE skipped (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id),
        cell_json TEXT NOT NULL,
        reason TEXT NOT NULL
    );
    """,
    # 2: telemetry — how each value was obtained and whether it is reliable,
    # the worker's phase markers (to slice raw series later), the sampler
    # availability table of each run, the idle baseline, per-trial notes.
    """
    ALTER TABLE measurements ADD COLUMN method TEXT;
    ALTER TABLE measurements ADD COLUMN flag TEXT;
    ALTER TABLE series ADD COLUMN kind TEXT;
    ALTER TABLE series ADD COLUMN method TEXT;
    CREATE TABLE markers (
        id INTEGER PRIMARY KEY,
        trial_id INTEGER NOT NULL REFERENCES trials(id),
        phase TEXT NOT NULL,
        repeat INTEGER,
        edge TEXT NOT NULL,
        t REAL NOT NULL
    );
    CREATE INDEX markers_trial ON markers(trial_id);
    CREATE TABLE samplers (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id),
        name TEXT NOT NULL,
        available INTEGER NOT NULL,
        reason TEXT,
        hint TEXT,
        interval_s REAL
    );
    ALTER TABLE runs ADD COLUMN idle_json TEXT;
    ALTER TABLE trials ADD COLUMN telemetry_notes TEXT;
    """,
    # 3: why an adaptive run stopped adding blocks.
    """
    ALTER TABLE runs ADD COLUMN stop_reason TEXT;
    """,
    # 4: trial attempts and the run's owner. A trial interrupted after it stored
    # values is kept (retired = 1, status interrupted) and its case and block run
    # again as attempt + 1: a trial is one process, so the repeats of two processes
    # never mix, and no committed value is deleted. The UNIQUE constraint gains the
    # attempt, which SQLite can only do by rebuilding the table (foreign keys are
    # off during migrations, see Store._migrate). owner_json: the process that
    # executes the run now (dlbench.runlock), so that two resumes cannot both run it.
    """
    CREATE TABLE trials_v4 (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id),
        case_key TEXT NOT NULL,
        block INTEGER NOT NULL,
        position INTEGER NOT NULL,
        framework TEXT NOT NULL,
        variant TEXT NOT NULL,
        model TEXT NOT NULL,
        dataset TEXT NOT NULL,
        batch_size INTEGER NOT NULL,
        case_json TEXT NOT NULL,
        protocol_json TEXT NOT NULL,
        manifest_json TEXT,
        status TEXT NOT NULL,
        error TEXT,
        returncode INTEGER,
        started_at TEXT,
        finished_at TEXT,
        wall_s REAL,
        stderr TEXT,
        telemetry_notes TEXT,
        attempt INTEGER NOT NULL DEFAULT 1,
        retired INTEGER NOT NULL DEFAULT 0,
        UNIQUE (run_id, case_key, block, attempt)
    );
    INSERT INTO trials_v4 (id, run_id, case_key, block, position, framework, variant, model, dataset,
        batch_size, case_json, protocol_json, manifest_json, status, error, returncode, started_at,
        finished_at, wall_s, stderr, telemetry_notes)
        SELECT id, run_id, case_key, block, position, framework, variant, model, dataset, batch_size,
        case_json, protocol_json, manifest_json, status, error, returncode, started_at, finished_at,
        wall_s, stderr, telemetry_notes FROM trials;
    DROP TABLE trials;
    ALTER TABLE trials_v4 RENAME TO trials;
    CREATE INDEX trials_run ON trials(run_id, retired);
    ALTER TABLE runs ADD COLUMN owner_json TEXT;
    """,
]

STATUSES = ("pending", "running", "ok", "failed", "oom", "timeout", "interrupted")


# The per-call latency phases (latency_b<B>); "_" escaped, or LIKE would take it for any character.
LATENCY_PHASE = r"m.phase LIKE 'latency\_b%' ESCAPE '\'"

class StoreError(RuntimeError):
    pass


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class Measurement:
    repeat: int | None
    warmup: bool
    phase: str
    metric: str
    value: float | None
    unit: str
    seq: int | None = None
    method: str | None = None   # how it was obtained: "counter", "integrated-power", "polled", ...
    flag: str | None = None     # e.g. "unreliable: window shorter than the update period"


class Store:
    def __init__(self, path: str | Path, *, migrations: Sequence[str] = MIGRATIONS) -> None:
        self.path = Path(path)
        try:
            self.db = sqlite3.connect(self.path, timeout=30)
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot open database: {exc}") from None
        self.db.row_factory = sqlite3.Row
        try:
            self.db.execute("PRAGMA journal_mode=WAL")
            # Foreign keys stay off while migrating: a migration that rebuilds a
            # table (4) must drop the old one, which the children's references forbid.
            self._migrate(migrations)
            self.db.execute("PRAGMA foreign_keys=ON")
        except sqlite3.DatabaseError as exc:
            self.db.close()
            raise StoreError(f"{self.path}: not a dlbench database ({exc})") from None

    def _migrate(self, migrations: Sequence[str]) -> None:
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        if version > len(migrations):
            raise StoreError(f"{self.path}: schema version {version} is newer than this dlbench "
                             f"understands ({len(migrations)}); upgrade dlbench")
        for number, script in enumerate(migrations[version:], start=version + 1):
            # executescript commits first; the version bump is in the same script
            # so that a crash cannot leave a half-applied migration marked done.
            self.db.executescript(f"BEGIN; {script}; PRAGMA user_version = {number}; COMMIT;")

    @property
    def version(self) -> int:
        return self.db.execute("PRAGMA user_version").fetchone()[0]

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- runs -------------------------------------------------------------
    def create_run(self, *, name: str, command: str, config_source: str, config_text: str,
                   experiment: dict, environment: dict, version: str, trials: Sequence[dict] = (),
                   skipped: Iterable[tuple[dict, str]] = (), samplers: Iterable = (),
                   owner: dict | None = None) -> int:
        """The run with its planned trials (see add_trials), skipped cells, sampler table
        and owner, in ONE transaction: a run killed while being created leaves nothing,
        never a run with part of its trials (which a resume would call finished)."""
        with self.db:
            cur = self.db.execute(
                "INSERT INTO runs (name, status, started_at, command, config_source, config_text,"
                " experiment_json, environment_json, dlbench_version, owner_json) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (name, "running", now(), command, config_source, config_text,
                 json.dumps(experiment, default=str), json.dumps(environment, default=str), version,
                 json.dumps(owner) if owner else None))
            run_id = int(cur.lastrowid)
            self._insert_trials(run_id, trials)
            self.db.executemany("INSERT INTO skipped (run_id, cell_json, reason) VALUES (?,?,?)",
                                [(run_id, json.dumps(c, sort_keys=True), r) for c, r in skipped])
            self._insert_samplers(run_id, samplers)
        return run_id

    # -- the run's owner (dlbench.runlock decides who is alive) ------------------
    def claim_run(self, run_id: int, owner: dict, alive: Callable[[dict], bool]) -> dict | None:
        """Make `owner` the process that executes the run, unless another live one is:
        then return that one and change nothing. Read and write happen in one
        IMMEDIATE transaction, so two processes claiming at once cannot both win."""
        self.db.commit()
        self.db.execute("BEGIN IMMEDIATE")
        try:
            row = self.db.execute("SELECT owner_json FROM runs WHERE id=?", (run_id,)).fetchone()
            holder = json.loads(row[0]) if row is not None and row[0] else None
            if holder is not None and holder != owner and alive(holder):
                self.db.rollback()
                return holder
            self.db.execute("UPDATE runs SET owner_json=? WHERE id=?", (json.dumps(owner), run_id))
            self.db.commit()
        except BaseException:
            self.db.rollback()
            raise
        return None

    def release_run(self, run_id: int, owner: dict) -> None:
        with self.db:
            self.db.execute("UPDATE runs SET owner_json=NULL WHERE id=? AND owner_json=?",
                            (run_id, json.dumps(owner)))

    def finish_run(self, run_id: int, status: str, stop_reason: str | None = None) -> None:
        with self.db:
            self.db.execute("UPDATE runs SET status=?, finished_at=?, stop_reason=coalesce(?, stop_reason)"
                            " WHERE id=?", (status, now(), stop_reason, run_id))

    def run(self, run_id: int | None = None) -> sqlite3.Row:
        if run_id is None:
            row = self.db.execute("SELECT * FROM runs ORDER BY id DESC LIMIT 1").fetchone()
            if row is None:
                raise StoreError(f"{self.path}: holds no runs yet")
            return row
        row = self.db.execute("SELECT * FROM runs WHERE id=?", (run_id,)).fetchone()
        if row is None:
            ids = [r[0] for r in self.db.execute("SELECT id FROM runs ORDER BY id")]
            raise StoreError(f"{self.path}: no run {run_id}; runs here: {ids or 'none'}")
        return row

    def runs(self) -> list[sqlite3.Row]:
        return self.db.execute(
            "SELECT r.*, (SELECT COUNT(*) FROM trials t WHERE t.run_id=r.id) AS n_trials,"
            " (SELECT COUNT(*) FROM trials t WHERE t.run_id=r.id AND t.status='ok') AS n_ok"
            " FROM runs r ORDER BY r.id").fetchall()

    def skipped(self, run_id: int) -> list[sqlite3.Row]:
        return self.db.execute("SELECT * FROM skipped WHERE run_id=? ORDER BY id", (run_id,)).fetchall()

    # -- trials -----------------------------------------------------------
    # A trial dict for add_trials / create_run: case_key, block, position, case, protocol.
    def _insert_trials(self, run_id: int, trials: Iterable[dict], attempt: int = 1) -> None:
        self.db.executemany(
            "INSERT INTO trials (run_id, case_key, block, position, framework, variant, model,"
            " dataset, batch_size, case_json, protocol_json, status, attempt) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [(run_id, t["case_key"], t["block"], t["position"], t["case"]["framework"], t["case"]["variant"],
              t["case"]["model"], t["case"]["dataset"], t["case"]["batch_size"],
              json.dumps(t["case"], sort_keys=True), json.dumps(t["protocol"], sort_keys=True), "pending",
              t.get("attempt", attempt)) for t in trials])

    def add_trials(self, run_id: int, trials: Sequence[dict]) -> None:
        """Planned trials (status pending), all or none: an adaptive or extended block
        is never left half inserted."""
        with self.db:
            self._insert_trials(run_id, trials)

    def add_trial(self, run_id: int, *, case_key: str, block: int, position: int, case: dict,
                  protocol: dict) -> int:
        with self.db:
            self._insert_trials(run_id, [{"case_key": case_key, "block": block, "position": position,
                                          "case": case, "protocol": protocol}])
            return int(self.db.execute("SELECT last_insert_rowid()").fetchone()[0])

    def start_trial(self, trial_id: int) -> None:
        with self.db:
            self.db.execute("UPDATE trials SET status='running', started_at=?, error=NULL WHERE id=?",
                            (now(), trial_id))

    def retire_unfinished(self, run_id: int) -> int:
        """Before a resume: every trial of the run that started but never finished
        (status running or interrupted) and stored anything is kept as it is, marked
        retired with status interrupted, and its case and block are planned again as
        the next attempt; one that stored nothing is simply planned again. Nothing is
        deleted. Returns the number of attempts retired."""
        unfinished = self.db.execute(
            "SELECT t.*, (SELECT COUNT(*) FROM measurements m WHERE m.trial_id = t.id)"
            " + (SELECT COUNT(*) FROM markers k WHERE k.trial_id = t.id)"
            " + (SELECT COUNT(*) FROM series s WHERE s.trial_id = t.id) AS stored"
            " FROM trials t WHERE t.run_id=? AND t.retired=0 AND t.status IN ('running', 'interrupted')",
            (run_id,)).fetchall()
        retired = 0
        with self.db:
            for t in unfinished:
                if not t["stored"]:
                    self.db.execute("UPDATE trials SET status='pending', started_at=NULL, manifest_json=NULL,"
                                    " telemetry_notes=NULL WHERE id=?", (t["id"],))
                    continue
                repeats = self.db.execute(
                    "SELECT COUNT(DISTINCT repeat) FROM measurements WHERE trial_id=? AND repeat IS NOT NULL",
                    (t["id"],)).fetchone()[0]
                self.db.execute(
                    "UPDATE trials SET status='interrupted', retired=1, finished_at=coalesce(finished_at, ?),"
                    " error=? WHERE id=?",
                    (now(), f"interrupted after storing {repeats} repeat(s); kept as attempt {t['attempt']}, "
                     f"the trial ran again as attempt {t['attempt'] + 1}", t["id"]))
                self._insert_trials(run_id, [{"case_key": t["case_key"], "block": t["block"],
                                              "position": t["position"], "case": json.loads(t["case_json"]),
                                              "protocol": json.loads(t["protocol_json"]),
                                              "attempt": t["attempt"] + 1}])
                retired += 1
        return retired

    def set_manifest(self, trial_id: int, manifest: dict) -> None:
        with self.db:
            self.db.execute("UPDATE trials SET manifest_json=? WHERE id=?",
                            (json.dumps(manifest, sort_keys=True, default=str), trial_id))

    def finish_trial(self, trial_id: int, *, status: str, error: str | None, returncode: int | None,
                     wall_s: float, stderr: str) -> None:
        if status not in STATUSES:
            raise ValueError(f"status {status!r} not in {STATUSES}")
        with self.db:
            self.db.execute(
                "UPDATE trials SET status=?, error=?, returncode=?, finished_at=?, wall_s=?, stderr=?"
                " WHERE id=?", (status, error, returncode, now(), wall_s, stderr, trial_id))

    def mark_interrupted(self, run_id: int) -> None:
        with self.db:
            self.db.execute("UPDATE trials SET status='interrupted' WHERE run_id=? AND status='running'",
                            (run_id,))

    def trials(self, run_id: int, statuses: Sequence[str] | None = None,
               retired: bool = False) -> list[sqlite3.Row]:
        """The run's trials, one per case and block: the current attempt of each.
        retired=True adds the interrupted attempts that a resume kept."""
        sql = "SELECT * FROM trials WHERE run_id=?" + ("" if retired else " AND retired=0")
        args: list[Any] = [run_id]
        if statuses:
            sql += f" AND status IN ({','.join('?' * len(statuses))})"
            args.extend(statuses)
        return self.db.execute(sql + " ORDER BY block, position", args).fetchall()

    # -- measurements -----------------------------------------------------
    def add_measurements(self, trial_id: int, rows: Iterable[Measurement]) -> int:
        values = [(trial_id, m.repeat, int(m.warmup), m.phase, m.metric, m.value, m.unit, m.seq, m.method, m.flag)
                  for m in rows]
        with self.db:
            self.db.executemany(
                "INSERT INTO measurements (trial_id, repeat, warmup, phase, metric, value, unit, seq, method, flag)"
                " VALUES (?,?,?,?,?,?,?,?,?,?)", values)
        return len(values)

    def add_telemetry(self, trial_id: int, series: Iterable, markers: Iterable[dict],
                      rows: Iterable[Measurement], notes: dict[str, list[str]]) -> None:
        """Raw series (t in monotonic seconds), phase markers, per-phase rows and
        sampler notes of one trial, in one transaction."""
        with self.db:
            for s in series:
                self.db.executemany(
                    "INSERT INTO series (trial_id, name, t, value, unit, kind, method) VALUES (?,?,?,?,?,?,?)",
                    [(trial_id, s.name, t / 1e9, v, s.unit, s.kind, s.method) for t, v in s.points])
            self.db.executemany("INSERT INTO markers (trial_id, phase, repeat, edge, t) VALUES (?,?,?,?,?)",
                                [(trial_id, m["phase"], m["repeat"], m["edge"], m["t"] / 1e9) for m in markers])
            self.db.execute("UPDATE trials SET telemetry_notes=? WHERE id=?", (json.dumps(notes), trial_id))
        self.add_measurements(trial_id, rows)

    def _insert_samplers(self, run_id: int, table: Iterable) -> None:
        self.db.executemany(
            "INSERT INTO samplers (run_id, name, available, reason, hint, interval_s) VALUES (?,?,?,?,?,?)",
            [(run_id, a.name, int(a.available), a.reason, a.hint, a.interval_s) for a in table])

    def samplers(self, run_id: int) -> list[sqlite3.Row]:
        return self.db.execute("SELECT * FROM samplers WHERE run_id=? ORDER BY id", (run_id,)).fetchall()

    def set_idle(self, run_id: int, idle: dict) -> None:
        with self.db:
            self.db.execute("UPDATE runs SET idle_json=? WHERE id=?", (json.dumps(idle), run_id))

    def series(self, trial_id: int) -> list[sqlite3.Row]:
        return self.db.execute("SELECT * FROM series WHERE trial_id=? ORDER BY id", (trial_id,)).fetchall()

    def measurements(self, run_id: int, latency: bool = True) -> list[sqlite3.Row]:
        """Every measurement of a run in execution order, each with the few trial columns
        the analyses group by and the case's main factors. The whole case is in
        trials(): copying its JSON into each of 100,000 rows took a quarter of the read.
        latency=False leaves out the per-call latency rows (phases latency_b<B>), which
        are most of a run's rows and which no figure draws."""
        where = "" if latency else f" AND NOT {LATENCY_PHASE}"
        return self.db.execute(
            "SELECT t.id AS trial_id, t.case_key, t.block, t.framework, t.variant, t.model, t.dataset,"
            " t.batch_size, t.status, m.repeat, m.warmup, m.phase, m.metric, m.value, m.unit, m.seq,"
            " m.method, m.flag"
            " FROM measurements m JOIN trials t ON t.id = m.trial_id WHERE t.run_id=? AND t.retired=0" + where +
            " ORDER BY t.block, t.position, m.id", (run_id,)).fetchall()

    def latency_calls(self, run_id: int) -> list[sqlite3.Row]:
        """The per-call latency rows of a run (phases latency_b<B>), with only the columns
        latency percentiles need: a third of the time of reading them whole."""
        return self.db.execute(
            "SELECT t.case_key, t.status, m.warmup, m.phase, m.metric, m.value"
            " FROM measurements m JOIN trials t ON t.id = m.trial_id"
            f" WHERE t.run_id=? AND t.retired=0 AND {LATENCY_PHASE}", (run_id,)).fetchall()

    def export_csv(self, run_id: int, path: str | Path) -> int:
        """Every measurement of a run in long format, with the case's factors as columns,
        the interrupted attempts that a resume kept included (retired = 1)."""
        trials = {t["id"]: t for t in self.trials(run_id, retired=True)}
        rows = self.db.execute(
            "SELECT m.* FROM measurements m JOIN trials t ON t.id = m.trial_id WHERE t.run_id=?"
            " ORDER BY t.block, t.position, t.attempt, m.id", (run_id,))
        cases = {tid: json.loads(t["case_json"]) for tid, t in trials.items()}
        case_cols = ["framework", "variant", "model", "dataset", "batch_size", "init", "optimizer", "lr",
                     "epochs", "steps", "threads", "device", "precision"]
        header = ["run_id", "trial_id", "case_key", "block", "attempt", "retired", "status", *case_cols,
                  "repeat", "warmup", "phase", "metric", "value", "unit", "seq", "method", "flag"]
        n = 0
        with open(path, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(header)
            for r in rows:
                t, case = trials[r["trial_id"]], cases[r["trial_id"]]
                w.writerow([run_id, r["trial_id"], t["case_key"], t["block"], t["attempt"], t["retired"],
                            t["status"], *[case.get(c) for c in case_cols],
                            r["repeat"], r["warmup"], r["phase"], r["metric"], r["value"], r["unit"], r["seq"],
                            r["method"], r["flag"]])
                n += 1
        return n
