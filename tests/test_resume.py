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


@pytest.mark.parametrize("when", ["after-commit", "before-commit"])
def test_a_signal_inside_run_creation_says_whether_the_run_was_stored(tmp_path, monkeypatch, when, tiny_run):
    """Ctrl-C (or SIGTERM) landing inside Store.create_run: after its commit the run exists,
    and the command must say how to resume it (the fault suite once saw 'nothing was stored'
    over a stored run); before the commit nothing is stored, and it says so."""
    original = Store.create_run

    def interrupted(self, **kw):
        if when == "before-commit":
            with self.db:  # the signal inside the transaction: it rolls back
                self.db.execute("INSERT INTO runs (name, status, started_at) VALUES ('x', 'running', 'now')")
                raise KeyboardInterrupt
        original(self, **kw)
        raise KeyboardInterrupt  # the signal just after the commit, before the id is returned

    monkeypatch.setattr(Store, "create_run", interrupted)
    db = tmp_path / "r.db"
    output = tiny_run(db, repeats=1, code=130)
    with Store(db) as store:
        runs = store.runs()
        if when == "after-commit":
            assert "Resume with: dlbench run --resume 1" in output, output
            assert [r["status"] for r in runs] == ["interrupted"]
        else:
            assert "nothing was stored" in output and runs == []
