"""One run, one executor: a second resume while the first runs is refused with the
owner named, a dead owner holds nothing, two resumes started together run every
trial once. A disk that fills up mid-run ends the run with one line, keeps what
was committed, and the run resumes once there is room."""

from __future__ import annotations

import resource
import signal
import subprocess
import sys
import time
import uuid

from .driver import Driver

EXIT_BUSY = 4


def _wait_until(predicate, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def _trial_running(driver: Driver, db) -> bool:
    try:
        return bool(driver.query(db, "SELECT 1 FROM trials WHERE status='running'"))
    except Exception:  # noqa: BLE001 - the file or its schema may not exist yet
        return False


def test_a_second_resume_is_refused_while_the_owner_lives_and_allowed_once_it_died(driver):
    db = driver.root / "r.db"
    tag = uuid.uuid4().hex
    first = driver.start(db, tag, str(driver.experiment))
    _wait_until(lambda: _trial_running(driver, db))
    second = driver.start(db, tag, "--resume", "1")
    out, err = second.communicate(timeout=60)
    assert second.returncode == EXIT_BUSY, err
    flat = " ".join(err.split())
    assert f"run 1 of {db} is being executed by another dlbench (pid {first.pid} on" in flat, flat
    assert "Traceback" not in err and flat.startswith("error: ")
    first.send_signal(signal.SIGKILL)  # the owner dies without a word: its claim must not outlive it
    first.communicate()
    driver.assert_no_orphans(tag)
    third = driver.start(db, tag, "--resume", "1")
    out, err = third.communicate(timeout=120)
    assert third.returncode == 0, err
    driver.assert_intact(db, "after the resume")
    driver.assert_planned(db, 1, "after the resume", finished=True)


def test_two_resumes_started_together_run_every_trial_once(driver):
    db = driver.root / "r.db"
    tag = uuid.uuid4().hex
    creator = driver.start(db, tag, str(driver.experiment))
    _wait_until(lambda: _trial_running(driver, db))
    creator.send_signal(signal.SIGKILL)
    creator.communicate()
    driver.assert_no_orphans(tag)
    both = [driver.start(db, tag, "--resume", "1") for _ in range(2)]
    codes = sorted(p.communicate(timeout=120) and p.returncode for p in both)
    assert codes == [0, EXIT_BUSY], codes
    driver.assert_planned(db, 1, "two resumes", finished=True)  # each trial has exactly its repeats


def test_a_full_disk_ends_the_run_with_one_line_and_it_resumes_later(driver):
    db = driver.root / "r.db"
    tag = uuid.uuid4().hex
    limit = 150_000  # bytes a file may grow to: the schema and the run fit, the trials' values do not

    def small_disk() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    full = subprocess.Popen(
        [sys.executable, "-m", "dlbench", "run", str(driver.experiment), "--db", str(db)],
        cwd=driver.root,
        env=driver.env(tag),
        preexec_fn=small_disk,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = full.communicate(timeout=120)
    assert full.returncode == 1, err
    lines = [line for line in err.splitlines() if line.strip()]
    flat = " ".join(err.split())
    assert "Traceback" not in err and lines[0].startswith("error: "), err
    assert "cannot store the results of run 1" in flat and "everything committed before is kept" in flat
    assert f"dlbench run --resume 1 --db {db}" in flat
    driver.assert_no_orphans(tag)
    driver.assert_intact(db, "after the full disk")
    assert driver.query(db, "SELECT status FROM runs") == [("interrupted",)]
    before = driver.query(db, "SELECT id, trial_id, repeat, phase, metric, value FROM measurements ORDER BY id")
    resumed = driver.start(db, tag, "--resume", "1")
    out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    after = set(driver.query(db, "SELECT id, trial_id, repeat, phase, metric, value FROM measurements"))
    assert set(before) <= after
    driver.assert_planned(db, 1, "after the resume", finished=True)
