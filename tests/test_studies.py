"""The seed studies: every study and facts file parses and plans at every scale with the
paper's stated design; the paper-vs-this-run numbers are checked against hand-computed
values on a store written here; `dlbench study run NAME --scale smoke` runs all five and
`study report` lays out every number of the paper, each machine in its own columns."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from dlbench import studies
from dlbench.analysis import stats as dl_stats
from dlbench.config import ConfigError
from dlbench.env import machine_label
from dlbench.plan import expand
from dlbench.results import Results
from dlbench.store import Measurement, Store
from dlbench.studies import facts as facts_module
from dlbench.studies import paper_vs_run
from dlbench.studies import spec as spec_module

DLBENCH = [sys.executable, "-m", "dlbench"]


@pytest.mark.parametrize("name", studies.NAMES)
@pytest.mark.parametrize("scale", studies.SCALES)
def test_every_study_plans_at_every_scale(name: str, scale: str):
    study = studies.load(name)
    if scale not in study.scale_names():
        pytest.skip(f"{name} has no {scale} scale (its paper scale fits in a day here)")
    facts = studies.load_facts(name)
    from dlbench import config

    exp = config.from_dict(study.experiment_data(scale), f"study {name}")
    plan = expand(exp)
    assert plan.trials, f"{name} {scale}: nothing to run"
    assert not plan.skipped, [s.reason for s in plan.skipped]
    assert exp.name == f"study {name} v{study.version} {scale}"
    assert facts.seed == study.seed
    # Every fact names a machine of the facts file (or every machine) and a known quantity.
    for f in facts.facts:
        assert f.machine == "all" or f.machine in {m.id for m in facts.machines}


def test_paper_scales_follow_the_papers_stated_designs():
    germino = studies.load("germino").experiment_data("paper")
    # 20 runs, none dropped, each its own process (the process is the unit of evidence)
    assert germino["protocol"]["trials"] == 20 and germino["protocol"]["repeats"] == 1
    assert germino["protocol"]["warmup"] == 0
    assert set(germino["matrix"]["model"]) == {"mlp", "cnn"} and germino["include"][0]["model"] == "knn"
    florencio = studies.load("florencio").experiment_data("paper")
    # Table 2: batch 100, 1 epoch (600 steps of 100), learning rate 0.01; 100 samples, the first discarded.
    assert florencio["matrix"]["batch_size"] == [100] and florencio["matrix"]["lr"] == [0.01]
    assert florencio["protocol"]["epochs"] == 1 and florencio["matrix"]["model"] == ["lenet5"]
    assert florencio["protocol"]["repeats"] == 100 and florencio["protocol"]["warmup"] == 1
    assert florencio["protocol"]["trials"] == 6  # the paper's 100 samples in each of 6 processes
    patel = studies.load("patel").experiment_data("paper")
    assert patel["matrix"]["model"] == ["resnet18", "resnet152", "vgg16", "mobilenet_v2", "efficientnet_b4"]
    assert patel["matrix"]["dataset"] == ["synthetic"]
    assert patel["protocol"]["trials"] * patel["protocol"]["repeats"] == 100  # 100 runs, over 10 processes
    dai = studies.load("dai").experiment_data("paper")
    assert len(dai["matrix"]["model"]) + len(dai["include"]) == 7
    sumanjali = studies.load("sumanjali")
    assert sumanjali.experiment_data("paper")["matrix"]["dataset"] == ["cifar10"]
    assert sumanjali.lead("quick").startswith("Synthetic CIFAR-shaped data") and sumanjali.lead("paper") == ""


def test_a_scale_that_sets_steps_drops_the_designs_epochs():
    data = studies.load("florencio").experiment_data("smoke")
    assert data["protocol"]["steps"] == 20 and "epochs" not in data["protocol"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[study]\nname='x'\nversion=1\nseed='0'\ntitle='t'\ncolour='red'\n", "unknown key 'colour'"),
        ("[study]\nname='x'\nversion=0\nseed='0'\ntitle='t'\n", "version must be an integer >= 1"),
        ("[study]\nname='x'\nversion=1\nseed='0'\ntitle='t'\n[scale.quick]\nchanges=['a']\n", r"no \[scale.smoke\]"),
        (
            "[study]\nname='x'\nversion=1\nseed='0'\ntitle='t'\n[scale.quick]\nchanges=[]\n[scale.smoke]\nchanges=['a']\n",
            "say what this scale changes",
        ),
    ],
)
def test_bad_study_files_are_one_line(text: str, expected: str):
    with pytest.raises(ConfigError, match=expected) as caught:
        spec_module.parse(text, "my/study.toml")
    assert str(caught.value).startswith("my/study.toml") and "\n" not in str(caught.value)


FACTS_HEAD = """
[paper]
title = "A paper"
authors = "A. First, B. Second"
year = 2020
venue = "V"
seed = "999"

