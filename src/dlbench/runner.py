"""Parent side of a run: one worker process per trial, events into the store.

The parent never imports a deep-learning framework, and it is the only process
that writes the store. Each trial's worker runs through dlbench.trial.launch (here,
or on a cluster node through dlbench.executors); its events reach the store
through an EventRecorder, and each repeat's measurements are committed as they
arrive. A worker that raises, dies from a signal, or runs past its timeout becomes
a trial with status failed / oom / timeout and the error text; the run goes on.
"""

from __future__ import annotations

import os
import shlex
import signal
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from dlbench.cases import stored_case
from dlbench.executor_settings import ExecutorError
from dlbench.plan import Case, Plan
from dlbench.store import Measurement, Store, StoreError
from dlbench.trial.launch import WorkerExit, run_worker
from dlbench.trial.spec import ProtocolSpec, TrialSpec

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


# Signals with which a process dies on a failed allocation it did not check.
CRASH_SIGNALS = (signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS)


def _signal_name(returncode: int) -> str:
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


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


class EventRecorder:
    """The parent's side of a worker's event stream: each event into the store as it
    arrives (a local worker's, line by line; a cluster task's, when it comes back),
    counting repeats and keeping what the trial's status needs."""

    def __init__(self, store: Store, trial_id: int, spec: TrialSpec, on_event: Callback | None = None) -> None:
        self.store, self.trial_id, self.spec, self.on_event = store, trial_id, spec, on_event
        self.markers: list[dict[str, Any]] = []
        self.rows: list[Measurement] = []
        self.memory_notes: set[str] = set()
        self.manifest: dict[str, Any] = {}
        self.repeats = 0
        self.error: dict[str, Any] | None = None
        self.done = False

    def __call__(self, event: dict[str, Any]) -> None:
        kind = event.get("event")
        if kind == "manifest":
            self.manifest = event["manifest"]
            self.store.set_manifest(self.trial_id, event["manifest"])
        elif kind == "marker":
            self.markers.append(event)
            if event["edge"] == "end":
                self.store.add_measurements(self.trial_id, _memory_rows(event, self.spec.protocol.warmup))
                if event.get("device_peak") is None and event.get("device_peak_source"):
                    self.memory_notes.add(f"device memory peak: {event['device_peak_source']}")
        elif kind == "measurements":
            batch = [Measurement(**row) for row in event["rows"]]
            self.rows.extend(batch)
            self.store.add_measurements(self.trial_id, batch)
            if event.get("repeat") is not None:
                self.repeats += 1
        elif kind == "error":
            self.error = event
        elif kind == "done":
            self.done = True
        if self.on_event is not None:
            self.on_event("worker_event", trial_id=self.trial_id, event=event)


def _store_telemetry(store: Store, trial_id: int, spec: TrialSpec, recorder: EventRecorder, ended: WorkerExit) -> None:
    from dlbench import telemetry

    notes = dict(ended.sampler_notes)
    if ended.leftovers:
        notes["processes"] = [f"left running after the trial, ended by dlbench: {', '.join(ended.leftovers)}"]
    if recorder.memory_notes:
        notes["memory"] = sorted(recorder.memory_notes)
    telemetry_rows, slice_notes = telemetry.phase_measurements(
        ended.series,
        telemetry.windows(recorder.markers),
        spec.protocol.warmup,
        _work(recorder.rows, spec.case),
        spec.idle_power,
    )
    if slice_notes:
        notes["slicing"] = sorted(set(slice_notes))
    store.add_telemetry(trial_id, ended.series, recorder.markers, telemetry_rows, notes)


