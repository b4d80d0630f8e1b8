"""Shared by tests/test_dist_{torch,tensorflow,jax}.py: the settings of their
equivalence runs, and starting and collecting the processes of one data-parallel
job (each with the environment dlbench.distributed.environ gives a rank).

A program started here prints its result as one JSON line and ends with os._exit(0),
as a worker's rank does after "done" (dlbench.trial.worker.main): what is checked is the
work, not the framework's interpreter teardown."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from typing import Any

from dlbench.distributed import DistContext
from dlbench.launchers.ranks import rank_environment

GLOBAL_BATCH = 32
STEPS = 8
# 200 samples at global batch 32: 6 steps per epoch, so the 8 steps cross an epoch
# boundary (the second epoch's reshuffle must match the single run's too).
DATA = {"train_size": 200, "test_size": 40}
RESULT_END = "\nsys.stdout.write(json.dumps(out) + '\\n')\nsys.stdout.flush()\nimport os\nos._exit(0)\n"


def settings(model: str, **kw: Any) -> dict[str, Any]:
    """TrainSettings' fields for an equivalence run: 8 SGD steps at global batch 32."""
    base: dict[str, Any] = dict(
        model=model,
        batch_size=GLOBAL_BATCH,
        epochs=None,
        steps=STEPS,
        optimizer="sgd",
        lr=0.05,
        init="glorot-uniform",
        seed=0,
        loss_curve=STEPS,
    )
    base.update(kw)
    return base


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(program: str, framework: str, ctx: DistContext, args: dict[str, Any]) -> subprocess.Popen[str]:
    """`program` (which must end by writing `out` with RESULT_END) in a fresh
    interpreter with rank `ctx`'s environment; args as JSON in sys.argv[1].
    faulthandler: a rank killed by a fatal signal shows its Python stacks."""
    env = {**os.environ, **rank_environment(framework, ctx, dict(os.environ))}
    return subprocess.Popen(
        [sys.executable, "-X", "faulthandler", "-c", program + RESULT_END, json.dumps({"ctx": ctx.as_dict(), **args})],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def collect(procs: list[subprocess.Popen[str]], timeout_s: float) -> list[dict[str, Any]]:
    """Each process's JSON result, in order; an assertion naming the process, its
    exit and its stderr's tail when one failed. None is left running."""
    results = []
    try:
        for i, proc in enumerate(procs):
            out, err = proc.communicate(timeout=timeout_s)
            lines = out.strip().splitlines()
            assert proc.returncode == 0, (
                f"process {i} exited with {proc.returncode} "
                f"({'after' if lines else 'before'} printing its result):\n{err[-3000:]}"
            )
            results.append(json.loads(lines[-1]))
    finally:
        # A process that hangs (a peer that never came) must not outlive the test.
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return results
