"""Trials as Ray tasks on a real local Ray cluster (ray.init(num_cpus=2)): the same
matrix stores the same cases and values as a local run, a Ray worker killed mid-trial
gives a failed trial and the run finishes, and a run resumes across executors."""

from __future__ import annotations

import json
import os
import signal
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

ray = pytest.importorskip("ray", reason="Ray is not installed (requirements-cluster.txt)")
psutil = pytest.importorskip("psutil")

RAY = ExecutorSettings(name="ray")
SRC = str(Path(__file__).resolve().parents[1] / "src")


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory):
    """A local Ray cluster for the module, with the test plugin framework on the
    PYTHONPATH its workers inherit (a Ray worker's environment is the raylet's)."""
    from plugin_dist import faulty_plugin_on_path

    with faulty_plugin_on_path(tmp_path_factory.mktemp("ray-plugin")):
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
        try:
            yield ray.get_runtime_context().gcs_address
        finally:
            ray.shutdown()


def _numpy_experiment(trials: int = 2, batch_sizes: str = "32, 64") -> config.Experiment:
    return config.parse(
        '[matrix]\nframework = ["numpy"]\nmodel = ["mlp"]\ndataset = ["digits"]\n'
        f"batch_size = [{batch_sizes}]\n"
        f"[protocol]\ntrials = {trials}\nrepeats = 2\nwarmup = 1\nthreads = 1\nepochs = 1\nlatency_batches = 2\n",
        "ray.toml",
    )


def _faulty_experiment(frameworks: list[str], timeout: float = 120.0) -> config.Experiment:
    return config.parse(
        f'[matrix]\nframework = {json.dumps(frameworks)}\nmodel = ["mlp"]\ndataset = ["synthetic"]\n'
        f"batch_size = [8]\n[protocol]\nrepeats = 1\nwarmup = 0\nthreads = 1\ntimeout = {timeout}\n"
        "latency_batches = 2\n[synthetic]\nshape = [4, 4, 1]\ntrain_size = 32\ntest_size = 16\n",
        "faulty.toml",
    )


def _values(store: Store, run_id: int) -> dict[tuple[str, int, str, str], float]:
    """Each case's deterministic results (accuracy, parameters), by case key, block and metric."""
    trials = {t["id"]: t for t in store.trials(run_id)}
    out = {}
    for m in store.measurements(run_id):
        if m["metric"] in ("accuracy", "parameters"):
            t = trials[m["trial_id"]]
            out[(t["case_key"], t["block"], m["phase"], f"{m['metric']}@{m['repeat']}")] = m["value"]
    return out


def test_the_same_matrix_on_ray_stores_the_same_cases_statuses_and_values(tmp_path, ray_cluster):
    plan = expand(_numpy_experiment(batch_sizes="32"))
    events: list[str] = []
    with Store(tmp_path / "local.db") as local, Store(tmp_path / "ray.db") as remote:
        local_id, local_counts = run_plan(local, plan, command_line="test", environment={})
        ray_id, ray_counts = run_plan(
            remote, plan, command_line="test", environment={}, executor=RAY, on_event=lambda k, **i: events.append(k)
        )
        assert local_counts == ray_counts == {"ok": 2}
        local_trials, ray_trials = local.trials(local_id), remote.trials(ray_id)
        assert [(t["case_key"], t["block"]) for t in local_trials] == [(t["case_key"], t["block"]) for t in ray_trials]
        # Same seeds, same data order, deterministic numpy: the accuracies are equal.
        assert _values(local, local_id) == _values(remote, ray_id)
        assert len(_values(remote, ray_id)) >= 2
        for t in ray_trials:
            placement = json.loads(t["placement_json"])
            assert placement["executor"] == "ray" and placement["ray_node"]
            assert placement["machine"]["logical_cores"] == psutil.cpu_count()
            manifest = json.loads(t["manifest_json"])
            # Ray sets OMP_NUM_THREADS for its workers; the trial's worker gets the parent's.
            assert manifest["omp_num_threads_env"] == os.environ.get("OMP_NUM_THREADS")
            assert manifest["threads_intra_op"] == 1
        assert all(json.loads(t["placement_json"])["executor"] == "local" for t in local_trials)
        # Telemetry was polled on the node beside the worker, as locally.
        assert {r["name"] for r in remote.series(ray_trials[0]["id"])} >= {"cpu.process_util"}
        assert "cluster_progress" in events and events.count("trial_end") == 2
        # Each block ran on one node, in its order: the trials finished in the plan's order.
        finished = [t["finished_at"] for t in ray_trials]
        assert finished == sorted(finished)


