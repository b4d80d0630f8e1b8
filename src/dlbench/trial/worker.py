"""One trial in one fresh process: `python -P -m dlbench.trial.worker --parent-pid PID`,
the trial spec as one JSON line on stdin (which stays open: see die_with_parent).

The worker imports exactly one framework, loads the data (untimed), runs the
warm-up and measured repeats and streams JSON-lines events to the parent:

    {"event": "started", "pid": ..., "t": <monotonic ns>}
    {"event": "manifest", "manifest": {...}}          fairness manifest
    {"event": "marker", "phase": ..., "repeat": ..., "edge": "start"|"end", "t": ...}
    {"event": "measurements", "repeat": r, "rows": [...]}   one per repeat, committed at once
    {"event": "error", "type": ..., "message": ..., "traceback": ..., "oom": bool}
    {"event": "done"}

Events go to a duplicate of the original stdout; file descriptor 1 is then
pointed at stderr, so that whatever a framework prints (TF's notices, progress
bars, C++ logging) can never corrupt the event stream. The parent keeps stderr
per trial.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
import traceback
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, TextIO

from dlbench.trial.spec import TrialSpec

if TYPE_CHECKING:
    from dlbench.distributed import DistContext
    from dlbench.plan import Case
    from dlbench.trial.spec import ProtocolSpec

OOM_MARKERS = (
    "MemoryError",
    "OutOfMemoryError",
    "ResourceExhaustedError",
    "RESOURCE_EXHAUSTED",
    "out of memory",
    "Out of memory",
    "std::bad_alloc",
    "can't allocate memory",
    "Cannot allocate memory",
    "OOM when allocating",
    # oneDNN's dnnl_out_of_memory (status 1), as TensorFlow's MKL kernels report it.
    "Status: 1, message: could not create a memory object",
)


class Emitter:
    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def __call__(self, event: str, **fields: Any) -> None:
        self.stream.write(json.dumps({"event": event, **fields}, default=str) + "\n")
        self.stream.flush()


def is_oom(exc: BaseException) -> bool:
    text = f"{type(exc).__name__}: {exc}"
    return isinstance(exc, MemoryError) or any(m in text for m in OOM_MARKERS)


def _vm_data_bytes() -> int | None:
    """This process's data segment now (VmData: what RLIMIT_DATA counts)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def limit_memory_above_now(extra: int) -> dict[str, Any]:
    """Cap the data segment at its current size + `extra` (the relative --memory-limit,
    applied after the framework import and the data load)."""
    now = _vm_data_bytes()
    if now is None:
        raise RuntimeError("--memory-limit +SIZE needs /proc/self/status (Linux)")
    out = limit_memory(now + extra)
    return {
        **out,
        "memory_limit_relative": extra,
        "memory_baseline_vmdata": now,
        "memory_limit_mechanism": "setrlimit(RLIMIT_DATA) at VmData after import and data load + the given size",
    }


def limit_memory(limit: int) -> dict[str, Any]:
    """Cap this process's data segment (RLIMIT_DATA: heap and private writable
    mappings) at `limit` bytes; 0 leaves it alone. Not RLIMIT_AS: that counts
    address space merely reserved (thread stacks, allocator arenas, XLA's
    reservations) and would fail imports long before real memory runs out.
    Measured here: past the cap torch raises "DefaultCPUAllocator: can't allocate
    memory", TensorFlow ResourceExhaustedError and JAX RESOURCE_EXHAUSTED, each
    caught as an ordinary exception and stored as status oom."""
    if not limit:
        return {"memory_limit": None}
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    return {"memory_limit": limit, "memory_limit_mechanism": "setrlimit(RLIMIT_DATA)"}


