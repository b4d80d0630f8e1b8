"""The studies' paper scales decide: independent processes, a smallest p below alpha, the
power of the design, and an estimate of the time that grows with the work."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from typer.testing import CliRunner

from dlbench import studies
from dlbench.analysis.design import DesignCheck
from dlbench.analysis.power import power, sim_error, trial_cv
from dlbench.cli import app
from dlbench.service import runs
from dlbench.studies import estimate as est

SCHEMA = Path(__file__).resolve().parents[1] / "src" / "dlbench" / "schemas" / "output.schema.json"


def _plan(name: str, scale: str, protocol: dict | None = None):
    data = studies.load(name).experiment_data(scale)
    data.setdefault("protocol", {})["device"] = "cpu"
    data["protocol"].update(protocol or {})
    return runs.plan(runs.experiment(data, {}, {}, {}, source_name=name))


@pytest.mark.parametrize("name", studies.NAMES)
def test_paper_scale_plan_json_decides_with_independent_processes(name):
    result = CliRunner().invoke(app, ["study", "plan", name, "--scale", "paper", "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    Draft202012Validator(json.loads(SCHEMA.read_text(encoding="utf-8"))).validate(doc)
    design = doc["design"]
    assert design["independent_processes"] and design["decidable"]
    assert design["smallest_p"] < 0.05
    assert doc["protocol"]["trials"] >= 5
    study = doc["study"]
    assert study["design"]["family"] == 3 and study["design"]["smallest_p"] < 0.05
    by_ratio = {p["ratio"]: p["power"] for p in study["design"]["power"]}
    assert by_ratio[2.0] > 0.8 and 0 <= by_ratio[1.1] <= by_ratio[2.0]
    assert study["estimate"]["seconds"] > 0 and study["estimate"]["processes"] == len(doc["trials"])


def test_cpu_scale_where_the_paper_scale_exceeds_a_day():
    for name in studies.NAMES:
        study = studies.load(name)
        db = est.smoke_db(name)
        assert db is not None
        paper = est.estimate(_plan(name, "paper"), db).seconds
        assert ("cpu" in study.scales) == (paper > 86_400), (name, est.words(paper))
        if "cpu" in study.scales:
            plan = _plan(name, "cpu")
            assert est.estimate(plan, db).seconds < 86_400
            assert plan.experiment.name == f"study {name} v{study.version} cpu"
            result = CliRunner().invoke(app, ["study", "plan", name, "--scale", "cpu", "--format", "json"])
            assert json.loads(result.stdout)["design"]["smallest_p"] < 0.05


def test_smoke_and_quick_keep_their_designs():
    for name in studies.NAMES:
        assert _plan(name, "smoke").experiment.protocol.trials == 1
        assert _plan(name, "quick").experiment.protocol.trials == 6


def test_a_study_without_a_cpu_scale_says_so():
    result = CliRunner().invoke(app, ["study", "plan", "florencio", "--scale", "cpu"])
    assert result.exit_code != 0
    assert "has none" in result.output


def test_console_plan_prints_design_power_and_time():
    result = CliRunner().invoke(app, ["study", "plan", "germino", "--scale", "paper"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    for words in ("smallest p", "power", "1.1x", "2x", "estimated time on this machine: about", "smoke run"):
        assert words in text


def _design(n: int, paired: bool, smallest: float, one_process: bool = False) -> DesignCheck:
    return DesignCheck(smallest < 0.05 and not one_process, one_process, 3, 3, paired, n, smallest, 5)


def test_power_without_an_effect_is_at_most_alpha():
    sims = 600
    p = power(_design(10, True, 3 * 2 / 1024), 1.0, 0.2, sims=sims)
    assert p <= 0.05 + 3 * sim_error(0.05, sims)


def test_power_of_a_huge_effect_is_one_where_the_design_can_decide():
    assert power(_design(10, True, 3 * 2 / 1024), 10.0, 0.1, sims=50) == 1.0
    assert power(_design(6, False, 3 * 2 / 924), 10.0, 0.1, sims=50) == 1.0


def test_power_is_zero_where_the_design_cannot_reach_alpha():
    # 3 frameworks x 4 trials: smallest p 3 x 2/70 = 0.086; one process per case: no verdict at all.
    assert power(_design(4, False, 3 * 2 / 70), 10.0, 0.1, sims=50) == 0.0
    assert power(_design(20, False, 1.0, one_process=True), 10.0, 0.1, sims=50) == 0.0


def test_power_grows_with_the_effect():
    d = _design(8, True, 3 * 2 / 256)
    assert power(d, 1.1, 0.2, sims=200) < power(d, 1.5, 0.2, sims=200) <= power(d, 3.0, 0.2, sims=200)


def test_trial_cv_shrinks_with_repeats_to_the_process_spread():
    assert trial_cv(1) > trial_cv(10) > trial_cv(1000) > math.sqrt(math.expm1(0.125**2)) - 1e-9


def test_estimate_scales_with_the_work():
    db = est.smoke_db("florencio")
    assert db is not None
    base = _plan("florencio", "paper")
    one = est.estimate(base, db)
    more_repeats = est.estimate(_plan("florencio", "paper", {"repeats": 200}), db)
    more_trials = est.estimate(_plan("florencio", "paper", {"trials": 12}), db)
    assert one.seconds > 0 and one.startup_s > 0
    compute = one.seconds - one.startup_s
    assert more_repeats.seconds - more_repeats.startup_s == pytest.approx(compute * 201 / 101, rel=1e-6)
    assert more_trials.seconds == pytest.approx(2 * one.seconds, rel=1e-6)
    assert "smoke run" in one.basis


def test_work_grows_with_input_area():
    case = _plan("patel", "paper").cases[0]
    assert est.work(replace(case, input_shape=224)) == pytest.approx(4 * est.work(replace(case, input_shape=112)))
