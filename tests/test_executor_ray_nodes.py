"""A Ray node lost mid-run: two Ray nodes on this machine (ray.cluster_utils.Cluster, a
head and a worker node, each its own raylet), the worker node removed while it runs a
trial. That trial fails with Ray's reason, the trials still queued for the lost node
move to the other one, and the run finishes."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from dlbench import config
from dlbench.executors import ExecutorSettings
from dlbench.plan import expand
from dlbench.runner import run_plan
from dlbench.store import Store

ray = pytest.importorskip("ray", reason="Ray is not installed (requirements-cluster.txt)")

SRC = str(Path(__file__).resolve().parents[1] / "src")
TRAIN_SECONDS = 1.5


@pytest.fixture
def two_nodes(tmp_path_factory):
    """A head and a worker node of the same kind (1 CPU each), with the slow test plugin
    on the PYTHONPATH their workers inherit; yields (cluster, worker node)."""
    from ray.cluster_utils import Cluster

    from plugin_dist import faulty_plugin_on_path

    with faulty_plugin_on_path(tmp_path_factory.mktemp("nodes-plugin"), train_seconds=TRAIN_SECONDS):
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
        worker = cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False, logging_level="ERROR")
        try:
            yield cluster, worker
        finally:
            ray.shutdown()
            cluster.shutdown()


def _remove_node_when_busy(db: Path, cluster, worker, stop: threading.Event, removed: list[int]) -> None:
    """Remove the worker node once a trial is running on it (read from the store, as
    the parent writes the placement when it submits the task)."""
    node_id = worker.node_id
    while not stop.is_set():
        try:
            with sqlite3.connect(db) as con:
                rows = con.execute("SELECT id, placement_json FROM trials WHERE status='running'").fetchall()
        except sqlite3.Error:
            rows = []
        for trial_id, placement in rows:
            if placement and json.loads(placement).get("ray_node") == node_id:
                time.sleep(1.0)  # inside the trial: past the worker's start
                cluster.remove_node(worker)
                removed.append(trial_id)
                return
        stop.wait(0.2)


def test_a_lost_node_fails_its_trial_and_its_queue_moves_to_the_other_node(tmp_path, two_nodes):
    cluster, worker = two_nodes
    plan = expand(
        config.parse(
            '[matrix]\nframework = ["faulty:ok"]\nmodel = ["mlp"]\ndataset = ["synthetic"]\nbatch_size = [8]\n'
            "[protocol]\ntrials = 4\nrepeats = 1\nwarmup = 0\nthreads = 1\ntimeout = 120\nlatency_batches = 1\n"
            "[synthetic]\nshape = [4, 4, 1]\ntrain_size = 32\ntest_size = 16\n",
            "nodes.toml",
        )
    )
    db = tmp_path / "r.db"
    stop, removed, notes = threading.Event(), [], []
    watcher = threading.Thread(target=_remove_node_when_busy, args=(db, cluster, worker, stop, removed), daemon=True)
    watcher.start()
    try:
        with Store(db) as store:
            run_id, counts = run_plan(
                store,
                plan,
                command_line="test",
                environment={},
                executor=ExecutorSettings(name="ray"),
                on_event=lambda kind, **info: notes.append(info["note"]) if kind == "executor_note" else None,
            )
            assert removed, "the worker node never ran a trial"
            assert counts == {"failed": 1, "ok": 3}
            failed = next(t for t in store.trials(run_id) if t["status"] == "failed")
            assert failed["id"] == removed[0]
            assert failed["error"].startswith("ray: "), failed["error"]
            assert store.run(run_id)["status"] == "finished"
            # The lost node's queued trial ran on the node that was left.
            nodes = {t["id"]: json.loads(t["placement_json"])["ray_node"] for t in store.trials(run_id)}
            assert sum(n == worker.node_id for n in nodes.values()) == 1
            assert any("died; 1 of its trials moved to other nodes" in n for n in notes), notes
    finally:
        stop.set()
        watcher.join()