def limit_memory_after_load(limit: int) -> dict[str, Any]:
    """The absolute --memory-limit, applied once the framework is imported and the
    data loaded. Applied before (as it once was), a cap below those footprints did
    not fail: OpenBLAS's thread-pool setup (numpy's, scipy's, each loaded with its
    library) retries a failed malloc in a loop, and a torch worker capped at 300 MiB
    spun at 100% CPU in blas_thread_init until its timeout. The cap still bounds the
    whole data segment, import and data included: a worker already above it is out
    of memory at once, and says so."""
    if not limit:
        return {"memory_limit": None}
    now = _vm_data_bytes()
    if now is not None and now >= limit:
        raise MemoryError(
            f"out of memory: the framework's import and the data already hold {now / 2**20:.0f} MiB "
            f"of data segment (VmData), above the {limit / 2**20:.0f} MiB cap (--memory-limit)"
        )
    return {
        **limit_memory(limit),
        "memory_baseline_vmdata": now,
        "memory_limit_mechanism": "setrlimit(RLIMIT_DATA) in the worker after the framework import and the "
        "data load (the cap counts their memory too)",
    }


def pin_threads(threads: int, offset: int = 0) -> list[int] | None:
    """Restrict the process to `threads` cores, identically for every framework;
    `offset` cores further along for a rank of a multi-process trial (rank r of
    t threads each takes cores r*t .. r*t+t-1, so ranks never share a core).

    XLA:CPU has no reliable intra-op thread knob, so affinity is the one control
    that applies equally to torch, TensorFlow and JAX."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    allowed = sorted(os.sched_getaffinity(0))
    start = offset if offset + threads <= len(allowed) else 0
    os.sched_setaffinity(0, allowed[start : start + max(1, threads)])
    return sorted(os.sched_getaffinity(0))


def _vm_hwm_bytes() -> int | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _reset_vm_hwm() -> bool:
    """Reset the peak-RSS high-water mark (Linux >= 4.0: write 5 to clear_refs)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


class PhaseMemory:
    """Peak host memory (VmHWM, reset at each phase start) and the framework's own
    device-memory peak where it reports one, attached to the phase-end marker."""

    def __init__(self, fw: Any, enabled: bool) -> None:
        self.fw, self.enabled = fw, enabled
        self.resettable = False

    def at_start(self) -> None:
        if not self.enabled:
            return
        self.resettable = _reset_vm_hwm()
        reset = getattr(self.fw, "reset_memory_peak", None)
        if callable(reset):
            reset()

    def at_end(self) -> dict[str, Any]:
        if not self.enabled:
            return {}
        out: dict[str, Any] = {
            "peak_rss": _vm_hwm_bytes(),
            "peak_rss_method": "VmHWM reset at phase start"
            if self.resettable
            else "VmHWM since process start (reset unavailable)",
        }
        peak = getattr(self.fw, "memory_peak", None)
        if callable(peak):
            value, source = peak()
            out["device_peak"], out["device_peak_source"] = value, source
        return out


def _synthetic_kind(model: str, options: dict[str, Any]) -> dict[str, Any]:
    """Input kind, task and (for token classifiers) vocabulary the model needs from synthetic data."""
    import importlib

    from dlbench import registry

    spec = registry.model(model)
    kind: dict[str, Any] = {"input_kind": spec.input_kind, "task": spec.task}
    if spec.input_kind == "tokens" and spec.task == "classify" and spec.builtin:
        # Token ids must stay inside the model's embedding table (a user's token model
        # gets the synthetic default vocabulary).
        package = importlib.import_module(f"dlbench.models.{model}")
        kind["vocab"] = package.token_vocab(spec.resolve_options(options))
    return kind


def _qualified(function: Any) -> str:
    return f"{getattr(function, '__module__', '?')}:{getattr(function, '__qualname__', repr(function))}"


def load_arrays(case: Case, protocol: ProtocolSpec) -> Any:
    from dlbench import registry
    from dlbench.datasets import SyntheticOptions
    from dlbench.datasets.arrays import Arrays

    synthetic = None
    if case.synthetic:
        # [*shape, classes, train_size, test_size]; the shape's length follows the
        # model's input kind ((H, W, C), (T,) or (T, F)), and the model's task
        # decides what the labels are (see dlbench.datasets.synthetic).
        *shape, classes, n_train, n_test = case.synthetic
        synthetic = SyntheticOptions(
            tuple(shape), classes, n_train, n_test, **_synthetic_kind(case.model, dict(case.model_options))
        )
    arrays = registry.dataset(case.dataset).load(protocol.data_dir, synthetic, case.seed)
    arrays = Arrays(
        arrays.name,
        arrays.train.head(case.train_samples),
        arrays.test.head(case.test_samples),
        arrays.num_classes,
    )
    spec = registry.model(case.model)
    return as_targets(arrays, spec.task, spec.heads)


