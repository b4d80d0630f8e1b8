"""One protocol declaration (dlbench.protocol_settings) and what is derived from it.

Every layer that once typed the protocol again — the experiment file's checks, the
command-line flags and their help, the worker's spec, the frameworks' training settings —
now reads the declaration. These tests check that the defaults agree everywhere, that a
setting added in that one place reaches the worker, the flags and the checks, and that
`plan` and `study run` take every flag `run` takes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from dataclasses import MISSING, fields
from pathlib import Path

import typer.main

from dlbench import config
from dlbench.cli import app
from dlbench.frameworks.protocol import TrainSettings
from dlbench.protocol_settings import Protocol, TrialProtocol, declared
from dlbench.trial.spec import ProtocolSpec

SRC = Path(__file__).resolve().parents[1] / "src"


def _command(*path: str):
    command = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]
    return command


def _options(*path: str) -> dict[str, object]:
    return {p.name: p for p in _command(*path).params}


def test_every_default_is_the_same_at_every_layer():
    declared_defaults = {f.name: f.default for f in fields(Protocol)}
    # The experiment file: an empty [protocol] table is the declaration's defaults.
    parsed = config.parse("[matrix]\nframework = 'numpy'\n", "t.toml").protocol
    assert {f.name: getattr(parsed, f.name) for f in fields(Protocol)} == declared_defaults
    # The worker's spec: built from the defaults, and read back from a stored spec that
    # holds only the required settings, it has the same values (infer_min_time excepted:
    # a spec stored before it existed ran one pass, its declared legacy).
    spec = ProtocolSpec.for_worker(Protocol())
    assert {f.name: getattr(spec, f.name) for f in fields(TrialProtocol)} == {
        **{f.name: f.default for f in fields(TrialProtocol)},
        "samplers": "cpu,rapl,thermal,nvml,memory",  # "all", resolved to names
    }
    old = ProtocolSpec.from_dict({"repeats": 5, "warmup": 1, "samplers": list(spec.sampler_names)})
    legacy = {f.name for f in fields(TrialProtocol) if declared(f).legacy not in (None, MISSING)}
    assert legacy == {"infer_min_time"} and old.infer_min_time == 0.0
    assert {n: getattr(old, n) for n in declared_defaults if n in {f.name for f in fields(TrialProtocol)} - legacy} == {
        n: getattr(spec, n) for n in declared_defaults if n in {f.name for f in fields(TrialProtocol)} - legacy
    }
    # The frameworks' training settings: the protocol's and the matrix's defaults.
    train = {f.name: f.default for f in fields(TrainSettings)}
    for name in ("epochs", "steps", "momentum", "seed"):
        assert train[name] == declared_defaults[name], name
    for name in ("optimizer", "lr", "init"):
        assert (train[name],) == config.MATRIX_DEFAULTS[name], name
    # The flags: each protocol flag defaults to "not given" and says the declaration's help.
    options = _options("run")
    for f in fields(Protocol):
        assert options[f.name].default is None, f.name
        assert options[f.name].help == declared(f).help, f.name


def test_every_bounded_setting_is_refused_past_its_bound_with_the_declared_words():
    for f in fields(Protocol):
        rule = declared(f).rule
        if rule is None or f.name in ("epochs", "steps"):
            continue
        high = rule.bound()
        bad = high + 1 if rule.integer else high * 2 + 1
        try:
            config.parse(f"[protocol]\n{f.name} = {bad!r}\n", "t.toml")
        except config.ConfigError as exc:
            assert f"{f.name} = {bad}" in str(exc) and rule.says() in str(exc), str(exc)
        else:
            raise AssertionError(f"{f.name} = {bad} was accepted")


def test_plan_takes_every_flag_run_takes_and_study_run_shares_the_groups():
    run, plan = _options("run"), _options("plan")
    assert list(run) == list(plan)
    assert {name: o.help for name, o in run.items()} == {name: o.help for name, o in plan.items()}
    # --db, --seed and --device once were refused by plan.
    assert {"db", "seed", "device", "resume", "executor"} <= set(plan)
    study_run, study_plan = _options("study", "run"), _options("study", "plan")
    assert list(study_run) == list(study_plan)
    shared = set(run) - {"file", "resume", "redo_busy"}  # a stored run's options: no study run has one yet
    assert shared <= set(study_run), sorted(shared - set(study_run))
    for name in shared:
        assert run[name].help == study_run[name].help, name


def test_the_flags_reach_the_plan_the_same_as_the_file(tmp_path):
    from dlbench.cli.running import plan_of

    file = tmp_path / "e.toml"
    file.write_text("[matrix]\nframework = ['numpy']\nmodel = ['mlp']\n[protocol]\nseed = 3\ninfer_min_time = 0.2\n")
    matrix = {"matrix": {"framework": ["numpy"], "model": ["mlp"]}, "options": []}
    by_flags = plan_of({"matrix": {"dataset": "digits"}}, matrix, {"seed": 3, "infer_min_time": 0.2})
    by_file = plan_of(file, {"matrix": {}, "options": []}, {})
    assert by_flags.experiment.protocol == by_file.experiment.protocol
    assert [t.case for t in by_flags.trials] == [t.case for t in by_file.trials]


ADDED = """
    flux: int = setting(
        7,
        "Flux capacitance of each trial (a setting added for a test).",
        _ints(1, 99, ">= 1 and <= 99 (gigawatts)"),
    )
