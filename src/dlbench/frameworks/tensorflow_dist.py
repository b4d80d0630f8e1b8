"""TensorFlow's data-parallel strategies for dlbench: MirroredStrategy and
MultiWorkerMirroredStrategy around the adapter's own Keras model and train step.

The worker drives this module around the adapter (dlbench.frameworks.tensorflow),
in this order, which differs from the other frameworks' (see ORDER below):

    setup(fw, ctx)              # BEFORE fw.setup: logical CPUs / collectives, the strategy
    fw.setup(variant=..., threads=ctx.threads, seed=..., device=ctx.device)
    native = fw.prepare(arrays)
    trainer = build(fw, native, settings, ctx)   # per repeat; settings.batch_size is global
    ... first_step, train, step_losses, evaluate ...
    shutdown(fw, ctx)

"mirrored": tf.distribute.MirroredStrategy over ctx.world_size devices in one
process: the first world_size GPUs, or on a CPU world_size logical CPU devices
split from the one physical CPU (tf.config.set_logical_device_configuration; they
share the process's thread pools, intra-op = ctx.threads = threads x replicas).
Cross-device reduction: TensorFlow's default for these devices (TF 2.21 picks its
in-process CollectiveAllReduce; the class in force goes into the manifest).
Training: the adapter's own model.fit (FitTrainer).

"multiworker": tf.distribute.MultiWorkerMirroredStrategy, one process per replica,
the cluster read from TF_CONFIG (dlbench.launchers.ranks.rank_environment),
collectives over gRPC on 127.0.0.1 with CommunicationImplementation.RING on a CPU
and NCCL on a GPU (each process then sees only the GPU of its rank). Training:
fit's loop around Keras' own train_step, written out because keras 3.15's fit fails
under this strategy (LoopTrainer).

ORDER. The strategies must be set up before TensorFlow initializes its runtime, and
the adapter's fw.setup initializes it (it lists the logical devices): logical CPU
devices cannot be changed afterwards ("Virtual devices cannot be modified after
being initialized") and MultiWorkerMirroredStrategy refuses ("Collective ops must
be configured at program startup"). So setup() runs before fw.setup, and sets what
fw.setup would set before initialization, with the same values (GPUs hidden on a
CPU run, intra-op threads = ctx.threads, the adapter's inter-op threads): TF's
setters return silently when the value does not change, so the adapter's setup then
runs unchanged and its manifest records what is in force. SETUP_BEFORE_ADAPTER says
so to the worker. Called too late, setup() raises a RuntimeError saying so (only
mirrored over GPUs would not need the early call).

Data and loss, both strategies: the model is the adapter's (fw.build inside
strategy.scope(): same builder, seed, init, optimizer and compile as a single run;
Keras creates mirrored variables), the data the adapter's tf.data pipeline (same
seeded shuffle). Its distributed dataset splits each global batch into contiguous
per-replica shards, replica r taking shard r (with several workers: every worker
runs the whole pipeline, auto-shard policy DATA keeps its shard). Keras' loss scales
each replica's mean loss by 1 / replicas and its optimizer sums the gradients over
the replicas: the gradient of the global-batch mean; the reported loss is the mean
of the replicas' losses. Every dataset iterator is one the single run's fit makes
too, because each new iterator of a reshuffling dataset draws the next shuffle
(see NoPeek and LoopTrainer._segments): step i trains on the single run's batch i.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import re
import tempfile
import time
from collections.abc import Iterator
from typing import Any

# The worker imports the adapter (which sets KERAS_BACKEND and TF's log level before
# TensorFlow's import) before this module.
import numpy as np
import tensorflow as tf

from dlbench.distributed import DistContext, communication_result, covered
from dlbench.frameworks.protocol import TrainSettings
from dlbench.frameworks.tensorflow import (
    KerasTrainer,
    TensorFlowFramework,
    TFData,
    _device_name,
    _set_threads,
    losses_from_running_means,
)

STRATEGIES = ("mirrored", "multiworker")
# The worker calls setup() before the adapter's setup() (see ORDER in the docstring).
SETUP_BEFORE_ADAPTER = True

ORDER_ERROR = (
    "tensorflow_dist.setup() must run before TensorFlowFramework.setup() (and before any other "
    "TensorFlow op): TensorFlow's runtime is already initialized, so {what}"
)

# The strategy of this process, created by setup() and used by every build().
_strategy: Any = None
# Collective ops as the TensorFlow profiler names their execution (on the collective
# executor's threads, peer waits included); NCCL's op on GPUs. Seen on this CPU:
# CollectiveReduceV2, once per replica per step, for both strategies.
_COLLECTIVE_OP = re.compile(
    r"^(Collective(Reduce|Gather|BcastSend|BcastRecv|AllToAll|ReduceScatter)V\d|NcclAllReduce)$"
)


def setup(fw: TensorFlowFramework, ctx: DistContext, runtime: tuple[str, ...] = ()) -> dict[str, Any]:
    """Create this process's strategy; the manifest entries.

    Call it BEFORE fw.setup(variant=..., threads=ctx.threads, seed=..., device=ctx.device)
    and before any other TensorFlow op (see ORDER in the module docstring): it hides the
    GPUs on a CPU run and sets the thread pools as fw.setup will (same values), splits
    the CPU into logical devices (mirrored) or configures the collectives and joins the
    cluster in TF_CONFIG (multiworker; this waits for every worker to start).
    """
    global _strategy
    if ctx.strategy not in STRATEGIES:
        raise ValueError(f"tensorflow has no data-parallel strategy {ctx.strategy!r} ({', '.join(STRATEGIES)})")
    device = _device_name(ctx.device)
    on_cpu = device.startswith("/CPU")
    if on_cpu:
        # What fw.setup does first; it must precede the runtime's initialization, which
        # creating a strategy triggers.
        try:
            tf.config.set_visible_devices([], "GPU")
        except RuntimeError as exc:
            raise RuntimeError(ORDER_ERROR.format(what="the GPUs can no longer be hidden")) from exc
    # `runtime`: the case's runtime settings, as fw.setup is given them.
    threads = _set_threads(ctx.threads, "interop-fixed" in runtime)
    if threads["inter_op_threads_note"].startswith("not changed"):
        raise RuntimeError(ORDER_ERROR.format(what=f"the thread pools are fixed ({threads['inter_op_threads_note']})"))
    if ctx.strategy == "mirrored":
        _strategy, manifest = _setup_mirrored(ctx, on_cpu)
    else:
        _strategy, manifest = _setup_multiworker(ctx, on_cpu)
    return {
        **manifest,
        "replicas": int(_strategy.num_replicas_in_sync),
        "devices": [str(d) for d in _strategy.extended.worker_devices],
        "process_intra_op_threads": threads["intra_op_threads"],
        "process_inter_op_threads": threads["inter_op_threads"],
        "setup_order": "tensorflow_dist.setup before the adapter's setup (strategy created before TensorFlow's "
        "runtime initialized; GPUs hidden and thread pools set there, with the adapter's values)",
        "model_build": "the adapter's build (builder, seed, init, optimizer, compile) inside strategy.scope()",
        "loss_reduction": "each replica's mean loss over its shard, scaled by 1/replicas (Keras' loss under a "
        "strategy); gradients all-reduced (sum) by the Keras optimizer: the gradient of the global-batch mean "
        "loss. The reported loss is Keras' loss tracker averaged over the replicas",
        "evaluate": "every process predicts the whole test split with the replicated model's weights "
        "(the adapter's forward, model(x, training=False), outside the strategy: no collective)",
        **_LOOPS[ctx.strategy],
    }


_LOOPS: dict[str, dict[str, str]] = {
    "mirrored": {
        "training_loop": "the adapter's Keras model.fit on its tf.data pipeline (as a single run)",
        "data_sharding": "the single run's tf.data pipeline (same seeded shuffle); MirroredStrategy's "
        "distributed dataset splits each global batch into world_size contiguous shards, replica r taking "
        "shard r",
        "fit_symbolic_build": "Keras' per-fit symbolic build under a strategy takes a batch of the training "
        "set's own first rows instead of pulling one from a fresh dataset iterator (which would advance the "
        "reshuffle by an epoch); see dlbench.frameworks.tensorflow_dist.NoPeek",
        "step_losses": "as single runs: Keras' running-mean loss after each batch (a callback on Keras' "
        "asynchronous batch-end dispatch), differenced after training",
    },
    "multiworker": {
        "training_loop": "fit's loop written out (keras 3.15's fit fails under MultiWorkerMirroredStrategy, "
        "tensorflow/tensorflow#72388): strategy.run(model.train_step) in fit's two tf.functions, the loss "
        "tracker reset per epoch, the dataset iterators fit makes; no callbacks, and no per-step reduction "
        "of the logs across workers (one after the loop); see dlbench.frameworks.tensorflow_dist.LoopTrainer",
        "data_sharding": "every worker runs the single run's tf.data pipeline (same seeded shuffle); the "
        "distributed dataset rebatches each global batch into world_size contiguous shards and auto-shard "
        "policy DATA (set explicitly) gives worker w shard w",
        "step_losses": "train_step's running-mean loss after each of the first steps, kept on the device, "
        "averaged over the workers by one all-reduce after the loop, differenced as in single runs",
    },
}


def _setup_mirrored(ctx: DistContext, on_cpu: bool) -> tuple[Any, dict[str, Any]]:
    n = ctx.world_size
    if on_cpu:
        cpu = tf.config.list_physical_devices("CPU")[0]
        try:
            tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(n)])
        except RuntimeError as exc:
            raise RuntimeError(ORDER_ERROR.format(what=f"the CPU cannot be split into {n} logical devices")) from exc
        devices = [f"/CPU:{i}" for i in range(n)]
        note = f"{n} logical CPU devices on one physical CPU, sharing the process's thread pools"
    else:
        gpus = tf.config.list_physical_devices("GPU")
        if len(gpus) < n:
            raise RuntimeError(f"strategy mirrored at world size {n} needs {n} GPUs; {len(gpus)} visible")
        devices = [f"/GPU:{i}" for i in range(n)]
        note = f"the first {n} GPUs"
    strategy = tf.distribute.MirroredStrategy(devices=devices)
    cross = getattr(strategy.extended, "_cross_device_ops", None)  # the default TF chose; no public getter
    return strategy, {
        "strategy": "mirrored",
        "tf_strategy": "tf.distribute.MirroredStrategy",
        "launcher": "one process",
        "device_note": note,
        "collective": f"{type(cross).__name__ if cross is not None else 'default'} (TensorFlow's default "
        "cross-device ops for these devices) all-reducing the gradients once per step",
    }


def _setup_multiworker(ctx: DistContext, on_cpu: bool) -> tuple[Any, dict[str, Any]]:
    config = json.loads(os.environ.get("TF_CONFIG") or "{}")
    workers = list(config.get("cluster", {}).get("worker", []))
    task = config.get("task", {})
    if len(workers) != ctx.processes or task.get("index") != ctx.rank or task.get("type") != "worker":
        raise RuntimeError(
            f"TF_CONFIG {os.environ.get('TF_CONFIG')!r} does not match rank {ctx.rank} of {ctx.processes} workers "
            "(dlbench.launchers.ranks.rank_environment sets it before TensorFlow is imported)"
        )
    impl = tf.distribute.experimental.CommunicationImplementation
    if on_cpu:
        communication = impl.RING
    else:
        # One GPU per worker process, the one of its rank, hidden from the others.
        gpus = tf.config.list_physical_devices("GPU")
        if ctx.rank >= len(gpus):
            raise RuntimeError(f"multiworker rank {ctx.rank}: only {len(gpus)} GPUs are visible")
        try:
            tf.config.set_visible_devices([gpus[ctx.rank]], "GPU")
        except RuntimeError as exc:
            raise RuntimeError(ORDER_ERROR.format(what="the rank's GPU can no longer be selected")) from exc
        communication = impl.NCCL
    options = tf.distribute.experimental.CommunicationOptions(implementation=communication)
    try:
        strategy = tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
    except RuntimeError as exc:
        if "program startup" in str(exc):
            raise RuntimeError(ORDER_ERROR.format(what="collective ops can no longer be configured")) from exc
        raise
    return strategy, {
        "strategy": "multiworker",
        "tf_strategy": "tf.distribute.MultiWorkerMirroredStrategy",
        "launcher": "one process per worker, cluster from TF_CONFIG",
        "rank": ctx.rank,
        "cluster": workers,
        "communication": f"CommunicationImplementation.{communication.name}",
        "collective": f"CollectiveAllReduce ({communication.name}) of the gradients once per step, "
        "gRPC between the worker processes",
    }


# Why the xla variant (jit_compile=True) is refused on a CPU, as measured (TF 2.21, keras
# 3.15.1). On GPUs it is let through: TensorFlow has an XLA path there (MirroredStrategy
# switches to CollectiveAllReduce under XLA, NCCL collectives compile); not measured
# here (no GPU on the machine this was written on).
XLA_ON_CPU = {
    "mirrored": "Keras jit-compiles all replicas' steps into one XLA function, and on logical CPU devices "
    "XLA cannot reach the other replicas' variables: 'Trying to access resource dense1/kernel/replica_1 "
    "located in device CPU:1 from device CPU:0'",
    "multiworker": "XLA on a CPU cannot compile the gradients' all-reduce: 'tf2xla conversion failed' "
    "at sgd/CollectiveReduceV2",
}


def build(
    fw: TensorFlowFramework, native: TFData, settings: TrainSettings, ctx: DistContext
) -> FitTrainer | LoopTrainer:
    """The adapter's trainer (fw.build: same builder, seed, init, optimizer, compile and
    pipeline as a single run) built inside the strategy's scope, for global batch
    settings.batch_size split over ctx.world_size replicas."""
    if _strategy is None:
        raise RuntimeError("tensorflow_dist.build before tensorflow_dist.setup")
    if ctx.strategy not in STRATEGIES:
        raise ValueError(f"tensorflow has no data-parallel strategy {ctx.strategy!r} ({', '.join(STRATEGIES)})")
    if settings.batch_size % ctx.world_size:
        raise ValueError(f"global batch {settings.batch_size} does not split evenly over {ctx.world_size} replicas")
    if fw.variant == "xla" and fw.device.startswith("/CPU"):
        raise RuntimeError(f"strategy {ctx.strategy} on a CPU: the xla variant cannot run ({XLA_ON_CPU[ctx.strategy]})")
    with _strategy.scope():
        base = fw.build(native, settings)
    if ctx.strategy == "mirrored":
        return FitTrainer(base, ctx)
    return LoopTrainer(base, ctx, _strategy)


def shutdown(fw: TensorFlowFramework, ctx: DistContext) -> None:
    """Drop this process's strategy. TensorFlow has no call that leaves a multi-worker
    cluster: its gRPC server and coordination service end with the process."""
    global _strategy
    _strategy = None


@contextlib.contextmanager
def _restored(model: Any) -> Iterator[None]:
    """Weights, optimizer state and the loss tracker as they were on entry: for steps run
    outside the measurement (first_step's trace, the communication profile)."""
    weights = [v.numpy() for v in model.variables]
    slots = [v.numpy() for v in model.optimizer.variables]
    try:
        yield
    finally:
        for v, value in zip(model.variables, weights):
            v.assign(value)
        for v, value in zip(model.optimizer.variables, slots):
            v.assign(value)
        model.reset_metrics()


class NoPeek:
    """Replaces Keras' per-fit symbolic build on one model (an instance attribute over
    Trainer._maybe_symbolic_build, keras 3.15): under a strategy, every fit() first pulls
    one batch from a fresh iterator of its dataset to build the model, and creating an
    iterator of a `shuffle(reshuffle_each_iteration=True)` dataset advances its
    reshuffle seed: training then starts from the single run's second epoch (measured:
    step 0 trained on the single run's batch 6 of 6 per epoch). This build gets
    `batch` (a per-replica-sized batch of the training data) instead; once the model is
    built (first_step does it) Keras' symbolic build does nothing with it."""

    def __init__(self, model: Any, batch: tuple[tf.Tensor, tf.Tensor]) -> None:
        self.original = model._maybe_symbolic_build
        self.batch = batch

    def __call__(self, iterator: Any = None, data_batch: Any = None) -> None:
        self.original(data_batch=self.batch if data_batch is None else data_batch)


class DistTrainer:
    """What both strategies' trainers share: the adapter's KerasTrainer built under the
    strategy (`base`), its parameter count and manifest, and evaluation outside the
    strategy on the whole test split."""

    def __init__(self, base: KerasTrainer, ctx: DistContext) -> None:
        self.base = base
        self.ctx = ctx
        self.settings = base.settings
        self.per_replica_batch = base.settings.batch_size // ctx.world_size

    def manifest(self) -> dict[str, Any]:
        facts = self.base.manifest()
        if self.base.augment is not None:
            facts["pipeline_note"] = (
                "the augmentation pipeline runs once per process over the whole global batch (the single "
                "run's crops and flips), split into the replicas' shards afterwards"
                + (": N workers do N times one replica's augmentation work" if self.ctx.processes > 1 else "")
            )
        return facts

    def parameter_count(self) -> int:
        return self.base.parameter_count()

    def step_losses(self) -> list[float]:
        return self.base.step_losses()

    def evaluate(self) -> float:
        """Top-1 accuracy of the trained (replicated) weights on the whole test split,
        in every process: the adapter's forward function called outside the strategy
        (model.predict would distribute the test set, and split it across workers)."""
        base = self.base
        test = tf.data.Dataset.from_tensor_slices(base.data.x_test).batch(base.settings.batch_size)
        if base.task != "classify":
            return base._evaluate_sequences(test)
        with tf.device(base.data.device):
            logits = np.concatenate([base._forward(x).numpy() for x in test])
        return float(np.mean(np.argmax(logits, axis=1) == base.data.y_test))

    def communication(self, steps: int) -> dict[str, Any]:
        """Untimed, after training: `steps` extra steps of Keras' train_step under this
        process's strategy, on the first global batch, under the TensorFlow profiler;
        weights, optimizer state and the loss tracker are restored afterwards (as
        first_step does). Every process runs it (the steps are collective).

        comm_share = time with a collective op in flight (the union of the profiler's
        CollectiveReduceV2 events, peer waits included) / wall time of the steps."""
        none = {"comm_share": None, "comm_time_per_step": None, "source": "tensorflow profiler", "steps": 0}
        if steps < 1:
            return none
        try:
            from tensorflow.tsl.profiler.protobuf import xplane_pb2
        except ImportError as exc:  # the trace's format module moved: say so, measure nothing
            return {**none, "note": f"cannot read the profiler's XPlane files: {exc}"}
        base, strategy = self.base, _strategy
        model = base.model
        x, y = base._first_batch()
        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
        one = tf.data.Dataset.from_tensor_slices((x, y)).batch(self.settings.batch_size, drop_remainder=True)
        iterator = iter(strategy.experimental_distribute_dataset(one.repeat().with_options(options)))

        def step(it: Any) -> Any:
            logs = strategy.run(model.train_step, args=(next(it),))
            return strategy.experimental_local_results(logs)[0]["loss"]

        if not base.options["run_eagerly"]:
            step = tf.function(step, jit_compile=base.options["jit_compile"])
        with _restored(model), tempfile.TemporaryDirectory(prefix="dlbench-tf-profile-") as folder:
            float(step(iterator))  # traced and run once outside the profile
            tf.profiler.experimental.start(folder)
            try:
                t0 = time.perf_counter()
                for _ in range(steps):
                    loss = step(iterator)
                float(loss)  # host read: the steps have finished
                wall = time.perf_counter() - t0
                # Every worker past its last collective before any returns (a worker that
                # went on and ended aborted its peer's collective once, in CI).
                ones = strategy.run(lambda: tf.constant(1.0))
                float(strategy.reduce(tf.distribute.ReduceOp.SUM, ones, axis=None))
            finally:
                tf.profiler.experimental.stop()
            names: dict[str, int] = {}
            spans: list[tuple[float, float]] = []
            for path in glob.glob(os.path.join(folder, "**", "*.xplane.pb"), recursive=True):
                space = xplane_pb2.XSpace()
                with open(path, "rb") as f:
                    space.ParseFromString(f.read())
                for plane in space.planes:
                    for line in plane.lines:
                        for event in line.events:
                            meta = plane.event_metadata[event.metadata_id]
                            name = meta.display_name or meta.name
                            if _COLLECTIVE_OP.match(name):
                                names[name] = names.get(name, 0) + 1
                                start = line.timestamp_ns * 1000 + event.offset_ps
                                spans.append((start, start + event.duration_ps))
        replicas = len(strategy.extended.worker_devices)
        comm_s = min(covered(spans) / 1e12, wall)  # time with a collective in flight
        return communication_result("tensorflow profiler", names, comm_s, wall, steps, local_replicas=replicas)


class FitTrainer(DistTrainer):
    """mirrored: the adapter's own first_step and train (Keras model.fit, the
    step-loss callback included) on the model built under MirroredStrategy, with
    Keras' per-fit dataset peek replaced (NoPeek)."""

    def __init__(self, base: KerasTrainer, ctx: DistContext) -> None:
        super().__init__(base, ctx)
        x, y = base.data.x_train, base.data.y_train
        b = self.per_replica_batch
        base.model._maybe_symbolic_build = NoPeek(base.model, (x[:b], y[:b]))

    def first_step(self) -> None:
        self.base.first_step()

    def train(self) -> list[float]:
        return self.base.train()


class LoopTrainer(DistTrainer):
    """multiworker: model.fit's loop written out around Keras' own train_step.

    Keras 3's fit cannot run under MultiWorkerMirroredStrategy: its train function
    reduces each step's logs across workers with strategy.reduce("MEAN", v, axis=0),
    which fails on the scalar loss ("Invalid reduction dimension 0 for input with 0
    dimensions", keras 3.15.1; tensorflow/tensorflow#72388). This loop is the one
    fit builds (keras/src/backend/tensorflow/trainer.py, make_train_function):
    `strategy.run(model.train_step, (batch,))` in a tf.function (jit_compile as the
    variant says) called per step by an outer tf.function that takes the next batch
    from the distributed iterator, the loss tracker reset at each epoch's start, one
    iterator per epoch (per run for `steps`). It keeps each step's logs (this worker's
    running mean loss) on the device and averages them over the workers in one
    collective after the loop, instead of fit's per-step reduction.
    """

    def __init__(self, base: KerasTrainer, ctx: DistContext, strategy: Any) -> None:
        super().__init__(base, ctx)
        self.strategy = strategy
        # Explicit DATA sharding (AUTO tries FILE first and falls back to DATA on
        # in-memory data): every worker runs the whole pipeline (the single run's
        # seeded shuffle) and keeps its contiguous shard of every global batch.
        self.data_options = tf.data.Options()
        self.data_options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
        self.train_dist = strategy.experimental_distribute_dataset(base.train_ds.with_options(self.data_options))
        self._curve_values: list[float] = []
        model = base.model

        def one_step_on_data(data: Any) -> tf.Tensor:
            logs = strategy.run(model.train_step, args=(data,))
            local = [step["loss"] for step in strategy.experimental_local_results(logs)]
            return tf.add_n(local) / len(local)  # one replica per worker: its running mean

        def step_on_iterator(iterator: Any) -> tf.Tensor:
            return one_step_on_data(next(iterator))

        if base.options["run_eagerly"]:
            self._step = step_on_iterator
        else:
            one_step_on_data = tf.function(
                one_step_on_data, reduce_retracing=True, jit_compile=base.options["jit_compile"]
            )
            self._step = tf.function(step_on_iterator, reduce_retracing=True)

    def _distribute(self, dataset: tf.data.Dataset) -> Any:
        return self.strategy.experimental_distribute_dataset(dataset.with_options(self.data_options))

    def _mean_over_workers(self, local: tf.Tensor) -> np.ndarray:
        """The mean over all replicas of each replica's `local` vector: one all-reduce."""
        per_replica = self.strategy.run(tf.function(lambda: tf.identity(local)))
        mean = self.strategy.reduce(tf.distribute.ReduceOp.MEAN, per_replica, axis=None)
        return np.asarray(mean.numpy(), dtype=np.float64)

    def step_losses(self) -> list[float]:
        return list(self._curve_values)

    def first_step(self) -> None:
        """Trace and run one step on the first global batch (each worker its shard), then
        restore weights, optimizer state and the loss tracker, as the adapter does."""
        base = self.base
        x, y = base._first_batch()
        one = tf.data.Dataset.from_tensor_slices((x, y)).batch(self.settings.batch_size, drop_remainder=True)
        if base.augment is not None:
            one = base.augment(0).take(1)
        with _restored(base.model):
            float(self._step(iter(self._distribute(one))))  # host read: the step has finished

    def _segments(self) -> Iterator[tuple[Any, int, bool]]:
        """(distributed dataset, steps, whether fit would make a spare iterator after
        them) per fit epoch, made as training reaches it: for `steps` one pass over the
        repeated dataset; for epochs one per epoch; an augmentation pipeline's dataset
        per epoch (one fit per epoch with steps_per_epoch, as the adapter runs it).

        Every iterator made of a `shuffle(reshuffle_each_iteration=True)` dataset draws
        the next reshuffle seed, so this makes exactly the iterators fit makes (keras
        3.15 trainers/epoch_iterator.py): with epochs (no steps_per_epoch, a known
        number of batches), a fresh one at each epoch's start and a spare one at its
        end; with steps_per_epoch, one for the whole fit."""
        s, base = self.settings, self.base
        n = int(base.data.x_train.shape[0])
        per_epoch = s.steps_per_epoch(n)
        if per_epoch < 1:
            raise ValueError(f"global batch size {s.batch_size} exceeds the {n} training samples")
        if base.augment is None:
            if s.steps is not None:
                yield self.train_dist, s.steps, False
            else:
                for _ in range(s.epochs or 1):
                    yield self.train_dist, per_epoch, True
            return
        remaining = s.total_steps(n)
        while remaining > 0:
            steps = min(per_epoch, remaining)
            yield self._distribute(base.augment(base._epochs_done)), steps, False
            base._epochs_done += 1
            remaining -= steps

    def train(self) -> list[float]:
        model = self.base.model
        want = self.settings.loss_curve
        ends: list[tf.Tensor] = []  # each epoch's last running mean: its mean loss
        counts: list[int] = []
        curve: list[tuple[int, tf.Tensor]] = []  # (batch in its epoch, running mean) of the first steps
        for dataset, steps, spare in self._segments():
            model.reset_metrics()  # fit's on-epoch-begin reset of the loss tracker
            iterator = iter(dataset)
            mean = None
            for batch in range(steps):
                mean = self._step(iterator)
                if len(curve) < want:
                    curve.append((batch, mean))
            if spare:
                iter(dataset)  # fit's end-of-epoch iterator (see _segments): same reshuffle draws
            ends.append(mean)
            counts.append(steps)
        values = self._mean_over_workers(tf.stack([*ends, *(m for _, m in curve)]))
        epoch_means = values[: len(ends)].tolist()
        self._curve_values = losses_from_running_means(
            [(batch, float(m)) for (batch, _), m in zip(curve, values[len(ends) :])]
        )
        if self.settings.steps is not None and len(epoch_means) > 1:
            return [float(np.dot(epoch_means, counts) / sum(counts))]
        return [float(v) for v in epoch_means]
