"""Trials as Slurm jobs on a real one-node Slurm cluster (slurmctld, slurmd and munge,
started by scripts/services/slurm.sh): the matrix stores the same cases and values as
a local run, a job cancelled with scancel and a job past its time limit come back as
trial statuses with Slurm's reason, and a run interrupted under Slurm resumes locally."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from dlbench import config
from dlbench.executors import ExecutorSettings
from dlbench.plan import expand
from dlbench.runner import execute_run, run_plan
from dlbench.store import Store
from executor_runs import interrupted_after_one_trial

pytest.importorskip("submitit", reason="submitit is not installed (requirements-cluster.txt)")

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "services" / "slurm.sh"


@pytest.fixture(scope="module")
def slurm_cluster(tmp_path_factory):
    """The one-node cluster, started (and installed, when missing) for this module."""
    if os.geteuid() != 0:
        pytest.skip("starting Slurm's daemons needs root (scripts/services/slurm.sh up)")
    if shutil.which("sbatch") is None and shutil.which("apt-get") is None:
        pytest.skip("Slurm is not installed and there is no apt-get to install it")
    up = subprocess.run(["bash", str(SCRIPT), "up"], capture_output=True, text=True, timeout=600)
    assert up.returncode == 0, f"slurm.sh up failed:\n{up.stdout}\n{up.stderr}"
    yield tmp_path_factory.mktemp("slurm-jobs")
    subprocess.run(["bash", str(SCRIPT), "down"], capture_output=True, text=True, timeout=120)


def _settings(folder: Path, **extra) -> ExecutorSettings:
    return ExecutorSettings(name="slurm", slurm_folder=str(folder), **extra)


def _numpy_experiment(trials: int) -> config.Experiment:
    return config.parse(
        '[matrix]\nframework = ["numpy"]\nmodel = ["mlp"]\ndataset = ["digits"]\nbatch_size = [32]\n'
        f"[protocol]\ntrials = {trials}\nrepeats = 2\nwarmup = 0\nthreads = 1\nepochs = 1\nlatency_batches = 2\n",
        "slurm.toml",
    )


def _accuracies(store: Store, run_id: int) -> dict[tuple[str, int, int], float]:
    trials = {t["id"]: t for t in store.trials(run_id)}
    return {
        (trials[m["trial_id"]]["case_key"], trials[m["trial_id"]]["block"], m["repeat"]): m["value"]
        for m in store.measurements(run_id)
        if m["metric"] == "accuracy"
    }


def test_the_same_matrix_as_slurm_jobs_stores_the_same_cases_and_values(tmp_path, slurm_cluster):
    plan = expand(_numpy_experiment(trials=2))
    with Store(tmp_path / "local.db") as local, Store(tmp_path / "slurm.db") as remote:
        local_id, local_counts = run_plan(local, plan, command_line="test", environment={})
        slurm_id, slurm_counts = run_plan(
            remote, plan, command_line="test", environment={}, executor=_settings(slurm_cluster)
        )
        assert local_counts == slurm_counts == {"ok": 2}
        assert _accuracies(local, local_id) == _accuracies(remote, slurm_id) and len(_accuracies(local, local_id)) == 4
        jobs = set()
        for t in remote.trials(slurm_id):
            placement = json.loads(t["placement_json"])
            assert placement["executor"] == "slurm" and placement["machine"]["slurm_node"] == placement["host"]
            jobs.add(placement["slurm_job"])
            assert json.loads(t["manifest_json"])["threads_intra_op"] == 1
        assert len(jobs) == 2  # one job per trial
        # The job folder holds each job's submission and logs, nothing else dlbench needs.
        assert all((slurm_cluster / job).is_dir() for job in jobs)


def _end_long_jobs(stop: threading.Event, ended: dict[str, str], after_s: int = 4) -> None:
    """The first dlbench job seen running for more than after_s seconds is cancelled
    (scancel); the second has its end time moved to now (`scontrol update EndTime=now`:
    its time limit is then reached, and slurmctld ends it TIMEOUT at its next check,
    within 30 s, where a real one-minute limit takes 60-90 s)."""
    while not stop.is_set() and len(ended) < 2:
        out = subprocess.run(["squeue", "-h", "-t", "RUNNING", "-o", "%i|%j|%M"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            job, name, elapsed = line.split("|")
            seconds = sum(int(x) * 60**i for i, x in enumerate(reversed(elapsed.split("-")[-1].split(":"))))
            if not name.startswith("dlbench-trial-") or seconds <= after_s or job in ended:
                continue
            if not ended:
                subprocess.run(["scancel", job], check=True)
                ended[job] = "cancelled"
            else:
                subprocess.run(["scontrol", "update", f"JobId={job}", "EndTime=now"], check=True)
                ended[job] = "time limit"
                break
        stop.wait(0.5)


def test_a_cancelled_job_and_a_job_past_its_time_limit_are_trial_statuses_and_the_run_goes_on(
    tmp_path, slurm_cluster, faulty_plugin
):
    """Two blocks side by side (oversubscribe: one CPU each), each a trial that hangs and
    one that ends: one hanging job is cancelled with scancel, the other reaches its time
    limit; each comes back as the trial's status with Slurm's state and reason."""
    plan = expand(
        config.parse(
            '[matrix]\nframework = ["faulty:hang", "faulty:ok"]\nmodel = ["mlp"]\ndataset = ["synthetic"]\n'
            "batch_size = [8]\n[protocol]\ntrials = 2\nrepeats = 1\nwarmup = 0\nthreads = 1\ntimeout = 600\n"
            "latency_batches = 2\n[synthetic]\nshape = [4, 4, 1]\ntrain_size = 32\ntest_size = 16\n",
            "faulty.toml",
        )
    )
    settings = _settings(slurm_cluster, slurm_options=("oversubscribe",))
    stop, ended = threading.Event(), {}
    watcher = threading.Thread(target=_end_long_jobs, args=(stop, ended), daemon=True)
    watcher.start()
    try:
        with Store(tmp_path / "r.db") as store:
            run_id, counts = run_plan(store, plan, command_line="test", environment={}, executor=settings)
            assert counts == {"failed": 1, "ok": 2, "timeout": 1}
            assert store.run(run_id)["status"] == "finished"
            by_status = {t["status"]: t for t in store.trials(run_id)}
            failed, late = by_status["failed"], by_status["timeout"]
            assert failed["variant"] == late["variant"] == "hang"
            jobs = {v: k for k, v in ended.items()}
            assert failed["error"].startswith(f"slurm: job {jobs['cancelled']} ended CANCELLED"), failed["error"]
            assert json.loads(failed["placement_json"])["slurm_job"] == jobs["cancelled"]
            assert late["error"].startswith(
                f"slurm: job {jobs['time limit']} ended TIMEOUT (TimeLimit): its time limit (1:00 as Slurm held it"
            ), late["error"]
            # The two blocks ran at the same time, on the one node.
            assert failed["block"] != late["block"]
    finally:
        stop.set()
        watcher.join()
    # Slurm ended the jobs' processes, the trials' workers with them.
    time.sleep(1)
    left = subprocess.run(["pgrep", "-f", "dlbench.trial.worker"], capture_output=True, text=True).stdout.split()
    assert not left, f"worker processes left behind: {left}"


def test_a_run_interrupted_under_slurm_resumes_locally(tmp_path, slurm_cluster):
    plan = expand(_numpy_experiment(trials=3))
    with Store(tmp_path / "r.db") as store:
        run_id = interrupted_after_one_trial(store, plan, _settings(slurm_cluster))
        assert execute_run(store, run_id) == {"ok": 3}
        where = sorted(json.loads(t["placement_json"])["executor"] for t in store.trials(run_id))
        assert where == ["local", "local", "slurm"]
        # Nothing of the interrupted run is still queued or running in Slurm.
        assert subprocess.run(["squeue", "-h", "-t", "PENDING,RUNNING"], capture_output=True, text=True).stdout == ""


def test_an_unreachable_controller_is_one_line_and_the_run_resumes_elsewhere(tmp_path, slurm_cluster):
    db = tmp_path / "cli.db"
    # The cluster's own configuration, with the controller on a port nothing listens on.
    conf = Path("/etc/slurm/slurm.conf").read_text()
    bad = tmp_path / "slurm.conf"
    bad.write_text(
        "\n".join(
            line + "\nSlurmctldPort=9\nMessageTimeout=1" if line.startswith("SlurmctldHost=") else line
            for line in conf.splitlines()
        )
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), SLURM_CONF=str(bad))
    cmd = [
        sys.executable,
        "-m",
        "dlbench",
        "run",
        "--trials",
        "1",
        "--framework",
        "numpy",
        "--model",
        "mlp",
        "--dataset",
        "digits",
    ]
    cmd += ["--repeats", "1", "--warmup", "0", "--threads", "1", "--latency-batches", "1", "--db", str(db)]
    out = subprocess.run(
        [*cmd, "--executor", "slurm", "--slurm-folder", str(tmp_path / "jobs")], capture_output=True, text=True, env=env
    )
    assert out.returncode == 2, out.stdout + out.stderr
    assert "--executor slurm: cannot reach the Slurm controller" in out.stderr and "Traceback" not in out.stderr
    assert f"Resume with: dlbench run --resume 1 --db {db} --executor slurm --slurm-folder" in " ".join(
        out.stderr.split()
    )
    resumed = subprocess.run(
        [sys.executable, "-m", "dlbench", "run", "--resume", "1", "--db", str(db)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert resumed.returncode == 0 and "trials: 1 ok" in resumed.stdout, resumed.stderr[-2000:]
