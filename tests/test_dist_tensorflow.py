"""TensorFlow's data-parallel strategies (dlbench.frameworks.tensorflow_dist): a
MirroredStrategy run over 2 logical CPU devices and a MultiWorkerMirroredStrategy run
over 2 processes follow the single adapter's loss curve at the same global batch, step
by step; each replica trains on its contiguous shard of the single run's batch.

Everything TensorFlow runs in subprocesses, all three started at once: one process
holds the mirrored run (the logical CPU split is per process and must happen before
TensorFlow initializes, so it cannot happen in the pytest process) and the single
baselines, which run there on logical device CPU:0; two more are the multiworker
ranks, each with the environment dlbench.distributed.environ gives a rank (TF_CONFIG
on 127.0.0.1, one thread). The pytest process imports no TensorFlow."""

from __future__ import annotations

import importlib.util

import pytest

from dist_processes import DATA, GLOBAL_BATCH, STEPS, collect, free_port, start
from dist_processes import settings as _settings
from dlbench.launchers.ranks import context_for

pytestmark = pytest.mark.skipif(importlib.util.find_spec("tensorflow") is None, reason="tensorflow not installed")

WORLD = 2
HALF = GLOBAL_BATCH // WORLD
MODELS = ("mlp", "lenet5")
RANK_TIMEOUT_S = 180

# Measured (TF 2.21.0, keras 3.15.1, 2 cores): the largest |distributed - single| step
# loss was 1.9e-6 nats (mlp and lenet5, mirrored and multiworker alike; 1.4e-6 over the
# two epochs' 12 steps). Step losses are Keras' float32 running means differenced
# ((k+1) m_k - k m_{k-1}), so a 1-ulp difference (2.4e-7 at 2.3) in the running mean
# at step k shows as up to k ulps; the run means themselves differed by at most 2.4e-7
# (one ulp, the replicas' gradients summed in another order than one whole-batch
# gradient). Tolerances about 10x above the largest. (Longer, not tested here: over 16
# recorded steps of lenet5 at batch 64 the curves differed by up to 6.4e-6; after 100
# steps the mirrored run mean by 3.2e-5, as much as the single adapter's own 100-step
# mean moves between 1 and 2 intra-op threads.)
CURVE_TOLERANCE = 2e-5
LOSS_TOLERANCE = 2.5e-6
COMM_STEPS = 5

