"""GPU paths, run for real where an NVIDIA GPU and a CUDA build are present.

CI has no GPU: these tests are skipped there with the reason printed (pytest -ra).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from dlbench.store import Store

pytestmark = pytest.mark.gpu


def _gpu_reason() -> str | None:
    if shutil.which("nvidia-smi") is None:
        return "no NVIDIA GPU: nvidia-smi not found"
    probe = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    if probe.returncode != 0 or "GPU" not in probe.stdout:
        return f"no NVIDIA GPU: nvidia-smi -L said {probe.stdout.strip() or probe.stderr.strip()!r}"
    return None


@pytest.mark.parametrize("framework", ["torch", "tensorflow", "jax"])
def test_short_training_trial_on_cuda(tmp_path, framework):
    reason = _gpu_reason()
    if reason:
        pytest.skip(reason)
    db = tmp_path / "gpu.db"
    cmd = [
        sys.executable,
        "-m",
        "dlbench",
        "run",
        "--trials",
        "1",
        "--framework",
        framework,
        "--model",
        "lenet5",
        "--dataset",
        "synthetic",
        "--device",
        "cuda",
        "--epochs",
        "1",
        "--repeats",
        "2",
        "--warmup",
        "1",
        "--latency-batches",
        "5",
        "--db",
        str(db),
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    with Store(db) as store:
        trial = store.trials(1)[0]
        assert trial["status"] == "ok", trial["error"]
        manifest = json.loads(trial["manifest_json"])
        assert "cuda" in json.dumps(manifest).lower() or "gpu" in json.dumps(manifest).lower(), out.stdout
