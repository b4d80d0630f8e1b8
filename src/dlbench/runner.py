"""Parent side of a run: one worker process per trial, events into the store.

The parent never imports a deep-learning framework. For each trial it starts
`python -m dlbench.worker` in its own session (process group), writes the
trial spec to its stdin and reads JSON-lines events from its stdout on a
reader thread, so that a worker that hangs is noticed at its deadline without
busy-waiting. Each repeat's measurements are committed as they arrive. A worker
that raises, dies from a signal, or runs past its timeout becomes a trial with
status failed / oom / timeout and the error text; the run goes on.
"""

from __future__ import annotations

import json
import os
import queue
import shlex
import signal
import sqlite3
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from dlbench.plan import Case, Plan
from dlbench.store import Measurement, Store, StoreError
from dlbench.trialspec import ProtocolSpec, TrialSpec, worker_command

STDERR_KEEP = 20_000  # characters of a worker's stderr kept in the store
KILL_GRACE_S = 5.0

Callback = Callable[..., None]


@dataclass
class TrialOutcome:
    status: str
    error: str | None = None
    returncode: int | None = None
    wall_s: float = 0.0
    repeats: int = 0
    manifest: dict[str, Any] = field(default_factory=dict)


class RunBusy(RuntimeError):
    """Another live process is executing the run."""


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP (what `timeout`, CI cancellations and a closed terminal send):
    handled like Ctrl-C, so the worker is stopped and the run marked interrupted."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def raise_on_termination() -> None:
    """Turn SIGTERM and SIGHUP into Terminated in the main thread, for the commands that run trials."""

    def handler(signum: int, frame: object) -> None:
        raise Terminated(signum)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, handler)


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


# Signals with which a process dies on a failed allocation it did not check.
CRASH_SIGNALS = (signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS)


def _signal_name(returncode: int) -> str:
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def _kill_group(proc: subprocess.Popen[str]) -> None:
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


def _close_quietly(stream: Any) -> None:
    try:
        stream.close()
    except OSError:  # BrokenPipeError: the worker is gone already
        pass


def _read_events(stream: Any, q: queue.Queue[Any]) -> None:
    for line in stream:
        q.put(line)
    q.put(None)  # end of stream


def _memory_rows(event: dict[str, Any], warmup: int) -> list[Measurement]:
    """Per-phase memory peaks the worker attached to a phase-end marker."""
    repeat = event["repeat"]
    warm = repeat is not None and repeat < warmup
    rows = []
    if event.get("peak_rss") is not None:
        rows.append(
            Measurement(
                repeat,
                warm,
                event["phase"],
                "memory.peak_rss",
                float(event["peak_rss"]),
                "bytes",
                None,
                event.get("peak_rss_method"),
            )
        )
    if event.get("device_peak") is not None:
        rows.append(
            Measurement(
                repeat,
                warm,
                event["phase"],
                "memory.device_peak",
                float(event["device_peak"]),
                "bytes",
                None,
                event.get("device_peak_source"),
            )
        )
    return rows


def _work(rows: list[Measurement], case: Case) -> dict[tuple[str, int | None], dict[str, float]]:
    """Samples (and epochs, passes) each phase's telemetry window spans, for energy per
    sample / epoch / pass. The inference window holds `infer.passes` passes (one in
    runs stored before the pass count existed)."""
    work: dict[tuple[str, int | None], dict[str, float]] = {}
    by = {(m.phase, m.repeat, m.metric): m.value for m in rows}
    for (phase, repeat, metric), value in by.items():
        if phase == "train" and metric == "steps" and value:
            work[(phase, repeat)] = {"samples": value * case.batch_size, "epochs": case.epochs or 0}
        if phase == "infer" and metric == "time" and value:
            throughput = by.get((phase, repeat, "throughput"))
            passes = by.get((phase, repeat, "passes")) or 1.0
            if throughput:
                work[(phase, repeat)] = {"samples": round(throughput * value * passes), "passes": passes}
    return work


def _start_poller(spec: TrialSpec) -> Any:
    from dlbench import samplers
    from dlbench.samplers.poller import Poller

    active = samplers.active(spec.protocol.samplers, spec.protocol.sample_interval or None)
    return Poller(active) if active else None