"""

PROBE = """
import json, sys
from dlbench import config
from dlbench.plan import expand
from dlbench.runner import protocol_for_worker
from dlbench.trial.spec import TrialSpec

plan = expand(config.parse("[matrix]\\nframework = ['numpy']\\n[protocol]\\nflux = 11\\n", "t.toml"))
spec = TrialSpec(plan.trials[0].case, protocol_for_worker(plan))
sent = spec.to_json()
received = TrialSpec.from_json(sent)  # what the worker does with the line it reads
older = json.loads(sent)
del older["protocol"]["flux"]  # a trial stored before the setting existed
print(json.dumps({
    "received": received.protocol.flux,
    "stored": json.loads(sent)["protocol"]["flux"],
    "older": TrialSpec.from_dict(older).protocol.flux,
}))
"""


def test_a_setting_declared_in_one_place_reaches_the_file_the_flags_and_the_worker(tmp_path):
    """Add one field to TrialProtocol in a copy of the package, and nothing else: the
    experiment file accepts it and checks its bound, `run --help` offers it with its
    help, and the worker's spec carries it (stored specs without it read its default)."""
    copy = tmp_path / "src"
    shutil.copytree(SRC / "dlbench", copy / "dlbench", ignore=shutil.ignore_patterns("__pycache__"))
    declaration = copy / "dlbench" / "protocol_settings.py"
    text = declaration.read_text()
    anchor = "\n\n@dataclass(frozen=True)\nclass Protocol(TrialProtocol):"
    assert anchor in text
    declaration.write_text(text.replace(anchor, textwrap.indent(textwrap.dedent(ADDED), "    ") + anchor, 1))
    env = {**os.environ, "PYTHONPATH": str(copy), "COLUMNS": "200"}

    probe = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert probe.returncode == 0, probe.stderr
    assert json.loads(probe.stdout) == {"received": 11, "stored": 11, "older": 7}

    cli = [sys.executable, "-c", "from dlbench.cli import main; main()"]
    help_ = subprocess.run([*cli, "run", "--help"], env=env, capture_output=True, text=True, timeout=120)
    assert "--flux" in help_.stdout and "Flux capacitance of each trial" in help_.stdout
    plan = subprocess.run(
        [*cli, "plan", "--framework", "numpy", "--flux", "100"], env=env, capture_output=True, text=True, timeout=120
    )
    assert plan.returncode == 2
    assert "flux = 100: must be >= 1 and <= 99 (gigawatts)" in plan.stderr
    assert len(plan.stderr.strip().splitlines()) == 1 and "Traceback" not in plan.stderr


def test_explain_takes_the_protocol_settings_it_shares_with_their_declared_default_and_help():
    explain = _options("explain")
    for name in ("repeats", "warmup", "profile_calls"):
        f = Protocol.__dataclass_fields__[name]
        assert explain[name].default == f.default and explain[name].help == declared(f).help, name
