"""The trial crosses the process boundary as a typed spec that round-trips exactly."""

from __future__ import annotations

import json

import pytest

from dlbench import config
from dlbench.plan import expand
from dlbench.runner import protocol_for_worker
from dlbench.trial.spec import ProtocolSpec, SpecError, TrialSpec, case_from_dict

TOML = """
[matrix]
framework = ["jax"]
model = ["resnet18", "lstm"]
dataset = ["synthetic"]
[protocol]
memory_limit = "+512MiB"
samplers = "cpu,memory"
[models.resnet18]
width = 8
"""


def _spec() -> TrialSpec:
    plan = expand(config.parse(TOML, "t.toml"))
    return TrialSpec(plan.trials[0].case, protocol_for_worker(plan), {"rapl.package": 3.5})


def test_round_trip_is_exact_with_nested_options():
    spec = _spec()
    again = TrialSpec.from_json(spec.to_json())
    assert again == spec
    assert dict(again.case.model_options)["width"] == 8 and again.case.synthetic == spec.case.synthetic
    assert again.protocol.sampler_names == ("cpu", "memory") and again.protocol.memory_limit_relative
    assert again.case.key == spec.case.key  # the same case, the same identity


def test_unknown_and_missing_keys_are_named():
    data = json.loads(_spec().to_json())
    with pytest.raises(SpecError, match="unknown key 'colour'"):
        TrialSpec.from_dict({**data, "protocol": {**data["protocol"], "colour": 1}})
    case = dict(data["case"])
    del case["batch_size"]
    with pytest.raises(SpecError, match="missing key 'batch_size'"):
        case_from_dict(case)
    with pytest.raises(SpecError, match="not JSON"):
        TrialSpec.from_json("{")


def test_an_older_row_reads_with_the_defaults():
    spec = _spec()
    row = {"case_json": json.dumps(spec.case.as_dict()), "protocol_json": json.dumps({"repeats": 3, "warmup": 1})}
    old = TrialSpec.from_row(row)
    # infer_min_time did not exist then: those trials timed one pass (its declared legacy, 0).
    assert old.protocol == ProtocolSpec(repeats=3, warmup=1, infer_min_time=0.0, samplers="none")
    assert old.protocol.timeout == 1800.0


def test_the_worker_receives_what_the_runner_built(tmp_path, monkeypatch):
    """A real trial: the spec the runner writes to the worker's stdin reads back equal."""
    from dlbench import runner
    from dlbench.store import Store

    written: list[str] = []
    original = TrialSpec.to_json

    def spy(self: TrialSpec) -> str:
        text = original(self)
        written.append(text)
        return text

    monkeypatch.setattr(TrialSpec, "to_json", spy)
    plan = expand(
        config.override(
            config.default(),
            {"framework": ["numpy"], "model": ["mlp"]},
            {"epochs": 1, "repeats": 1, "warmup": 0, "trials": 1, "samplers": "none"},
        )
    )
    with Store(tmp_path / "s.db") as store:
        run_id = runner.create_run(store, plan, command="test", environment={})
        runner.execute_run(store, run_id)
        (trial,) = store.trials(run_id)
        assert trial["status"] == "ok", trial["error"]
    (text,) = written
    received = TrialSpec.from_json(text)
    assert received.case == plan.trials[0].case and received.protocol == protocol_for_worker(plan)