def as_targets(arrays: Any, task: str, heads: Any = None) -> Any:
    """A regression model's targets as float32 (N, K): class ids, integers as stored
    (counts, ratings), become one target each (plan.task_reason allowed that pairing);
    so too each regress head of a model of several outputs (`heads`: head -> task)."""
    import numpy as np

    from dlbench.datasets.arrays import Arrays, ArraySplit

    if heads:
        if not isinstance(arrays.train.y, dict) or set(arrays.train.y) != set(heads):
            held = ", ".join(arrays.train.y) if isinstance(arrays.train.y, dict) else "one y"
            raise ValueError(
                f"the model's outputs are {', '.join(heads)}; the data's are {held}: save y_train_<name> and "
                "y_test_<name> for each output"
            )

        def per_head(split: Any) -> Any:
            y = {
                h: a.astype(np.float32).reshape(len(a), -1) if heads[h] == "regress" and a.dtype != np.float32 else a
                for h, a in split.y.items()
            }
            return ArraySplit(split.x, y)

        train = per_head(arrays.train)
        classes = {
            h: int(train.y[h].shape[1]) if heads[h] == "regress" else arrays.num_classes[h] for h in arrays.train.y
        }
        return Arrays(arrays.name, train, per_head(arrays.test), classes)
    if task != "regress" or arrays.train.y.dtype == np.float32:
        return arrays

    def values(split: Any) -> Any:
        return ArraySplit(split.x, split.y.astype(np.float32).reshape(len(split.y), -1))

    return Arrays(arrays.name, values(arrays.train), values(arrays.test), int(values(arrays.train).y.shape[1]))


def run_trial(spec: TrialSpec, emit: Emitter) -> bool:
    """Run one trial (or, for a case with one process per replica, launch its
    ranks); False when a rank failed (its error already emitted)."""
    from dlbench.launchers.ranks import context_for
    from dlbench.registry import multiprocess

    case = spec.case
    dist = spec.dist
    if dist is None and case.distributed:
        dist = context_for(
            case.strategy, case.world_size, threads=case.threads, device=case.device, batch_scope=case.batch_scope
        )
        if multiprocess(case.strategy):  # at world size 1 too: the same launch path, rendezvous included
            from dlbench.launchers.multiprocess import launch

            return launch(spec, emit)
    _run_process(spec, emit, dist)
    return True


class _DistributedBuilder:
    """Builds the data-parallel trainer where the phases ask the adapter for one."""

    def __init__(self, module: Any, fw: Any, dist: DistContext) -> None:
        self.module, self.fw, self.dist = module, fw, dist

    def build(self, native: Any, settings: Any) -> Any:
        return self.module.build(self.fw, native, settings, self.dist)


