"""A multi-process trial that goes wrong: a rank that raises, one that dies, one that
hangs, and a rendezvous port someone else holds. Each becomes a trial status naming
the rank (or no failure at all, for the port), and no rank process outlives its trial.
Real torch DDP ranks over gloo on 127.0.0.1."""

from __future__ import annotations

import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from dlbench.launchers.multiprocess import launch
from dlbench.plan import Case
from dlbench.trial.spec import ProtocolSpec, TrialSpec

pytest.importorskip("torch")

DLBENCH = [sys.executable, "-m", "dlbench"]
QUICK = ["--steps", "4", "--repeats", "1", "--warmup", "0", "--samplers", "none", "--threads", "1"]

FAULTY = """
import os, signal, time
import dlbench


def build(shape, classes):
    from torch import nn

    if os.environ.get("RANK") == "1":
        {fault}
    return nn.Sequential(nn.Flatten(), nn.Linear(shape[0] * shape[1] * shape[2], classes))


MODEL = dlbench.Model("faulty", {{"torch": build}})
"""
FAULTS = {
    "raises": "raise RuntimeError('rank one refuses to build')",
    "dies": "os.kill(os.getpid(), signal.SIGKILL)",
    "hangs": "time.sleep(3600)",
}


def _rank_processes() -> set[int]:
    out = set()
    for p in psutil.process_iter(["cmdline"]):
        cmd = p.info["cmdline"] or []
        if "dlbench.trial.worker" in cmd and "--rank" in cmd:
            out.add(p.pid)
    return out


def _run(tmp_path: Path, fault: str, *extra: str) -> tuple[subprocess.CompletedProcess[str], tuple]:
    (tmp_path / "faulty.py").write_text(FAULTY.format(fault=FAULTS[fault]))
    db = tmp_path / "f.db"
    args = ["run", "--trials", "1", "--model", "faulty.py:MODEL", "--framework", "torch", "--dataset", "digits"]
    args += ["--strategy", "ddp", "--world-size", "2", *QUICK, *extra, "--db", str(db)]
    result = subprocess.run([*DLBENCH, *args], capture_output=True, text=True, cwd=tmp_path, timeout=600)
    with sqlite3.connect(db) as con:
        row = con.execute("SELECT status, error FROM trials").fetchone()
    return result, row


@pytest.mark.parametrize(
    ("fault", "status", "words"),
    [
        ("raises", "failed", "rank 1 of 2: "),
        ("dies", "failed", "RankExited: rank 1 of 2: was killed by SIGKILL before it finished"),
        ("hangs", "timeout", ""),
    ],
)
def test_a_failing_rank_fails_the_trial_by_name_and_leaves_no_rank_behind(tmp_path: Path, fault, status, words):
    before = _rank_processes()
    result, (got, error) = _run(tmp_path, fault, "--timeout", "15")
    assert result.returncode == 1, result.stdout + result.stderr
    assert got == status, error
    assert words in (error or "")
    if fault == "raises":
        assert "RuntimeError: rank one refuses to build" in error
    # The other rank, which waited in a collective, was killed with its trial.
    assert _rank_processes() - before == set()


def test_a_port_in_use_is_retried_not_failed(tmp_path: Path):
    case = Case(
        framework="torch",
        variant="eager",
        model="mlp",
        dataset="digits",
        batch_size=32,
        init="glorot-uniform",
        optimizer="sgd",
        lr=0.01,
        momentum=0.0,
        epochs=None,
        steps=4,
        device="cpu",
        threads=1,
        strategy="ddp",
        world_size=2,
    )
    spec = TrialSpec(case, ProtocolSpec(repeats=1, warmup=0, latency_batches=0))
    events: list[tuple[str, dict]] = []
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        with socket.socket() as free_sock:
            free_sock.bind(("127.0.0.1", 0))
            free = free_sock.getsockname()[1]
        ok = launch(spec, lambda kind, **f: events.append((kind, f)), ports=iter([[busy], [free]]))
    kinds = [k for k, _ in events]
    assert ok and "error" not in kinds, events
    manifest = [f["manifest"] for k, f in events if k == "manifest"][-1]
    assert manifest["launcher"]["attempt"] == 2 and manifest["launcher"]["ports"] == [free]
    assert [r["rank"] for r in manifest["ranks"]] == [0, 1]
    rows = [r for k, f in events if k == "measurements" and f["repeat"] == 0 for r in f["rows"]]
    assert {r["seq"] for r in rows if r["metric"] == "rank_step_time"} == {0, 1}
