"""Start one rank process per replica, relay their events, combine their results.

The trial's worker becomes the launcher: it imports no framework, picks free
ports on 127.0.0.1 (never a fixed one such as torch's 29500), starts
`python -m dlbench.trial.worker --rank R` once per replica with the trial spec and that
rank's DistContext on stdin, and reads every rank's event stream (one pipe each,
waited on with selectors: no polling). It stays the only writer of the stream the
runner reads, so events from several ranks can never interleave mid-line.

What reaches the runner: one manifest (rank 0's, with each rank's threads and
cores), rank 0's phase markers (telemetry windows), one measurements event per
repeat once every rank has sent it (see dlbench.launchers.merge), and one error
naming the rank when any rank fails. Ranks are the launcher's children in the
trial's process group, so the runner's timeout kills them all with it; each rank
also dies with the launcher (PR_SET_PDEATHSIG and the stdin lifeline of
dlbench.trial.worker). When a rank fails, the others, which would wait forever in a
collective, are killed at once.

A port taken between the choice and the rendezvous is not a failure: the launch
is retried with new ports (`ATTEMPTS` in all).
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from dlbench.distributed import DistContext
from dlbench.launchers.merge import merge_manifest, merge_process, merge_repeat
from dlbench.launchers.ranks import context_for
from dlbench.trial.spec import TrialSpec, worker_command

ATTEMPTS = 3
HOST = "127.0.0.1"
# What a rendezvous that could not bind its port says, in torch (TCPStore), gRPC
# (TensorFlow) and JAX's coordinator.
PORT_IN_USE = ("EADDRINUSE", "Address already in use", "address already in use", "Failed to add port")

# What a rank says when another one is gone (gloo, gRPC, JAX's coordinator).
PEER_LOST = (
    "Connection closed by peer",
    "Connection reset by peer",
    "Broken pipe",
    "Connection refused",
    "UNAVAILABLE",
    "heartbeat",
    "Socket Timeout",
)
SETTLE_S = 2.0  # after a first failure, how long the others may take to report theirs

Emit = Callable[..., None]


class PortInUse(Exception):
    """A rank could not bind its rendezvous port: retry the launch with new ports."""


def free_ports(count: int) -> list[int]:
    """`count` distinct ports the kernel reports free on 127.0.0.1 now (bound
    together, then released, so they differ from each other)."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((HOST, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _port_per_rank(framework: str, strategy: str) -> bool:
    """Whether every rank listens on a port of its own (the strategy's declaration,
    Strategy.port_per_rank: TensorFlow's workers) rather than all meeting at rank 0's."""
    from dlbench import registry

    declared = registry.framework(framework).strategy(strategy)
    return declared is not None and declared.port_per_rank


def contexts(spec: TrialSpec, ports: list[int]) -> list[DistContext]:
    """One context per rank: torch and JAX rendezvous at rank 0's port; TensorFlow's
    workers each listen on their own."""
    case = spec.case
    base = context_for(
        case.strategy, case.world_size, threads=case.threads, device=case.device, batch_scope=case.batch_scope
    )
    workers = tuple(f"{HOST}:{p}" for p in ports) if _port_per_rank(case.framework, case.strategy) else ()
    return [replace(base, rank=r, coordinator=f"{HOST}:{ports[0]}", workers=workers) for r in range(base.processes)]


class _Rank:
    def __init__(self, rank: int, proc: subprocess.Popen[bytes]) -> None:
        self.rank, self.proc = rank, proc
        self.buffer = b""
        self.ready = self.done = self.closed = False
        self.error: dict[str, Any] | None = None


def _start(spec: TrialSpec, ctx: DistContext) -> subprocess.Popen[bytes]:
    cmd = [*worker_command(), "--rank", str(ctx.rank)]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None)
    assert proc.stdin is not None
    # The stdin pipe stays open: it is the rank's lifeline (dlbench.trial.worker.die_with_parent).
    proc.stdin.write((replace(spec, dist=ctx).to_json() + "\n").encode())
    proc.stdin.flush()
    return proc


def _release(ranks: list[_Rank]) -> None:
    """Let ranks that are all done end: each waits after its "done" for its stdin to close
    (dlbench.trial.worker.main), so that none ends while a peer still needs it. One that does not
    end within SETTLE_S is killed by _kill; its results are in already."""
    for r in ranks:
        if r.proc.stdin is not None:
            try:
                r.proc.stdin.close()
            except OSError:  # a rank that ended already: its pipe is broken, nothing to release
                pass
    deadline = time.monotonic() + SETTLE_S
    for r in ranks:
        try:
            r.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass


def _kill(ranks: list[_Rank]) -> None:
    for r in ranks:
        if r.proc.poll() is None:
            r.proc.send_signal(signal.SIGKILL)
    for r in ranks:
        r.proc.wait()
        for stream in (r.proc.stdin, r.proc.stdout):
            if stream is not None:
                stream.close()


def _exit_text(code: int | None) -> str:
    if code is None:
        return "is still running"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by {name}"
    return f"exited with code {code}"


