"""Runs `dlbench run` as a real process, interrupts it, resumes it, and checks what
a user must be able to rely on afterwards (docs/reliability.md):

- no worker outlives its runner (an orphan would keep computing beside the resume);
- the database passes `PRAGMA integrity_check`;
- every measurement row committed before the interruption is still there, unchanged
  (the attempt it belongs to may be retired: kept, marked interrupted, not analysed);
- the run holds every planned trial, each case and block exactly once (its current
  attempt), each with exactly warm-up + repeats train times after the resume;
- nobody owns the run once the resume has finished.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import psutil

ORPHAN_GRACE_S = 10.0


@dataclass
class Outcome:
    """What one interruption did, for the suite's tallies."""

    signal: str
    where: str
    returncode: int | None
    run_existed: bool
    retired: int = 0
    notes: list[str] = field(default_factory=list)
    stderr_tail: str = ""  # the runner's last words, for a failed assertion on its exit


class Driver:
    def __init__(self, root: Path, experiment: Path, env: dict[str, str], planned: int, repeats: int) -> None:
        self.root, self.experiment, self.base_env = root, experiment, env
        self.planned, self.repeats = planned, repeats

    # -- processes ----------------------------------------------------------
    def env(self, tag: str, **fault: str) -> dict[str, str]:
        env = dict(self.base_env, DLBENCH_TEST_TAG=tag)
        env.update({f"DLBENCH_FAULT_{k.upper()}": v for k, v in fault.items()})
        return env

    def start(self, db: Path, tag: str, *args: str, **fault: str) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-m", "dlbench", "run", *args, "--db", str(db)],
            cwd=db.parent,
            env=self.env(tag, **fault),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def tagged(self, tag: str) -> list[psutil.Process]:
        """Live processes started under this tag (workers inherit the runner's environment)."""
        found = []
        for proc in psutil.process_iter(["pid"]):
            try:
                if proc.environ().get("DLBENCH_TEST_TAG") == tag and proc.status() != psutil.STATUS_ZOMBIE:
                    found.append(proc)
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
        return found

    def assert_no_orphans(self, tag: str) -> None:
        deadline = time.monotonic() + ORPHAN_GRACE_S
        while True:
            left = self.tagged(tag)
            if not left:
                return
            if time.monotonic() > deadline:
                names = [" ".join(p.cmdline()[:6]) for p in left]
                for p in left:
                    p.kill()
                raise AssertionError(f"{len(left)} process(es) outlived the runner: {names}")
            time.sleep(0.05)

    # -- one scenario -------------------------------------------------------
    def interrupt_and_resume(
        self,
        name: str,
        sig: signal.Signals,
        *,
        after_s: float | None = None,
        phase: str | None = None,
        occurrence: int = 1,
    ) -> Outcome:
        """Start a run; send `sig` to the runner after `after_s` seconds, or have the
        plugin send it at `phase`; check the aftermath; resume; check again."""
        where = self.root / name
        where.mkdir()
        db = where / "r.db"
        tag = uuid.uuid4().hex
        fault = (
            {"phase": phase, "occurrence": str(occurrence), "signal": str(int(sig)), "flag": str(where / "fired")}
            if phase
            else {}
        )
        proc = self.start(db, tag, str(self.experiment), **fault)
        if after_s is not None:
            time.sleep(after_s)
            if proc.poll() is None:
                proc.send_signal(sig)
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            raise AssertionError(f"{name}: the runner did not end within 60 s after {sig.name}") from None
        label = f"{sig.name} at {phase}" if phase else f"{sig.name} after {after_s:.2f} s"
        outcome = Outcome(sig.name, label, proc.returncode, run_existed=False, stderr_tail=err[-600:])
        self.assert_no_orphans(tag)
        soft = sig in (signal.SIGTERM, signal.SIGINT) and proc.returncode == 128 + int(sig)
        if not db.exists():
            outcome.notes.append("killed before the database was created")
            return outcome
        self.assert_intact(db, label)
        tables = {name for (name,) in self.query(db, "SELECT name FROM sqlite_master WHERE type='table'")}
        if "runs" not in tables:
            # The schema is created in one transaction: all of it or none.
            assert not tables, f"{label}: a partial schema: {sorted(tables)}"
            outcome.notes.append("killed before the schema was created")
            return outcome
        runs = self.query(db, "SELECT id, status FROM runs")
        if not runs:
            outcome.notes.append("killed before the run was created: nothing stored, nothing to resume")
            return outcome
        outcome.run_existed = True
        run_id = runs[0][0]
        if soft:  # a handled signal once the run exists: one line that says how to go on
            said = any(
                words in err
                for words in (
                    "Resume with: dlbench run --resume",
                    "while printing the report; run 1 is finished and stored",
                )
            )
            assert said, f"{label}: neither a resume hint nor a finished run said in {err[-500:]!r}"
        before = self.query(db, "SELECT id, trial_id, repeat, phase, metric, value FROM measurements ORDER BY id")
        self.assert_planned(db, run_id, label, finished=False)
        if proc.returncode == 0:
            outcome.notes.append("the run had finished before the signal")
        else:
            resumed = self.start(db, tag, "--resume", str(run_id))
            out, err = resumed.communicate(timeout=120)
            assert resumed.returncode == 0, f"{label}: resume exited {resumed.returncode}: {err[-2000:]}"
            self.assert_no_orphans(tag)
        self.assert_intact(db, label)
        after = {
            row[0]: row for row in self.query(db, "SELECT id, trial_id, repeat, phase, metric, value FROM measurements")
        }
        lost = [row for row in before if after.get(row[0]) != row]
        assert not lost, f"{label}: {len(lost)} committed measurement row(s) lost or changed by the resume"
        self.assert_planned(db, run_id, label, finished=True)
        outcome.retired = self.query(db, "SELECT COUNT(*) FROM trials WHERE retired=1")[0][0]
        return outcome

    # -- checks -------------------------------------------------------------
    @staticmethod
    def query(db: Path, sql: str, args: tuple = ()) -> list[tuple]:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
        try:
            return con.execute(sql, args).fetchall()
        finally:
            con.close()

    def assert_intact(self, db: Path, label: str) -> None:
        check = self.query(db, "PRAGMA integrity_check")
        assert check == [("ok",)], f"{label}: integrity_check says {check}"

    def assert_planned(self, db: Path, run_id: int, label: str, *, finished: bool) -> None:
        current = self.query(
            db, "SELECT id, case_key, block, status, attempt FROM trials WHERE run_id=? AND retired=0", (run_id,)
        )
        cells = [(key, block) for _, key, block, _, _ in current]
        assert len(current) == self.planned, f"{label}: {len(current)} current trials, planned {self.planned}"
        assert len(set(cells)) == len(cells), f"{label}: a case and block has two current trials: {cells}"
        retired = self.query(
            db, "SELECT case_key, block, status, attempt FROM trials WHERE run_id=? AND retired=1", (run_id,)
        )
        for key, block, status, attempt in retired:
            assert status == "interrupted", f"{label}: retired attempt with status {status}"
            newer = [a for _, k, b, _, a in current if (k, b) == (key, block)]
            assert newer and newer[0] > attempt, f"{label}: retired attempt {attempt} has no later attempt"
        if not finished:
            return
        assert {s for _, _, _, s, _ in current} == {"ok"}, f"{label}: after the resume: {current}"
        for trial_id, *_ in current:
            n = self.query(
                db,
                "SELECT COUNT(*) FROM measurements WHERE trial_id=? AND phase='train' AND metric='time'",
                (trial_id,),
            )[0][0]
            assert n == self.repeats, f"{label}: trial {trial_id} has {n} train times, expected {self.repeats}"
        owner = self.query(db, "SELECT owner_json, status FROM runs WHERE id=?", (run_id,))[0]
        assert owner == (None, "finished"), f"{label}: after the resume the run is {owner}"

    def full_run_seconds(self, parallel: int) -> float:
        """Wall time of an uninterrupted run while `parallel` run at once, as the
        scenarios do (the span random signals are drawn from)."""
        procs = []
        t0 = time.monotonic()
        for i in range(parallel):
            where = self.root / f"baseline{i}"
            where.mkdir()
            procs.append(self.start(where / "r.db", uuid.uuid4().hex, str(self.experiment)))
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err[-2000:]
        return time.monotonic() - t0


def summary(outcomes: list[Outcome]) -> str:
    existed = sum(o.run_existed for o in outcomes)
    retired = sum(o.retired for o in outcomes)
    codes = sorted({str(o.returncode) for o in outcomes})
    return (
        f"{len(outcomes)} interruptions ({existed} after the run was created), {retired} interrupted "
        f"attempts kept, runner exit codes {', '.join(codes)}"
    )


def dump(outcomes: list[Outcome], path: Path) -> None:
    path.write_text(json.dumps([o.__dict__ for o in outcomes], indent=1))


__all__ = ["Driver", "Outcome", "summary", "dump"]
