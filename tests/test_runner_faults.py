"""A worker that raises, one killed by a signal, one that times out, one that exits:
each is stored with its status and error, and the run completes the other trials."""

from __future__ import annotations

import json

from dlbench import config
from dlbench.plan import expand
from dlbench.runner import run_plan
from dlbench.store import Store


def _experiment(frameworks, timeout=60.0, repeats=2, warmup=1, extra=""):
    text = f"""
[matrix]
framework = {json.dumps(frameworks)}
model = ["mlp"]
dataset = ["synthetic"]
batch_size = [8]
[protocol]
epochs = 1
repeats = {repeats}
warmup = {warmup}
timeout = {timeout}
latency_batches = 2
{extra}
[synthetic]
shape = [4, 4, 1]
train_size = 32
test_size = 16
"""
    return config.parse(text, "faults.toml")


def test_each_fault_is_a_stored_result_and_the_run_goes_on(tmp_path, faulty_plugin):
    exp = _experiment(["faulty:raise", "faulty:segfault", "faulty:oom", "faulty:exit", "faulty:ok"])
    plan = expand(exp)
    assert len(plan.trials) == 5
    with Store(tmp_path / "r.db") as store:
        run_id, counts = run_plan(store, plan, command_line="test", environment={})
        assert counts == {"failed": 3, "oom": 1, "ok": 1}
        rows = {json.loads(r["case_json"])["variant"]: r for r in store.trials(run_id)}
        assert "RuntimeError: boom: the model diverged" in rows["raise"]["error"]
        assert "SIGSEGV" in rows["segfault"]["error"]
        assert rows["segfault"]["returncode"] == -11
        assert rows["oom"]["status"] == "oom" and "MemoryError" in rows["oom"]["error"]
        assert "exited with code 3" in rows["exit"]["error"] and "about to exit" in rows["exit"]["stderr"]
        assert rows["ok"]["status"] == "ok"

        # Repeats finished before the fault are kept: warm-up repeat 0 of 'raise' and 'segfault'.
        def repeats(variant):
            return {
                m["repeat"]
                for m in store.measurements(run_id)
                if m["trial_id"] == rows[variant]["id"] and m["phase"] == "train" and m["metric"] == "time"
            }

        assert repeats("raise") == {0}
        assert repeats("segfault") == {0}
        assert repeats("ok") == {0, 1, 2}
        assert store.run(run_id)["status"] == "finished"


def test_timeout_kills_the_worker_and_is_stored(tmp_path, faulty_plugin):
    plan = expand(_experiment(["faulty:hang", "faulty:ok"], timeout=8.0))
    with Store(tmp_path / "r.db") as store:
        run_id, counts = run_plan(store, plan, command_line="test", environment={})
        assert counts == {"timeout": 1, "ok": 1}
        hang = next(r for r in store.trials(run_id) if r["status"] == "timeout")
        assert "timed out after 8 s" in hang["error"]
        assert 8.0 <= hang["wall_s"] < 30.0


def test_stdout_noise_does_not_corrupt_events(tmp_path, faulty_plugin):
    plan = expand(_experiment(["faulty:ok"]))
    with Store(tmp_path / "r.db") as store:
        run_id, counts = run_plan(store, plan, command_line="test", environment={})
        assert counts == {"ok": 1}
        trial = store.trials(run_id)[0]
        assert "noise on stdout" in trial["stderr"]
        assert json.loads(trial["manifest_json"])["variant"] == "ok"


def test_a_crash_under_a_memory_limit_is_stored_as_inferred_oom(tmp_path, faulty_plugin):
    # A generous cap (never reached by this tiny worker): only the crash matters here.
    plan = expand(_experiment(["faulty:segfault", "faulty:oom"], repeats=1, extra='memory_limit = "8GiB"'))
    with Store(tmp_path / "r.db") as store:
        run_id, counts = run_plan(store, plan, command_line="test", environment={})
        assert counts == {"oom": 2}
        rows = {json.loads(r["case_json"])["variant"]: r for r in store.trials(run_id)}
        assert rows["segfault"]["error"].startswith(
            "out of memory (inferred): the worker died by SIGSEGV while capped at 8192 MiB"
        )
        assert "MemoryError" in rows["oom"]["error"]
        manifest = json.loads(rows["oom"]["manifest_json"])
        assert manifest["memory_limit"] == 8 * 2**30