[[machine]]
id = "cpu"
label = "Their CPU"
hardware = "some CPU"
software = "PyTorch 1.0"
device = "cpu"
"""


@pytest.mark.parametrize(
    ("fact", "expected"),
    [
        ("quantity = 'speed'", "quantity = 'speed'; allowed: train_time"),
        ("machine = 'tpu'", "machine = 'tpu'; allowed: cpu, all"),
        ("value = 'fast'", "value = 'fast'; a finite number"),
    ],
)
def test_bad_facts_name_the_entry_and_what_is_allowed(fact: str, expected: str):
    base = {
        "ref": "'Table 1'",
        "machine": "'cpu'",
        "framework": "'torch'",
        "model": "'mlp'",
        "quantity": "'train_time'",
        "statistic": "'mean'",
        "value": "1.0",
        "unit": "'s'",
        "text": "'t'",
    }
    key, _, value = fact.partition(" = ")
    base[key] = value
    text = FACTS_HEAD + "[[fact]]\n" + "\n".join(f"{k} = {v}" for k, v in base.items()) + "\n"
    with pytest.raises(ConfigError, match=re.escape(expected)) as caught:
        facts_module.parse(text, "f.toml")
    assert str(caught.value).startswith("f.toml [[fact]] 1:")


CASE = {
    "runtime": "defaults",  # as dlbench stores a case today (without it: an older run's "all")
    "dataset": "digits",
    "device": "cpu",
    "epochs": 1,
    "init": "glorot-uniform",
    "lr": 0.01,
    "momentum": 0.0,
    "optimizer": "sgd",
    "precision": "float32",
    "seed": 0,
    "steps": None,
    "threads": 2,
    "model": "mlp",
    "batch_size": 32,
    "input_shape": 0,
    "layout": "native",
    "pipeline": "preloaded",
    "model_options": {},
    "synthetic": None,
    "train_samples": 0,
    "test_samples": 0,
}
TORCH_S = [20.0, 21.0, 22.0, 23.0, 24.0, 25.0]
TF_S = [10.0, 11.5, 12.0, 13.0, 14.5, 15.0]


def _store(path: Path, fingerprint: dict, trials: int = 6) -> tuple[Store, int]:
    """One run: torch and TensorFlow mlp, known values. By default 6 interleaved blocks,
    each trial a process of its own with a warm-up and one measured repeat (TORCH_S[k] and
    TF_S[k] in block k): six independent values per framework, paired by block. With
    trials=1, one process per framework holds all six values as its repeats."""
    store = Store(path)
    return store, _add_run(store, fingerprint, trials)


def _add_run(store: Store, fingerprint: dict, trials: int = 6, model: str = "mlp", scale: str = "smoke") -> int:
    """_store's run, of `model` at `scale`, added to `store`; its case keys name the model."""
    run_id = store.create_run(
        name=f"study t v1 {scale}",
        command="test",
        config_source="test",
        config_text="",
        experiment={},
        environment=fingerprint,
        version="0",
    )
    per_trial = len(TORCH_S) // trials
    for block in range(trials):
        for position, (fw, times, accuracy, util) in enumerate(
            (("torch", TORCH_S, 0.93, 90.0), ("tensorflow", TF_S, 0.90, 60.0))
        ):
            tid = store.add_trial(
                run_id,
                case_key=fw if model == "mlp" else f"{fw}-{model}",
                block=block,
                position=position,
                case={**CASE, "framework": fw, "variant": "v", "model": model},
                protocol={"repeats": per_trial, "warmup": 1},
            )
            store.start_trial(tid)
            rows = [Measurement(0, True, "train", "time", 999.0, "s")]  # a warm-up: never counted
            for r, t in enumerate(times[block * per_trial : (block + 1) * per_trial], start=1):
                rows += [
                    Measurement(r, False, "train", "time", t, "s"),
                    Measurement(r, False, "accuracy", "accuracy", accuracy, "fraction"),
                    Measurement(r, False, "train", "cpu.process_util:mean", util + block * per_trial + r, "%"),
                ]
            store.add_measurements(tid, rows)
            store.finish_trial(tid, status="ok", error=None, returncode=0, wall_s=1.0, stderr="")
    return run_id