def _store_telemetry(
    store: Store,
    trial_id: int,
    spec: TrialSpec,
    poller: Any,
    markers: list[dict[str, Any]],
    rows: list[Measurement],
    memory_notes: list[str],
) -> None:
    from dlbench import telemetry

    series, notes = poller.stop() if poller is not None else ([], {})
    if memory_notes:
        notes["memory"] = memory_notes
    telemetry_rows, slice_notes = telemetry.phase_measurements(
        series,
        telemetry.windows(markers),
        spec.protocol.warmup,
        _work(rows, spec.case),
        spec.idle_power,
    )
    if slice_notes:
        notes["slicing"] = sorted(set(slice_notes))
    store.add_telemetry(trial_id, series, markers, telemetry_rows, notes)


def execute_trial(
    store: Store,
    trial_id: int,
    spec: TrialSpec,
    *,
    timeout: float,
    command: Sequence[str] | None = None,
    on_event: Callback | None = None,
) -> TrialOutcome:
    """Run one trial in a fresh worker process and store everything it reports."""
    store.start_trial(trial_id)
    oom_before = oom_kills()
    poller = _start_poller(spec)
    markers: list[dict[str, Any]] = []
    rows: list[Measurement] = []
    memory_notes: set[str] = set()
    expected = spec.protocol.warmup + spec.protocol.repeats
    outcome = TrialOutcome(status="failed")
    error_event: dict[str, Any] | None = None
    done = timed_out = False
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
        reader = threading.Thread(target=_read_events, args=(proc.stdout, q), daemon=True)
        reader.start()
        try:
            while True:
                remaining = timeout - (time.monotonic() - started)
                if remaining <= 0:
                    timed_out = True
                    break
                try:
                    line = q.get(timeout=remaining)
                except queue.Empty:
                    continue
                if line is None:
                    break
                try:
                    event = json.loads(line)
                except json.JSONDecodeError:
                    continue  # not an event (should not happen: stdout is reserved)
                kind = event.get("event")
                if kind == "manifest":
                    outcome.manifest = event["manifest"]
                    store.set_manifest(trial_id, event["manifest"])
                elif kind == "marker":
                    markers.append(event)
                    if poller is not None:
                        poller.poll_all()  # a reading at every phase edge
                    if event["edge"] == "end":
                        store.add_measurements(trial_id, _memory_rows(event, spec.protocol.warmup))
                        if event.get("device_peak") is None and event.get("device_peak_source"):
                            memory_notes.add(f"device memory peak: {event['device_peak_source']}")
                elif kind == "measurements":
                    batch = [Measurement(**row) for row in event["rows"]]
                    rows.extend(batch)
                    store.add_measurements(trial_id, batch)
                    if event.get("repeat") is not None:
                        outcome.repeats += 1
                elif kind == "error":
                    error_event = event
                elif kind == "done":
                    done = True
                if on_event is not None:
                    on_event("worker_event", trial_id=trial_id, event=event)
        except BaseException:
            _kill_group(proc)  # Ctrl-C, SIGTERM or a store error: leave no orphan worker behind
            _close_quietly(proc.stdin)
            if poller is not None:
                poller.stop()
            raise
        if timed_out:
            _kill_group(proc)
        else:
            try:
                proc.wait(timeout=KILL_GRACE_S * 2)
            except subprocess.TimeoutExpired:
                _kill_group(proc)
        reader.join(timeout=KILL_GRACE_S)
        _close_quietly(proc.stdin)
        outcome.wall_s = time.monotonic() - started
        outcome.returncode = proc.returncode
        err.seek(0)
        stderr = err.read()
    stderr_tail = stderr[-STDERR_KEEP:]
    _store_telemetry(store, trial_id, spec, poller, markers, rows, sorted(memory_notes))

    if timed_out:
        outcome.status = "timeout"
        outcome.error = (
            f"timed out after {timeout:g} s (worker killed); {outcome.repeats} of {expected} repeats finished"
        )
    elif error_event is not None:
        outcome.status = "oom" if error_event.get("oom") else "failed"
        outcome.error = f"{error_event['type']}: {error_event['message']}\n{error_event.get('traceback', '')}".strip()
    elif proc.returncode is not None and proc.returncode < 0:
        outcome.error = (
            f"worker killed by {_signal_name(proc.returncode)} after {outcome.repeats} of "
            f"{expected} repeats; stderr tail:\n{stderr_tail[-2000:]}"
        )
        limit = spec.protocol.memory_limit
        oom_after = oom_kills()
        if -proc.returncode == signal.SIGKILL:
            # RLIMIT_DATA never sends SIGKILL (malloc fails instead); the kernel's OOM
            # killer does, and so does anyone with `kill -9`. Only the cgroup's count
            # tells them apart.
            if oom_before is not None and oom_after is not None and oom_after > oom_before:
                outcome.status = "oom"
                outcome.error = (
                    f"out of memory: the kernel's OOM killer ended the worker (cgroup oom_kill "
                    f"count {oom_before} -> {oom_after}). " + outcome.error
                )
            else:
                outcome.error = (
                    "killed from outside: SIGKILL while the kernel's OOM-kill count "
                    + (
                        "stood still"
                        if oom_before is not None
                        else "could not be read (no cgroup memory.events): cannot tell it from an out-of-memory kill"
                    )
                    + ". "
                    + outcome.error
                )
        elif limit and -proc.returncode in CRASH_SIGNALS:
            # Under a memory cap, native code that does not check malloc dies on
            # the NULL it gets (measured: TensorFlow's CPU kernels segfault where
            # torch and JAX raise). Inferred, and said so.
            outcome.status = "oom"
            outcome.error = (
                f"out of memory (inferred): the worker died by {_signal_name(proc.returncode)} "
                f"while capped at {'+' if spec.protocol.memory_limit_relative else ''}"
                f"{limit / 2**20:.0f} MiB (--memory-limit); native code that "
                f"does not check a failed allocation crashes this way. " + outcome.error
            )
    elif proc.returncode != 0 or not done:
        outcome.error = (
            f"worker exited with code {proc.returncode} without finishing "
            f"({outcome.repeats} of {expected} repeats); stderr tail:\n{stderr_tail[-2000:]}"
        )
    elif outcome.repeats != expected:
        outcome.error = f"worker reported {outcome.repeats} repeats, expected {expected}"
    else:
        outcome.status = "ok"
    store.finish_trial(
        trial_id,
        status=outcome.status,
        error=outcome.error,
        returncode=outcome.returncode,
        wall_s=outcome.wall_s,
        stderr=stderr_tail,
    )
    return outcome


