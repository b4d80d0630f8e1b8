"""PyTorch's data-parallel strategies (dlbench.frameworks.torch_dist): a DDP run at
world size 2 follows the single adapter's loss curve at the same global batch, step
by step; the shard split; DataParallel refused where it cannot be data-parallel.

The two DDP ranks are real processes started here, each with the environment
dlbench.distributed.environ gives a rank (torchrun's env:// variables, gloo on
127.0.0.1, one thread), so the whole file stays within a few seconds of torch
imports and tiny steps."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from dist_processes import DATA, GLOBAL_BATCH, STEPS, collect, free_port, start  # noqa: E402
from dist_processes import settings as _settings  # noqa: E402
from dlbench.datasets.synthetic import SyntheticOptions, load  # noqa: E402
from dlbench.frameworks import torch_dist  # noqa: E402
from dlbench.frameworks.protocol import TrainSettings  # noqa: E402
from dlbench.frameworks.torch import TorchFramework  # noqa: E402
from dlbench.launchers.ranks import context_for  # noqa: E402

WORLD = 2
MODELS = ("mlp", "lenet5")
COMM_STEPS = 3
RANK_TIMEOUT_S = 120

# Measured (torch 2.13.0+cpu, 2 cores, one thread per process): the largest
# |ddp - single| step loss was 2.4e-7 nats for lenet5 (one float32 ulp at 2.3: two
# half-batch gradients averaged by the allreduce sum in another order than one
# whole-batch gradient) and 0 for mlp; the steps-run and epoch means differed by 0.
# Tolerance about 10x above the largest.
LOSS_TOLERANCE = 2.5e-6

# One rank: the worker's order of calls (fw.setup -> torch_dist.setup -> prepare ->
# build -> first_step -> train), then step_losses and the rest as `out` (JSON on stdout).
RANK_PROGRAM = """
import json, sys
from dlbench.datasets.synthetic import SyntheticOptions, load
from dlbench.distributed import DistContext
from dlbench.frameworks import torch_dist
from dlbench.frameworks.protocol import TrainSettings
from dlbench.frameworks.torch import TorchFramework

args = json.loads(sys.argv[1])
ctx = DistContext.from_dict(args["ctx"])
fw = TorchFramework()
fw.setup(variant="eager", threads=ctx.threads, seed=0, device=ctx.device)
manifest = torch_dist.setup(fw, ctx)
native = fw.prepare(load(SyntheticOptions(**args["data"]), seed=0))
out = {"manifest": manifest, "runs": {}}
for name, settings in args["runs"].items():
    trainer = torch_dist.build(fw, native, TrainSettings(**settings), ctx)
    trainer.first_step()
    losses = trainer.train()
    run = {"losses": losses, "curve": trainer.step_losses(), "params": trainer.parameter_count(),
           "per_replica_batch": trainer.per_replica_batch, "accuracy": trainer.evaluate()}
    if name == "lenet5":
        weights = lambda: [p.detach().clone() for p in trainer.model.parameters()]
        before = weights()
        run["comm"] = trainer.communication(args["comm_steps"])
        run["restored_after_comm"] = all(bool((a == b).all()) for a, b in zip(before, weights()))
    out["runs"][name] = run