def launch(spec: TrialSpec, emit: Emit, ports: Iterator[list[int]] | None = None) -> bool:
    """Run the trial's ranks; True when every rank finished. A failure is emitted
    as one error event naming the rank (False). `ports` (tests): where port
    lists come from, instead of asking the kernel for free ones."""
    case = spec.case
    need = case.world_size if _port_per_rank(case.framework, case.strategy) else 1
    for attempt in range(1, ATTEMPTS + 1):
        chosen = next(ports) if ports is not None else free_ports(need)
        try:
            return _attempt(spec, emit, chosen, attempt)
        except PortInUse as exc:
            last = str(exc)
    emit(
        "error",
        type="PortInUse",
        message=f"no free rendezvous port on {HOST} after {ATTEMPTS} attempts: {last}",
        traceback="",
        oom=False,
    )
    return False


def _attempt(spec: TrialSpec, emit: Emit, ports: list[int], attempt: int) -> bool:
    ctxs = contexts(spec, ports)
    t_start = time.perf_counter_ns()
    ranks = [_Rank(c.rank, _start(spec, c)) for c in ctxs]
    selector = selectors.DefaultSelector()
    for r in ranks:
        assert r.proc.stdout is not None
        os.set_blocking(r.proc.stdout.fileno(), False)
        selector.register(r.proc.stdout, selectors.EVENT_READ, r)
    manifests: dict[int, dict[str, Any]] = {}
    pending: dict[Any, dict[int, list[dict[str, Any]]]] = {}
    launch_time: float | None = None
    launcher = {
        "launcher": "dlbench.launchers.multiprocess (one process per rank, torchrun's env:// variables for torch)",
        "ports": ports,
        "attempt": attempt,
        "host": HOST,
    }

    def on_event(r: _Rank, event: dict[str, Any]) -> None:
        nonlocal launch_time
        kind = event.get("event")
        if kind == "ready":
            r.ready = True
            if launch_time is None and all(x.ready for x in ranks):
                launch_time = (time.perf_counter_ns() - t_start) / 1e9
        elif kind == "manifest":
            manifests[r.rank] = {**event["manifest"], "pid": r.proc.pid}
            if 0 in manifests:
                emit("manifest", manifest=merge_manifest(manifests, launcher))
        elif kind == "marker":
            if r.rank == 0:
                emit("marker", **{k: v for k, v in event.items() if k != "event"})
        elif kind == "measurements":
            repeat = event.get("repeat")
            got = pending.setdefault(repeat, {})
            got[r.rank] = event["rows"]
            if len(got) == len(ranks):
                del pending[repeat]
                rows = merge_process(got, launch_time) if repeat is None else merge_repeat(got)
                emit("measurements", repeat=repeat, rows=rows)
        elif kind == "error":
            r.error = event
        elif kind == "done":
            r.done = True

    failing_since: float | None = None
    try:
        while True:
            for x in ranks:
                if x.closed and not x.done and x.error is None:
                    x.error = {
                        "type": "RankExited",
                        "message": f"{_exit_text(x.proc.wait())} before it finished",
                        "traceback": "",
                        "oom": False,
                    }
            if any(x.error is not None for x in ranks):
                # The first error to arrive is often a survivor's "peer closed the
                # connection"; give the others a moment to report the cause.
                failing_since = failing_since or time.monotonic()
                if all(x.closed for x in ranks) or time.monotonic() - failing_since > SETTLE_S:
                    return _fail(ranks, emit)
            elif all(x.done for x in ranks):
                _release(ranks)
                return True
            timeout = SETTLE_S / 4 if failing_since else None
            for key, _ in selector.select(timeout):
                r = key.data
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    selector.unregister(key.fileobj)
                    r.closed = True
                    continue
                r.buffer += chunk
                *lines, r.buffer = r.buffer.split(b"\n")
                for line in lines:
                    if line.strip():
                        on_event(r, json.loads(line))
    finally:
        selector.close()
        _kill(ranks)


def _cause(ranks: list[_Rank]) -> _Rank:
    """The rank whose failure caused the others': one that died without a word
    (killed), else one whose error is not about a lost peer, else the first."""
    failed = [x for x in ranks if x.error is not None]
    for x in failed:
        if x.error is not None and x.error.get("type") == "RankExited":
            return x
    for x in failed:
        if x.error is not None and not any(m in str(x.error.get("message", "")) for m in PEER_LOST):
            return x
    return failed[0]


def _fail(ranks: list[_Rank], emit: Emit) -> bool:
    failed = _cause(ranks)
    error = failed.error or {}
    message = str(error.get("message", ""))
    _kill(ranks)  # the others would wait in a collective for the failed one forever
    if not all(x.ready for x in ranks) and any(m in message for m in PORT_IN_USE):
        raise PortInUse(f"rank {failed.rank}: {message[:300]}")
    emit(
        "error",
        type=str(error.get("type", "RankFailed")),
        message=f"rank {failed.rank} of {len(ranks)}: {message}"[:4000],
        traceback=str(error.get("traceback", ""))[-8000:],
        oom=bool(error.get("oom", False)),
    )
    return False
