"""Machine and software fingerprint, stored with every run.

Everything here is read without importing a deep-learning framework (versions
come from installed distribution metadata), so it is safe in the parent.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from dlbench.version import __version__

PACKAGES = (
    "torch",
    "tensorflow-cpu",
    "tensorflow",
    "keras",
    "jax",
    "jaxlib",
    "flax",
    "optax",
    "scikit-learn",
    "numpy",
    "scipy",
    "psutil",
    "nvidia-ml-py",
)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _cpu_flags() -> list[str]:
    """The vector-extension flags that decide which kernels oneDNN/XLA pick."""
    wanted = (
        "avx",
        "avx2",
        "fma",
        "avx512f",
        "avx512_bf16",
        "avx512_vnni",
        "amx_bf16",
        "amx_tile",
        "neon",
        "asimd",
        "sve",
    )
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                have = set(line.split(":", 1)[1].split())
                return [f for f in wanted if f in have]
    except OSError:
        pass
    return []


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def package_versions() -> dict[str, str]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def git_revision() -> str | None:
    """The commit of the dlbench source tree, when it runs from a checkout."""
    src = Path(__file__).resolve().parent  # this module lives in the package directory
    if shutil.which("git") is None:
        return None
    try:
        rev = subprocess.run(["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
        if rev.returncode != 0:
            return None
        dirty = subprocess.run(
            ["git", "-C", str(src), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=5,
        )
        return rev.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


def gpus() -> list[str] | str:
    """GPU names from nvidia-smi, or the reason there are none."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return "none: nvidia-smi not found (no NVIDIA driver)"
    try:
        out = subprocess.run(
            [exe, "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"none: nvidia-smi failed: {exc}"
    if out.returncode != 0:
        return f"none: nvidia-smi exited {out.returncode}: {out.stderr.strip()[:200]}"
    return [line.strip() for line in out.stdout.splitlines() if line.strip()]


def _nvml_devices() -> list[dict] | str:
    from dlbench.samplers.nvml import describe_devices

    try:
        return describe_devices()
    except Exception as exc:  # noqa: BLE001 - the fingerprint must never fail on a GPU query
        return f"unavailable: {type(exc).__name__}: {exc}"


def fingerprint() -> dict[str, Any]:
    import psutil

    mem = psutil.virtual_memory()
    return {
        "hostname": platform.node(),
        "os": platform.platform(),
        "kernel": platform.release(),
        "python": sys.version.split()[0],
        "python_executable": sys.executable,
        "cpu_model": _cpu_model(),
        "cpu_flags": _cpu_flags(),
        "physical_cores": psutil.cpu_count(logical=False),
        "logical_cores": psutil.cpu_count(logical=True),
        "affinity": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "memory_total_bytes": mem.total,
        "cpu_governor": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        "gpus": gpus(),
        "nvml_devices": _nvml_devices(),
        "packages": package_versions(),
        "dlbench_version": __version__,
        "dlbench_git": git_revision(),
        "cwd": os.getcwd(),
    }


def machine_label(fingerprint: dict[str, Any]) -> str:
    """A machine in a few words, from a stored fingerprint: CPU model, cores, GPUs."""
    cpu = fingerprint.get("cpu_model") or "unknown CPU"
    cores = fingerprint.get("physical_cores")
    gpus = fingerprint.get("gpus")
    # The fingerprint holds a list of devices, or a sentence saying why there are none.
    names = [g.get("name", "GPU") if isinstance(g, dict) else str(g) for g in gpus] if isinstance(gpus, list) else []
    label = f"{cpu}, {cores} cores" if cores else str(cpu)
    return label + (", " + ", ".join(names) if names else "")
