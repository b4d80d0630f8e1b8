"""Where trials ran: every trial's placement is stored, and a report whose trials ran
on different kinds of machine says so before any comparison."""

from __future__ import annotations

import json

from dlbench import config
from dlbench.analysis.placements import machine_kinds
from dlbench.plan import expand
from dlbench.report.model import build_report
from dlbench.runner import run_plan
from dlbench.store import Store

OTHER = {"cpu_model": "Intel Xeon Gold 6338", "physical_cores": 32, "gpus": [{"name": "NVIDIA A100"}]}


def test_a_report_over_two_kinds_of_machine_says_so_first(tmp_path, faulty_plugin):
    exp = config.parse(
        '[matrix]\nframework = ["faulty:ok", "faulty:exit"]\nmodel = ["mlp"]\ndataset = ["synthetic"]\n'
        "[protocol]\ntrials = 2\nrepeats = 1\nwarmup = 0\nlatency_batches = 1\n"
        "[synthetic]\nshape = [2, 2, 1]\ntrain_size = 8\ntest_size = 8\n",
        "p.toml",
    )
    environment = {"cpu_model": "AMD EPYC", "physical_cores": 2, "gpus": "none"}
    with Store(tmp_path / "p.db") as store:
        run_id, counts = run_plan(store, expand(exp), command_line="t", environment=environment)
        assert counts == {"failed": 2, "ok": 2}
        trials = store.trials(run_id)
        assert {json.loads(t["placement_json"])["executor"] for t in trials} == {"local"}
        ok = [t["id"] for t in trials if t["status"] == "ok"]
        assert machine_kinds(trials, environment) == {"AMD EPYC, 2 cores": ok}
        assert not any("MIXED HARDWARE" in n for n in build_report(store, run_id, hypotheses=False).answer.notes)

        # One ok trial came back from a node of another kind (as a cluster executor stores it).
        store.set_placement(ok[1], {"executor": "slurm", "host": "gpu7", "machine": OTHER})
        assert machine_kinds(store.trials(run_id), environment) == {
            "AMD EPYC, 2 cores": [ok[0]],
            "Intel Xeon Gold 6338, 32 cores, NVIDIA A100": [ok[1]],
        }
        note = build_report(store, run_id, hypotheses=False).answer.notes[0]
        assert note.startswith("MIXED HARDWARE: the ok trials ran on 2 kinds of machine")
        assert "AMD EPYC, 2 cores: 1 trial(s)" in note and "NVIDIA A100: 1 trial(s)" in note
        # A failed trial's machine does not count: it gave no value to pool.
        failed = next(t["id"] for t in trials if t["status"] == "failed")
        store.set_placement(failed, {"machine": {"cpu_model": "ARM Neoverse", "physical_cores": 64}})
        assert len(machine_kinds(store.trials(run_id), environment)) == 2