FACTS = (
    FACTS_HEAD
    + """
[[fact]]
ref = "Table 1"
machine = "cpu"
framework = "torch"
model = "mlp"
quantity = "train_time"
statistic = "mean"
value = 2.0
unit = "min"
text = "torch time"

[[fact]]
ref = "Table 1"
machine = "cpu"
framework = "tensorflow"
model = "mlp"
quantity = "train_time"
statistic = "mean"
value = 1.0
unit = "min"
text = "tf time"

[[fact]]
ref = "Table 2"
machine = "cpu"
framework = "torch"
model = "mlp"
quantity = "accuracy"
statistic = "mean"
value = 91.0
unit = "%"
text = "torch accuracy"

[[fact]]
ref = "Table 3"
machine = "cpu"
framework = "both"
model = "mlp"
quantity = "p_value"
statistic = "value"
value = 1e-5
unit = ""
text = "paired Wilcoxon of train time"
where = { phase = "train", variable = "time" }

[[fact]]
ref = "Table 3"
machine = "cpu"
framework = "torch"
model = "mlp"
quantity = "p_value"
statistic = "max"
value = 1e-10
unit = ""
text = "KS normality of torch's train time"
where = { phase = "train", variable = "time" }

[[fact]]
ref = "Fig. 9"
machine = "cpu"
framework = "torch"
model = "mlp"
quantity = "gpu_energy"
statistic = "mean"
value = 5.0
unit = "J"
text = "GPU energy"

[[claim]]
ref = "Section 5"
quantity = "train_time"
model = "mlp"
machine = "cpu"
better = "tensorflow"
text = "TensorFlow trains faster"

[[claim]]
ref = "Section 5"
quantity = "accuracy"
model = "mlp"
machine = "cpu"
better = "torch"
text = "PyTorch is more accurate"
"""
)
STUDY = """
[study]
name = "t"
version = 1
seed = "999"
title = "a test study"

[scale.quick]
changes = ["fewer"]

[scale.smoke]
changes = ["fewest"]

[matrix]
framework = ["torch", "tensorflow"]
model = ["mlp"]
"""


def _comparison(tmp_path: Path, fingerprints: list[dict], trials: int = 6, facts_text: str = FACTS):
    study = spec_module.parse(STUDY, "t.toml")
    facts = facts_module.parse(facts_text, "f.toml")
    machines = []
    for i, fp in enumerate(fingerprints):
        store, run_id = _store(tmp_path / f"m{i}.db", fp, trials)
        results = Results.of_store(store)

        def compare(a, b, metric, results=results, run_id=run_id):
            return results.compare(a, b, metric=metric, run=run_id)

        machines.append(
            paper_vs_run.Machine(
                machine_label(fp),
                run_id,
                results.summary(run_id),
                compare,
                fp,
                results.measurements(run_id),
            )
        )
    return study, facts, paper_vs_run.compare(study, facts, machines)


def test_paper_numbers_beside_ours_in_the_papers_units(tmp_path: Path):
    _, _, comparison = _comparison(tmp_path, [{"cpu_model": "Test CPU", "physical_cores": 2}])
    ours = {(r.fact.ref, r.fact.framework, r.fact.quantity, r.fact.statistic): r.ours for r in comparison.facts}
    col = ("Test CPU, 2 cores", "this run")
    # mean of the six measured repeats (the warm-up's 999 s left out), in minutes
    assert ours[("Table 1", "torch", "train_time", "mean")][col].value == pytest.approx(np.mean(TORCH_S) / 60)
    assert ours[("Table 1", "torch", "train_time", "mean")][col].n == 6
    assert ours[("Table 2", "torch", "accuracy", "mean")][col].value == pytest.approx(93.0)
    # the paper's paired Wilcoxon: over trial medians paired by block (exact, 6 pairs)
    wilcoxon = ours[("Table 3", "both", "p_value", "value")][col]
    assert wilcoxon.value == pytest.approx(stats.wilcoxon(TORCH_S, TF_S).pvalue) and wilcoxon.n == 6
    # normality with mean and sd estimated: Lilliefors, not plain KS on a self-standardized sample
    lilliefors = dl_stats.normality(TORCH_S).ks_p
    z = (np.array(TORCH_S) - np.mean(TORCH_S)) / np.std(TORCH_S, ddof=1)
    assert ours[("Table 3", "torch", "p_value", "max")][col].value == pytest.approx(lilliefors)
    assert lilliefors < stats.kstest(z, "norm").pvalue  # plain KS is too large here
    energy = ours[("Fig. 9", "torch", "gpu_energy", "mean")][col]
    assert energy.value is None and "not measured on this machine" in energy.why


