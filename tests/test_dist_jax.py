"""JAX's data-parallel strategies (dlbench.frameworks.jax_dist): "sharded" (one
process, 2 host devices) and "multiworker" (2 processes under jax.distributed,
gloo) follow the single adapter's loss curve at the same global batch, step by
step; the adapter records exactly the first loss_curve step losses.

Every distributed run is a real process started here with the environment
dlbench.distributed.environ gives it (XLA_FLAGS' host device count must be set
before JAX is imported, which this pytest process already did), so the file
costs a few JAX imports and tiny compiles."""

from __future__ import annotations

import pytest

jax = pytest.importorskip("jax")
pytest.importorskip("flax")

from dist_processes import DATA, GLOBAL_BATCH, STEPS, collect, free_port, start  # noqa: E402
from dist_processes import settings as _settings  # noqa: E402
from dlbench.datasets.synthetic import SyntheticOptions, load  # noqa: E402
from dlbench.frameworks import jax_dist  # noqa: E402
from dlbench.frameworks.jax import JaxFramework  # noqa: E402
from dlbench.frameworks.protocol import TrainSettings  # noqa: E402
from dlbench.launchers.ranks import context_for  # noqa: E402

WORLD = 2
MODELS = ("mlp", "lenet5")
RANK_TIMEOUT_S = 120

# Measured (jax 0.10.2, CPU, 2 cores): the largest |distributed - single| step loss
# was 2.4e-7 nats (one float32 ulp at 2.3: the all-reduce adds two half-batch
# gradient sums where the single step sums the whole batch) for mlp and lenet5,
# sharded and multiworker alike; run means differed by at most 2.4e-7 too.
# Tolerance about 10x above the largest.
LOSS_TOLERANCE = 2.5e-6
COMM_STEPS = 5

# One process: the worker's calls (fw.setup -> jax_dist.setup -> prepare -> build ->
# first_step -> train), then step_losses and the rest as `out` (JSON on stdout). With
# "before", jax_dist.setup runs before fw.setup (the order a GPU needs).
RANK_PROGRAM = """
import json, sys
from dlbench.datasets.synthetic import SyntheticOptions, load
from dlbench.distributed import DistContext
from dlbench.frameworks import jax_dist
from dlbench.frameworks.jax import JaxFramework
from dlbench.frameworks.protocol import TrainSettings

args = json.loads(sys.argv[1])
COMM_STEPS = args["comm_steps"]
ctx = DistContext.from_dict(args["ctx"])
fw = JaxFramework()
if args["order"] == "before":
    manifest = jax_dist.setup(fw, ctx)
    fw.setup(variant="jit", threads=ctx.threads, seed=0, device=ctx.device)
else:
    fw.setup(variant="jit", threads=ctx.threads, seed=0, device=ctx.device)
    manifest = jax_dist.setup(fw, ctx)
native = fw.prepare(load(SyntheticOptions(**args["data"]), seed=0))
out = {"manifest": manifest, "runs": {}}
for name, settings in args["runs"].items():
    trainer = jax_dist.build(fw, native, TrainSettings(**settings), ctx)
    trainer.first_step()
    losses = trainer.train()
    out["runs"][name] = {"losses": losses, "curve": trainer.step_losses(), "params": trainer.parameter_count(),
                         "per_replica_batch": trainer.per_replica_batch, "accuracy": trainer.evaluate()}
out["facts"] = trainer.manifest()
accuracy = trainer.evaluate()
out["comm"] = trainer.communication(COMM_STEPS)
out["unchanged_after_comm"] = trainer.evaluate() == accuracy  # the profiled steps ran on copies
jax_dist.shutdown(fw, ctx)
"""


RUNS = {
    **{m: _settings(m) for m in MODELS},
    # Two whole epochs (12 steps): train()'s per-epoch global means.
    "mlp-epochs": _settings("mlp", epochs=2, steps=None, loss_curve=0),
    # 60 steps queued without a wait: sharded LeNet-5 deadlocked in XLA:CPU's
    # all-reduce rendezvous from about 30 (jax_dist.IN_FLIGHT_STEPS).
    "lenet5-long": _settings("lenet5", steps=60, loss_curve=0),
}


def _start(ctx, order: str):
    return start(RANK_PROGRAM, "jax", ctx, {"data": DATA, "runs": RUNS, "order": order, "comm_steps": COMM_STEPS})


@pytest.fixture(scope="module")
def sharded() -> dict:
    ctx = context_for("sharded", WORLD, threads=1, device="cpu")
    return collect([_start(ctx, "after")], RANK_TIMEOUT_S)[0]


@pytest.fixture(scope="module")
def multiworker() -> list[dict]:
    coordinator = f"127.0.0.1:{free_port()}"
    # Rank 0 in the worker's order (setup after fw.setup: the backend is recreated),
    # rank 1 in the other (setup first): both paths, in one job.
    orders = ("after", "before")
    procs = []
    for rank in range(WORLD):
        ctx = context_for("multiworker", WORLD, threads=1, device="cpu", rank=rank, coordinator=coordinator)
        procs.append(_start(ctx, orders[rank]))
    return collect(procs, RANK_TIMEOUT_S)


def _single(native, fw: JaxFramework, settings: dict) -> dict:
    trainer = fw.build(native, TrainSettings(**settings))
    trainer.first_step()
    losses = trainer.train()
    return {"losses": losses, "curve": trainer.step_losses(), "params": trainer.parameter_count()}


