"""The service layer under the command line and the API, and the registries.

`dlbench run` and `dlbench.run(...)` go through dlbench.service.runs, so the same
experiment stores the same run either way, the idle baseline included (the API once
stored the setting and never measured it). Local is an executor like Ray and Slurm,
and executors and report formats are found by name in a registry.
"""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

import dlbench
from dlbench.cli import app
from dlbench.store import Store

SETTINGS = {
    "framework": "numpy",
    "model": "mlp",
    "dataset": "synthetic",
    "epochs": 1,
    "repeats": 1,
    "warmup": 0,
    "trials": 2,
    "latency_batches": 0,
    "train_samples": 256,
    "test_samples": 64,
    "samplers": "cpu",
    "idle_baseline": 0.3,
}


def _stored(db: Path) -> dict:
    with Store(db) as store:
        (run,) = store.runs()
        trials = store.trials(run.id)
        return {
            "name": run.name,
            "config_text": run.config_text,
            "idle_seconds": run.idle.get("seconds"),
            "cases": sorted((t.block, t.case_key, repr(sorted(t.case.items()))) for t in trials),
            "protocols": sorted(repr(sorted(t.protocol.items())) for t in trials),
            "statuses": sorted(t.status for t in trials),
            "samplers": sorted((s.name, s.available) for s in store.samplers(run.id)),
        }


def test_the_api_and_the_command_store_the_same_run_idle_baseline_included(tmp_path):
    by_api = tmp_path / "api.db"
    run_id = dlbench.run(db=by_api, **SETTINGS)
    assert run_id == 1
    by_cli = tmp_path / "cli.db"
    args = [part for key, value in SETTINGS.items() for part in (f"--{key.replace('_', '-')}", str(value))]
    result = CliRunner().invoke(app, ["run", *args, "--db", str(by_cli)])
    assert result.exit_code == 0, result.output
    assert "measuring idle power for 0.3 s" in result.output
    api, cli = _stored(by_api), _stored(by_cli)
    assert api == cli
    assert api["idle_seconds"] == 0.3  # measured by both, not only stored
    assert api["statuses"] == ["ok", "ok"]


def test_local_is_an_executor_found_by_name_like_the_others():
    from dlbench.executor_settings import EXECUTORS, IMPLEMENTATIONS, ExecutorSettings
    from dlbench.executors import pick
    from dlbench.executors.local import LocalExecutor

    assert EXECUTORS == tuple(IMPLEMENTATIONS) == ("local", "ray", "slurm")
    assert isinstance(pick.make(None), LocalExecutor)
    assert isinstance(pick.make(ExecutorSettings(name="local")), LocalExecutor)
    calls = []

    class Handlers:
        def run_here(self, trial):
            calls.append(trial)

    pick.make(None).run(["t1", "t2"], Handlers())
    assert calls == ["t1", "t2"]


def test_a_report_format_is_one_registry_entry(small_db, monkeypatch):
    """A format added to report.formats.REGISTRY, and nowhere else, is taken by
    `dlbench report --format` and written by its writer."""
    from dlbench.report import formats

    markdown = CliRunner().invoke(app, ["report", "--format", "markdown", "--db", str(small_db)])
    assert markdown.exit_code == 0, markdown.output
    monkeypatch.setitem(formats.REGISTRY, "md-again", formats.Format("md-again", "dlbench.report.markdown:render"))
    again = CliRunner().invoke(app, ["report", "--format", "md-again", "--db", str(small_db)])
    assert again.exit_code == 0, again.output
    assert again.output == markdown.output and "| " in again.output
    unknown = CliRunner().invoke(app, ["report", "--format", "docx", "--db", str(small_db)])
    assert unknown.exit_code == 2 and "md-again" in unknown.output