def test_framework_ratios_and_claims_are_read_in_both_directions(tmp_path: Path):
    _, _, comparison = _comparison(tmp_path, [{"cpu_model": "Test CPU", "physical_cores": 2}])
    (ratio,) = [r for r in comparison.ratios if r.quantity == "train_time"]
    assert ratio.paper_ratio == pytest.approx(2.0) and ratio.lower_is_better
    ours = ratio.ours[("Test CPU, 2 cores", "this run")]
    # the report's ratio of medians, torch / TensorFlow, with its CI strictly above 1
    assert ours["ratio"] == pytest.approx(np.median(TORCH_S) / np.median(TF_S))
    assert ours["ci"][0] > 1 and ours["verdict"] == "slower" and ours["independent"]
    # our CI lies within a factor 2 of the paper's 2.0, not within a factor 1.05
    assert paper_vs_run.agreement(ratio.paper_ratio, ours, True, 2.0) == "agrees in direction and size"
    assert paper_vs_run.agreement(ratio.paper_ratio, ours, True, 1.05) == "agrees in direction"
    # the same ratio set against a paper that found PyTorch faster: opposite direction
    assert paper_vs_run.agreement(0.5, ours, True) == "differs"
    claims = {c.claim.text: v for c in comparison.claims for v in c.ours.values()}
    assert claims["TensorFlow trains faster"] == "agrees in direction"
    assert claims["PyTorch is more accurate"] == "agrees in direction"


GPU_AND_TREND_CLAIMS = (
    FACTS.replace(
        'device = "cpu"\n',
        'device = "cpu"\n\n[[machine]]\nid = "gpu"\nlabel = "Their GPU"\nhardware = "a GPU"\n'
        'software = "CUDA"\ndevice = "cuda"\n',
        1,
    )
    + """
[[claim]]
ref = "Section 6"
quantity = "train_time"
model = "mlp"
machine = "gpu"
better = "tensorflow"
text = "TensorFlow trains faster on the GPU"

[[claim]]
ref = "Section 7"
quantity = "train_time"
model = "all"
machine = "all"
better = "tensorflow"
trend = "models"
text = "The larger the model, the better TensorFlow"

[[claim]]
ref = "Section 8"
quantity = "train_time"
model = "all"
machine = "all"
better = "tensorflow"
text = "TensorFlow is faster on every model and machine"
"""
)


