"""Machine and software fingerprint, stored with every run.

Everything here is read without importing a deep-learning framework (versions
come from installed distribution metadata), so it is safe in the parent.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import re
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


# Each framework's import name, and the distributions known to install it. One module
# comes in several distributions (tensorflow from tensorflow-cpu, tensorflow-gpu or
# tf-nightly): a version means something only beside the distribution's name.
FRAMEWORK_MODULES: dict[str, tuple[str, ...]] = {
    "torch": ("torch",),
    "tensorflow": (
        "tensorflow",
        "tensorflow-cpu",
        "tensorflow-gpu",
        "tf-nightly",
        "tf-nightly-cpu",
        "tensorflow-macos",
        "tensorflow-intel",
    ),
    "keras": ("keras",),
    "jax": ("jax",),
    "jaxlib": ("jaxlib",),
    "flax": ("flax",),
    "optax": ("optax",),
    "sklearn": ("scikit-learn",),
}


def _canonical(distribution: str) -> str:
    """PEP 503's form of a distribution's name (metadata may say tensorflow_cpu)."""
    return re.sub(r"[-_.]+", "-", distribution).lower()


def framework_distributions() -> dict[str, str]:
    """Import name -> "distribution version" for each framework module installed, e.g.
    {"tensorflow": "tensorflow-cpu 2.21.0"}. The distributions that ship the module, as
    the installed metadata says (packages_distributions), else the known names above."""
    shipped = importlib.metadata.packages_distributions()
    out = {}
    for module, known in FRAMEWORK_MODULES.items():
        names = sorted({_canonical(d) for d in shipped.get(module, ())}) or list(known)
        found = []
        for name in names:
            try:
                found.append(f"{name} {importlib.metadata.version(name)}")
            except importlib.metadata.PackageNotFoundError:
                continue
        if found:
            out[module] = " + ".join(found)  # two distributions of one module: both, never a guess
    return out


def framework_software(fingerprint: dict[str, Any], modules: tuple[str, ...] = tuple(FRAMEWORK_MODULES)) -> str:
    """ "torch 2.13.0, tensorflow-cpu 2.21.0, jax 0.10.2": each of `modules` named by its
    installed distribution, from a stored fingerprint. One stored before the fingerprint
    named them ("frameworks") is read from its package versions, by the known names."""
    named = fingerprint.get("frameworks")
    if not isinstance(named, dict):
        packages = fingerprint.get("packages") or {}
        named = {
            module: " + ".join(f"{d} {packages[d]}" for d in known if d in packages)
            for module, known in FRAMEWORK_MODULES.items()
        }
    return ", ".join(str(named[m]) for m in modules if named.get(m))


def package_versions(frameworks: dict[str, str] | None = None) -> dict[str, str]:
    """Distribution -> version: the packages above, and every framework distribution found."""
    out = {}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    for text in (frameworks or {}).values():
        for found in text.split(" + "):
            name, _, version = found.partition(" ")
            out.setdefault(name, version)
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
    frameworks = framework_distributions()
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
        "packages": package_versions(frameworks),
        "frameworks": frameworks,
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
