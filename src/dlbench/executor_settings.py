"""Where a trial's worker runs, as settings: `--executor` and its options, or the
experiment file's [executor] table, validated (local, the default; ray; slurm).

This module imports nothing of dlbench but dlbench.extras: the experiment file (config) reads these
settings, and the executors themselves (dlbench.executors) sit above the planner.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# The executors by name -> "module:Class" (dlbench.executors), imported only when a run
# asks for one.
IMPLEMENTATIONS = {
    "local": "dlbench.executors.local:LocalExecutor",
    "ray": "dlbench.executors.ray_tasks:RayExecutor",
    "slurm": "dlbench.executors.slurm_jobs:SlurmExecutor",
}
EXECUTORS = tuple(IMPLEMENTATIONS)
# The package each executor needs beyond dlbench's own (the module, its name in words), and
# the extra that installs it: dlbench[ray], dlbench[slurm].
ENGINES = {"ray": ("ray", "Ray"), "slurm": ("submitit", "submitit")}


def missing_engine(name: str) -> str | None:
    """One line when executor `name` needs a package that is not installed, else None:
    said before a run is stored, so that a missing extra leaves no run behind."""
    import importlib.util

    from dlbench.extras import install_hint

    if name not in ENGINES:
        return None
    module, words = ENGINES[name]
    try:
        if importlib.util.find_spec(module) is not None:
            return None
    except (ImportError, ValueError):  # a broken install: not importable either
        pass
    return f"--executor {name}: {words} is not installed; install it with {install_hint(name)}"


class ExecutorError(RuntimeError):
    """An executor that cannot start (engine not installed, cluster unreachable): one line."""


@dataclass(frozen=True)
class ExecutorSettings:
    """`--executor` and its options, or the experiment file's [executor] table."""

    name: str = "local"
    ray_address: str | None = None  # None: start a local Ray cluster for the run
    slurm_partition: str | None = None
    slurm_gpus: int = 0  # GPUs per job (a cuda case asks for its world size at least)
    slurm_time: float = 0.0  # minutes per job; 0: the trial's timeout plus a margin
    slurm_options: tuple[str, ...] = ()  # free-form extra sbatch options, "key=value"
    slurm_folder: str | None = None  # job folder every node sees; None: ./dlbench-slurm


# The [executor] table's keys, and the command-line flag each one is.
FLAGS = {
    "name": "--executor",
    "ray_address": "--ray-address",
    "slurm_partition": "--slurm-partition",
    "slurm_gpus": "--slurm-gpus",
    "slurm_time": "--slurm-time",
    "slurm_options": "--slurm-option",
    "slurm_folder": "--slurm-folder",
}
MAX_SLURM_GPUS = 64
MAX_SLURM_MINUTES = 7 * 24 * 60  # a week, the longest trial timeout dlbench accepts
_PARTITION = re.compile(r"[A-Za-z0-9_.,-]{1,200}")
_SBATCH_OPTION = re.compile(r"(--)?[a-z][a-z0-9-]{0,63}(=[^\n\r\0]{0,1000})?")


def parse_settings(where: str, table: Mapping[str, Any], flags: bool = False) -> ExecutorSettings:
    """ExecutorSettings from the [executor] table (flags: from the command line, errors
    name the flag). An unknown key or a bad value is one ExecutorError naming it."""

    def name(key: str) -> str:
        return FLAGS[key] if flags else f"{where} [executor] {key}"

    unknown = sorted(set(table) - set(FLAGS))
    if unknown:
        raise ExecutorError(f"{where} [executor]: unknown key {unknown[0]!r}; allowed: {', '.join(FLAGS)}")
    values: dict[str, Any] = {}
    for key, value in table.items():
        if value is None:
            continue
        if key == "name":
            if value not in EXECUTORS:
                raise ExecutorError(f"{name(key)} {value!r}: allowed: {', '.join(EXECUTORS)}")
        elif key in ("ray_address", "slurm_folder"):
            if not isinstance(value, str) or not value.strip() or len(value) > 4096 or "\0" in value:
                raise ExecutorError(f"{name(key)} {value!r}: expected a non-empty address or path")
        elif key == "slurm_partition":
            if not isinstance(value, str) or not _PARTITION.fullmatch(value):
                raise ExecutorError(f"{name(key)} {value!r}: expected a Slurm partition name (letters, digits, _.-)")
        elif key == "slurm_gpus":
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SLURM_GPUS:
                raise ExecutorError(f"{name(key)} {value!r}: expected an integer from 0 to {MAX_SLURM_GPUS}")
        elif key == "slurm_time":
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= MAX_SLURM_MINUTES:
                raise ExecutorError(f"{name(key)} {value!r}: expected minutes from 0 to {MAX_SLURM_MINUTES}")
            value = float(value)
        elif key == "slurm_options":
            if isinstance(value, str) or not isinstance(value, list | tuple):
                raise ExecutorError(f"{name(key)} {value!r}: expected a list of sbatch options like 'mem=4G'")
            for option in value:
                if not isinstance(option, str) or not _SBATCH_OPTION.fullmatch(option):
                    raise ExecutorError(
                        f"{name(key)} {option!r}: expected an sbatch option as key=value (e.g. mem=4G, "
                        "constraint=a100, or exclusive)"
                    )
            value = tuple(value)
        values[key] = value
    settings = ExecutorSettings(**values)
    if settings.name != "ray" and settings.ray_address:
        raise ExecutorError(f"{name('ray_address')}: only with {name('name')} ray")
    return settings


def local_placement() -> dict[str, Any]:
    import socket

    return {"executor": "local", "host": socket.gethostname()}
