"""Who executes a run now, and whether that process is still alive.

A run is executed by one dlbench process at a time: two `--resume` of one run
would otherwise both run every pending trial and store each twice. The owner is
written into the run's row (Store.claim_run, one IMMEDIATE transaction) as the
process id with its start time and the machine's boot id, so that a process that
died (kill -9, a power cut) does not hold the run forever: its pid is gone, or
now belongs to a process started at another time. An owner recorded on another
machine or before a reboot cannot be checked and counts as gone: SQLite's own
locking is not safe on network filesystems, so one database is not executed
from two machines at once anyway (docs/reliability.md).
"""

from __future__ import annotations

import os
import socket
from functools import cache
from typing import Any

# Process start times are read from /proc in clock ticks (10 ms); two readings of
# one process agree exactly, a recycled pid differs by far more.
START_TIME_TOLERANCE_S = 0.05


@cache
def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def _start_time(pid: int) -> float | None:
    import psutil

    try:
        return float(psutil.Process(pid).create_time())
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None


def me() -> dict[str, Any]:
    """This process as a run owner."""
    return {
        "pid": os.getpid(),
        "started": _start_time(os.getpid()),
        "host": socket.gethostname(),
        "boot_id": _boot_id(),
    }


def alive(owner: dict[str, Any]) -> bool:
    """Whether the recorded owner is a running process on this machine."""
    if owner.get("host") != socket.gethostname() or owner.get("boot_id") != _boot_id():
        return False
    pid, started = owner.get("pid"), owner.get("started")
    if not isinstance(pid, int) or not isinstance(started, int | float):
        return False
    now = _start_time(pid)
    return now is not None and abs(now - started) <= START_TIME_TOLERANCE_S


def describe(owner: dict[str, Any]) -> str:
    return f"pid {owner.get('pid')} on {owner.get('host')}"
