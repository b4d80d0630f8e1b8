"""Fixtures of the fault-injection suite: a framework plugin whose phases take a
little time (so that a signal sent at a random moment lands in every part of a
run) and that can send a signal to its runner at a named phase (so that every
phase of a trial is hit for certain), and a driver that runs `dlbench run` as a
real process, interrupts it and resumes it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .driver import Driver

PLUGIN_INFO = """
from dlbench.frameworks import FrameworkInfo

INFO = FrameworkInfo(
    name="sleepy", variants=("a", "b"), default_variant="a", modules=("dlbench_sleepy",),
    distributions=("dlbench-sleepy",), install_hint="test plugin", adapter="dlbench_sleepy.adapter:Sleepy",
    in_default_suite=False, models=("mlp",))
"""

# Each phase sleeps (a runner's signal can land inside it) and may signal the
# runner: DLBENCH_FAULT_PHASE names the phase, DLBENCH_FAULT_SIGNAL the signal,
# DLBENCH_FAULT_OCCURRENCE at which call of that phase in the worker, and
# DLBENCH_FAULT_FLAG a file that makes it happen once (the resume must not be hit).
PLUGIN_ADAPTER = """
import os, signal, time

seen = {}

def fault(phase):
    if os.environ.get("DLBENCH_FAULT_PHASE") != phase:
        return
    seen[phase] = seen.get(phase, 0) + 1
    if seen[phase] != int(os.environ.get("DLBENCH_FAULT_OCCURRENCE", "1")):
        return
    flag = os.environ["DLBENCH_FAULT_FLAG"]
    try:
        fd = os.open(flag, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return
    os.close(fd)
    time.sleep(0.3)  # the runner stores the repeat sent just before: a committed repeat must be kept
    os.kill(os.getppid(), int(os.environ["DLBENCH_FAULT_SIGNAL"]))
    time.sleep(60)  # the runner's end (or its handler) must end this worker

fault("import")

class Trainer:
    def __init__(self, seed):
        self.seed = seed
    def parameter_count(self): return 1
    def first_step(self):
        fault("compile"); time.sleep(0.02)
    def train(self):
        fault("train"); time.sleep(0.12)
        return [1.0 / (1 + self.seed)]
    def evaluate(self):
        fault("evaluate"); time.sleep(0.01)
        return 0.5
    def prepare_infer(self, b): return 2
    def infer(self, b):
        fault("infer"); time.sleep(0.02)
        return 2 * b
    def predict_batch(self, b, i):
        fault("latency"); time.sleep(0.005)

class Sleepy:
    name, variants, default_variant = "sleepy", ("a", "b"), "a"
    def setup(self, *, variant, threads, seed, device):
        fault("setup"); time.sleep(0.02)
        return {"variant": variant}
    def prepare(self, arrays):
        fault("data"); time.sleep(0.02)
        return arrays
    def build(self, native, settings):
        fault("build"); time.sleep(0.02)
        return Trainer(settings.seed)
"""

# The phases of a trial a signal is sent at (the worker's own order), each at the
# call that falls in the trial's second repeat where the phase repeats, so that
# the first repeat is committed and the interrupted attempt has values to keep
# (latency: 2 calls at batch 4 and 2 at batch 1 per repeat).
PHASES = {
    "import": 1,
    "setup": 1,
    "data": 1,
    "build": 2,
    "compile": 2,
    "train": 2,
    "evaluate": 2,
    "infer": 2,
    "latency": 5,
}

EXPERIMENT = """
[experiment]
name = "faults"
[matrix]
framework = ["sleepy:a", "sleepy:b"]
model = ["mlp"]
dataset = ["synthetic"]
batch_size = [4]
[protocol]
epochs = 1
repeats = 1
warmup = 1
trials = 1
timeout = 60
latency_batches = 2
infer_min_time = 0
samplers = "none"
[synthetic]
shape = [2, 2, 1]
train_size = 16
test_size = 8
"""
PLANNED_TRIALS = 2  # 2 cases x 1 trial
REPEATS_PER_TRIAL = 2  # 1 warm-up + 1 measured


@pytest.fixture(scope="session")
def sleepy_env(tmp_path_factory) -> dict[str, str]:
    """The environment under which `dlbench` sees the sleepy plugin (a real distribution with an entry point)."""
    from plugin_dist import write_plugin

    root = write_plugin(
        tmp_path_factory.mktemp("sleepy_plugin"),
        "dlbench_sleepy",
        PLUGIN_INFO,
        PLUGIN_ADAPTER,
        {"sleepy": "dlbench_sleepy:INFO"},
    )
    src = str(Path(__file__).resolve().parents[2] / "src")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DLBENCH_FAULT_")}
    env["PYTHONPATH"] = f"{root}:{src}"
    env["COLUMNS"] = "120"
    return env


@pytest.fixture
def driver(tmp_path, sleepy_env) -> Driver:
    experiment = tmp_path / "faults.toml"
    experiment.write_text(EXPERIMENT)
    return Driver(tmp_path, experiment, sleepy_env, PLANNED_TRIALS, REPEATS_PER_TRIAL)
