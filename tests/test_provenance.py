"""Provenance that reruns: the command stored with a run is the one typed, and replayed it
plans the same trials (a plain run, a study run, an explain run); the fingerprint names each
framework by its installed distribution; the paper's numbers keep the paper's digits."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import shlex
from pathlib import Path

import pandas as pd
import pytest

from dlbench import env, studies
from dlbench.config import ConfigError
from dlbench.report import machines
from dlbench.store import Store
from dlbench.studies.facts import paper_number, parse

# A plan table's row: "│ 3 │ 1     │ numpy:reference mlp ... │ 43f080c83f404887 │"
PLAN_ROW = re.compile(r"│\s*\d+\s*│\s*(\d+)\s*│.*│\s*([0-9a-f]{16})\s*│")


def _planned(output: str) -> list[tuple[int, str]]:
    """(block, case key) of every trial a printed plan lists, in order."""
    return [(int(block), key) for block, key in PLAN_ROW.findall(output)]


def _stored(db: Path, run_id: int) -> tuple[list[str], list[tuple[int, str]]]:
    """The run's stored command as words, and its trials' (block, case key) in run order."""
    with Store(db) as store:
        command = store.run(run_id)["command"]
        trials = [(t["block"], t["case_key"]) for t in store.trials(run_id)]
    words = shlex.split(command)
    assert words[0] == "dlbench"
    return words[1:], trials


def test_a_plain_runs_command_replays_as_the_same_plan(tiny_run, cli, tmp_path: Path):
    db = tmp_path / "r.db"
    # Two cases in two blocks: the order inside each block is drawn from --seed.
    tiny_run(db, batch_size="16,32", trials=2, repeats=1, seed=7, device="cpu")
    words, trials = _stored(db, 1)
    assert words[0] == "run" and words[words.index("--seed") + 1] == "7" and words[words.index("--db") + 1] == str(db)
    assert len(trials) == 4 and len({key for _, key in trials}) == 2
    assert _planned(cli("plan", *words[1:])) == trials  # plan takes every flag run took: --db, --seed, --device
    # The keys and the order follow the seed: a replay under another one would not match.
    other = list(words[1:])
    other[other.index("--seed") + 1] = "8"
    assert _planned(cli("plan", *other)) != trials
    assert "--resume 1 finishes a stored run" in cli("plan", "--resume", "1", "--db", db, code=2)


@pytest.fixture(scope="module")
def study_db(tmp_path_factory, cli) -> Path:
    """germino at smoke scale with the numpy reference MLP only: one trial, seconds."""
    db = tmp_path_factory.mktemp("study") / "s.db"
    cli("study", "run", "germino", "--scale", "smoke", "--framework", "numpy", "--db", db)
    return db


def test_a_study_runs_command_is_the_study_command_and_replays_as_its_plan(study_db: Path, cli):
    words, trials = _stored(study_db, 1)
    # It used to be stored as `dlbench run germino --scale smoke ...`, which does not run.
    assert words[:3] == ["study", "run", "germino"] and words[words.index("--scale") + 1] == "smoke"
    assert words[words.index("--framework") + 1] == "numpy" and words[words.index("--device") + 1] == "cpu"
    assert len(trials) == 1
    assert _planned(cli("study", "plan", *words[2:])) == trials


def test_an_explain_runs_command_names_its_run_and_replays_as_its_plan(tiny_run, cli, tmp_path: Path):
    db = tmp_path / "e.db"
    tiny_run(db, init="glorot-uniform,framework-default", trials=1, repeats=1)
    # No RUN given: "the latest run", which once the explain run is stored is that one itself.
    cli(
        "explain", "--case", "init=glorot-uniform", "--vs", "init=framework-default", "--blocks", "2",
        "--repeats", "1", "--warmup", "0", "--profile-steps", "0", "--db", db,
    )  # fmt: skip
    words, trials = _stored(db, 2)
    assert words[:2] == ["explain", "1"]  # the run it explained, by id
    assert len(trials) == 4 and len({key for _, key in trials}) == 2  # A and B, two blocks
    replayed = cli(*words, "--dry-run")
    assert "dry run, nothing stored" in replayed and "toggles init framework-default -> glorot-uniform" in replayed
    assert _planned(replayed) == trials
    with Store(db) as store:
        assert [r["id"] for r in store.runs()] == [1, 2]  # the dry run stored nothing


def _shipping(module: str) -> list[importlib.metadata.Distribution]:
    """The installed distributions whose files hold `module`'s package: the truth, found apart from dlbench."""
    out = []
    for dist in importlib.metadata.distributions():
        if any(str(f) == f"{module}/__init__.py" for f in dist.files or ()):
            out.append(dist)
    return out


