"""An interrupted run keeps its finished trials and resumes where it stopped."""

from __future__ import annotations

import pytest

from dlbench import config
from dlbench.plan import expand
from dlbench.runner import create_run, execute_run
from dlbench.store import Store


def test_interrupt_then_resume(tmp_path, faulty_plugin):
    exp = config.parse(
        '[matrix]\nframework = ["faulty"]\nmodel = ["mlp"]\ndataset = ["synthetic"]\n'
        "[protocol]\ntrials = 3\nrepeats = 1\nwarmup = 0\n"
        "[synthetic]\nshape = [2, 2, 1]\ntrain_size = 8\ntest_size = 8\n",
        "r.toml",
    )
    plan = expand(exp)
    with Store(tmp_path / "r.db") as store:
        run_id = create_run(store, plan, command="test", environment={})
        started = []

        def interrupt_second(kind, **info):
            if kind == "trial_start":
                started.append(info["trial_id"])
                if len(started) == 2:
                    raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            execute_run(store, run_id, on_event=interrupt_second)
        assert store.run(run_id)["status"] == "interrupted"
        assert [t["status"] for t in store.trials(run_id)] == ["ok", "pending", "pending"]
        first_ids = [m["trial_id"] for m in store.measurements(run_id)]

        counts = execute_run(store, run_id)
        assert counts == {"ok": 3}
        assert store.run(run_id)["status"] == "finished"
        # The first trial was not re-run: its rows are the same rows.
        assert [m["trial_id"] for m in store.measurements(run_id)][: len(first_ids)] == first_ids