def protocol_for_worker(plan: Plan) -> ProtocolSpec:
    """The plan's protocol resolved for the worker (sampler names, the memory limit in bytes)."""
    from dlbench.config import parse_memory_limit
    from dlbench.distributed import LOSS_CURVE_STEPS

    p = plan.experiment.protocol
    from dlbench.samplers import parse_names

    # Samplers first: a bad samplers string is reported before a bad memory_limit.
    samplers = list(parse_names(p.samplers))
    memory_limit, memory_limit_relative = parse_memory_limit(p.memory_limit)
    return ProtocolSpec(
        repeats=p.repeats,
        warmup=p.warmup,
        latency_batches=p.latency_batches,
        infer_min_time=p.infer_min_time,
        timeout=p.timeout,
        data_dir=p.data_dir,
        trials=p.trials,
        samplers=tuple(samplers),
        sample_interval=p.sample_interval,
        until_ci=p.until_ci,
        max_repeats=p.max_repeats,
        budget=p.budget,
        until_ci_metrics=p.until_ci_metrics,
        memory_limit=memory_limit,
        memory_limit_relative=memory_limit_relative,
        target_accuracy=p.target_accuracy,
        tta_budget=p.tta_budget,
        loss_curve=LOSS_CURVE_STEPS if any(c.distributed for c in plan.cases) else 0,
    )


def create_run(
    store: Store, plan: Plan, *, command: str, environment: dict[str, Any], owner: dict[str, Any] | None = None
) -> int:
    """Store the run, its planned trials (status pending), the skipped cells and the
    sampler table in one transaction, owned by `owner` (default: this process)."""
    from dlbench import runlock, samplers
    from dlbench.version import __version__

    exp = plan.experiment
    spec = protocol_for_worker(plan)
    protocol = spec.to_dict()
    trials = [
        {
            "case_key": t.case.key,
            "block": t.block,
            "position": t.position,
            "case": t.case.as_dict(),
            "protocol": protocol,
        }
        for t in plan.trials
    ]
    table = samplers.availability(spec.samplers, spec.sample_interval or None)
    return store.create_run(
        name=exp.name,
        command=command,
        config_source=exp.source,
        config_text=exp.text,
        experiment=asdict(exp) | {"text": None},
        environment=environment,
        version=__version__,
        trials=trials,
        skipped=[(s.cell, s.reason) for s in plan.skipped],
        samplers=table,
        owner=owner or runlock.me(),
    )


