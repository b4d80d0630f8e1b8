"""JAX's data-parallel strategies for dlbench: one process over a device mesh
("sharded") and one process per replica under jax.distributed ("multiworker").

The worker drives this module around the adapter (dlbench.frameworks.jax):

    fw.setup(variant=..., threads=ctx.threads, seed=..., device=ctx.device)
    setup(fw, ctx)              # builds the mesh (sharded) / joins the job (multiworker)
    native = fw.prepare(arrays)
    trainer = build(fw, native, settings, ctx)   # per repeat; settings.batch_size is global
    ... first_step, train, evaluate ...
    shutdown(fw, ctx)

Both strategies are the same program, written the way JAX documents data
parallelism: a `jax.sharding.Mesh` with one axis "data", parameters and
optimizer state replicated (`NamedSharding(mesh, P())`), each batch split along
its first axis (`P("data")`), and the adapter's own jitted step, unchanged.
jit compiles it for the shardings of its inputs and XLA's SPMD partitioner
does the rest: each device gathers and trains on its shard of the batch, and
one all-reduce (gradients and loss together, inserted by the partitioner)
makes every replica's update the global-batch update. The adapter's step
gathers the batch inside the compiled function from the preloaded training set
(replicated) and a row of the epoch's index table; here the table is sharded
by columns, so device r gathers exactly columns [r*B/N, (r+1)*B/N) of row i.

"sharded": one process, ctx.world_size devices (on a CPU, host devices made by
XLA_FLAGS=--xla_force_host_platform_device_count=N, which
dlbench.distributed.environ sets before JAX is imported).

"multiworker": ctx.processes processes, each with one local device, joined by
`jax.distributed.initialize` (rank 0 runs the coordinator at ctx.coordinator);
cross-process collectives on a CPU go through gloo
(`jax_cpu_collectives_implementation`). The mesh spans every process's device;
global arrays are assembled from each process's local device array
(`jax.make_array_from_single_device_arrays`), since XLA:CPU cannot
`device_put` to another process's device.

Order: `jax.distributed.initialize` must run before the XLA backend exists,
and the adapter's `fw.setup` creates it (it queries the devices). So the
multiworker setup() works in either order:

- BEFORE fw.setup (preferred, and required on a GPU): it joins the job first;
  fw.setup then picks this process's own device from `jax.local_devices()`.
- AFTER fw.setup (the worker's order; CPU only): the backend fw.setup created
  (single-process, no collectives) is discarded with
  `jax.extend.backend.clear_backends()`, the job is joined, and fw.device and
  `jax_default_device` are pointed at the new backend's local device. Nothing
  was computed or placed before, so nothing is lost; the manifest says which
  path ran. On a GPU that would have let every rank's first backend claim
  (preallocate) every visible GPU, so it is refused there.

Data order: the adapter's trainer draws each epoch's permutation with
`_epoch_plan` from keys split off the repeat's seed; the distributed trainer is
built by the adapter's own `fw.build` (same init, same keys) and runs the same
plan, so global batch i is the single run's batch i, replica r training on
contiguous shard r of it. The loss of a step is the mean over the global batch,
computed inside the step (the all-reduce above): the global loss.

Cost, measured (jax 0.10.2, 2-core CPU, mlp at global batch 32): sharded
0.54 ms a step (single process 0.27 ms). multiworker 7 ms a step unpinned, 18 ms
with each rank pinned to its own core (gloo's threads then share it with XLA's):
XLA:CPU runs each operand of the partitioner's combined all-reduce (5 for the
mlp: every kernel and bias, and the loss) as its own gloo collective, about
1 ms each here. That is JAX's own multi-process CPU path as shipped; the
trainer's manifest lists the collectives (instructions and payload bytes).
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from dlbench.distributed import DistContext, communication_result, covered
from dlbench.frameworks.jax import JaxData, JaxFramework, JaxTrainer, _backends_initialized, _epoch_plan, _platform
from dlbench.frameworks.protocol import TrainSettings

AXIS = "data"
# A rank whose peer never arrives fails after this long instead of waiting the
# default 5 minutes (torch_dist uses the same bound).
RENDEZVOUS_TIMEOUT_S = 120
# sharded on CPU: the host waits for every IN_FLIGHT_STEPS-th training step. XLA:CPU's
# in-process all-reduce between host devices deadlocked with deeper queues of
# multi-device steps (jax 0.10.2, 2 host devices on 2 cores, LeNet-5: 20 queued
# steps ran, 30 and more stopped in the rendezvous, "Expected 2 threads to join ...
# only 1 of them arrived", then SIGABRT at 40 s; jax_cpu_enable_async_dispatch does
# not apply to multi-device computations). Waiting every 8 steps ran 100 steps; it
# costs one dispatch gap per 8 steps.
IN_FLIGHT_STEPS = 8
# JAX's own name for the CPU collectives switch (jax 0.10.2: this option, whose
# default is already "gloo"; set explicitly so that the manifest states what ran).
CPU_COLLECTIVES_OPTION = "jax_cpu_collectives_implementation"
CPU_COLLECTIVES = "gloo"
# Collective instructions of XLA's HLO text (async variants on GPUs: "-start").
_COLLECTIVE = re.compile(
    r"= (?P<type>.+?) (?P<op>all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute)(?:-start)?\("
)
_SHAPE = re.compile(r"\b(?P<dtype>[a-z]+\d*)\[(?P<dims>[\d,]*)\]")
# The same instructions as jax.profiler names their execution: XLA:CPU traces each
# thunk under its HLO instruction name ("all-reduce", "all-reduce.3"); the wait for the
# peers ("Rendezvous") is nested inside, so it is counted once.
_COLLECTIVE_EVENT = re.compile(
    r"^(all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute)(-start|-done)?(\.\d+)?$"
)


@dataclass
class _Session:
    """What setup() established for this process."""

    strategy: str
    mesh: Mesh
    multiprocess: bool


_session: _Session | None = None
# The training set on the mesh, for the last prepared dataset: (its local train_x,
# replicated x, replicated y). Placed by the first build of a trial, reused by the
# next ones (an augmentation pipeline's build makes a new JaxData, same train_x).
_replicated_data: tuple[jax.Array, jax.Array, jax.Array] | None = None
# (mesh, n, steps, batch, shuffle) -> the epoch plan jitted with the mesh's shardings.
_plans: dict[tuple[Any, ...], Callable[..., Any]] = {}
# (step function, batch, mesh) -> the collectives of its compiled program (manifest).
_collectives: dict[tuple[Any, ...], dict[str, Any]] = {}


def setup(fw: JaxFramework, ctx: DistContext, runtime: tuple[str, ...] = ()) -> dict[str, Any]:
    """Build the mesh (sharded) or join the job and build the global mesh
    (multiworker); the manifest entries. See the module docstring for when it
    may run (multiworker: before or after fw.setup; sharded: after)."""
    if ctx.strategy == "sharded":
        return _setup_sharded(fw, ctx)
    if ctx.strategy == "multiworker":
        return _setup_multiworker(fw, ctx)
    raise ValueError(f"jax has no data-parallel strategy {ctx.strategy!r} (sharded, multiworker)")


def _common(mesh: Mesh) -> dict[str, Any]:
    devices = list(mesh.devices.flat)
    return {
        "replicas": int(mesh.devices.size),
        "mesh_shape": {name: int(size) for name, size in mesh.shape.items()},
        "mesh_devices": [str(d) for d in devices],
        "device_kinds": sorted({d.device_kind for d in devices}),
        "shardings": {
            "params": "NamedSharding(mesh, P()) (replicated)",
            "opt_state": "NamedSharding(mesh, P()) (replicated)",
            "batch": f"NamedSharding(mesh, P({AXIS!r})) (split along axis 0)",
            "train_set": "NamedSharding(mesh, P()) (every device holds it; each gathers its batch shard)",
            "index_table": f"NamedSharding(mesh, P(None, {AXIS!r})) (replica r: columns r*B/N..(r+1)*B/N-1)",
        },
        "step": "the adapter's jitted step, compiled for these shardings (jit sharding propagation)",
        "partitioner": "shardy" if jax.config.jax_use_shardy_partitioner else "gspmd",
        "collective": "all-reduce of gradients and loss, inserted by XLA's SPMD partitioner "
        "(counts and bytes per step: the trainer's manifest, 'collectives')",
        "data_sharding": "every process draws the single run's per-epoch permutation (_epoch_plan, keys from "
        "the repeat's seed); replica r trains on contiguous shard r of each global batch",
        "loss_reduction": "the step's mean loss over the global batch (the single run's loss, summed across "
        "replicas by the same all-reduce)",
        "evaluate": "every process evaluates the whole test split with its local copy of the replicated model",
        "jax_threefry_partitionable": bool(jax.config.jax_threefry_partitionable),
    }


def _setup_sharded(fw: JaxFramework, ctx: DistContext) -> dict[str, Any]:
    global _session
    if fw.device is None:
        raise RuntimeError("strategy sharded: call fw.setup() first (it chooses the platform)")
    devices = jax.local_devices(backend=fw.device.platform)
    if len(devices) < ctx.world_size:
        hint = (
            f" (set XLA_FLAGS={os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count="
            f"{ctx.world_size} before JAX is imported)"
            if fw.device.platform == "cpu"
            else ""
        )
        raise RuntimeError(
            f"strategy sharded at world size {ctx.world_size}: only {len(devices)} {fw.device.platform} devices{hint}"
        )
    # N devices, starting with the one fw.prepare() puts the data on.
    ordered = [fw.device, *(d for d in devices if d != fw.device)]
    mesh = Mesh(np.array(ordered[: ctx.world_size]), (AXIS,))
    _session = _Session("sharded", mesh, multiprocess=False)
    return {
        "strategy": "sharded",
        "backend": "XLA SPMD partitioner, one process",
        **_common(mesh),
        "processes": 1,
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "host_devices": len(devices),
    }


def _setup_multiworker(fw: JaxFramework, ctx: DistContext) -> dict[str, Any]:
    global _session
    platform = _platform(ctx.device)
    recreated = _backends_initialized()
    if recreated and platform != "cpu":
        raise RuntimeError(
            "strategy multiworker on a GPU: call jax_dist.setup() before fw.setup(); the backend fw.setup() "
            "created sees (and preallocates) every GPU of the machine in every rank"
        )
    if recreated:
        from jax.extend.backend import clear_backends

        # The single-process backend fw.setup() made is dropped before anything ran on it.
        clear_backends()
    if platform == "cpu":
        jax.config.update(CPU_COLLECTIVES_OPTION, CPU_COLLECTIVES)
        # One CPU device per process, whatever XLA_FLAGS the environment holds.
        jax.config.update("jax_num_cpu_devices", 1)
    jax.distributed.initialize(
        coordinator_address=ctx.coordinator,
        num_processes=ctx.processes,
        process_id=ctx.rank,
        # One GPU per rank (this machine's rank = its local rank); ignored on a CPU.
        local_device_ids=[ctx.rank] if platform == "gpu" else None,
        # No SLURM/MPI guessing: everything is given.
        cluster_detection_method="deactivate",
        initialization_timeout=RENDEZVOUS_TIMEOUT_S,
    )
    local = jax.local_devices(backend=platform)
    if fw.device is not None:
        # fw.setup() ran before: its device belonged to the discarded backend.
        fw.device = local[0]
        jax.config.update("jax_default_device", fw.device)
    if jax.process_index() != ctx.rank:
        raise RuntimeError(f"multiworker rank {ctx.rank}: jax.process_index() is {jax.process_index()}")
    # Rank order: position r of the mesh is rank r's device, so rank r holds shard r.
    devices = sorted(jax.devices(platform), key=lambda d: (d.process_index, d.id))
    if len(devices) != ctx.world_size:
        raise RuntimeError(f"multiworker: {len(devices)} devices in the job, world size {ctx.world_size}")
    mesh = Mesh(np.array(devices), (AXIS,))
    _session = _Session("multiworker", mesh, multiprocess=True)
    return {
        "strategy": "multiworker",
        "backend": f"jax.distributed + {CPU_COLLECTIVES} CPU collectives"
        if platform == "cpu"
        else "jax.distributed (XLA GPU collectives)",
        **_common(mesh),
        "processes": jax.process_count(),
        "rank": jax.process_index(),
        "device": str(local[0]),
        "devices": [str(d) for d in devices],
        "local_devices": [str(d) for d in local],
        "coordinator": ctx.coordinator,
        "initialize": "jax.distributed.initialize(coordinator_address, num_processes, process_id, "
        "cluster_detection_method='deactivate')",
        "rendezvous_timeout_s": RENDEZVOUS_TIMEOUT_S,
        CPU_COLLECTIVES_OPTION: getattr(jax.config, CPU_COLLECTIVES_OPTION),
        "jax_num_cpu_devices": jax.config.jax_num_cpu_devices,
        "backend_recreated": recreated,
        "setup_order": "after fw.setup: its single-process backend cleared (jax.extend.backend.clear_backends) "
        "and recreated for the job"
        if recreated
        else "before fw.setup: the job joined before any backend existed",
        "global_arrays": "jax.make_array_from_single_device_arrays from each process's local device array",
    }


def build(fw: JaxFramework, native: JaxData, settings: TrainSettings, ctx: DistContext) -> DataParallelTrainer:
    """A fresh model from the adapter's own build (same seed, init and compiled
    step), its state replicated over the mesh set up by setup()."""
    if _session is None or _session.strategy != ctx.strategy:
        raise RuntimeError(f"jax_dist.build: call setup() for strategy {ctx.strategy!r} first")
    if settings.batch_size % ctx.world_size:
        raise ValueError(f"global batch {settings.batch_size} does not split evenly over {ctx.world_size} replicas")
    return DataParallelTrainer(fw.build(native, settings), _session, ctx)


def shutdown(fw: JaxFramework, ctx: DistContext) -> None:
    """Leave the job (multiworker: jax.distributed.shutdown, which waits for every
    process); drop the mesh and the replicated data."""
    global _session, _replicated_data
    _session, _replicated_data = None, None
    _plans.clear()
    _collectives.clear()
    if ctx.strategy == "multiworker" and jax.distributed.is_initialized():
        jax.distributed.shutdown()


def _to_mesh(tree: Any, sharding: NamedSharding, multiprocess: bool) -> Any:
    """Arrays (on this process's device) as global arrays with `sharding`.

    One process: device_put. Several: each process gives its own local array
    (for a replicated sharding, the same value in every process: the same seed
    built it), since XLA:CPU cannot device_put to another process's device."""
    if not multiprocess:
        return jax.device_put(tree, sharding)
    return jax.tree.map(lambda a: jax.make_array_from_single_device_arrays(a.shape, sharding, [a]), tree)


def _plan_function(mesh: Mesh, n: int, steps: int, batch: int, shuffle: bool) -> Callable[..., Any]:
    """The adapter's `_epoch_plan` compiled for the mesh: every device computes the
    permutation (replicated keys in, a few microseconds) and keeps its columns of
    the index table; keys, loss sum and counter come out replicated."""
    key = (mesh, n, steps, batch, shuffle)
    if key not in _plans:
        replicated = NamedSharding(mesh, P())
        _plans[key] = jax.jit(
            partial(_epoch_plan, n=n, steps=steps, batch=batch, shuffle=shuffle),
            out_shardings=(NamedSharding(mesh, P(None, AXIS)), replicated, replicated, replicated),
        )
    return _plans[key]


def _bytes(type_text: str) -> int:
    sizes = {"pred": 1, "s8": 1, "u8": 1, "bf16": 2, "f16": 2, "s16": 2, "f32": 4, "s32": 4, "u32": 4, "f64": 8}
    total = 0
    for m in _SHAPE.finditer(type_text):
        count = int(np.prod([int(d) for d in m["dims"].split(",") if d])) if m["dims"] else 1
        total += count * sizes.get(m["dtype"], 4)
    return total


def _bounded(fn: Callable[..., Any], every: int) -> Callable[..., Any]:
    """`fn`, with the host waiting for its result on every `every`-th call."""
    calls = 0

    def call(*args: Any) -> Any:
        nonlocal calls
        out = fn(*args)
        calls += 1
        if calls % every == 0:
            jax.block_until_ready(out)
        return out

    return call


class DataParallelTrainer(JaxTrainer):
    """The adapter's trainer as fw.build made it (same init, keys and compiled
    functions), with its parameters, optimizer state and training data on the
    mesh. The adapter's first_step() and train() run unchanged: they call
    `_plan` (here: the mesh-sharded plan) and the jitted step, which jit compiles
    for the global arrays' shardings. evaluate() uses this process's local copy
    of the replicated model, so it runs no collective."""

    def __init__(self, base: JaxTrainer, session: _Session, ctx: DistContext) -> None:
        global _replicated_data
        # Everything the adapter set up, then the arrays replaced by global ones.
        vars(self).update(vars(base))
        self.ctx, self.mesh, self._multiprocess = ctx, session.mesh, session.multiprocess
        self.per_replica_batch = base.settings.batch_size // ctx.world_size
        replicated = NamedSharding(self.mesh, P())
        self._batch_sharding = NamedSharding(self.mesh, P(AXIS))
        self._local_data = base.data
        if _replicated_data is None or _replicated_data[0] is not base.data.train_x:
            # sharded: device_put keeps the first device's buffer and copies to the others;
            # multiworker: each process's own buffer, no copy.
            x, y = _to_mesh((base.data.train_x, base.data.train_y), replicated, self._multiprocess)
            _replicated_data = (base.data.train_x, x, y)
        self.data = replace(base.data, train_x=_replicated_data[1], train_y=_replicated_data[2])
        self.params, self.state, self.opt_state = _to_mesh(
            (base.params, base.state, base.opt_state), replicated, self._multiprocess
        )
        self._mesh_keys = _to_mesh((base._shuffle_key, base._dropout_key), replicated, self._multiprocess)
        self._plan_fn = _plan_function(
            self.mesh, base.data.n_train, base.steps_per_epoch, base.settings.batch_size, base.settings.shuffle
        )
        if base.augment is not None:
            self.augment = self._sharded_batches(base.augment)
        self._jitted_step = base.fns.step
        bounded = not self._multiprocess and self._device.platform == "cpu"
        if bounded:
            self.fns = replace(
                base.fns,
                step=_bounded(base.fns.step, IN_FLIGHT_STEPS),
                batch_step=_bounded(base.fns.batch_step, IN_FLIGHT_STEPS),
            )
        self.facts = {
            **base.facts,
            "per_replica_batch": self.per_replica_batch,
            "mesh_shape": {k: int(v) for k, v in self.mesh.shape.items()},
            "steps_in_flight": IN_FLIGHT_STEPS if bounded else "unbounded (the adapter's asynchronous dispatch)",
        }
        if base.augment is not None:
            self.facts["pipeline_note"] = (
                "every process runs the augmentation pipeline over the whole global batch (the single run's "
                "crops and flips) and places it split along the mesh"
                + (": N times the augmentation work of one replica" if self._multiprocess else "")
            )
        jax.block_until_ready((self.params, self.state, self.opt_state, self.data.train_x))

    def _plan(self, epoch: int) -> Any:
        return self._plan_fn(*self._mesh_keys, epoch)

    def _sharded_batches(self, batches_of: Callable[[int], Any]) -> Callable[[int], Any]:
        """The pipeline's global batches (on this process's device), split along the mesh."""
        sharding, rank, b = self._batch_sharding, self.ctx.rank, self.per_replica_batch

        def place(a: jax.Array) -> jax.Array:
            if not self._multiprocess:
                return jax.device_put(a, sharding)
            return jax.make_array_from_single_device_arrays(a.shape, sharding, [a[rank * b : (rank + 1) * b]])

        def batches(epoch: int) -> Iterator[tuple[jax.Array, jax.Array]]:
            for xb, yb in batches_of(epoch):
                yield place(xb), place(yb)

        return batches

    @contextlib.contextmanager
    def _replica(self) -> Iterator[None]:
        """This process's copy of the replicated model and its local data, for
        evaluation and inference (no collectives, the adapter's functions)."""
        saved = self.params, self.state, self.data

        def local(a: jax.Array) -> jax.Array:
            return next(s.data for s in a.addressable_shards if s.device == self._device)

        self.params, self.state = jax.tree.map(local, (self.params, self.state))
        self.data = self._local_data
        try:
            yield
        finally:
            self.params, self.state, self.data = saved

    def evaluate(self) -> float:
        with self._replica():
            return super().evaluate()

    def prepare_infer(self, batch_size: int) -> int:
        with self._replica():
            return super().prepare_infer(batch_size)

    def infer(self, batch_size: int) -> int:
        with self._replica():
            return super().infer(batch_size)

    def predict_batch(self, batch_size: int, index: int) -> None:
        with self._replica():
            super().predict_batch(batch_size, index)

    def train_fixed_batch(self, steps: int) -> list[float]:
        raise RuntimeError("conformance runs on the single adapter (jax.JaxTrainer), not a data-parallel trainer")

    def collectives(self) -> dict[str, Any]:
        """The collectives XLA put into the compiled training step (preloaded
        pipeline): per kind, instructions and the bytes of their results per step
        (for an all-reduce, the payload each replica contributes; what travels on the
        wire depends on the algorithm). Compiles the step once more (untimed; cached
        per step function, batch and mesh)."""
        step: Any = self._jitted_step  # a jax.jit function: it has .lower()
        key = (step, self.settings.batch_size, self.mesh)
        if key not in _collectives:
            table, keys, zero, i = self._plan(0)
            args = (self.params, self.state, self.opt_state, zero, i, self.data.train_x, self.data.train_y, table, keys)
            text = step.lower(*args).compile().as_text() or ""
            found: dict[str, Any] = {}
            for m in _COLLECTIVE.finditer(text):
                entry = found.setdefault(m["op"], {"instructions": 0, "payload_bytes_per_step": 0})
                entry["instructions"] += 1
                entry["payload_bytes_per_step"] += _bytes(m["type"])
            _collectives[key] = found
        return _collectives[key]

    def communication(self, steps: int) -> dict[str, Any]:
        """Untimed, after training: `steps` extra steps of the compiled training step under
        jax.profiler, on copies of the model and optimizer state (the step donates its
        inputs; the trained ones stay as they are).

        comm_share = time with a collective instruction in flight (the union of XLA's own
        trace events over the local devices, peer waits included) / wall time of the
        profiled steps. Every process
        runs this (the steps are collective); each reports its own devices."""
        if steps < 1:
            return {"comm_share": None, "comm_time_per_step": None, "source": "jax.profiler", "steps": 0}
        step: Any = self._jitted_step
        table, keys, loss_sum, i = self._plan(0)
        params, state, opt_state = jax.tree.map(lambda a: a.copy(), (self.params, self.state, self.opt_state))
        x, y = self.data.train_x, self.data.train_y
        # One step outside the profile: any first-call work lands here.
        params, state, opt_state, loss_sum, _, _ = step(params, state, opt_state, loss_sum, i, x, y, table, keys)
        jax.block_until_ready(params)
        run = _bounded(step, IN_FLIGHT_STEPS)  # the sharded deadlock above, whatever `steps` is
        with tempfile.TemporaryDirectory(prefix="dlbench-jax-profile-") as folder:
            with jax.profiler.trace(folder, create_perfetto_trace=True):
                t0 = time.perf_counter()
                for _ in range(steps):
                    params, state, opt_state, loss_sum, _, _ = run(
                        params, state, opt_state, loss_sum, i, x, y, table, keys
                    )
                jax.block_until_ready(params)
                wall = time.perf_counter() - t0
            names, comm_us = _collective_time(folder)
        devices = len(self.mesh.local_devices)
        comm_s = min(comm_us / 1e6, wall)  # time with a collective in flight on any local device
        return communication_result("jax.profiler", names, comm_s, wall, steps, local_devices=devices)

    def manifest(self) -> dict[str, Any]:
        return {**self.facts, "collectives": self.collectives()}


def _collective_time(folder: str) -> tuple[dict[str, int], float]:
    """Collective instructions in the Perfetto trace jax.profiler wrote under `folder`:
    ({name: count}, their summed duration in microseconds)."""
    names: dict[str, int] = {}
    spans: list[tuple[float, float]] = []
    for path in sorted(os.path.join(d, f) for d, _, fs in os.walk(folder) for f in fs if f == "perfetto_trace.json.gz"):
        with gzip.open(path, "rt") as f:
            data = json.load(f)
        events = data["traceEvents"] if isinstance(data, dict) else data
        for e in events:
            if e.get("ph") == "X" and _COLLECTIVE_EVENT.match(str(e.get("name", ""))):
                names[e["name"]] = names.get(e["name"], 0) + 1
                start = float(e.get("ts", 0.0))
                spans.append((start, start + float(e.get("dur", 0.0))))
    return names, covered(spans)