def _run_process(spec: TrialSpec, emit: Emitter, dist: DistContext | None) -> None:
    import importlib

    from dlbench import registry, runtime_settings
    from dlbench.launchers.ranks import rank_environment
    from dlbench.registry import framework as get_info
    from dlbench.registry import multiprocess
    from dlbench.registry import strategy_module as module_for

    case, protocol = spec.case, spec.protocol
    # The user's own model or data, named for this run (never read from a database).
    registry.adopt(spec.sources)
    process: list[dict[str, Any]] = []

    def record(metric: str, value: float, unit: str) -> None:
        process.append(
            {
                "repeat": None,
                "warmup": False,
                "phase": "process",
                "metric": metric,
                "value": value,
                "unit": unit,
                "seq": None,
            }
        )

    relative = protocol.memory_limit_relative
    threads = case.threads if dist is None else dist.threads
    if dist is not None:
        # Before the framework's import: some of it (XLA_FLAGS, OMP_NUM_THREADS) is read then.
        os.environ.update(rank_environment(case.framework, dist, dict(os.environ)))
    affinity = pin_threads(threads, 0 if dist is None else dist.rank * dist.threads)
    info = get_info(case.framework)
    t0 = time.perf_counter_ns()
    fw = info.load_adapter()  # imports the framework
    record("import_time", (time.perf_counter_ns() - t0) / 1e9, "s")
    module: Any = None
    joined: dict[str, Any] = {}
    # TensorFlow's strategies must be set up before the runtime starts (logical CPU
    # devices, collective ops "configured at program startup"), i.e. before fw.setup.
    # The runtime settings an adapter applies in-process (malloc-fixed is the worker's
    # environment, set by its parent); given only where there are some, so that a
    # plugin adapter written before `runtime` existed is called as it expects.
    in_process = tuple(n for n in runtime_settings.applied(case.framework, case.runtime) if n != "malloc-fixed")
    runtime: dict[str, Any] = {"runtime": in_process} if in_process else {}
    early = dist is not None and _setup_first(module_for(case.framework, case.strategy))
    if dist is not None and early:
        module = importlib.import_module(module_for(case.framework, case.strategy))
        t0 = time.perf_counter_ns()
        joined = module.setup(fw, dist, **runtime)
        record("rendezvous_time", (time.perf_counter_ns() - t0) / 1e9, "s")
    t0 = time.perf_counter_ns()
    manifest = fw.setup(
        variant=case.variant,
        threads=threads,
        seed=case.seed,
        device=case.device,
        **runtime,
    )
    record("setup_time", (time.perf_counter_ns() - t0) / 1e9, "s")
    builder: Any = fw
    if dist is not None:
        if not early:
            module = importlib.import_module(module_for(case.framework, case.strategy))
            t0 = time.perf_counter_ns()
            joined = module.setup(fw, dist, **runtime)
            record("rendezvous_time", (time.perf_counter_ns() - t0) / 1e9, "s")
        manifest = {**manifest, **joined, **_dist_facts(case, dist)}
        builder = _DistributedBuilder(module, fw, dist)
        if multiprocess(dist.strategy):
            emit("ready", rank=dist.rank)
    try:
        _measure(spec, emit, fw, builder, manifest, affinity, dist, record, relative)
    finally:
        if module is not None:
            module.shutdown(fw, dist)
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    record("peak_rss", rss_kib * 1024.0, "bytes")
    emit("measurements", repeat=None, rows=process)


def _setup_first(module_name: str) -> bool:
    import importlib

    return bool(getattr(importlib.import_module(module_name), "SETUP_BEFORE_ADAPTER", False))


def _dist_facts(case: Case, dist: DistContext) -> dict[str, Any]:
    return {
        "strategy": dist.strategy,
        "world_size": dist.world_size,
        "rank": dist.rank,
        "processes": dist.processes,
        "replicas_per_process": dist.local_replicas,
        "batch_scope": case.batch_scope,
        "global_batch": case.global_batch,
        "per_replica_batch": case.global_batch // dist.world_size,
        "threads_per_replica": case.threads,
        "process_threads": dist.threads,
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
    }