def test_a_worker_killed_from_outside_under_a_memory_limit_is_not_called_oom(tmp_path, faulty_plugin):
    """SIGKILL is what `kill -9` and the kernel's OOM killer send; RLIMIT_DATA never does.
    Only a rise of the cgroup's oom_kill count makes it an out-of-memory result."""
    import os
    import signal
    import threading

    plan = expand(_experiment(["faulty:hang"], repeats=1, extra='memory_limit = "8GiB"'))

    def kill_the_worker(kind, **info):
        event = info.get("event") or {}
        if kind == "worker_event" and event.get("event") == "manifest":
            threading.Timer(0.3, lambda: os.killpg(started[0], signal.SIGKILL)).start()
        if kind == "worker_event" and event.get("event") == "started":
            started.append(event["pid"])

    started: list[int] = []
    with Store(tmp_path / "r.db") as store:
        run_id, counts = run_plan(store, plan, command_line="test", environment={}, on_event=kill_the_worker)
        assert counts == {"failed": 1}
        error = store.trials(run_id)[0]["error"]
        assert error.startswith("killed from outside: SIGKILL while the kernel's OOM-kill count")
        assert "worker killed by SIGKILL after 0 of 2 repeats" in error  # 1 warm-up + 1


def test_a_run_is_created_whole_or_not_at_all(tmp_path):
    """A run used to be inserted trial by trial: killed in between, it held 1 of 400
    planned trials, and a resume called it finished."""
    import pytest

    from dlbench.store import StoreError

    case = {"framework": "numpy", "variant": "default", "model": "mlp", "dataset": "synthetic", "batch_size": 8}
    good = [{"case_key": f"k{i}", "block": 0, "position": i, "case": case, "protocol": {}} for i in range(399)]
    broken = good + [{"case_key": "k399", "block": 0, "position": 399, "case": {}, "protocol": {}}]
    with Store(tmp_path / "r.db") as store:
        with pytest.raises(KeyError):
            store.create_run(
                name="n",
                command="c",
                config_source="s",
                config_text="",
                experiment={},
                environment={},
                version="0",
                trials=broken,
            )
        assert store.runs() == [] and store.db.execute("SELECT COUNT(*) FROM trials").fetchone()[0] == 0
        # A run without trials (stored by an older dlbench killed while creating it) is refused by a resume.
        run_id = store.create_run(
            name="n", command="c", config_source="s", config_text="", experiment={}, environment={}, version="0"
        )
        from dlbench.runner import execute_run

        with pytest.raises(StoreError, match=f"run {run_id} has no trials .*nothing to resume"):
            execute_run(store, run_id)


def test_a_non_finite_training_loss_makes_the_trial_diverged(tmp_path, faulty_plugin):
    """A worker that ends normally but reported an infinite loss: stored "diverged", its rows
    kept, out of every statistic, and the report names it with its status."""
    from typer.testing import CliRunner

    from dlbench.cli import app
    from dlbench.runner import diverged

    plan = expand(_experiment(["faulty:diverge", "faulty:ok"]))
    db = tmp_path / "r.db"
    with Store(db) as store:
        run_id, counts = run_plan(store, plan, command_line="test", environment={})
        assert counts == {"diverged": 1, "ok": 1}
        bad = next(r for r in store.trials(run_id) if r["status"] == "diverged")
        assert bad["error"].startswith("diverged: the training loss was inf at epoch 1 of repeat 1;")
        rows = store.measurements(run_id)
        losses = [m["value"] for m in rows if m["trial_id"] == bad["id"] and m["metric"] == "loss"]
        assert losses == [1.0, 2.5, None, 2.5, None]  # kept; the store reads inf as invalid (NULL)
    result = CliRunner().invoke(app, ["report", "--run", str(run_id), "--db", str(db)], env={"COLUMNS": "300"})
    flat = " ".join(result.output.split())
    assert result.exit_code == 0 and "│ diverged │" in result.output, result.output
    assert "diverged: the training loss was inf" in flat  # the error column, wrapped
    assert "INVALID VALUES" not in flat  # the divergence is dlbench's own record, not another tool's value
    # Only losses count, and NaN as much as infinity.
    from dlbench.store import Measurement

    assert diverged([Measurement(1, False, "train", "time", float("inf"), "s")]) is None
    nan = diverged([Measurement(0, True, "train", "loss_step", float("nan"), "nats", 7)])
    assert nan is not None and nan.startswith("diverged: the training loss was nan at step 7 of warm-up 0")