def measure_idle(
    store: Store, run_id: int, seconds: float, names: Sequence[str], interval_s: float | None = None
) -> dict[str, float]:
    """Idle power of every energy source over `seconds` with no worker running,
    stored with the run and subtracted per phase as "energy_net"."""
    import os

    from dlbench import samplers, telemetry
    from dlbench.samplers.poller import Poller

    active = samplers.active(tuple(names), interval_s)
    if not active:
        store.set_idle(run_id, {"seconds": seconds, "power_w": {}, "note": "no sampler available"})
        return {}
    poller = Poller(active)
    poller.start(os.getpid())
    time.sleep(seconds)
    series, notes = poller.stop()
    power = telemetry.idle_power(series, seconds)
    store.set_idle(
        run_id,
        {
            "seconds": seconds,
            "power_w": power,
            "notes": notes,
            "note": None if power else "no energy counter available: nothing to subtract",
        },
    )
    return power


def adaptive_decision(store: Store, run_id: int, started: float) -> str | None:
    """None: add another block. Otherwise why adding blocks stops (DESIGN.md:
    "adaptive mode adds interleaved blocks until the 95% CI of each median is
    within ±PCT or a budget runs out"). Samples are per-trial medians."""
    from dlbench.analysis import stats
    from dlbench.analysis.comparisons import samples
    from dlbench.config import parse_ci_metrics

    trials = store.trials(run_id)
    proto = json.loads(trials[0]["protocol_json"])
    blocks = 1 + max(t["block"] for t in trials)
    measurements = store.measurements(run_id)
    wide = []
    watched = parse_ci_metrics(proto.get("until_ci_metrics", "train.time"))
    names = ", ".join(f"{p}.{m}" for p, m in watched)
    pct = proto["until_ci"] / 100
    for phase, metric in watched:
        for key, sample in samples(trials, measurements, phase, metric).items():
            values = list(sample.values.values())
            if not stats.ci_converged(values, pct):
                wide.append((key, f"{phase}.{metric}", values))
    if not wide:
        return f"converged: every median's 95% CI within ±{proto['until_ci']:g}% after {blocks} blocks ({names})"
    cases = len({key for key, _, _ in wide})
    if blocks >= proto["max_repeats"]:
        return (
            f"max-repeats reached: {blocks} blocks; {cases} case(s) not within ±{proto['until_ci']:g}%"
            f"{_widest(trials, wide, pct)}"
        )
    if proto["budget"] and time.monotonic() - started >= proto["budget"] * 60:
        return (
            f"budget of {proto['budget']:g} min spent after {blocks} blocks; {cases} case(s) not converged"
            f"{_widest(trials, wide, pct)}"
        )
    return None


def _widest(trials: Any, wide: list[tuple[str, str, list[float]]], pct: float) -> str:
    """The unconverged median with the widest CI, and about how many blocks it would
    take at the spread seen so far (the half-width shrinks as 1/sqrt(n)), so that a
    user learns whether more blocks or a quieter machine is what is missing."""
    from dlbench.analysis import stats
    from dlbench.cases import case_label

    need = stats.min_pairs()
    if all(len(values) < need for _, _, values in wide):
        return f" (a median's CI counts from {need} blocks on)"
    half, key, metric, values = max((stats.median_ci_halfwidth(v), k, m, v) for k, m, v in wide if len(v) >= need)
    case = next(json.loads(t["case_json"]) for t in trials if t["case_key"] == key)
    blocks = stats.samples_needed(len(values), half, pct)
    if blocks is None:  # a median of zero has no relative width
        return f" (widest: {metric} of {case_label(case)}, median 0: no relative CI)"
    return (
        f" (widest: {metric} of {case_label(case)}, ±{100 * half:.1f}%; at this spread about {blocks} "
        f"blocks would be needed)"
    )


def add_block(store: Store, run_id: int, seed: int) -> int:
    """One more interleaved block: every case once, in a random order."""
    import random

    trials = store.trials(run_id)
    block = 1 + max(int(t["block"]) for t in trials)
    cases = {t["case_key"]: t for t in trials}
    order = list(cases)
    random.Random(seed * 1_000_003 + block).shuffle(order)
    store.add_trials(
        run_id,
        [
            {
                "case_key": key,
                "block": block,
                "position": position,
                "case": json.loads(cases[key]["case_json"]),
                "protocol": json.loads(cases[key]["protocol_json"]),
            }
            for position, key in enumerate(order)
        ],
    )
    return block


