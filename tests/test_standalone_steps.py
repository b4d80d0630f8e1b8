"""The hand-written standalone step scripts (benchmarks/standalone/steps_*.py) at tiny sizes on the CPU.

Each script is run as a subprocess, as it is run on a GPU box, and its one JSON line
checked: fields, positive times, finite losses, and a parameter count equal to
dlbench's own count for the model (its spec's formula, which the zoo tests hold
every framework's built model to). A framework that is not installed is skipped
(found with importlib.util.find_spec, not imported: importing TensorFlow in this
process alone would cost seconds).
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dlbench import registry

STANDALONE = Path(__file__).resolve().parents[1] / "benchmarks" / "standalone"
MODULES = {"torch": "torch", "jax": "jax", "tensorflow": "tensorflow"}
TINY = {
    "lenet5": ["--steps", "3", "--train-size", "64", "--batch-size", "16", "--repeats", "1", "--warmup", "0"],
    "resnet50": [
        *("--input-size", "32", "--steps", "1", "--train-size", "8", "--batch-size", "4"),
        *("--repeats", "1", "--warmup", "0"),
    ],
}
INPUT = {"lenet5": (28, 28, 1), "resnet50": (32, 32, 3)}
# One variant per run; TensorFlow's two variants split over the two models so both are covered.
VARIANT = {
    ("torch", "lenet5"): "eager",
    ("torch", "resnet50"): "eager",
    ("jax", "lenet5"): "jit",
    ("jax", "resnet50"): "jit",
    ("tensorflow", "lenet5"): "xla",
    ("tensorflow", "resnet50"): "graph",
}


def run_script(framework: str, *args: str) -> dict:
    if importlib.util.find_spec(MODULES[framework]) is None:
        pytest.skip(f"{framework} is not installed")
    env = dict(os.environ)
    # Test speed only, on a small shared CPU: one OpenMP thread for torch (no spin-wait
    # contention), and XLA:CPU's fast compile (the JAX ResNet-50 step compiles in half the time).
    env["OMP_NUM_THREADS"] = "1"
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_backend_optimization_level=0").strip()
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env.pop("JAX_PLATFORMS", None)  # the script picks the platform from --device
    proc = subprocess.run(
        [sys.executable, str(STANDALONE / f"steps_{framework}.py"), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


# JAX's ResNet-50 step takes ~15 s to compile on 2 CPU cores: the one run marked slow.
CASES = [
    pytest.param(fw, model, marks=pytest.mark.slow) if (fw, model) == ("jax", "resnet50") else (fw, model)
    for fw in ("torch", "jax", "tensorflow")
    for model in ("lenet5", "resnet50")
]


@pytest.mark.parametrize(("framework", "model"), CASES)
def test_standalone_steps(framework: str, model: str) -> None:
    variant = VARIANT[(framework, model)]
    out = run_script(framework, "--model", model, "--variant", variant, "--device", "cpu", *TINY[model])
    steps = int(TINY[model][TINY[model].index("--steps") + 1])
    batch = int(TINY[model][TINY[model].index("--batch-size") + 1])
    assert out["framework"] == framework
    assert (out["variant"], out["model"], out["device"], out["device_name"]) == (variant, model, "cpu", "cpu")
    assert (out["steps"], out["batch_size"]) == (steps, batch)
    assert len(out["train_times"]) == len(out["step_times"]) == len(out["train_losses"]) == 1
    assert all(t > 0 for t in out["train_times"])
    assert out["step_times"] == pytest.approx([t / steps for t in out["train_times"]])
    assert all(math.isfinite(v) and v > 0 for v in out["train_losses"])
    assert out["param_count"] == registry.model(model).count(INPUT[model], 10)
    assert isinstance(out["version"], str) and out["version"]
    assert "unsynced_times" not in out


def test_torch_unsynced_times() -> None:
    tiny = TINY["lenet5"][:-4]  # without --repeats / --warmup
    out = run_script("torch", "--model", "lenet5", "--unsynced", *tiny, "--repeats", "2", "--warmup", "0")
    assert len(out["unsynced_times"]) == len(out["train_times"]) == 2
    # Read before the loss and the sync, within the same repeat: never later than the synced time.
    assert all(0 < u <= t for u, t in zip(out["unsynced_times"], out["train_times"]))


def test_param_counts_are_dlbench_reference_counts() -> None:
    """The counts the tests compare with are the ones dlbench publishes for its zoo."""
    lenet5 = registry.model("lenet5")
    assert lenet5.count((28, 28, 1), 10) == lenet5.reference_counts[((28, 28, 1), 10)] == 61_706
    resnet = registry.model("resnet50")
    assert resnet.count((224, 224, 3), 1000) == resnet.reference_counts[((224, 224, 3), 1000)] == 25_557_032
    assert resnet.count((32, 32, 3), 10) == resnet.count((224, 224, 3), 10)  # the count has no spatial term