def trial_status(spec: TrialSpec, recorder: EventRecorder, ended: WorkerExit, timeout: float) -> tuple[str, str | None]:
    """The trial's status and error text from what its worker reported and how it ended."""
    expected = spec.protocol.warmup + spec.protocol.repeats
    returncode, stderr_tail = ended.returncode, ended.stderr_tail
    if ended.timed_out:
        return "timeout", (
            f"timed out after {timeout:g} s (worker killed); {recorder.repeats} of {expected} repeats finished"
        )
    if recorder.error is not None:
        event = recorder.error
        return "oom" if event.get("oom") else "failed", (
            f"{event['type']}: {event['message']}\n{event.get('traceback', '')}".strip()
        )
    if returncode is not None and returncode < 0:
        error = (
            f"worker killed by {_signal_name(returncode)} after {recorder.repeats} of "
            f"{expected} repeats; stderr tail:\n{stderr_tail[-2000:]}"
        )
        limit = spec.protocol.memory_limit_bytes
        oom_before, oom_after = ended.oom_kills_before, ended.oom_kills_after
        if -returncode == signal.SIGKILL:
            # RLIMIT_DATA never sends SIGKILL (malloc fails instead); the kernel's OOM
            # killer does, and so does anyone with `kill -9`. Only the cgroup's count
            # tells them apart.
            if oom_before is not None and oom_after is not None and oom_after > oom_before:
                return "oom", (
                    f"out of memory: the kernel's OOM killer ended the worker (cgroup oom_kill "
                    f"count {oom_before} -> {oom_after}). " + error
                )
            return "failed", (
                "killed from outside: SIGKILL while the kernel's OOM-kill count "
                + (
                    "stood still"
                    if oom_before is not None
                    else "could not be read (no cgroup memory.events): cannot tell it from an out-of-memory kill"
                )
                + ". "
                + error
            )
        if limit and -returncode in CRASH_SIGNALS:
            # Under a memory cap, native code that does not check malloc dies on
            # the NULL it gets (measured: TensorFlow's CPU kernels segfault where
            # torch and JAX raise). Inferred, and said so.
            return "oom", (
                f"out of memory (inferred): the worker died by {_signal_name(returncode)} "
                f"while capped at {'+' if spec.protocol.memory_limit_relative else ''}"
                f"{limit / 2**20:.0f} MiB (--memory-limit); native code that "
                f"does not check a failed allocation crashes this way. " + error
            )
        return "failed", error
    if returncode != 0 or not recorder.done:
        return "failed", (
            f"worker exited with code {returncode} without finishing "
            f"({recorder.repeats} of {expected} repeats); stderr tail:\n{stderr_tail[-2000:]}"
        )
    if recorder.repeats != expected:
        return "failed", f"worker reported {recorder.repeats} repeats, expected {expected}"
    if (why := diverged(recorder.rows)) is not None:
        return "diverged", why
    return "ok", None


LOSS_METRICS = ("loss", "loss_step")


def diverged(rows: Iterable[Measurement]) -> str | None:
    """Why a trial that ran to its end is no result, when a training loss it reported is
    no finite number (or beyond 1e300, which the store reads as invalid): the network it
    timed was no longer training, and NaN or inf arithmetic can run at another speed
    than real numbers do. None when every loss is finite."""
    import math

    for m in rows:
        if m.phase == "train" and m.metric in LOSS_METRICS and m.value is not None:
            if not math.isfinite(m.value) or abs(m.value) > 1e300:
                where = f"{'epoch' if m.metric == 'loss' else 'step'} {m.seq}" if m.seq is not None else "its end"
                return (
                    f"diverged: the training loss was {m.value:g} at {where} of "
                    f"{'warm-up' if m.warmup else 'repeat'} {m.repeat}; its times are stored and left out "
                    "of every statistic (a lower learning rate, gradient clipping or a loss scale may keep it finite)"
                )
    return None


def finish_trial(
    store: Store,
    trial_id: int,
    spec: TrialSpec,
    recorder: EventRecorder,
    ended: WorkerExit,
    timeout: float,
    engine: tuple[str, str] | None = None,
) -> TrialOutcome:
    """Store the trial's telemetry and its final status: the parent's last step for a
    trial, whichever executor ran its worker. `engine`: (status, reason) when the
    cluster's engine ended the worker (a cancelled job), which says why first."""
    _store_telemetry(store, trial_id, spec, recorder, ended)
    status, error = trial_status(spec, recorder, ended, timeout)
    if engine is not None and status != "ok":
        status, error = engine[0], engine[1] + (f"; {error}" if error else "")
    store.finish_trial(
        trial_id,
        status=status,
        error=error,
        returncode=ended.returncode,
        wall_s=ended.wall_s,
        stderr=ended.stderr_tail,
    )
    return TrialOutcome(
        status=status,
        error=error,
        returncode=ended.returncode,
        wall_s=ended.wall_s,
        repeats=recorder.repeats,
        manifest=recorder.manifest,
    )


def execute_trial(
    store: Store,
    trial_id: int,
    spec: TrialSpec,
    *,
    timeout: float,
    command: Sequence[str] | None = None,
    on_event: Callback | None = None,
) -> TrialOutcome:
    """Run one trial in a fresh worker process on this machine, storing each event as it arrives."""
    from dlbench.executors import local_placement

    store.start_trial(trial_id)
    store.set_placement(trial_id, local_placement())
    recorder = EventRecorder(store, trial_id, spec, on_event)
    ended = run_worker(spec, timeout=timeout, on_event=recorder, command=command)
    return finish_trial(store, trial_id, spec, recorder, ended, timeout)