# One process: the worker's order of calls for TensorFlow (tensorflow_dist.setup BEFORE
# fw.setup -> prepare -> build -> first_step -> train), optionally the single baselines,
# then which rows of the training set each local replica gets at each of the first
# steps (labels replaced by row numbers), all as `out` (JSON on stdout).
PROGRAM = """
import dataclasses, json, sys
from dlbench.frameworks.tensorflow import TensorFlowFramework  # first: sets KERAS_BACKEND and TF's log level
from dlbench.frameworks import tensorflow_dist
import tensorflow as tf
from dlbench.datasets.synthetic import SyntheticOptions, load
from dlbench.distributed import DistContext
from dlbench.launchers.ranks import context_for
from dlbench.frameworks.protocol import TrainSettings

args = json.loads(sys.argv[1])
ctx = DistContext.from_dict(args["ctx"])
fw = TensorFlowFramework()
manifest = tensorflow_dist.setup(fw, ctx)
adapter = fw.setup(variant="graph", threads=ctx.threads, seed=0, device=ctx.device)
native = fw.prepare(load(SyntheticOptions(**args["data"]), seed=0))
out = {"manifest": manifest, "adapter_devices": adapter["devices"], "runs": {}, "single": {}}


def single(settings):
    trainer = fw.build(native, settings)
    trainer.first_step()
    losses = trainer.train()
    return {"losses": losses, "curve": trainer.step_losses(), "params": trainer.parameter_count()}


for name, kw in args["runs"].items():
    settings = TrainSettings(**kw)
    if args["single"]:
        out["single"][name] = single(settings)
    trainer = tensorflow_dist.build(fw, native, settings, ctx)
    trainer.first_step()
    losses = trainer.train()
    out["runs"][name] = {"losses": losses, "curve": trainer.step_losses(), "params": trainer.parameter_count(),
                         "per_replica_batch": trainer.per_replica_batch, "accuracy": trainer.evaluate()}

accuracy = trainer.evaluate()
out["comm"] = trainer.communication(args["comm_steps"])
out["unchanged_after_comm"] = trainer.evaluate() == accuracy  # weights and optimizer restored

strategy = tensorflow_dist._strategy
n = int(native.x_train.shape[0])
probe = dataclasses.replace(native, y_train=tf.range(n, dtype=tf.int64))
settings = TrainSettings(**args["runs"]["mlp"])
trainer = tensorflow_dist.build(fw, probe, settings, ctx)
# The distributed dataset the trainer trains on (fit makes exactly this one for mirrored).
dist = getattr(trainer, "train_dist", None) or strategy.experimental_distribute_dataset(trainer.base.train_ds)
it = iter(dist)
local = lambda batch: [y.numpy().tolist() for _, y in strategy.experimental_local_results(batch)]
out["shards"] = [local(next(it)) for _ in range(args["steps"])]
if args["single"]:
    it = iter(fw.build(probe, settings).train_ds)
    out["single_batches"] = [next(it)[1].numpy().tolist() for _ in range(args["steps"])]
    for kw in (dict(loss_curve=3), dict(loss_curve=0)):
        out["single"][f"mlp-curve{kw['loss_curve']}"] = single(dataclasses.replace(settings, **kw))
    fw.variant = "xla"
    try:
        tensorflow_dist.build(fw, native, settings, ctx)
    except RuntimeError as exc:
        out["xla_refused"] = str(exc)
    fw.variant = "graph"
    try:  # too late: TensorFlow's runtime is initialized
        tensorflow_dist.setup(fw, context_for("mirrored", 3, threads=1, device="cpu"))
    except RuntimeError as exc:
        out["late_setup"] = str(exc)
tensorflow_dist.shutdown(fw, ctx)
"""


RUNS = {
    **{m: _settings(m) for m in MODELS},
    # The augmentation pipeline written in tf.data ops (its own per-epoch datasets).
    "mlp-native": _settings("mlp", pipeline="native"),
    # Two whole epochs (12 steps, all recorded): train()'s per-epoch global means, and a
    # curve whose running means restart at the second epoch.
    "mlp-epochs": _settings("mlp", epochs=2, steps=None, loss_curve=16),
}


@pytest.fixture(scope="module")
def results() -> dict:
    """{"mirrored": output, "multiworker": [rank 0's, rank 1's]}; the three processes run
    at once (TensorFlow's import, ~5 s each, dominates)."""
    workers = tuple(f"127.0.0.1:{free_port()}" for _ in range(WORLD))
    args = {"data": DATA, "runs": RUNS, "steps": STEPS, "comm_steps": COMM_STEPS}
    procs = [
        start(PROGRAM, "tensorflow", context_for("mirrored", WORLD, threads=1, device="cpu"), {**args, "single": True})
    ]
    for rank in range(WORLD):
        ctx = context_for("multiworker", WORLD, threads=1, device="cpu", rank=rank, workers=workers)
        procs.append(start(PROGRAM, "tensorflow", ctx, {**args, "single": False}))
    outputs = collect(procs, RANK_TIMEOUT_S)
    return {"mirrored": outputs[0], "multiworker": outputs[1:]}


def _distributed(results: dict) -> list[tuple[str, dict]]:
    ranks = [(f"multiworker rank {r}", out) for r, out in enumerate(results["multiworker"])]
    return [("mirrored", results["mirrored"]), *ranks]