@pytest.fixture(scope="module")
def single() -> dict[str, dict]:
    fw = JaxFramework()
    fw.setup(variant="jit", threads=1, seed=0, device="cpu")
    native = fw.prepare(load(SyntheticOptions(**DATA), seed=0))
    return {name: _single(native, fw, settings) for name, settings in RUNS.items()}


def _assert_follows(got: dict, want: dict) -> None:
    for name in MODELS:
        g, w = got["runs"][name], want[name]
        assert len(w["curve"]) == STEPS
        assert g["params"] == w["params"]
        assert g["per_replica_batch"] == GLOBAL_BATCH // WORLD
        assert len(g["curve"]) == STEPS
        deviation = max(abs(a - b) for a, b in zip(g["curve"], w["curve"], strict=True))
        assert deviation <= LOSS_TOLERANCE, (name, g["curve"], w["curve"])
        assert g["losses"] == pytest.approx(w["losses"], abs=LOSS_TOLERANCE)
    epochs = got["runs"]["mlp-epochs"]
    assert len(epochs["losses"]) == 2 and epochs["curve"] == [] == want["mlp-epochs"]["curve"]
    assert epochs["losses"] == pytest.approx(want["mlp-epochs"]["losses"], abs=LOSS_TOLERANCE)
    long = got["runs"]["lenet5-long"]["losses"]
    assert long == pytest.approx(want["lenet5-long"]["losses"], abs=LOSS_TOLERANCE)


def test_sharded_on_2_host_devices_follows_the_single_loss_curve(sharded, single):
    _assert_follows(sharded, single)
    m = sharded["manifest"]
    assert (m["strategy"], m["replicas"], m["mesh_shape"], m["processes"]) == ("sharded", WORLD, {"data": WORLD}, 1)
    assert m["mesh_devices"] == ["cpu:0", "cpu:1"] and m["device_kinds"] == ["cpu"]
    assert "--xla_force_host_platform_device_count=2" in m["xla_flags"]
    # Data parallel, not replicated work: XLA put an all-reduce (gradients + loss) in the step.
    assert sharded["facts"]["collectives"]["all-reduce"]["instructions"] >= 1
    assert sharded["facts"]["steps_in_flight"] == jax_dist.IN_FLIGHT_STEPS
    _assert_communication(sharded, local_devices=WORLD)


def _assert_communication(got: dict, local_devices: int) -> None:
    """jax.profiler saw the step's all-reduce run on every local device at every profiled
    step, and the share it reports is a fraction of the profiled wall time."""
    comm = got["comm"]
    assert comm["source"] == "jax.profiler" and comm["local_devices"] == local_devices
    all_reduces = sum(n for name, n in comm["profiler_events"].items() if name.startswith("all-reduce"))
    assert all_reduces >= COMM_STEPS * local_devices, comm
    assert 0 < comm["comm_share"] <= 1 and comm["comm_time_per_step"] > 0, comm
    assert got["unchanged_after_comm"] is True


def test_multiworker_with_2_processes_follows_the_single_loss_curve(multiworker, single):
    for r in multiworker:
        _assert_follows(r, single)
    # Each process reports the global loss: the same on every process.
    assert multiworker[0]["runs"]["lenet5"]["curve"] == multiworker[1]["runs"]["lenet5"]["curve"]
    for rank, r in enumerate(multiworker):
        m = r["manifest"]
        assert (m["strategy"], m["replicas"], m["processes"], m["rank"]) == ("multiworker", WORLD, WORLD, rank)
        assert m["jax_cpu_collectives_implementation"] == "gloo"
        assert len(m["local_devices"]) == 1 and len(m["devices"]) == WORLD
        assert r["facts"]["collectives"]["all-reduce"]["instructions"] >= 1
        assert str(r["facts"]["steps_in_flight"]).startswith("unbounded")
        _assert_communication(r, local_devices=1)
    assert [r["manifest"]["backend_recreated"] for r in multiworker] == [True, False]


def test_the_single_adapter_records_only_the_first_loss_curve_steps():
    fw = JaxFramework()
    fw.setup(variant="jit", threads=1, seed=0, device="cpu")
    native = fw.prepare(load(SyntheticOptions(**DATA), seed=0))
    full = _single(native, fw, _settings("mlp"))
    head = _single(native, fw, _settings("mlp", loss_curve=3))
    off = _single(native, fw, _settings("mlp", loss_curve=0))
    # Recording changes nothing about training: same run mean, same first steps.
    assert head["losses"] == off["losses"] == full["losses"]
    assert head["curve"] == full["curve"][:3] and off["curve"] == []
    # The steps run's mean is the mean of its step losses (8 recorded of 8).
    assert sum(full["curve"]) / STEPS == pytest.approx(full["losses"][0], rel=1e-6)


def test_unknown_strategies_are_named_and_sharded_needs_the_devices():
    fw = JaxFramework()
    fw.setup(variant="jit", threads=1, seed=0, device="cpu")
    with pytest.raises(ValueError, match="no data-parallel strategy 'ddp'"):
        jax_dist.setup(fw, context_for("ddp", 2, threads=1, device="cpu"))
    many = len(jax.local_devices(backend="cpu")) + 1
    with pytest.raises(RuntimeError, match="xla_force_host_platform_device_count"):
        jax_dist.setup(fw, context_for("sharded", many, threads=1, device="cpu"))