def protocol_for_worker(plan: Plan) -> ProtocolSpec:
    """The plan's protocol resolved for the worker (trial.spec.ProtocolSpec.for_worker)."""
    from dlbench.distributed import LOSS_CURVE_STEPS

    loss_curve = LOSS_CURVE_STEPS if any(c.distributed for c in plan.cases) else 0
    return ProtocolSpec.for_worker(plan.experiment.protocol, loss_curve)


def create_run(
    store: Store, plan: Plan, *, command: str, environment: dict[str, Any], owner: dict[str, Any] | None = None
) -> int:
    """Store the run, its planned trials (status pending), the skipped cells and the
    sampler table in one transaction, owned by `owner` (default: this process)."""
    from dlbench import runlock, samplers
    from dlbench.version import __version__

    store.settle_dead_runs(runlock.alive)
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
    table = samplers.availability(spec.sampler_names, spec.sample_interval or None)
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
    """None: add another block. Otherwise why adding blocks stops (docs/design.md:
    "adaptive mode adds interleaved blocks until the 95% CI of each median is
    within ±PCT or a budget runs out"). Samples are per-trial medians."""
    from dlbench.analysis import stats
    from dlbench.analysis.comparisons import samples
    from dlbench.config import parse_ci_metrics

    trials = store.trials(run_id)
    proto = trials[0].protocol
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
    case = next(stored_case(t.case) for t in trials if t.case_key == key)
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
                "case": cases[key].case,  # as stored: its key is the trial's
                "protocol": cases[key].protocol,
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
    executor: Any = None,
    traces: str = "",
) -> dict[str, int]:
    """Run every trial of a run that has not finished yet (so this also resumes);
    in adaptive mode, keep adding blocks until the stopping rule says stop.
    `executor`: executors.ExecutorSettings (None: local), whichever started the run.

    The run is claimed first (RunBusy if another live process executes it), and the
    attempts an earlier process left unfinished are kept and planned again
    (Store.retire_unfinished). Returns the count of trials per final status.
    `sources`: the user's own models and datasets, as named in this invocation.
    SourcesMissing before anything starts when the run needs one that is not there.
    `traces`: the profile-trace folder named in this invocation; a stored one is
    written to only when it is that folder (TrialSpec.from_row)."""
    from dlbench.executors import pick as executors

    check_sources(store, run_id, sources or {})
    chosen = executors.make(executor)  # before the claim: an engine missing is said first
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
        adaptive = bool(first.protocol.get("until_ci"))
        seed = stored_case(first.case)["seed"]
        while True:
            counts = _execute_pending(store, run_id, command, on_event, sources, chosen, traces)
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


def extend_runs(
    targets: Sequence[Target],
    blocks: int,
    on_block: Callback | None = None,
    stop_after: Callable[[int], bool] | None = None,
) -> list[dict[str, int]]:
    """Add up to `blocks` interleaved blocks to each run and execute them, the runs taking
    turns block by block in ABBA order (A, B, B, A, A, B, ...): a machine whose speed
    drifts then hits every run alike, and neither always runs first. Trials a run left
    unfinished are finished at its first turn. `stop_after(rounds)` is asked after every
    round (each run one block more); True stops there (the gate's sequential rule), so
    every run always has the same number of new blocks. Returns each run's count of
    trials per status."""
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
                seed = stored_case(t.store.trials(t.run_id)[0].case)["seed"]
                block = add_block(t.store, t.run_id, seed)
                _execute_pending(t.store, t.run_id, t.command, None, t.sources)
                if on_block is not None:
                    on_block(target=t, block=block, done=i + 1)
            if stop_after is not None and stop_after(i + 1):
                break
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
    pending = store.trials(run_id) if every else store.trials(run_id, statuses=("pending", "running", "interrupted"))
    uses = {(kind, row[kind]) for row in pending for kind in ("model", "dataset")}
    check_uses(store, run_id, uses, sources)


def check_uses(store: Store, run_id: int, uses: Iterable[tuple[str, str]], sources: Mapping[str, str]) -> None:
    """Raise SourcesMissing unless each (kind, name) that run `run_id` used is built in,
    installed, or named by the user now; the message gives the reference the run
    recorded, to be named again (it is shown, never imported)."""
    from dlbench import registry

    stored = store.run(run_id).experiment.get("sources") or {}
    for kind, name in sorted(set(uses), key=lambda use: (use[0] != "model", use[1])):  # models first
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