def test_both_strategies_follow_the_single_loss_curve(results):
    single = results["mirrored"]["single"]
    for name in (*MODELS, "mlp-native"):
        want = single[name]
        assert len(want["curve"]) == STEPS
        # The steps run's mean is the mean of its step losses (8 recorded of 8).
        assert sum(want["curve"]) / STEPS == pytest.approx(want["losses"][0], abs=CURVE_TOLERANCE)
        for label, out in _distributed(results):
            got = out["runs"][name]
            assert got["params"] == want["params"], label
            assert got["per_replica_batch"] == HALF
            assert len(got["curve"]) == STEPS
            deviation = max(abs(a - b) for a, b in zip(got["curve"], want["curve"], strict=True))
            assert deviation <= CURVE_TOLERANCE, (label, name, got["curve"], want["curve"])
            assert got["losses"] == pytest.approx(want["losses"], abs=LOSS_TOLERANCE), (label, name)
    # Each worker reports the global loss, the same on every worker (one all-reduce).
    ranks = results["multiworker"]
    assert ranks[0]["runs"]["lenet5"]["curve"] == ranks[1]["runs"]["lenet5"]["curve"]


def test_epoch_means_and_a_curve_across_epochs_are_the_single_runs(results):
    want = results["mirrored"]["single"]["mlp-epochs"]
    assert len(want["losses"]) == 2 and len(want["curve"]) == 12
    for label, out in _distributed(results):
        got = out["runs"]["mlp-epochs"]
        assert got["losses"] == pytest.approx(want["losses"], abs=LOSS_TOLERANCE), label
        assert got["curve"] == pytest.approx(want["curve"], abs=CURVE_TOLERANCE), label
        assert 0.0 <= got["accuracy"] <= 1.0


def test_each_replica_trains_on_its_contiguous_half_of_the_single_batch(results):
    single = results["mirrored"]["single_batches"]
    assert len(single) == STEPS and all(len(b) == GLOBAL_BATCH for b in single)
    halves = [[batch[:HALF], batch[HALF:]] for batch in single]
    # Mirrored: one process, both replicas' shards in replica order.
    assert results["mirrored"]["shards"] == halves
    # Multiworker: worker r holds replica r's shard.
    for rank, out in enumerate(results["multiworker"]):
        assert out["shards"] == [[h[rank]] for h in halves]


def test_manifests_say_what_ran(results):
    m = results["mirrored"]["manifest"]
    assert (m["strategy"], m["replicas"]) == ("mirrored", WORLD)
    assert [d.rsplit("/", 1)[-1] for d in m["devices"]] == ["device:CPU:0", "device:CPU:1"]
    assert "model.fit" in m["training_loop"]
    # The adapter's setup, run after this module's, found the logical devices and changed nothing.
    assert results["mirrored"]["adapter_devices"] == ["/device:CPU:0", "/device:CPU:1"]
    for rank, out in enumerate(results["multiworker"]):
        m = out["manifest"]
        assert (m["strategy"], m["replicas"], m["rank"]) == ("multiworker", WORLD, rank)
        assert m["communication"] == "CommunicationImplementation.RING"
        assert m["devices"] == [f"/job:worker/replica:0/task:{rank}/device:CPU:0"]
        assert "train_step" in m["training_loop"]


def test_the_profiler_sees_every_replicas_all_reduce_at_every_step(results):
    for label, out in _distributed(results):
        comm = out["comm"]
        replicas = WORLD if label == "mirrored" else 1
        assert comm["source"] == "tensorflow profiler" and comm["local_replicas"] == replicas, label
        # Keras' optimizer all-reduces the gradients once per replica and step (one packed op).
        assert comm["profiler_events"].get("CollectiveReduceV2", 0) >= COMM_STEPS * replicas, (label, comm)
        assert 0 < comm["comm_share"] <= 1 and comm["comm_time_per_step"] > 0, (label, comm)
        assert out["unchanged_after_comm"] is True, label


def test_the_single_adapter_records_only_the_first_loss_curve_steps(results):
    single = results["mirrored"]["single"]
    full, head, off = single["mlp"], single["mlp-curve3"], single["mlp-curve0"]
    # Recording changes nothing about training: same run mean, same first steps.
    assert head["losses"] == off["losses"] == full["losses"]
    assert head["curve"] == full["curve"][:3] and off["curve"] == []


def test_refusals_name_the_reason(results):
    out = results["mirrored"]
    assert "xla variant cannot run" in out["xla_refused"]
    assert "must run before TensorFlowFramework.setup()" in out["late_setup"]
