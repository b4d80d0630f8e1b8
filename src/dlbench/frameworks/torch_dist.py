"""PyTorch's data-parallel strategies for dlbench: DistributedDataParallel and DataParallel.

The worker drives this module around the adapter (dlbench.frameworks.torch):

    fw.setup(variant=..., threads=ctx.threads, seed=..., device=ctx.device)
    setup(fw, ctx)              # joins the process group (ddp) / checks the GPUs (dp)
    native = fw.prepare(arrays)
    trainer = build(fw, native, settings, ctx)   # per repeat; settings.batch_size is global
    ... first_step, train, evaluate, communication ...
    shutdown(fw, ctx)

"ddp": one process per replica, as `torchrun` starts them. The rendezvous is
env:// (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE set by
dlbench.launchers.ranks.rank_environment), backend gloo on a CPU and nccl on
cuda (device cuda:LOCAL_RANK). The model comes from the adapter's own build (the
same builder, seed and init as a single run), wrapped in
DistributedDataParallel; in the compile variant torch.compile runs over the DDP
module, as PyTorch documents (dynamo then splits the graph at DDP's buckets).

Data order: every rank draws the permutation the single adapter draws (a
torch.Generator seeded with the repeat's seed, one torch.randperm per epoch) and
takes contiguous shard `rank` of each global batch (`shard_bounds`). DDP averages
the gradients of the replicas' mean losses, which is the gradient of the mean loss
over the global batch: the run follows the single-process loss curve at the same
global batch, up to float summation order.

"dp": torch.nn.DataParallel over world_size GPUs in one process: each forward
scatters the global batch into contiguous chunks, replicates the module and
gathers the outputs on cuda:0. It needs CUDA devices (with none it just calls
the module), so setup() refuses it anywhere else.
"""

from __future__ import annotations

import copy
import os
import time
from dataclasses import replace
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from dlbench.distributed import DistContext, communication_result, covered
from dlbench.frameworks.protocol import TrainSettings
from dlbench.frameworks.torch import COMPILE_BACKEND, COMPILE_MODE, TorchData, TorchFramework, TorchTrainer, _autocast

# A rank whose peer never arrives fails after this long instead of waiting forever
# (torch's own default is 30 min for gloo, 10 min for nccl).
RENDEZVOUS_TIMEOUT_S = 120
# What torch.profiler showed in a 2-process gloo run of torch 2.13 (CPU), per DDP step
# and bucket: "c10d::allreduce_" (the op DDP's reducer calls; its time is only the
# enqueue, ~0.1 ms) and "gloo:all_reduce" (self time 0; total time = from that
# enqueue to the collective's completion on gloo's thread, so it includes waiting
# for the slower peer). The CPU share sums the latter alone, so nothing counts twice.
GLOO_COMM_EVENT = "gloo:all_reduce"


def shard_bounds(step: int, global_batch: int, rank: int, world_size: int) -> tuple[int, int]:
    """Rows [start, stop) of an epoch's permutation that replica `rank` trains on at
    `step`: shard `rank` of the `world_size` contiguous shards of that step's global
    batch, the rows order[step*B : (step+1)*B] that a single run takes."""
    local = global_batch // world_size
    start = step * global_batch + rank * local
    return start, start + local


def _is_allreduce_kernel(name: str) -> bool:
    flat = name.lower().replace("_", "")
    return flat.startswith(("ncclkernel", "nccldevkernel")) and "allreduce" in flat


def _backend(device: torch.device) -> str:
    return "nccl" if device.type == "cuda" else "gloo"


def setup(fw: TorchFramework, ctx: DistContext, runtime: tuple[str, ...] = ()) -> dict[str, Any]:
    """Join the process group (ddp) or check the GPUs (dp); the manifest entries."""
    if ctx.strategy == "ddp":
        return _setup_ddp(fw, ctx)
    if ctx.strategy == "dp":
        return _setup_dp(fw, ctx)
    raise ValueError(f"torch has no data-parallel strategy {ctx.strategy!r} (ddp, dp)")