class _StoreHandlers:
    """An executor's callbacks: each trial's placement, events and status into the store,
    on the parent's thread (executors.base.Handlers). A local trial streams its events
    (run_here); a cluster trial's come back when its task or job ends (finished)."""

    def __init__(self, store: Store, on_event: Callback | None) -> None:
        self.store, self.on_event = store, on_event

    def run_here(self, trial: Any) -> None:
        case = trial.spec.case.as_dict()
        self._emit("trial_start", trial_id=trial.trial_id, case=case)
        outcome = execute_trial(
            self.store, trial.trial_id, trial.spec, timeout=trial.timeout, command=trial.command, on_event=self.on_event
        )
        self._emit("trial_end", trial_id=trial.trial_id, case=case, outcome=outcome)

    def _emit(self, kind: str, **info: Any) -> None:
        if self.on_event is not None:
            self.on_event(kind, **info)

    def started(self, trial: Any, placement: dict[str, Any]) -> None:
        self.store.start_trial(trial.trial_id)
        self.store.set_placement(trial.trial_id, placement)

    def finished(self, trial: Any, result: Any, placement: dict[str, Any]) -> None:
        case = trial.spec.case.as_dict()
        # The trial's start is announced when its events arrive, so that a progress
        # display sees each trial's events together even when several ran at once.
        self._emit("trial_start", trial_id=trial.trial_id, case=case)
        # What the executor learnt while the trial ran (the node Slurm chose), and the
        # node's machine fingerprint.
        self.store.set_placement(trial.trial_id, placement | ({"machine": result.machine} if result.machine else {}))
        if result.exit is None:  # the engine ended the trial: no worker exit to read
            outcome = TrialOutcome(status=result.engine_status or "failed", error=result.engine_reason)
            self.store.finish_trial(
                trial.trial_id, status=outcome.status, error=outcome.error, returncode=None, wall_s=0.0, stderr=""
            )
        else:
            recorder = EventRecorder(self.store, trial.trial_id, trial.spec, self.on_event)
            for event in result.events:
                recorder(event)
            engine = (result.engine_status, result.engine_reason) if result.engine_status else None
            outcome = finish_trial(self.store, trial.trial_id, trial.spec, recorder, result.exit, trial.timeout, engine)
        self._emit("trial_end", trial_id=trial.trial_id, case=case, outcome=outcome)

    def progress(self, queued: int, running: int, done: int) -> None:
        self._emit("cluster_progress", queued=queued, running=running, done=done)


def _execute_trials(
    store: Store,
    executor: Any,
    specs: Sequence[tuple[Any, TrialSpec]],
    command: Sequence[str] | None,
    on_event: Callback | None,
) -> None:
    from dlbench.executors.base import RemoteTrial

    trials = [
        RemoteTrial(row["id"], row["block"], spec, spec.protocol.timeout, tuple(command) if command else None)
        for row, spec in specs
    ]
    executor.run(trials, _StoreHandlers(store, on_event))
    for note in executor.notes:
        if on_event is not None:
            on_event("executor_note", note=note)


def _spec(store: Store, row: Any, idle: Any, sources: dict[str, str], traces: str) -> TrialSpec:
    """A pending trial's spec, its stored values checked as if typed: damage is one
    StoreError naming the trial, before any worker starts."""
    from dlbench.trial.spec import SpecError

    try:
        return TrialSpec.from_row(row, idle if isinstance(idle, dict) else {}, sources, traces)
    except SpecError as exc:
        raise StoreError(
            f"{store.path}: trial {row['id']}: {exc}; the database was changed by something other than "
            "dlbench: nothing ran"
        ) from None


def _execute_pending(
    store: Store,
    run_id: int,
    command: Sequence[str] | None,
    on_event: Callback | None,
    sources: Mapping[str, str] | None = None,
    executor: Any = None,
    traces: str = "",
) -> dict[str, int]:
    """Every pending trial of the run, through `executor` (executors.pick.make; the local
    one when None): one loop whichever executor runs them."""
    from dlbench import registry
    from dlbench.executors import pick

    executor = executor if executor is not None else pick.make(None)

    sources = dict(sources or {})
    check_sources(store, run_id, sources)
    pending = store.trials(run_id, statuses=("pending", "running", "interrupted"))
    idle = store.run(run_id).idle.get("power_w", {})
    emit = on_event or (lambda *a, **k: None)
    emit("run_start", run_id=run_id, total=len(store.trials(run_id)), pending=len(pending))
    try:
        specs = [
            (row, _spec(store, row, idle, registry.needed(row["model"], row["dataset"], sources), traces))
            for row in pending
        ]
        _execute_trials(store, executor, specs, command, on_event)
    except (KeyboardInterrupt, ExecutorError):
        # Ctrl-C, or a cluster that could not be reached: what was stored stays, the
        # run resumes with any executor.
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
    executor: Any = None,
) -> tuple[int, dict[str, int]]:
    run_id = create_run(store, plan, command=command_line, environment=environment)
    return run_id, execute_run(
        store,
        run_id,
        command=worker,
        on_event=on_event,
        sources=plan.experiment.sources,
        executor=executor,
        traces=plan.experiment.protocol.profile_traces,
    )
