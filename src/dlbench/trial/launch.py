"""One worker process, wherever it runs: start it, hand it the trial, read its events.

This is the part of a trial that must run on the machine that runs the worker: the
local runner calls it in the parent; a cluster executor calls it inside a Ray task or
a Slurm job on the node (dlbench.executors). It starts `python -m dlbench.trial.worker` in
its own session (process group), writes the trial spec to its stdin, reads JSON-lines
events from its stdout on a reader thread (so that a worker that hangs is noticed at
its deadline without busy-waiting), polls the telemetry samplers beside it (they read
this machine's counters: they must run where the worker runs), and kills the whole
process group at the deadline or on an exception. It never touches the store: each
event goes to `on_event` as it arrives, and what the process did comes back as a
WorkerExit, which the parent turns into a trial status (runner.finish_trial).
"""

from __future__ import annotations

import json
import os
import queue
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dlbench import runtime_settings
from dlbench.allocator import worker_environment
from dlbench.trial.spec import TrialSpec, worker_command

STDERR_KEEP = 20_000  # characters of a worker's stderr kept in the store
KILL_GRACE_S = 5.0
POLL_S = 1.0  # how often a silent worker's liveness and descendants are looked at


@dataclass
class WorkerExit:
    """What one worker process did, apart from its events: picklable, so that it can
    come back from a Ray task or a Slurm job."""

    returncode: int | None
    timed_out: bool
    wall_s: float
    stderr_tail: str
    oom_kills_before: int | None
    oom_kills_after: int | None
    series: list[Any] = field(default_factory=list)  # samplers.base.Series
    sampler_notes: dict[str, list[str]] = field(default_factory=dict)
    host: str = ""
    # Processes the model started that outlived the trial, ended by dlbench ("pid name").
    leftovers: list[str] = field(default_factory=list)


def oom_kills() -> int | None:
    """The kernel's count of OOM kills in this process's memory cgroup (v2
    memory.events, v1 memory.oom_control), or None where it cannot be read: a
    worker that dies by SIGKILL while the count rises was killed for memory, one
    that dies while it stands still was killed by someone."""
    for path in ("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"):
        try:
            with open(path, encoding="ascii") as fh:
                for line in fh:
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value)
        except (OSError, ValueError):
            continue
    return None


