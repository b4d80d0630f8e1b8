"""GPU paths, run for real where an NVIDIA GPU and a CUDA build are present.

CI has no GPU: these tests are skipped there with the reason printed (pytest -ra).
On a GPU machine (benchmarks/gpu_campaign.sh runs them first) they check values:
the trial ran on the named GPU, TF32 and bf16 were in force where asked, NVML's
energy counter gave a positive energy for training, the FLOP count on the GPU is
the count on the CPU, and the GPU's memory peak was read.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

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


def _framework_reason(framework: str) -> str | None:
    if importlib.util.find_spec(framework) is None:
        return f"{framework} is not installed in {sys.executable}"
    return None


def _run(db: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "dlbench", "run", "--trials", "1", "--dataset", "synthetic", "--device", "cuda"]
    cmd += ["--epochs", "1", "--repeats", "2", "--warmup", "1", "--latency-batches", "5", "--db", str(db), *flags]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def torch_precisions(tmp_path_factory):
    """One torch run on the GPU: lenet5 in float32, tf32 and bf16-mixed, with NVML."""
    reason = _gpu_reason() or _framework_reason("torch")
    if reason:
        pytest.skip(reason)
    db = tmp_path_factory.mktemp("gpu") / "precisions.db"
    out = _run(
        db,
        "--framework",
        "torch",
        "--model",
        "lenet5",
        "--precision",
        "float32,tf32,bf16-mixed",
        "--samplers",
        "nvml,cpu,memory",
    )
    with Store(db) as store:
        trials = store.trials(1)
        rows = store.measurements(1)
        series = {t["id"]: [s["name"] for s in store.series(t["id"])] for t in trials}
    assert trials, out.stdout + out.stderr
    return trials, rows, series


@pytest.mark.parametrize("framework", ["torch", "tensorflow", "jax"])
def test_short_training_trial_on_cuda(tmp_path, framework):
    reason = _gpu_reason() or _framework_reason(framework)
    if reason:
        pytest.skip(reason)
    db = tmp_path / "gpu.db"
    out = _run(db, "--framework", framework, "--model", "lenet5")
    with Store(db) as store:
        trial = store.trials(1)[0]
        rows = store.measurements(1)
    assert trial["status"] == "ok", (trial["error"] or "") + out.stderr[-2000:]
    manifest = json.loads(trial["manifest_json"])
    text = json.dumps(manifest).lower()
    assert "nvidia" in text or "gpu" in text or "cuda" in text, manifest
    times = [r["value"] for r in rows if r["phase"] == "train" and r["metric"] == "time" and not r["warmup"]]
    assert len(times) == 2 and all(t > 0 for t in times)


def test_precisions_in_force_on_cuda(torch_precisions):
    trials, _, _ = torch_precisions
    by_precision = {json.loads(t["case_json"])["precision"]: t for t in trials}
    assert set(by_precision) == {"float32", "tf32", "bf16-mixed"}
    for precision, trial in by_precision.items():
        assert trial["status"] == "ok", trial["error"]
        manifest = json.loads(trial["manifest_json"])
        assert manifest["device_name"].startswith("NVIDIA"), manifest["device_name"]
        assert manifest["cuda_matmul_allow_tf32"] is (precision == "tf32"), (precision, manifest)


def test_nvml_energy_and_gpu_memory_on_cuda(torch_precisions):
    _, rows, series = torch_precisions
    energy = [r["value"] for r in rows if r["phase"] == "train" and r["metric"].startswith("energy:gpu")]
    assert energy and all(e > 0 for e in energy), sorted({r["metric"] for r in rows})
    assert all(any(name.endswith(".energy") for name in names) for names in series.values())
    # torch.cuda.max_memory_allocated per training phase (the memory sampler), as the H200 sweep recorded it.
    peaks = [r["value"] for r in rows if r["phase"] == "train" and r["metric"] == "memory.device_peak"]
    assert peaks and all(p > 0 for p in peaks), sorted({r["metric"] for r in rows})


def test_flop_count_on_cuda_is_the_cpu_count(torch_precisions, tmp_path):
    trials, _, _ = torch_precisions
    on_gpu = {json.loads(t["manifest_json"])["train_flops_per_step"] for t in trials}
    assert len(on_gpu) == 1 and None not in on_gpu  # precision changes the peak, never the count
    db = tmp_path / "cpu.db"
    cmd = [
        sys.executable,
        "-m",
        "dlbench",
        "run",
        "--trials",
        "1",
        "--dataset",
        "synthetic",
        "--framework",
        "torch",
        "--model",
        "lenet5",
        "--steps",
        "1",
        "--repeats",
        "1",
        "--warmup",
        "0",
        "--latency-batches",
        "0",
        "--infer-min-time",
        "0",
        "--db",
        str(db),
    ]
    subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    with Store(db) as store:
        on_cpu = json.loads(store.trials(1)[0]["manifest_json"])["train_flops_per_step"]
    assert on_gpu == {on_cpu}