def claim(store: Store, run_id: int) -> dict[str, Any]:
    """Make this process the run's one executor, or raise RunBusy naming the live one."""
    from dlbench import runlock

    owner = runlock.me()
    holder = store.claim_run(run_id, owner, runlock.alive)
    if holder is not None:
        raise RunBusy(
            f"run {run_id} of {store.path} is being executed by another dlbench "
            f"({runlock.describe(holder)}); wait for it to finish, or stop it, then resume"
        )
    return owner


def execute_run(
    store: Store,
    run_id: int,
    *,
    command: Sequence[str] | None = None,
    on_event: Callback | None = None,
    sources: Mapping[str, str] | None = None,
) -> dict[str, int]:
    """Run every trial of a run that has not finished yet (so this also resumes);
    in adaptive mode, keep adding blocks until the stopping rule says stop.

    The run is claimed first (RunBusy if another live process executes it), and the
    attempts an earlier process left unfinished are kept and planned again
    (Store.retire_unfinished). Returns the count of trials per final status.
    `sources`: the user's own models and datasets, as named in this invocation.
    SourcesMissing before anything starts when the run needs one that is not there."""
    check_sources(store, run_id, sources or {})
    owner = claim(store, run_id)
    try:
        store.retire_unfinished(run_id)
        trials = store.trials(run_id)
        if not trials:
            raise StoreError(
                f"{store.path}: run {run_id} has no trials (its creation did not finish); "
                "nothing to resume: start a new run"
            )
        started = time.monotonic()
        stop_reason = None
        first = trials[0]  # protocol and seed are the same for every trial of a run
        adaptive = bool(json.loads(first["protocol_json"]).get("until_ci"))
        seed = json.loads(first["case_json"])["seed"]
        while True:
            counts = _execute_pending(store, run_id, command, on_event, sources)
            if not adaptive:
                break
            stop_reason = adaptive_decision(store, run_id, started)
            if stop_reason is not None:
                break
            block = add_block(store, run_id, seed)
            if on_event is not None:
                on_event("block_added", run_id=run_id, block=block)
        store.finish_run(run_id, "finished", stop_reason)
        if on_event is not None and stop_reason:
            on_event("adaptive_stop", run_id=run_id, reason=stop_reason)
        return counts
    finally:
        _release_quietly(store, run_id, owner)


def _release_quietly(store: Store, run_id: int, owner: dict[str, Any]) -> None:
    try:
        store.release_run(run_id, owner)
    except sqlite3.Error:
        pass  # a full disk, say: the claim dies with this process anyway (runlock.alive)


@dataclass(frozen=True)
class Target:
    """One run that `extend_runs` adds blocks to, and the worker command it runs them with."""

    store: Store
    run_id: int
    command: Sequence[str] | None = None
    # The user's own models and datasets the run uses, named again by the user.
    sources: Mapping[str, str] = field(default_factory=dict)


def extend_runs(targets: Sequence[Target], blocks: int, on_block: Callback | None = None) -> list[dict[str, int]]:
    """Add `blocks` interleaved blocks to each run and execute them, the runs taking
    turns block by block in ABBA order (A, B, B, A, A, B, ...): a machine whose speed
    drifts then hits every run alike, and neither always runs first. Trials a run left
    unfinished are finished at its first turn. No adaptive stopping: exactly `blocks`
    more per run. Returns each run's count of trials per status."""
    if blocks < 1:
        raise ValueError(f"blocks must be at least 1, got {blocks}")
    targets = list(targets)
    for t in targets:
        check_sources(t.store, t.run_id, t.sources, every=True)
    owners: list[tuple[Target, dict[str, Any]]] = []
    try:
        for t in targets:
            owners.append((t, claim(t.store, t.run_id)))
            t.store.retire_unfinished(t.run_id)
        for i in range(blocks):
            for t in targets if i % 2 == 0 else targets[::-1]:
                seed = json.loads(t.store.trials(t.run_id)[0]["case_json"])["seed"]
                block = add_block(t.store, t.run_id, seed)
                _execute_pending(t.store, t.run_id, t.command, None, t.sources)
                if on_block is not None:
                    on_block(target=t, block=block, done=i + 1)
        counts = []
        for t in targets:
            t.store.finish_run(t.run_id, "finished")
            rows = t.store.trials(t.run_id)
            counts.append({s: sum(r["status"] == s for r in rows) for s in sorted({r["status"] for r in rows})})
        return counts
    finally:
        for t, owner in owners:
            _release_quietly(t.store, t.run_id, owner)