def test_claims_say_what_this_run_could_not_measure_or_decide(tmp_path: Path):
    _, _, comparison = _comparison(tmp_path, [{"cpu_model": "Test CPU", "physical_cores": 2}], 6, GPU_AND_TREND_CLAIMS)
    claims = {c.claim.text: v for c in comparison.claims for v in c.ours.values()}
    gpu_claim = claims["TensorFlow trains faster on the GPU"]
    assert gpu_claim.startswith(
        "not measured here: the paper's claim is for its Their GPU machine (cuda); this run: cpu"
    )
    # Beside it, what the same comparison decided on this (other) machine, worded as a
    # finding, not as agreement; the counts still read it as not measured.
    assert gpu_claim.endswith(
        "; on this cpu machine instead (another machine than the paper's, not counted as agreement): "
        "the same direction as the paper's claim, decided"
    )
    assert "agrees" not in gpu_claim
    assert claims["The larger the model, the better TensorFlow"].startswith("not measured here: a trend over models")
    every = claims["TensorFlow is faster on every model and machine"]
    assert every.startswith("agrees in direction (judged on mlp only)") and "only; the paper's claim spans" in every
    # One process per framework: the same six values as repeats give a ratio, never a verdict.
    (tmp_path / "one").mkdir()
    one, _, single = _comparison(tmp_path / "one", [{"cpu_model": "Test CPU", "physical_cores": 2}], 1)
    (ratio,) = [r for r in single.ratios if r.quantity == "train_time"]
    ours = ratio.ours[("Test CPU, 2 cores", "this run")]
    assert ours["verdict"] == "undecided" and ours["independent"] is False
    assert paper_vs_run.agreement(2.0, ours, True).startswith("undecided here (one process per framework")
    # A ratio from other hardware: not measured here, this machine's own finding beside it.
    assert paper_vs_run.agreement(2.0, {**ours, "elsewhere": "the paper's GPU"}, True) == (
        "not measured here (the paper's GPU); on this run's machine instead (another machine than the "
        "paper's, not counted as agreement): undecided (one process per framework: a ratio, no verdict)"
    )
    claims = {c.claim.text: v for c in single.claims for v in c.ours.values()}
    assert claims["TensorFlow trains faster"].startswith("undecided here (one process per framework")
    tested = {(r.fact.ref, r.fact.framework): r.ours for r in single.facts if r.fact.quantity == "p_value"}
    paired = tested[("Table 3", "both")][("Test CPU, 2 cores", "this run")]
    assert paired.value is None and "1 process per framework" in paired.why


def test_machines_stay_apart_and_the_section_names_each(tmp_path: Path):
    from dlbench.report import markdown, study_section

    fingerprints = [{"cpu_model": "CPU A", "physical_cores": 2}, {"cpu_model": "CPU B", "physical_cores": 8}]
    study, facts, comparison = _comparison(tmp_path, fingerprints)
    assert [m.label for m in comparison.machines] == ["CPU A, 2 cores", "CPU B, 8 cores"]
    preface = study_section.build(study, facts, comparison, "smoke", ("fewest",))
    text = "\n".join(markdown.preface(preface))
    every = next(t for t in preface.tables if t.title.startswith("Every number"))
    assert [c for c in every.columns if c.startswith("ours")] == ["ours: CPU A, 2 cores", "ours: CPU B, 8 cores"]
    assert len(every.rows) == len(facts.facts)
    for ref in ("Table 1", "Table 2", "Table 3", "Fig. 9", "Section 5"):
        assert ref in text
    assert "agree in direction in 2 (in size too in 2), differ in 0" in text  # train time on each machine
    assert text.index("Agreement rule, stated before any number") < text.index("Framework ratios")
    assert "Re-runs the design of" in text and "Reproduces" not in text  # smoke scale