torch_dist.shutdown(fw, ctx)
"""


RUNS = {
    **{m: _settings(m) for m in MODELS},
    # Two whole epochs (12 steps): train()'s per-epoch global means.
    "mlp-epochs": _settings("mlp", epochs=2, steps=None, loss_curve=0),
}


def _run_ranks() -> list[dict]:
    coordinator = f"127.0.0.1:{free_port()}"
    args = {"runs": RUNS, "comm_steps": COMM_STEPS, "data": DATA}
    procs = [
        start(
            RANK_PROGRAM,
            "torch",
            context_for("ddp", WORLD, threads=1, device="cpu", rank=r, coordinator=coordinator),
            args,
        )
        for r in range(WORLD)
    ]
    return collect(procs, RANK_TIMEOUT_S)


def _single(native, fw: TorchFramework, settings: dict) -> dict:
    trainer = fw.build(native, TrainSettings(**settings))
    trainer.first_step()
    losses = trainer.train()
    return {"losses": losses, "curve": trainer.step_losses(), "params": trainer.parameter_count()}


@pytest.fixture(scope="module")
def ranks() -> list[dict]:
    return _run_ranks()


@pytest.fixture(scope="module")
def single() -> dict[str, dict]:
    fw = TorchFramework()
    fw.setup(variant="eager", threads=1, seed=0, device="cpu")
    native = fw.prepare(load(SyntheticOptions(**DATA), seed=0))
    return {name: _single(native, fw, settings) for name, settings in RUNS.items()}


def test_shard_bounds_give_rank_r_rows_r_b_to_r_plus_1_b_of_each_global_batch():
    b_global, world = 12, 3
    b = b_global // world
    for step in range(4):
        shards = [torch_dist.shard_bounds(step, b_global, r, world) for r in range(world)]
        assert shards == [(step * b_global + r * b, step * b_global + (r + 1) * b) for r in range(world)]
        # Together, in rank order, they are exactly the single run's batch at this step.
        rows = [i for lo, hi in shards for i in range(lo, hi)]
        assert rows == list(range(step * b_global, (step + 1) * b_global))


def test_ddp_at_world_size_2_follows_the_single_loss_curve(ranks, single):
    for name in MODELS:
        want = single[name]
        assert len(want["curve"]) == STEPS
        for got in (r["runs"][name] for r in ranks):
            assert got["params"] == want["params"]
            assert got["per_replica_batch"] == GLOBAL_BATCH // WORLD
            assert len(got["curve"]) == STEPS
            deviation = max(abs(a - b) for a, b in zip(got["curve"], want["curve"], strict=True))
            assert deviation <= LOSS_TOLERANCE, (name, got["curve"], want["curve"])
            assert got["losses"] == pytest.approx(want["losses"], abs=LOSS_TOLERANCE)
    # Each rank reports the global loss, the same on every rank (one all_reduce).
    assert ranks[0]["runs"]["lenet5"]["curve"] == ranks[1]["runs"]["lenet5"]["curve"]


def test_ddp_epoch_means_are_the_single_runs(ranks, single):
    want = single["mlp-epochs"]
    for r in ranks:
        got = r["runs"]["mlp-epochs"]
        assert len(got["losses"]) == 2 and got["curve"] == [] == want["curve"]
        assert got["losses"] == pytest.approx(want["losses"], abs=LOSS_TOLERANCE)


def test_ddp_manifest_and_communication_profile(ranks):
    for rank, r in enumerate(ranks):
        m = r["manifest"]
        assert (m["strategy"], m["backend"], m["replicas"], m["rank"]) == ("ddp", "gloo", WORLD, rank)
        run = r["runs"]["lenet5"]
        comm = run["comm"]
        # gloo's collective shows up once per bucket and step (LeNet-5: one bucket).
        assert comm["source"] == "torch.profiler"
        assert comm["profiler_events"].get("gloo:all_reduce", 0) >= COMM_STEPS
        assert 0 < comm["comm_share"] <= 1 and comm["comm_time_per_step"] > 0
        # The profiled steps left the trained weights exactly as they were.
        assert run["restored_after_comm"] is True


def test_the_single_adapter_records_only_the_first_loss_curve_steps():
    fw = TorchFramework()
    fw.setup(variant="eager", threads=1, seed=0, device="cpu")
    native = fw.prepare(load(SyntheticOptions(**DATA), seed=0))
    full = _single(native, fw, _settings("mlp"))
    head = _single(native, fw, _settings("mlp", loss_curve=3))
    off = _single(native, fw, _settings("mlp", loss_curve=0))
    # Recording changes nothing about training: same run mean, same first steps.
    assert head["losses"] == off["losses"] == full["losses"]
    assert head["curve"] == full["curve"][:3] and off["curve"] == []
    # The steps run's mean is the mean of its step losses (8 recorded of 8).
    assert sum(full["curve"]) / STEPS == pytest.approx(full["losses"][0], rel=1e-6)


def test_dataparallel_is_refused_without_gpus_and_unknown_strategies_are_named():
    fw = TorchFramework()
    fw.setup(variant="eager", threads=1, seed=0, device="cpu")
    with pytest.raises(RuntimeError, match="DataParallel.*with no device ids it just calls"):
        torch_dist.setup(fw, context_for("dp", 2, threads=1, device="cpu"))
    with pytest.raises(ValueError, match="no data-parallel strategy 'sharded'"):
        torch_dist.setup(fw, context_for("sharded", 2, threads=1, device="cpu"))