def _kill_ray_worker_of_long_trial(stop: threading.Event, killed: list[int], after_s: float = 4.0) -> None:
    """SIGKILL the Ray worker process whose trial worker has run longer than after_s."""
    while not stop.is_set():
        for proc in psutil.process_iter(["cmdline", "create_time"]):
            cmd = proc.info["cmdline"] or []
            if "dlbench.trial.worker" not in cmd or time.time() - proc.info["create_time"] < after_s:
                continue
            try:
                parent = proc.parent()
                if parent is not None and "ray::" in " ".join(parent.cmdline()):
                    killed.append(proc.pid)
                    os.kill(parent.pid, signal.SIGKILL)
                    return
            except psutil.Error:
                continue
        stop.wait(0.2)


def test_a_ray_worker_killed_mid_trial_fails_that_trial_and_the_run_finishes(tmp_path, ray_cluster):
    plan = expand(_faulty_experiment(["faulty:hang", "faulty:ok"]))
    stop, killed = threading.Event(), []
    watcher = threading.Thread(target=_kill_ray_worker_of_long_trial, args=(stop, killed), daemon=True)
    watcher.start()
    try:
        with Store(tmp_path / "r.db") as store:
            run_id, counts = run_plan(store, plan, command_line="test", environment={}, executor=RAY)
            assert counts == {"failed": 1, "ok": 1}
            failed = next(t for t in store.trials(run_id) if t["status"] == "failed")
            assert failed["framework"] == "faulty" and failed["variant"] == "hang"
            assert "ray: the Ray worker process running the trial died" in failed["error"]
            assert store.run(run_id)["status"] == "finished"
    finally:
        stop.set()
        watcher.join()
    assert killed, "the watcher found no trial worker under a Ray worker"
    # The trial's worker lost its lifeline with the Ray worker and ended: no orphan.
    deadline = time.time() + 15
    while psutil.pid_exists(killed[0]) and time.time() < deadline:
        time.sleep(0.2)
    assert not psutil.pid_exists(killed[0]) or psutil.Process(killed[0]).status() == psutil.STATUS_ZOMBIE


# Ray to local here; Slurm to local in test_executor_slurm; local to Ray is what every
# Ray run above does with the pending trials a local create_run stored.
@pytest.mark.parametrize("first,then", [("ray", "local")])
def test_a_run_interrupted_under_one_executor_resumes_under_another(tmp_path, ray_cluster, first, then):
    plan = expand(_numpy_experiment(trials=3, batch_sizes="32"))
    settings = {"local": None, "ray": RAY}
    with Store(tmp_path / "r.db") as store:
        run_id = interrupted_after_one_trial(store, plan, settings[first])
        done_first = [t["id"] for t in store.trials(run_id) if t["status"] == "ok"]
        assert len(done_first) == 1
        counts = execute_run(store, run_id, executor=settings[then])
        assert counts == {"ok": 3}
        where = {t["id"]: json.loads(t["placement_json"])["executor"] for t in store.trials(run_id)}
        assert where[done_first[0]] == first  # not run again
        assert sorted(where.values()) == sorted([first] + [then] * 2)


def test_dlbench_run_joins_a_ray_cluster_and_runs_shows_where(tmp_path, ray_cluster):
    db = tmp_path / "cli.db"
    env = dict(os.environ, PYTHONPATH=SRC)
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
        [*cmd, "--executor", "ray", "--ray-address", ray_cluster], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "trials: 1 ok" in out.stdout
    runs = subprocess.run(
        [sys.executable, "-m", "dlbench", "runs", "--db", str(db)], capture_output=True, text=True, env=env
    )
    assert runs.returncode == 0 and "ray:" in runs.stdout and "=1" in runs.stdout, runs.stdout
    trials = subprocess.run(
        [sys.executable, "-m", "dlbench", "runs", "--run", "1", "--db", str(db)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert trials.returncode == 0 and "where each trial ran" in trials.stdout, trials.stderr
    assert "│ ray " in trials.stdout and "│ ok " in trials.stdout, trials.stdout
    bad = subprocess.run([*cmd, "--executor", "k8s"], capture_output=True, text=True, env=env)
    assert bad.returncode == 2 and "--executor 'k8s': allowed: local, ray, slurm" in bad.stderr
    assert "Traceback" not in bad.stderr