@pytest.mark.parametrize("name", studies.NAMES)
def test_study_smoke_runs_and_reports_every_fact(name: str, tmp_path: Path):
    db = tmp_path / "s.db"
    run = subprocess.run(
        [*DLBENCH, "study", "run", name, "--scale", "smoke", "--db", str(db)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=900,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "The paper vs this run" in run.stdout
    out = tmp_path / "report.md"
    report = subprocess.run(
        [*DLBENCH, "study", "report", name, "--db", str(db), "--format", "markdown", "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert report.returncode == 0, report.stderr
    text = out.read_text()
    study, facts = studies.load(name), studies.load_facts(name)
    section = text[text.index("## The paper vs this run") :]
    opening = section.splitlines()[2]
    # The report opens with the scale and what was substituted, and re-runs (not reproduces) at smoke scale.
    assert opening.startswith("Scale smoke on cpu.") and "Reproduces" not in opening
    if study.lead("smoke"):
        assert opening.startswith(f"Scale smoke on cpu. {study.lead('smoke')}")
    every = [line for line in section.splitlines() if line.startswith("| ") and "|" in line[2:]]
    for f in facts.facts:
        assert any(f.ref in line for line in every), f"{name}: {f.ref} missing"
    for c in facts.claims:
        assert c.text[:40] in section
    with Results(db) as results:
        runs = results.runs()
        assert list(runs["name"]) == [f"study {name} v{study.version} smoke"]
        trials = results.trials()
        assert set(trials["status"]) == {"ok"}


def test_study_commands_refuse_bad_input_in_one_line(tmp_path: Path):
    unknown = subprocess.run([*DLBENCH, "study", "show", "smith"], capture_output=True, text=True)
    assert unknown.returncode == 2 and "study 'smith': unknown; studies: germino, patel" in unknown.stderr
    scale = subprocess.run(
        [*DLBENCH, "study", "run", "germino", "--scale", "huge", "--db", str(tmp_path / "x.db")],
        capture_output=True,
        text=True,
    )
    assert scale.returncode == 2 and "--scale 'huge': allowed: smoke, quick, cpu, paper" in scale.stderr
    assert not (tmp_path / "x.db").exists()
    empty = subprocess.run(
        [*DLBENCH, "study", "report", "germino", "--db", str(tmp_path / "none.db")], capture_output=True, text=True
    )
    assert empty.returncode == 2 and "none.db" in empty.stderr and "Traceback" not in empty.stderr


def test_report_sets_two_machines_side_by_side_without_pooling(tmp_path: Path):
    for name, cpu in (("a.db", "CPU A"), ("b.db", "CPU B")):
        store, _ = _store(tmp_path / name, {"cpu_model": cpu, "physical_cores": 4})
        store.close()
    result = subprocess.run(
        [*DLBENCH, "report", "--db", "a.db", "--db", "b.db", "--format", "markdown"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert text.index("## Machines side by side") < text.index("Answer")
    header = next(line for line in text.splitlines() if line.startswith("| case |"))
    assert "CPU A, 4 cores" in header and "CPU B, 4 cores" in header
    torch_row = next(line for line in text.splitlines() if line.startswith("| torch:v mlp"))
    median = f"{np.median(TORCH_S):.4g}"
    # one cell per machine (Markdown escapes the brackets), n = 6 each: never pooled into 12
    assert torch_row.count(median + " \\[") == 2 and torch_row.count("(6)") == 2
    mismatched = subprocess.run(
        [*DLBENCH, "report", "--db", "a.db", "--db", "b.db", "--run", "1", "--run", "1", "--run", "1"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert mismatched.returncode == 2 and "give one --run per --db" in mismatched.stderr


def test_a_setting_with_levels_per_framework_compares_the_two_cases_repeats(tmp_path: Path):
    from dlbench.analysis import stats as dl_stats

    store, run_id = _store(tmp_path / "x.db", {"cpu_model": "Test CPU", "physical_cores": 2})
    results = Results.of_store(store)
    machine = paper_vs_run.Machine("m", run_id, results.summary(run_id), None, {}, results.measurements(run_id))
    setting = spec_module.Setting("cited code", {"torch": {"batch_size": 32}, "tensorflow": {"batch_size": 32}})
    assert paper_vs_run.per_framework(setting)
    study = spec_module.parse(STUDY, "t.toml")
    ratio = paper_vs_run.RatioRow("Table 1", "mlp", "train_time", "mean", {}, "cpu", 2.0, True)
    ours = paper_vs_run._ratio_ours(machine, study, ratio, setting)
    expected = dl_stats.compare_many({"torch": TORCH_S, "tensorflow": TF_S}, paired=True).pairwise[0][2]
    assert ours["ratio"] == pytest.approx(np.median(TORCH_S) / np.median(TF_S))
    assert ours["ci"] == pytest.approx(expected.ratio_ci) and ours["verdict"] == "slower"
    # The tensorflow case measured on a busy machine: the same ratio, no verdict (the busy rule).
    from dataclasses import replace

    frame = machine.measurements
    tf_key = frame.loc[frame["framework"] == "tensorflow", "case_key"].iloc[0]
    busy = paper_vs_run._ratio_ours(replace(machine, busy=frozenset({tf_key})), study, ratio, setting)
    assert busy["ratio"] == pytest.approx(ours["ratio"]) and busy["verdict"] == "undecided"
    assert busy["why"] == "busy machine"
    missing = spec_module.Setting("other", {"torch": {"batch_size": 4}})
    assert not paper_vs_run._present(missing, [machine])


def test_a_ratio_from_other_hardware_shows_this_machines_decided_finding_uncounted():
    ours = {"ratio": 4.0, "ci": (1.2, 6.3), "verdict": "slower", "independent": True, "elsewhere": "the paper's GPU"}
    said = paper_vs_run.agreement(0.92, ours, lower_is_better=True)
    assert said.startswith("not measured here (the paper's GPU)")
    assert said.endswith("not counted as agreement): TensorFlow better, decided")
    faster = {**ours, "ratio": 0.25, "verdict": "faster"}
    assert paper_vs_run.agreement(0.92, faster, True).endswith("): PyTorch better, decided")
    same = {**ours, "ratio": 1.0, "verdict": "no meaningful difference"}
    assert paper_vs_run.agreement(0.92, same, True).endswith("): no meaningful difference")


def test_a_paper_ratio_within_the_band_names_neither_framework_better():
    # germino's Table V: CNN accuracy 99.30% against 99.13%, a ratio of 1.0017: within ±2%.
    paper = 99.30 / 99.13
    assert paper_vs_run.direction(paper, lower_is_better=False) == "torch"
    assert paper_vs_run.direction(paper, lower_is_better=False, band=0.02) == "none"
    same = {"ratio": 1.0, "ci": (0.99, 1.005), "verdict": "no meaningful difference", "independent": True}
    assert paper_vs_run.agreement(paper, same, False, band=0.02) == "agrees in direction and size"
    higher = {**same, "ratio": 1.05, "ci": (1.03, 1.07), "verdict": "higher"}
    assert paper_vs_run.agreement(paper, higher, False, band=0.02) == "differs"
    # Outside the band the paper's direction stands: 92.31% against 95.83%.
    assert paper_vs_run.agreement(92.31 / 95.83, same, False, band=0.02) == "differs"


def test_an_undecided_ratio_far_from_the_papers_is_examined_too():
    ours = {"ratio": 0.94, "ci": (0.86, 1.23), "verdict": "undecided", "independent": True}
    assert paper_vs_run.needs_examining("undecided here", 1.19, ours)  # 21% below the paper's
    assert not paper_vs_run.needs_examining("undecided here", 1.0, ours)  # 6%: within 10%
    assert paper_vs_run.needs_examining("differs", 1.0, ours)
    assert not paper_vs_run.needs_examining("agrees in direction", 0.5, ours)
    assert not paper_vs_run.needs_examining("not measured here", 0.5, {})


def _explanation(run_id: int, init: str = "glorot-uniform") -> paper_vs_run.Explanation:
    cases = {fw: {**CASE, "framework": fw, "variant": "v", "init": init} for fw in ("torch", "tensorflow")}
    return paper_vs_run.Explanation(run_id, "mlp", cases, "variant v -> xla closes 40% of it [20, 60].")


def test_every_difference_says_what_explains_it_or_how_to_examine_it(tmp_path: Path):
    from dataclasses import replace

    from dlbench.report import study_section

    flipped = FACTS.replace('value = 2.0\nunit = "min"', 'value = 0.5\nunit = "min"', 1)
    study, facts, comparison = _comparison(tmp_path, [{"cpu_model": "Test CPU", "physical_cores": 2}],
                                           facts_text=flipped)  # fmt: skip
    col = ("Test CPU, 2 cores", "this run")
    (time_row,) = [r for r in comparison.ratios if r.quantity == "train_time"]
    assert time_row.verdicts[col] == "differs"  # the paper: PyTorch 4x faster; ours: 1.8x slower
    command = "dlbench explain 1 --case torch --vs tensorflow --where model=mlp"
    assert time_row.explains[col] == f"not examined yet: {command}"
    claims = {c.claim.text: c for c in comparison.claims}
    # Agreeing claims owe nothing; accuracy is beyond explain, with the settings both share said.
    assert claims["TensorFlow trains faster"].explains[col] == ""
    # A stored explain run of this gap answers it; one of other settings (another init) does not.
    machine = replace(comparison.machines[0], explanations=(_explanation(7), _explanation(8, "he-normal")))
    explained = paper_vs_run.compare(study, facts, [machine])
    (time_row,) = [r for r in explained.ratios if r.quantity == "train_time"]
    assert time_row.explains[col] == "explain run 7: variant v -> xla closes 40% of it [20, 60]."
    section = study_section.build(study, facts, explained, "quick", ("fewer",))
    (table,) = [t for t in section.tables if t.title == "What explains each difference"]
    assert [row[0] for row in table.rows] == ["Table 1"]
    assert table.rows[0][-1].startswith("explain run 7: ")


def test_a_difference_in_accuracy_is_not_attributed_by_explain_and_says_what_both_share(tmp_path: Path):
    flipped = FACTS.replace('better = "torch"\ntext = "PyTorch is more accurate"',
                            'better = "tensorflow"\ntext = "TensorFlow is more accurate"')  # fmt: skip
    _, _, comparison = _comparison(tmp_path, [{"cpu_model": "Test CPU", "physical_cores": 2}], facts_text=flipped)
    col = ("Test CPU, 2 cores", "this run")
    (claim,) = [c for c in comparison.claims if c.claim.text == "TensorFlow is more accurate"]
    assert claim.ours[col] == "differs"  # our 93% against 90%: PyTorch higher
    assert claim.explains[col] == (
        "not attributed: dlbench explain attributes training step time, not accuracy; both frameworks here share "
        "dataset digits, batch_size 32, init glorot-uniform, optimizer sgd, lr 0.01, epochs 1, precision float32"
    )


def test_study_report_refuses_a_run_of_another_study(tmp_path: Path):
    """A run of study t named with `study report germino --run 1`: one line, not germino's report."""
    store, run_id = _store(tmp_path / "t.db", {"cpu_model": "Test CPU", "physical_cores": 2})
    store.close()
    other = subprocess.run(
        [*DLBENCH, "study", "report", "germino", "--run", str(run_id), "--db", str(tmp_path / "t.db")],
        capture_output=True,
        text=True,
    )
    said = " ".join(other.stderr.split())
    assert other.returncode == 2 and "Traceback" not in other.stderr
    assert f"run {run_id} ('study t v1 smoke') is no run of study germino; its runs there: none" in said


CNN_CLAIM = """
[[claim]]
ref = "Section 9"
quantity = "train_time"
model = "cnn"
machine = "cpu"
better = "torch"
text = "PyTorch trains the CNN faster"
"""


def test_a_study_run_in_parts_reads_as_one_machine_and_a_rerun_replaces_its_part(tmp_path: Path):
    """Runs of one study and scale on one machine that measured other cases are one
    measurement (a study narrowed with --model, then the rest): one column, each comparison
    within its own run. Another scale, another machine, or the same cases again are not."""
    from dlbench.report import markdown
    from dlbench.service import studies as service

    study = spec_module.parse(STUDY.replace('model = ["mlp"]', 'model = ["mlp", "cnn"]'), "t.toml")
    facts = facts_module.parse(FACTS + CNN_CLAIM, "f.toml")
    here = {"cpu_model": "Test CPU", "physical_cores": 2, "hostname": "a"}
    store = Store(tmp_path / "t.db")
    first = _add_run(store, here)  # mlp
    other_scale = _add_run(store, here, model="cnn", scale="quick")
    elsewhere = _add_run(store, {**here, "hostname": "b"}, model="cnn")
    second = _add_run(store, here, model="cnn")
    assert service.parts(store, study, second) == [first, second]
    assert service.parts(store, study, other_scale) == [other_scale]  # the only quick run
    assert service.parts(store, study, elsewhere) == [elsewhere]  # run 1 was on host a
    rerun = _add_run(store, here)  # mlp again: it replaces run 1 rather than joining it
    assert service.parts(store, study, rerun) == [second, rerun]

    comparison = service.comparison(study, facts, [(store, first), (store, second)])
    (machine,) = comparison.machines
    assert machine.run_ids == (first, second) and machine.runs == f"runs {first}+{second}"
    assert sorted(set(machine.summary["model"])) == ["cnn", "mlp"]
    assert machine.run_of("cnn") == second and machine.run_of("mlp") == first
    claims = {c.claim.text: v for c in comparison.claims for v in c.ours.values()}
    # both models compared, each in its own run: TensorFlow faster in both (TF_S < TORCH_S)
    assert claims["TensorFlow trains faster"] == "agrees in direction"
    assert claims["PyTorch trains the CNN faster"].startswith("differs")
    preface = service.paper_section(study, facts, [(store, first), (store, second)])
    text = "\n".join(markdown.preface(preface))
    assert f"runs {first}+{second}, one measurement made in parts" in text
    assert f"dlbench report --run {second} --db {store.path}" in " ".join(preface.lines)  # unescaped
    # two machines stay two columns: run 1 beside the run on host b
    apart = service.comparison(study, facts, [(store, first), (store, elsewhere)])
    assert [m.runs for m in apart.machines] == [f"run {first}", f"run {elsewhere}"]