def _mark_interrupted_if_possible(store: Store, run_id: int) -> bool:
    """After a failed write: mark the run interrupted, first as it is, then after a
    checkpoint that moves the write-ahead log into the database and truncates it
    (on a full disk, the log is what grew)."""
    for attempt in range(2):
        try:
            if attempt:
                store.db.rollback()
                store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            store.mark_interrupted(run_id)
            store.finish_run(run_id, "interrupted")
            return True
        except sqlite3.Error:
            continue
    return False


class SourcesMissing(ValueError):
    """A stored run whose model or dataset is the user's own code or data, which this
    invocation did not name: dlbench imports nothing a database names."""


def check_sources(store: Store, run_id: int, sources: Mapping[str, str], every: bool = False) -> None:
    """Raise SourcesMissing unless every model and dataset of the run's unfinished
    trials (every: of all its trials, for extend) is built in, installed, or named by
    the user now (`sources`)."""
    from dlbench import registry

    pending = store.trials(run_id) if every else store.trials(run_id, statuses=("pending", "running", "interrupted"))
    stored = json.loads(store.run(run_id)["experiment_json"] or "{}").get("sources") or {}
    for kind in ("model", "dataset"):
        for name in sorted({row[kind] for row in pending}):
            if registry.is_registered(kind, name) or f"{kind}:{name}" in sources:
                continue
            was = stored.get(f"{kind}:{name}") if isinstance(stored, dict) else None
            again = f"--{kind} {shlex.quote(str(was))}" if isinstance(was, str) else f"--{kind} PATH"
            raise SourcesMissing(
                f"run {run_id} uses {kind} {name!r}, your own "
                f"{'code' if kind == 'model' else 'data'}"
                + (f" (named as {was})" if isinstance(was, str) else "")
                + f"; dlbench imports no file a database names: name it again with {again}"
            )


def _execute_pending(
    store: Store,
    run_id: int,
    command: Sequence[str] | None,
    on_event: Callback | None,
    sources: Mapping[str, str] | None = None,
) -> dict[str, int]:
    from dlbench import registry

    sources = dict(sources or {})
    check_sources(store, run_id, sources)
    pending = store.trials(run_id, statuses=("pending", "running", "interrupted"))
    idle = json.loads(store.run(run_id)["idle_json"] or "{}").get("power_w", {})
    emit = on_event or (lambda *a, **k: None)
    emit("run_start", run_id=run_id, total=len(store.trials(run_id)), pending=len(pending))
    try:
        for row in pending:
            spec = TrialSpec.from_row(row, idle, registry.needed(row["model"], row["dataset"], sources))
            case = spec.case.as_dict()
            emit("trial_start", trial_id=row["id"], case=case)
            outcome = execute_trial(
                store, row["id"], spec, timeout=spec.protocol.timeout, command=command, on_event=on_event
            )
            emit("trial_end", trial_id=row["id"], case=case, outcome=outcome)
    except KeyboardInterrupt:
        store.mark_interrupted(run_id)
        store.finish_run(run_id, "interrupted")
        raise
    except sqlite3.Error as exc:
        # A full disk or a failing device: the worker is stopped already (execute_trial);
        # what was committed before stays.
        marked = _mark_interrupted_if_possible(store, run_id)
        raise StoreError(
            f"{store.path}: cannot store the results of run {run_id} ({exc}); everything "
            "committed before is kept"
            + ("" if marked else " (the run could not even be marked interrupted: it still reads 'running')")
            + "; free space, then resume it"
        ) from None
    counts: dict[str, int] = {}
    for row in store.trials(run_id):
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    return counts


def run_plan(
    store: Store,
    plan: Plan,
    *,
    command_line: str,
    environment: dict[str, Any],
    worker: Sequence[str] | None = None,
    on_event: Callback | None = None,
) -> tuple[int, dict[str, int]]:
    run_id = create_run(store, plan, command=command_line, environment=environment)
    return run_id, execute_run(store, run_id, command=worker, on_event=on_event, sources=plan.experiment.sources)