def _measure(
    spec: TrialSpec,
    emit: Emitter,
    fw: Any,
    builder: Any,
    manifest: dict[str, Any],
    affinity: list[int] | None,
    dist: DistContext | None,
    record: Any,
    relative: bool,
) -> None:
    from dlbench import allocator, registry, runtime_settings
    from dlbench.datasets import inputs as xs
    from dlbench.trial.output_check import verifier
    from dlbench.trial.phases import repeat_seed, run_repeat, token_rows

    case, protocol = spec.case, spec.protocol
    t0 = time.perf_counter_ns()
    arrays = load_arrays(case, protocol)
    native = fw.prepare(arrays)
    record("data_load_time", (time.perf_counter_ns() - t0) / 1e9, "s")
    if relative and protocol.memory_limit_bytes:
        limits = limit_memory_above_now(protocol.memory_limit_bytes)
    else:
        limits = limit_memory_after_load(protocol.memory_limit_bytes)
    manifest = {
        **manifest,
        **limits,
        "cpu_affinity": affinity,
        "precision": case.precision,
        "layout": case.layout,
        "data_pipeline_setting": case.pipeline,
        "train_samples": len(arrays.train),
        "test_samples": len(arrays.test),
        "input_shape": xs.apply(list, arrays.input_shape),
        "num_classes": arrays.num_classes,
        "last_batch": "drop",
        "timer": "time.perf_counter_ns after device synchronization",
        # What a hand-timed figure must match to compare (docs/measurement.md "Why your own timing
        # differs"): torch.utils.benchmark.Timer, for one, times with 1 thread by default.
        "timed_threads": case.threads if dist is None else dist.threads,
        "allocator": allocator.facts(),
        "runtime": case.runtime,
        "runtime_applied": list(runtime_settings.applied(case.framework, case.runtime)),
    }
    if protocol.loss_curve:
        manifest["loss_curve_steps"] = protocol.loss_curve
    # The seed each repeat really trains with (warm-ups first): the case's seed is the run's,
    # offset per block and repeat (phases.repeat_seed), so the stored case alone does not say it.
    manifest["seeds"] = [repeat_seed(case.seed, spec.block, r) for r in range(protocol.warmup + protocol.repeats)]
    model_spec = registry.model(case.model)
    manifest["task"], manifest["loss"] = model_spec.task, model_spec.loss
    if model_spec.heads:  # several named outputs: each head's task, loss and weight in the summed loss
        manifest["outputs"] = {
            head: {"task": task, "loss": model_spec.head_losses[head], "weight": model_spec.loss_weights[head]}
            for head, task in model_spec.heads.items()
        }
    own_loss = model_spec.losses.get(case.framework)
    if own_loss is not None:  # the training objective is the user's (the quality metric is the task's)
        manifest["loss_function"] = own_loss if isinstance(own_loss, str) else _qualified(own_loss)
    emit("manifest", manifest=manifest)

    memory = PhaseMemory(fw, "memory" in protocol.sampler_names)

    def marker(**fields: Any) -> None:
        # Memory bookkeeping stays outside the timed region: before the start
        # stamp, after the end stamp.
        if fields["edge"] == "start":
            memory.at_start()
            emit("marker", t=time.monotonic_ns(), **fields)
        else:
            t = time.monotonic_ns()
            emit("marker", t=t, **fields, **memory.at_end())

    def facts(**learned: Any) -> None:
        if any(manifest.get(k) != v for k, v in learned.items()):
            manifest.update(learned)
            emit("manifest", manifest=manifest)

    calibration: dict[str, Any] = {}  # the inference pass count, set by the first repeat
    next_token = registry.model(case.model).task == "next-token"
    # A user's network against its task, on the first repeat's network (one line if it does not fit).
    verify = verifier(registry.model(case.model), case.framework, arrays) if dist is None else None
    for repeat in range(protocol.warmup + protocol.repeats):
        rows = run_repeat(
            builder,
            native,
            case,
            protocol,
            repeat,
            len(arrays.train),
            marker,
            facts,
            calibration,
            dist,
            spec.block,
            verify if repeat == 0 else None,
        )
        if next_token:
            rows += token_rows(rows, arrays.input_shape[0])
        emit("measurements", repeat=repeat, rows=[asdict(m) for m in rows])
    if protocol.profile_steps and dist is None:
        _profile(builder, native, case, protocol, facts, emit)


def _profile(fw: Any, native: Any, case: Case, protocol: ProtocolSpec, facts: Any, emit: Emitter) -> None:
    """The profile phase (dlbench.trial.profiling), after every timed repeat was sent:
    a profiler that fails costs the profile, never the trial's measurements."""
    from dlbench.trial.profiling import profile_phase

    try:
        rows, learned = profile_phase(fw, native, case, protocol)
    except Exception as exc:  # noqa: BLE001 - any profiler failure is reported as a fact of the trial
        facts(profile_error=f"{type(exc).__name__}: {str(exc)[:500]}")
        return
    facts(**learned)
    if rows:
        emit("measurements", repeat=None, rows=rows)


PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int | None) -> None:
    """Never outlive the runner. The worker runs in a session of its own (so that a
    timeout can kill its whole process group), which also shields it from the
    signals that end the runner; without this, a runner killed by SIGKILL left its
    worker computing, and writing nothing, until its next event (seconds) or forever
    (a hung one). Two mechanisms, because each covers what the other cannot:

    - the kernel sends SIGKILL to this process when the parent dies
      (prctl PR_SET_PDEATHSIG; works while the GIL is held by native code, e.g. an
      import stuck in a BLAS allocator), checked against the pid the runner passed
      in case it died before the prctl;
    - a thread reads stdin, which the runner keeps open, to its end, and then kills
      the whole process group, children a framework started included."""
    if parent_pid is not None and sys.platform == "linux":
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent_pid:
            os._exit(70)


def _watch_lifeline() -> None:
    import signal
    import threading

    # A private duplicate of fd 0, read with os.read: a daemon thread blocked inside
    # sys.stdin's buffered reader holds its lock, and the interpreter's shutdown then
    # aborts ("could not acquire lock for <stdin> at interpreter shutdown").
    fd = os.dup(0)

    def wait_for_eof() -> None:
        _wait_for_eof(fd)
        if os.getpgrp() == os.getpid():
            os.killpg(0, signal.SIGKILL)
        os._exit(70)

    threading.Thread(target=wait_for_eof, name="dlbench-lifeline", daemon=True).start()


def _wait_for_eof(fd: int) -> None:
    """Block until the other end of `fd` closes (or the read fails)."""
    try:
        while os.read(fd, 65536):
            pass
    except OSError:
        pass


def _silence(fd: int) -> None:
    """Point `fd` at /dev/null (in a forked child: the event pipe is the worker's alone)."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, fd)
        os.close(null)
    except OSError:
        pass


def _parent_pid(argv: list[str]) -> int | None:
    if "--parent-pid" in argv:
        try:
            return int(argv[argv.index("--parent-pid") + 1])
        except (IndexError, ValueError):
            return None
    return None


def main() -> int:
    parent = _parent_pid(sys.argv[1:])
    die_with_parent(parent)
    # A user's model file imported here must not start runs of its own (dlbench.run
    # refuses inside a worker): that would fork workers without end.
    os.environ["DLBENCH_WORKER"] = "1"
    events = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)
    # A process the model forks (os.fork, multiprocessing's fork) would hold the event pipe
    # open past the worker's exit: in the child it points at /dev/null instead.
    os.register_at_fork(after_in_child=lambda: _silence(events.fileno()))
    emit = Emitter(events)
    emit("started", pid=os.getpid(), t=time.monotonic_ns())
    try:
        spec = TrialSpec.from_json(sys.stdin.readline())
        if parent is not None:
            _watch_lifeline()
        if not run_trial(spec, emit):
            return 1
    except BaseException as exc:  # noqa: BLE001 - every failure must reach the parent as data
        emit(
            "error",
            type=type(exc).__name__,
            message=str(exc)[:4000],
            traceback=traceback.format_exc()[-8000:],
            oom=is_oom(exc),
        )
        return 1
    emit("done")
    if "--rank" in sys.argv[1:]:
        # Every result of this rank has reached the launcher. torch 2.13's interpreter
        # teardown after a gloo job can abort in C++ ("terminate called without an
        # active exception"): once in CI after a DDP rank's profiled steps, and in half
        # the plain torchrun runs of benchmarks/standalone/torch_ddp.py, after
        # destroy_process_group and main() had returned, with no Python frame. The
        # launcher ignores a rank's exit after "done" anyway: end here, before it.
        sys.stdout.flush()
        sys.stderr.flush()
        # But not before every rank is done: the launcher closes the ranks' stdin once all
        # have said "done". Rank 0 hosts TensorFlow's coordination service (and torch's
        # TCPStore); a rank 0 that ended first aborted a peer still between its last
        # collective and its "done" (SIGABRT from the coordination agent, once in CI).
        _wait_for_eof(0)
        os._exit(0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
