"""The profile adds up to the measured step, for every framework on LeNet-5 and ResNet-18.

One `dlbench run` trains both models in torch, TensorFlow and JAX with the profile
phase on. Per profiled call the categories add up to the call's step time by
construction (what no op covers is overhead & idle); what is checked is that no op
time is counted twice (busy time within the wall time) and that the profiled step
agrees with the measured step time of the same steps without the profiler (the
profile phase measures both, in turns, each call a fresh model after its first
step, as a timed repeat is), within TOLERANCE of that framework: the profiler's own
cost plus the machine's drift between seconds. Measured on this project's 2-core VM (profiled / unprofiled
step, medians):
- torch and JAX: 1-11% on LeNet-5 and ResNet-18, up to 17% on torch's 1.5 ms
  LeNet-5 step. Tolerance 40%.
- TensorFlow: 0-11% on LeNet-5, but 3-49% on ResNet-18 (1.03, 1.19 and 1.21 in three
  `dlbench run`s, 1.09-1.49 per call in one process, 1.40 in a CI run). Its
  profiler records every executor op, about 1,700 events per ResNet-18 step here
  (ExecutorState ranges, the ops with their shape strings), and at least half of
  its cost lands inside the op ranges (overhead & idle, all the time between ops,
  was 2.8 ms of the 5.8 ms it added), so it cannot be taken out of the
  categories. Tolerance 75%. The explain report prints this cost for every case.
The cases run with runtime "all" (every runtime setting that applies to the framework):
with tf.data's autotune on (TensorFlow's default), its background thread stalls
Keras' fit() by ~300 ms after the last step in some calls, profiled or not
(dlbench.runtime_settings), 50 ms a step over these 6 steps; in a CI run two of the
three profiled ResNet-18 calls stalled and two unprofiled ones did not (profile 104.3
ms/step, unprofiled 51.0, timed repeats 104.6), a ratio of 2.04 that says nothing of
the profiler. Taking that stall out leaves the profiler's own cost to check.
Each trial is a fresh worker, as in every dlbench run: in one long test process that
had profiled before, TensorFlow's profiler cost up to 41% on a 3 ms LeNet-5 step
(CI), which is not what a trial sees.
"""

from __future__ import annotations

import json
from collections import defaultdict
from statistics import median

import pytest
from typer.testing import CliRunner

from dlbench.cli import app
from dlbench.explain.categories import CATEGORIES
from dlbench.frameworks import FRAMEWORKS
from dlbench.store import Store

TOLERANCE = {"torch": 0.40, "jax": 0.40, "tensorflow": 0.75}
FRAMEWORK_NAMES = ("torch", "tensorflow", "jax")
missing = [f"{f}: {FRAMEWORKS[f].unavailable_reason()}" for f in FRAMEWORK_NAMES if FRAMEWORKS[f].unavailable_reason()]
pytestmark = pytest.mark.skipif(bool(missing), reason="; ".join(missing))

EXPERIMENT = """
[experiment]
name = "profile sums"
[matrix]
framework = ["torch", "tensorflow", "jax"]
model = ["lenet5", "resnet18"]
dataset = ["synthetic"]
batch_size = [16]
runtime = ["all"]  # autotune-off among them: see the module's docstring
optimizer = ["sgd"]
lr = [0.01]
[synthetic]
shape = [32, 32, 3]
classes = 10
train_size = 96
test_size = 16
[protocol]
steps = 6
repeats = 1  # the timed repeats are only printed beside the check, which is the profile phase's
warmup = 0   # own profiled and unprofiled calls (each on a fresh model after its first step)
latency_batches = 0
infer_min_time = 0.0
samplers = "none"
profile_steps = 6
"""


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sums")
    (tmp / "sums.toml").write_text(EXPERIMENT)
    db = tmp / "s.db"
    result = CliRunner().invoke(app, ["run", str(tmp / "sums.toml"), "--db", str(db)])
    assert result.exit_code == 0, result.output
    with Store(db) as store:
        return store.trials(1), store.measurements(1, latency=False)


def test_every_framework_and_model_was_profiled(run):
    trials, rows = run
    profiled = {m["trial_id"] for m in rows if m["phase"] == "profile"}
    cases = {(t["framework"], json.loads(t["case_json"])["model"]) for t in trials if t["id"] in profiled}
    assert cases == {(f, m) for f in FRAMEWORK_NAMES for m in ("lenet5", "resnet18")}


def test_categories_add_up_to_the_measured_step(run):
    trials, rows = run
    calls: dict[tuple[int, int], dict[str, float]] = defaultdict(dict)
    timed: dict[int, dict[int, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    for m in rows:
        if m["phase"] == "profile":
            calls[(m["trial_id"], m["seq"])][m["metric"]] = m["value"]
        elif m["phase"] == "train" and m["metric"] in ("time", "steps") and not m["warmup"]:
            timed[m["trial_id"]][m["repeat"]][m["metric"]] = m["value"]
    report = []
    for t in trials:
        mine = [v for (trial, _), v in calls.items() if trial == t["id"]]
        for values in mine:
            assert sum(values[c] for c in CATEGORIES) == pytest.approx(values["step_time"], rel=1e-9)
            assert values["busy_time"] <= values["step_time"] * (1 + 1e-9)  # nothing counted twice
        profiled = median(v["step_time"] for v in mine)
        # The same steps measured without the profiler, in turns with the profiled calls:
        # what separates the two is the profiler, not the machine's drift between the
        # timed repeats and the profile phase (that is reported beside, not checked).
        measured = median(v["unprofiled_step_time"] for v in mine)
        timed_repeats = median(r["time"] / r["steps"] for r in timed[t["id"]].values())
        label = f"{t['framework']} {json.loads(t['case_json'])['model']}"
        report.append(
            f"{label}: profile {profiled * 1e3:.2f} ms/step, unprofiled {measured * 1e3:.2f}, "
            f"timed repeats {timed_repeats * 1e3:.2f}"
        )
        assert abs(profiled - measured) <= TOLERANCE[t["framework"]] * measured, "; ".join(report)
    print("\n".join(report))  # shown with pytest -rP: the numbers behind the check
