"""The measured phases, written once against the Framework/Trainer protocol.

One repeat (docs/design.md): a fresh model initialized with the repeat's
seed (`repeat_seed`: seed + repeat in block 0, offset per block, so that the trials
of a case are independent samples of accuracy as well as of time), then

    build      construct model + optimizer             (timed, untimed data)
    compile    trace/compile + one step, state restored (timed apart)
    train      the configured epochs or steps          (timed)
    accuracy   top-1 on the whole test split           (not timed; the task's quality,
               per head "<metric>/<head>" for a model of several outputs)
    infer      passes over the test set at batch B     (timed per pass; throughput)
    latency    single batches at B and at 1, one call at a time (each timed)

Clocks are read with `time.perf_counter_ns` right after the adapter returns;
adapters return only after the device finished (protocol contract). The first
`warmup` repeats are measured and emitted like the others, flagged as warm-up.

Inference is timed over as many whole passes as fill `infer_min_time` seconds
(pyperf's min_time, timeit's autorange), so that the value is the steady-state
time per pass rather than one sub-millisecond reading right after training (on
the 2-core VM, JAX's single pass over the digits test split took 0.44 ms, a
stream of them 0.23 ms a pass), and so that an energy window is longer than a
counter's update period. The first repeat of a trial calibrates the pass count;
later repeats run that fixed count, so that every value is the same work and no
stopping rule biases the mean.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from dlbench.frameworks.builders import model_spec
from dlbench.frameworks.protocol import Framework, TrainSettings

if TYPE_CHECKING:
    from dlbench.distributed import DistContext
    from dlbench.plan import Case
    from dlbench.trial.spec import ProtocolSpec
from dlbench.store import Measurement

Emit = Callable[..., None]


def _seconds(t0: int) -> float:
    return (time.perf_counter_ns() - t0) / 1e9


def _frozen(value: Any) -> Any:
    """JSON brought tuples back as lists; models and compile caches want them hashable."""
    return tuple(_frozen(v) for v in value) if isinstance(value, list) else value


# Seeds a block's repeats start from: block k trains with seed + k * BLOCK_SEED_STRIDE + repeat,
# modulo 2^31 (every framework takes a 31-bit seed). Without it every trial of a case
# repeated the same initializations, and seven trials gave seven identical accuracies:
# one sample counted seven times.
BLOCK_SEED_STRIDE = 10_007


def repeat_seed(seed: int, block: int, repeat: int) -> int:
    return (seed + block * BLOCK_SEED_STRIDE + repeat) % 2**31


def settings_for(case: Case, repeat: int, loss_curve: int = 0, block: int = 0) -> TrainSettings:
    from dlbench import registry

    classical = case.optimizer == "none"
    return TrainSettings(
        model=case.model,
        spec=registry.model(case.model),
        # The batch of one optimizer step over all replicas (a distributed trainer
        # splits it); the case's batch size unless its batch scope is per replica.
        batch_size=case.global_batch,
        loss_curve=0 if classical else loss_curve,
        # Classical models ignore epochs/optimizer; TrainSettings still wants valid values.
        epochs=1 if classical else case.epochs,
        steps=None if classical else case.steps,
        optimizer="sgd" if classical else case.optimizer,
        lr=case.lr or 0.01,
        momentum=case.momentum,
        init="glorot-uniform" if classical else case.init,
        seed=repeat_seed(case.seed, block, repeat),
        model_options={k: _frozen(v) for k, v in case.model_options},
        precision=case.precision,
        layout=case.layout,
        pipeline="preloaded" if classical else case.pipeline,
    )


def run_repeat(
    fw: Framework,
    native: Any,
    case: Case,
    protocol: ProtocolSpec,
    repeat: int,
    n_train: int,
    marker: Emit,
    facts: Emit | None = None,
    calibration: dict[str, Any] | None = None,
    dist: DistContext | None = None,
    block: int = 0,
    verify: Callable[[Any], None] | None = None,
) -> list[Measurement]:
    """One repeat (of the trial in interleaving `block`, which offsets its seed);
    `facts(**kw)` receives what a trainer learns only after training
    (e.g. the neighbour-search algorithm scikit-learn picked), for the manifest.
    `calibration` carries the inference pass count from the trial's first repeat to
    the next ones (one dict per trial). `dist`: this process's place in a distributed
    trial (`fw` then builds the data-parallel trainer); such a trial times training
    only, and each process reports its own step time and throughput, which the
    launcher combines (dlbench.launchers.merge)."""
    calibration = {} if calibration is None else calibration
    warm = repeat < protocol.warmup
    settings = settings_for(case, repeat, protocol.loss_curve, block)
    spec = model_spec(settings)
    classical = case.optimizer == "none"
    tta = bool(protocol.target_accuracy) and not classical
    if tta and spec.heads:
        raise ValueError(
            f"target_accuracy: model {spec.name} has several outputs ({', '.join(spec.heads)}), each with its own "
            "quality, and no one accuracy to reach: run it without target_accuracy"
        )
    max_epochs = settings.epochs or 1
    if tta:  # one epoch per train() call; the configured epochs are the budget
        settings = replace(settings, epochs=1)
    out: list[Measurement] = []

    def add(phase: str, metric: str, value: float | None, unit: str, seq: int | None = None) -> None:
        out.append(Measurement(repeat, warm, phase, metric, value, unit, seq))

    def timed(phase: str, fn: Callable[[], Any]) -> tuple[Any, float]:
        marker(phase=phase, repeat=repeat, edge="start")
        t0 = time.perf_counter_ns()
        result = fn()
        seconds = _seconds(t0)
        marker(phase=phase, repeat=repeat, edge="end")
        return result, seconds

    trainer, seconds = timed("build", lambda: fw.build(native, settings))
    add("build", "time", seconds, "s")
    add("build", "parameters", float(trainer.parameter_count()), "count")
    if verify is not None:  # a user's network against its task, untimed (dlbench.trial.output_check)
        verify(trainer)

    _, seconds = timed("compile", trainer.first_step)
    add("compile", "time", seconds, "s")

    if tta:
        _time_to_accuracy(trainer, settings, protocol, max_epochs, n_train, add, marker, repeat)
        return _inference(trainer, case, protocol, repeat, add, marker, calibration, out)

    losses, seconds = timed("train", trainer.train)
    add("train", "time", seconds, "s")
    if not classical:
        steps = settings.total_steps(n_train)
        # The samples this process trained on per step: the global batch, or its
        # replicas' share of it when each process is one replica of several.
        per_step = settings.batch_size if dist is None else settings.batch_size * dist.local_replicas // dist.world_size
        add("train", "steps", float(steps), "count")
        add("train", "throughput", steps * per_step / seconds if seconds > 0 else None, "samples/s")
        for epoch, loss in enumerate(losses):
            add("train", "loss", float(loss), spec.loss_unit, seq=epoch)
        curve = getattr(trainer, "step_losses", None)
        if settings.loss_curve and callable(curve):
            for step, loss in enumerate(curve()):
                add("train", "loss_step", float(loss), spec.loss_unit, seq=step)
        if dist is not None:
            add("train", "rank_step_time", seconds / steps if steps else None, "s", seq=dist.rank)
            add("train", "rank_throughput", steps * per_step / seconds if seconds > 0 else None, "samples/s", dist.rank)
    else:
        add("train", "throughput", n_train / seconds if seconds > 0 else None, "samples/s")

    quality = trainer.evaluate()
    if spec.heads:  # several named outputs: each head's quality, its metric naming the head ("mse/price")
        for head in spec.heads:
            metric, unit = spec.head_quality(head)
            add("accuracy", metric, float(quality[head]), unit)
    else:
        metric, unit = spec.quality
        add("accuracy", metric, float(quality), unit)
    test_loss = getattr(trainer, "test_loss", None)
    if spec.task == "next-token" and callable(test_loss):
        # Perplexity: exp of the mean cross-entropy per token over the test set.
        add("accuracy", "perplexity", math.exp(min(float(test_loss()), 700.0)), "")
    learned = getattr(trainer, "manifest", None)
    if facts is not None and callable(learned):
        facts(**learned())
    if dist is not None:
        _communication(trainer, add, dist.rank)
        return out  # a distributed trial times training; inference is a single-device question
    return _inference(trainer, case, protocol, repeat, add, marker, calibration, out)


def token_rows(rows: list[Measurement], tokens_per_sample: int) -> list[Measurement]:
    """Training and inference throughput in tokens/s beside samples/s, for a language
    model (every position of a sequence is a prediction)."""
    return [
        replace(m, metric="token_throughput", value=m.value * tokens_per_sample, unit="tokens/s")
        for m in rows
        if m.metric == "throughput" and m.phase in ("train", "infer") and m.value is not None
    ]


COMM_PROFILE_STEPS = 5  # steps profiled after the timed training, never inside it


def _communication(trainer: Any, add: Callable[..., None], rank: int) -> None:
    """The share of a step spent in collectives, where the framework's profiler
    shows them (untimed steps after training; the trainer restores its state).
    Each process measures its own; the trial's `share` is rank 0's, and every
    rank's is kept as `rank_share` (seq = rank): ranks wait for each other in
    different amounts."""
    probe = getattr(trainer, "communication", None)
    if not callable(probe):
        return
    found = probe(COMM_PROFILE_STEPS)
    if found.get("comm_share") is not None:
        add("comm", "share", float(found["comm_share"]), "fraction")
        add("comm", "rank_share", float(found["comm_share"]), "fraction", seq=rank)
    if found.get("comm_time_per_step") is not None:
        add("comm", "time_per_step", float(found["comm_time_per_step"]), "s")


def _time_to_accuracy(
    trainer: Any,
    settings: TrainSettings,
    protocol: ProtocolSpec,
    max_epochs: int,
    n_train: int,
    add: Callable[..., None],
    marker: Emit,
    repeat: int,
) -> None:
    """DAWNBench-style: one epoch at a time, then the test accuracy, until the target
    or the budget (the configured epochs, and `tta_budget` seconds of training).

    Only training is summed into the time to target; each evaluation is timed and
    reported apart. One marker window "tta" spans the loop (evaluations included),
    so telemetry of this phase covers both."""
    target = protocol.target_accuracy
    budget = protocol.tta_budget or float("inf")
    train_s = eval_s = 0.0
    reached_at = None
    marker(phase="tta", repeat=repeat, edge="start")
    for epoch in range(1, max_epochs + 1):
        t0 = time.perf_counter_ns()
        losses = trainer.train()  # built with epochs=1: one more epoch each call
        train_s += _seconds(t0)
        t0 = time.perf_counter_ns()
        accuracy = float(trainer.evaluate())
        eval_s += _seconds(t0)
        add("train", "loss", float(losses[-1]), "nats", seq=epoch - 1)
        add("tta", "accuracy", accuracy, "fraction", seq=epoch)
        if accuracy >= target:
            reached_at = epoch
            break
        if train_s >= budget:
            break
    marker(phase="tta", repeat=repeat, edge="end")
    add("train", "time", train_s, "s")
    add("train", "epochs", float(epoch), "count")
    add(
        "train",
        "throughput",
        epoch * settings.steps_per_epoch(n_train) * settings.batch_size / train_s if train_s > 0 else None,
        "samples/s",
    )
    add("evaluate", "time", eval_s, "s")
    add("accuracy", "accuracy", accuracy, "fraction")
    add("tta", "reached", 1.0 if reached_at else 0.0, "bool")
    # Not reached: no time to target (None), never the budget passed off as one.
    add("tta", "time", train_s if reached_at else None, "s")
    add("tta", "epochs", float(reached_at) if reached_at else None, "count")


# A calibrated count never exceeds this: a pass that reads as 0 ns (a broken or
# lazy adapter) must not turn into an endless loop.
MAX_INFER_PASSES = 100_000
CALIBRATION_PASSES = 3  # at least this many passes before the count is set


def _infer_passes(trainer: Any, batch: int, min_time: float, calibration: dict[str, Any]) -> tuple[int, float, int]:
    """(samples per pass, seconds per pass, passes), timed over whole passes.

    Calibrating (first call of a trial): passes until `min_time` has elapsed and at
    least three were made, because the first pass of a trial may include a one-off
    compile and a second one may fall on a moment the machine is busy (measured in
    CI: both slowed past 0.1 s, one pass then set the count for a 8 ms pass); the
    count for later repeats comes from the fastest pass. Calibrated: that fixed
    count, timed as one block."""
    passes = calibration.get("infer_passes")
    if passes is None:
        times: list[float] = []
        t_start = time.perf_counter_ns()
        while True:
            t0 = time.perf_counter_ns()
            samples = trainer.infer(batch)
            times.append(_seconds(t0))
            if min_time <= 0:  # off: one pass, as a single reading
                break
            if (_seconds(t_start) >= min_time and len(times) >= CALIBRATION_PASSES) or len(times) >= MAX_INFER_PASSES:
                break
        elapsed = _seconds(t_start)
        fastest = min(times)
        calibration["infer_passes"] = (
            1
            if min_time <= 0 or fastest >= min_time
            else min(MAX_INFER_PASSES, math.ceil(min_time / max(fastest, 1e-9)))
        )
        return samples, elapsed / len(times), len(times)
    t0 = time.perf_counter_ns()
    for _ in range(passes):
        samples = trainer.infer(batch)
    return samples, _seconds(t0) / passes, passes


def _inference(
    trainer: Any,
    case: Case,
    protocol: ProtocolSpec,
    repeat: int,
    add: Callable[..., None],
    marker: Emit,
    calibration: dict[str, Any],
    out: list[Measurement],
) -> list[Measurement]:
    batch = case.batch_size
    batches = trainer.prepare_infer(batch)
    if batches == 0:
        add("infer", "time", None, "s")  # test split smaller than one batch: nothing to time
        return out
    # Runs stored before infer_min_time existed timed one pass; a resumed one keeps that.
    min_time = protocol.infer_min_time
    marker(phase="infer", repeat=repeat, edge="start")
    samples, seconds, passes = _infer_passes(trainer, batch, min_time, calibration)
    marker(phase="infer", repeat=repeat, edge="end")
    add("infer", "time", seconds, "s")
    add("infer", "passes", float(passes), "count")
    add("infer", "throughput", samples / seconds if seconds > 0 else None, "samples/s")

    n_latency = protocol.latency_batches
    for b in dict.fromkeys((batch, 1)):
        if n_latency == 0:
            break
        available = trainer.prepare_infer(b) if b != batch else batches
        marker(phase=f"latency_b{b}", repeat=repeat, edge="start")
        for i in range(n_latency):
            t0 = time.perf_counter_ns()
            trainer.predict_batch(b, i % available)
            add(f"latency_b{b}", "time", _seconds(t0), "s", seq=i)
        marker(phase=f"latency_b{b}", repeat=repeat, edge="end")
    return out