def _setup_ddp(fw: TorchFramework, ctx: DistContext) -> dict[str, Any]:
    if not dist.is_available():
        raise RuntimeError(f"torch {torch.__version__} was built without torch.distributed")
    devices: list[str]
    if fw.device.type == "cuda":
        # One GPU per rank: LOCAL_RANK picks it (torchrun's contract). Set before
        # prepare(), so the data and the model land on this rank's GPU.
        local_rank = int(os.environ.get("LOCAL_RANK", ctx.rank))
        if local_rank >= torch.cuda.device_count():
            raise RuntimeError(
                f"ddp rank {ctx.rank}: LOCAL_RANK {local_rank} but only {torch.cuda.device_count()} GPUs are visible"
            )
        torch.cuda.set_device(local_rank)
        fw.device = torch.device("cuda", local_rank)
        devices = [str(fw.device)]
    else:
        devices = ["cpu"]
    backend = _backend(fw.device)
    # env:// reads MASTER_ADDR/MASTER_PORT; rank and world size are passed as well, so
    # that a context and an environment that disagree cannot pair the wrong ranks.
    dist.init_process_group(
        backend=backend,
        init_method="env://",
        rank=ctx.rank,
        world_size=ctx.world_size,
        timeout=timedelta(seconds=RENDEZVOUS_TIMEOUT_S),
    )
    manifest: dict[str, Any] = {
        "strategy": "ddp",
        "wrapper": "torch.nn.parallel.DistributedDataParallel",
        "backend": dist.get_backend(),
        "replicas": dist.get_world_size(),
        "rank": dist.get_rank(),
        "devices": devices,
        "init_method": "env://",
        "master": f"{os.environ.get('MASTER_ADDR', '')}:{os.environ.get('MASTER_PORT', '')}",
        "rendezvous_timeout_s": RENDEZVOUS_TIMEOUT_S,
        "gloo_socket_ifname": os.environ.get("GLOO_SOCKET_IFNAME"),
        "collective": "allreduce (sum, then divided by the world size) of gradient buckets, "
        "launched by DDP's reducer during backward as each bucket is ready",
        "ddp_options": "torch's defaults (the values in force are in the trainer's facts)",
        "compile_over": "torch.compile(DistributedDataParallel(model)) (dynamo's DDPOptimizer splits at buckets)"
        if fw.variant == "compile"
        else None,
        "data_sharding": "each rank draws the single run's per-epoch torch.randperm (generator seeded with the "
        "repeat's seed) and trains on contiguous shard `rank` of every global batch",
        "loss_reduction": "each replica's mean loss over its shard; the reported loss is their mean over "
        "ranks, summed by one all_reduce after the training loop (none inside it)",
        "evaluate": "every rank evaluates the whole test split with the unwrapped module",
    }
    if backend == "nccl":
        manifest["nccl_version"] = ".".join(str(v) for v in torch.cuda.nccl.version())
    return manifest


def _setup_dp(fw: TorchFramework, ctx: DistContext) -> dict[str, Any]:
    if fw.device.type != "cuda":
        raise RuntimeError(
            "strategy dp: torch.nn.DataParallel splits a batch over GPUs; with no device ids it just calls "
            f"the module, so on device {fw.device} it would not be data-parallel at all (use ddp)"
        )
    visible = torch.cuda.device_count()
    if visible < ctx.world_size:
        raise RuntimeError(f"strategy dp at world size {ctx.world_size} needs {ctx.world_size} GPUs; {visible} visible")
    if fw.variant == "compile":
        # DataParallel replicates the module on every call; torch.compile does not
        # support compiling through it (PyTorch points to DDP for that).
        raise RuntimeError("strategy dp: torch.compile does not support DataParallel; use the eager variant or ddp")
    return {
        "strategy": "dp",
        "wrapper": "torch.nn.DataParallel",
        "backend": "torch.cuda.comm (scatter, replicate, gather; gradients reduced onto cuda:0)",
        "replicas": ctx.world_size,
        "devices": [f"cuda:{i}" for i in range(ctx.world_size)],
        "output_device": "cuda:0",
        "collective": "per step: inputs scattered in contiguous chunks, parameters broadcast, outputs gathered "
        "on cuda:0, gradients summed onto cuda:0 (no allreduce)",
        "data_sharding": "the single run's global batches, split by DataParallel's scatter into contiguous chunks",
        "loss_reduction": "the loss of the gathered global batch (the single run's loss)",
    }


def build(fw: TorchFramework, native: TorchData, settings: TrainSettings, ctx: DistContext) -> TorchTrainer:
    """A fresh model from the adapter's own build (same seed, init, layout,
    precision and pipeline), wrapped for data parallelism."""
    if settings.batch_size % ctx.world_size:
        raise ValueError(f"global batch {settings.batch_size} does not split evenly over {ctx.world_size} replicas")
    base = fw.build(native, settings)
    if ctx.strategy == "ddp":
        return DDPTrainer(fw, base, ctx)
    if ctx.strategy == "dp":
        return DPTrainer(base, ctx)
    raise ValueError(f"torch has no data-parallel strategy {ctx.strategy!r} (ddp, dp)")


def shutdown(fw: TorchFramework, ctx: DistContext) -> None:
    """Leave the process group (ddp); DataParallel holds nothing to free."""
    if ctx.strategy == "ddp" and dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