@pytest.fixture(scope="module")
def fingerprint() -> dict:
    return env.fingerprint()


@pytest.mark.parametrize("module", ["torch", "tensorflow", "jax", "sklearn"])
def test_the_fingerprint_names_each_frameworks_distribution_and_version(module: str, fingerprint: dict):
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed")
    (dist,) = _shipping(module)
    name = re.sub(r"[-_.]+", "-", dist.metadata["Name"]).lower()
    expected = f"{name} {dist.version}"  # e.g. tensorflow-cpu 2.21.0: the module's name alone is not installed
    fp = fingerprint
    assert fp["frameworks"][module] == expected
    assert expected in env.framework_software(fp, ("torch", "tensorflow", "jax", "sklearn"))
    assert fp["packages"][name] == dist.version
    # A fingerprint stored before "frameworks" existed still names the distribution.
    assert expected in env.framework_software({"packages": fp["packages"]})
    # The machines section heads each machine with it.
    empty = pd.DataFrame(columns=["phase", "metric"])
    section = machines.build([machines.MachineRun(1, "a.db", fp, empty), machines.MachineRun(2, "b.db", fp, empty)])
    assert all(expected in line for line in section.lines[1:])


FACTS = """
[paper]
title = "t"
authors = "A. Author"
year = 2020
venue = "v"
seed = "000"

[[machine]]
id = "cpu"
label = "CPU"
hardware = "h"
software = "s"
device = "cpu"
{facts}
"""
FACT = """
[[fact]]
ref = "Table II"
machine = "cpu"
framework = "torch"
model = "mlp"
quantity = "train_time"
statistic = "median"
value = {value}
unit = "s"
text = "t"
"""


def _facts(*values: str) -> list:
    return list(parse(FACTS.format(facts="".join(FACT.format(value=v) for v in values)), "f.toml").facts)


def test_paper_numbers_keep_the_papers_digits():
    fifty, ninety_two, seven, tiny = _facts("50.93", "92.31", "7", "3.896559845095909e-18")
    assert [paper_number(f) for f in (fifty, ninety_two, seven, tiny)] == [
        "50.93",
        "92.31",
        "7",
        "3.896559845095909e-18",
    ]
    # A float cannot keep a trailing zero: `printed` says what the paper printed.
    (padded,) = _facts('99.3\nprinted = "99.30"')
    assert padded.value == 99.3 and padded.paper_number() == "99.30"
    with pytest.raises(ConfigError, match=r"printed = '99.4'; the value 99.3 as the paper printed it"):
        _facts('99.3\nprinted = "99.4"')


def test_the_shipped_facts_quote_the_paper_as_printed(study_db: Path, cli):
    germino = studies.load_facts("germino")
    numbers = {
        (f.ref, f.machine, f.framework, f.model, f.quantity, f.statistic): f.paper_number() for f in germino.facts
    }
    assert numbers[("Table II", "cpu", "torch", "mlp", "train_time", "median")] == "50.93"
    assert numbers[("Table V", "all", "torch", "mlp", "accuracy", "mean")] == "92.31"
    assert numbers[("Table V", "all", "torch", "cnn", "accuracy", "mean")] == "99.30"
    # The study report's table of every number shows them so (it printed 50.9 s and 92.3 %).
    report = cli("study", "report", "germino", "--db", study_db, "--format", "markdown")
    rows = [line for line in report.splitlines() if line.startswith("| Table II | CPU | PyTorch | mlp | train")]
    assert any("| 50.93 s |" in row for row in rows), rows
    assert "| 92.31 % |" in report and "| 99.30 % |" in report
