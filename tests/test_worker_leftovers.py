"""A model's processes do not outlive its trial (dlbench.trial.launch): a child that stays
in the worker's process group, one that leaves it (setsid), and a forked child that holds
the event pipe are all ended when the worker is done; the trial ends when the worker
does, not at its deadline; what was ended is named."""

from __future__ import annotations

import sys
import time

import psutil

from dlbench.plan import Case
from dlbench.trial.launch import run_worker
from dlbench.trial.spec import ProtocolSpec, TrialSpec

CASE = Case(framework="numpy", variant="reference", model="mlp", dataset="digits", batch_size=32,
            init="glorot-uniform", optimizer="sgd", lr=0.01, momentum=0.0, epochs=1, steps=None, device="cpu",
            threads=1)  # fmt: skip

# A stand-in worker: reads its spec, starts a child in its group and one in a session of its
# own, forks a child that keeps the event pipe (stdout) open, says "done" and exits.
FAKE_WORKER = r"""
import os, subprocess, sys, time
sys.stdin.readline()
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True)
if os.fork() == 0:
    time.sleep(300)  # holds fd 1, the event pipe, inherited
    os._exit(0)
time.sleep(1.5)  # the parent looks at its descendants while it runs
print('{"event": "done"}', flush=True)
"""


def test_processes_a_model_leaves_behind_are_ended_and_named():
    events = []
    spec = TrialSpec(CASE, ProtocolSpec(repeats=1, warmup=0, samplers="none"))
    started = time.monotonic()
    ended = run_worker(spec, timeout=120, on_event=events.append, command=[sys.executable, "-c", FAKE_WORKER])
    took = time.monotonic() - started
    assert not ended.timed_out and took < 30, (took, ended.stderr_tail)
    assert events == [{"event": "done"}]
    assert len(ended.leftovers) == 3, ended.leftovers  # two sleepers and the fork
    for entry in ended.leftovers:
        pid = int(entry.split()[0])
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