class DPTrainer(TorchTrainer):
    """The adapter's trainer with its forward going through DataParallel. It trains
    on the global batch (scattered over the GPUs by DataParallel), so the adapter's
    train(), step_losses() and first_step() apply unchanged."""

    def __init__(self, base: TorchTrainer, ctx: DistContext) -> None:
        self.per_replica_batch = base.settings.batch_size // ctx.world_size
        self.dp = nn.DataParallel(base.model, device_ids=list(range(ctx.world_size)))
        forward: Any = self.dp
        if base.settings.precision == "bf16-mixed":
            forward = _autocast(self.dp, base.data.device.type)
        super().__init__(base.data, base.settings, base.model, forward)
        self.augment, self.facts = base.augment, dict(base.facts)


class DDPTrainer(TorchTrainer):
    """The adapter's trainer, one replica of a DDP run.

    Training steps go through the DDP module (its reducer allreduces the gradients
    during backward); evaluation and inference use the unwrapped module (the same
    parameters), so they involve no collective. Its `settings` are this replica's:
    the global settings with batch_size = the per-replica batch, so that the
    inherited first_step() compiles and steps at the shape train() uses.
    """

    def __init__(self, fw: TorchFramework, base: TorchTrainer, ctx: DistContext) -> None:
        self.ctx = ctx
        self.global_settings = base.settings
        self.global_batch = base.settings.batch_size
        self.per_replica_batch = self.global_batch // ctx.world_size
        device = base.data.device
        # DDP broadcasts rank 0's parameters and buffers here; every rank built the
        # same weights from the same seed anyway.
        self.ddp = DistributedDataParallel(base.model, device_ids=[device.index] if device.type == "cuda" else None)
        train_forward: Any = self.ddp
        if fw.variant == "compile":
            # The adapter's build reset dynamo and made a compiled plain module (for
            # evaluation here); training compiles the DDP module, PyTorch's recipe.
            train_forward = torch.compile(self.ddp, mode=COMPILE_MODE, backend=COMPILE_BACKEND)
        if base.settings.precision == "bf16-mixed":
            train_forward = _autocast(train_forward, device.type)
        self.train_forward = train_forward
        super().__init__(base.data, replace(base.settings, batch_size=self.per_replica_batch), base.model, base.forward)
        self.augment = base.augment
        self.facts = {
            **base.facts,
            "ddp_options": {
                "bucket_bytes_cap": self.ddp.bucket_bytes_cap,
                "forward_sync_buffers": getattr(self.ddp, "forward_sync_buffers", None),
                "find_unused_parameters": self.ddp.find_unused_parameters,
                "gradient_as_bucket_view": self.ddp.gradient_as_bucket_view,
                "static_graph": self.ddp.static_graph,
            },
        }
        if self.augment is not None:
            self.facts["pipeline_note"] = (
                "every rank runs the augmentation pipeline over the whole global batch (the single run's "
                "crops and flips) and keeps its shard: N times the augmentation work of one replica"
            )

    def _step(self, xb: torch.Tensor, yb: torch.Tensor) -> torch.Tensor:
        """One optimizer step through DDP; the replica's (pre-update) loss, on the device."""
        self.optimizer.zero_grad(set_to_none=True)
        loss = self._loss(self.train_forward(xb), yb)
        loss.backward()  # DDP's hooks allreduce-average the gradients here
        self.optimizer.step()
        return loss.detach()

    def train(self) -> list[float]:
        """The adapter's loop over the single run's global batches, each replica on its
        shard; the global loss (mean over replicas) of each epoch, or one value for a
        `steps` run. Device accumulators only inside the loop; one all_reduce after it."""
        s, g = self.settings, self.global_settings
        x, y = self.data.x_train, self.data.y_train
        n = x.shape[0]
        per_epoch = g.steps_per_epoch(n)
        if per_epoch < 1:
            raise ValueError(f"global batch size {g.batch_size} exceeds the {n} training samples")
        remaining = g.total_steps(n)
        rank, world = self.ctx.rank, self.ctx.world_size
        lo, hi = shard_bounds(0, self.global_batch, rank, world)
        self.model.train()
        self._curve = []
        step = self._recording_step if s.loss_curve else self._step
        totals: list[torch.Tensor] = []  # one per epoch, or one for a steps run
        counts: list[int] = []
        total = torch.zeros((), device=self.data.device)
        run_steps = 0
        while remaining > 0:
            epoch_steps = min(per_epoch, remaining)
            if g.epochs is not None:
                total = torch.zeros((), device=self.data.device)
            if self.augment is not None:
                # The pipeline yields the single run's global batches (its seeded
                # shuffle, crops and flips); this replica keeps its shard of each.
                for _, (xb, yb) in zip(range(epoch_steps), self.augment(self._epochs_done)):
                    total += step(xb[lo:hi], yb[lo:hi])
            else:
                if g.shuffle:
                    order = torch.randperm(n, generator=self.generator).to(self.data.device)
                else:
                    order = torch.arange(n, device=self.data.device)
                for i in range(epoch_steps):
                    start, stop = shard_bounds(i, self.global_batch, rank, world)
                    idx = order[start:stop]
                    total += step(x[idx], y[idx])
            remaining -= epoch_steps
            run_steps += epoch_steps
            self._epochs_done += 1
            if g.epochs is not None:
                totals.append(total)
                counts.append(epoch_steps)
        if g.steps is not None:
            totals.append(total)
            counts.append(run_steps)
        # Every accumulator and recorded step loss in one collective: the sum over
        # replicas, divided by the world size (gloo has no AVG), is the global loss.
        local = torch.stack([*totals, *self._curve])
        dist.all_reduce(local, op=dist.ReduceOp.SUM)
        summed = (local / world).tolist()
        self._curve_values = summed[len(totals) :]
        self._sync()
        return [t / c for t, c in zip(summed[: len(totals)], counts, strict=True)]

    def communication(self, steps: int) -> dict[str, Any]:
        """Untimed, after training: `steps` extra steps on this replica's first shard
        under torch.profiler; the model, optimizer and RNG are restored afterwards.

        comm_share = time with an allreduce event in flight (the union of their
        intervals) / wall time of the profiled steps and a closing barrier. Both are
        measured under the profiler (which slows the steps a little). With
        gloo the allreduce runs on DDP's communication thread, overlapping the rest
        of backward, so the share is time spent in collectives, not time the step
        waited for them (it may exceed the exposed communication)."""
        if steps < 1:
            return {"comm_share": None, "comm_time_per_step": None, "source": "torch.profiler", "steps": 0}
        model_state = copy.deepcopy(self.model.state_dict())
        optim_state = copy.deepcopy(self.optimizer.state_dict())
        cpu_rng = torch.get_rng_state()
        device = self.data.device
        cuda_rng = torch.cuda.get_rng_state(device) if device.type == "cuda" else None
        lo, hi = shard_bounds(0, self.global_batch, self.ctx.rank, self.ctx.world_size)
        xb, yb = self.data.x_train[lo:hi], self.data.y_train[lo:hi]
        activities = [torch.profiler.ProfilerActivity.CPU]
        if device.type == "cuda":
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        self.model.train()
        self._step(xb, yb)  # outside the profile: any lazy (re)initialization lands here
        self._sync()
        with torch.profiler.profile(activities=activities) as prof:
            t0 = time.perf_counter()
            for _ in range(steps):
                self._step(xb, yb)
            self._sync()
            # Both ranks past their last collective before the window closes: gloo ends
            # an all_reduce's profiler event on its own thread, after the work DDP waited
            # for has completed, so an event can end after the step's clock stopped (a
            # rank's share read 1.02 under CI load when the window ended before the
            # barrier). Gloo runs its work in order, so the barrier ends after them all.
            dist.barrier()
            wall = time.perf_counter() - t0
        names: dict[str, int] = {}
        if device.type == "cuda":
            comm_us = 0.0
            for event in prof.key_averages():
                # NCCL: the allreduce kernels' own device time ("ncclDevKernel_AllReduce_..."
                # in NCCL >= 2.19, "ncclKernel_AllReduce_..." before). Not run here (no GPU
                # on the machine this was written on): the names are NCCL's, not observed.
                if event.device_type == torch.autograd.DeviceType.CUDA and _is_allreduce_kernel(event.key):
                    comm_us += event.self_device_time_total
                    names[event.key] = int(event.count)
        else:
            # The union of the all-reduce events' intervals (profiler clock, µs): DDP's
            # buckets can overlap in time, and their summed durations can exceed the window.
            spans = [(e.time_range.start, e.time_range.end) for e in prof.events() if e.name == GLOO_COMM_EVENT]
            if spans:
                names[GLOO_COMM_EVENT] = len(spans)
            comm_us = covered(spans)
        self.model.load_state_dict(model_state)
        self.optimizer.load_state_dict(optim_state)
        torch.set_rng_state(cpu_rng)
        if cuda_rng is not None:
            torch.cuda.set_rng_state(cuda_rng, device)
        comm_s = min(comm_us / 1e6, wall)
        return communication_result("torch.profiler", names, comm_s, wall, steps)