def kill_group(proc: subprocess.Popen[str]) -> None:
    """SIGTERM the worker's process group, SIGKILL whatever is left after a grace period."""
    for sig, wait in ((signal.SIGTERM, KILL_GRACE_S), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue
    proc.wait()


def _descendants(pid: int) -> dict[int, tuple[float, str]]:
    """The live descendants of `pid`: pid -> (start time, name). A child that left the
    worker's process group (setsid) is still its descendant while the worker lives."""
    import psutil

    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return {}
    out = {}
    for child in children:
        try:
            out[child.pid] = (child.create_time(), child.name())
        except psutil.Error:
            continue
    return out


def end_leftovers(group: int, seen: Mapping[int, tuple[float, str]]) -> list[str]:
    """End what the trial's model left running once its worker is gone: the worker's process
    group (children that stayed in it) and every descendant seen while the worker ran (those
    that left the group), each checked by its start time so that a reused pid is never
    touched. "pid name" of each one ended."""
    import psutil

    found: dict[int, Any] = {}
    for proc in psutil.process_iter(["pid"]):
        try:
            if os.getpgid(proc.pid) == group:
                found[proc.pid] = proc
        except (OSError, psutil.Error):
            continue
    for pid, (started, _) in seen.items():
        try:
            proc = psutil.Process(pid)
            if abs(proc.create_time() - started) < 1e-3:
                found[pid] = proc
        except psutil.Error:
            continue
    ended = []
    for pid, proc in sorted(found.items()):
        try:
            name = proc.name()
            proc.kill()
            ended.append(f"{pid} {name}")
        except psutil.Error:
            continue
    psutil.wait_procs(list(found.values()), timeout=KILL_GRACE_S)
    return ended


def _close_quietly(stream: Any) -> None:
    try:
        stream.close()
    except OSError:  # BrokenPipeError: the worker is gone already
        pass


def _read_lines(stream: Any, q: queue.Queue[Any]) -> None:
    for line in stream:
        q.put(line)
    q.put(None)  # end of stream


def _start_poller(spec: TrialSpec) -> Any:
    from dlbench import samplers
    from dlbench.samplers.poller import Poller

    active = samplers.active(spec.protocol.sampler_names, spec.protocol.sample_interval or None)
    return Poller(active) if active else None


def _fixed_malloc(spec: TrialSpec) -> bool:
    """The case asks for glibc's malloc thresholds fixed (runtime setting malloc-fixed)."""
    return "malloc-fixed" in runtime_settings.applied(spec.case.framework, spec.case.runtime)


def run_worker(
    spec: TrialSpec,
    *,
    timeout: float,
    on_event: Callable[[dict[str, Any]], None],
    command: Sequence[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> WorkerExit:
    """Run one trial's worker to its end, its deadline, or an exception here (which
    kills its process group and propagates). Every event the worker prints reaches
    `on_event` in order, as it arrives."""
    oom_before = oom_kills()
    poller = _start_poller(spec)
    timed_out = False
    started = time.monotonic()
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as err:
        proc = subprocess.Popen(
            list(command or worker_command()),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            encoding="utf-8",
            start_new_session=True,
            env=worker_environment(os.environ if env is None else env, _fixed_malloc(spec)),
        )
        if poller is not None:
            poller.start(proc.pid)
        try:
            # One line, and stdin stays open: it is the worker's lifeline. When this
            # process dies, however it dies, the worker reads end-of-file and stops
            # its whole process group (worker.die_with_parent).
            assert proc.stdin is not None  # started with stdin=PIPE
            proc.stdin.write(spec.to_json() + "\n")
            proc.stdin.flush()
        except BrokenPipeError:
            pass  # the worker died at once; its exit status says why
        q: queue.Queue[Any] = queue.Queue()
        reader = threading.Thread(target=_read_lines, args=(proc.stdout, q), daemon=True)
        reader.start()
        seen: dict[int, tuple[float, str]] = {}  # the worker's descendants, as last seen alive
        exited_at: float | None = None
        try:
            while True:
                remaining = timeout - (time.monotonic() - started)
                if remaining <= 0:
                    timed_out = True
                    break
                try:
                    line = q.get(timeout=min(remaining, POLL_S))
                except queue.Empty:
                    # The stream ends when every holder of the pipe closes it: a process the model
                    # forked may hold it past the worker's exit. The worker's exit and a silent
                    # grace period end it too (that trial used to end as a timeout).
                    if proc.poll() is None:
                        seen.update(_descendants(proc.pid))
                    elif exited_at is None:
                        exited_at = time.monotonic()
                    elif time.monotonic() - exited_at > KILL_GRACE_S:
                        break
                    continue
                if line is None:
                    break
                try:
                    event = json.loads(line)
                except json.JSONDecodeError:
                    continue  # not an event (should not happen: stdout is reserved)
                if event.get("event") == "marker" and poller is not None:
                    poller.poll_all()  # a reading at every phase edge
                if event.get("event") in ("done", "error", "measurements"):
                    seen.update(_descendants(proc.pid))
                on_event(event)
        except BaseException:
            kill_group(proc)  # Ctrl-C, SIGTERM or a store error: leave no orphan worker behind
            _close_quietly(proc.stdin)
            if poller is not None:
                poller.stop()
            raise
        if timed_out:
            kill_group(proc)
        else:
            try:
                proc.wait(timeout=KILL_GRACE_S * 2)
            except subprocess.TimeoutExpired:
                kill_group(proc)
        wall_s = time.monotonic() - started
        leftovers = end_leftovers(proc.pid, seen)
        reader.join(timeout=KILL_GRACE_S)
        _close_quietly(proc.stdin)
        err.seek(0)
        stderr = err.read()
    series, notes = poller.stop() if poller is not None else ([], {})
    return WorkerExit(
        returncode=proc.returncode,
        timed_out=timed_out,
        wall_s=wall_s,
        stderr_tail=stderr[-STDERR_KEEP:],
        oom_kills_before=oom_before,
        oom_kills_after=oom_kills(),
        series=series,
        sampler_notes=notes,
        host=socket.gethostname(),
        leftovers=leftovers,
    )
