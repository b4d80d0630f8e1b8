"""Is the training the same, not only the network? `dlbench check`'s training comparison.

Each framework's probe (dlbench.conformance.probe.train_from) trains its network from
the same copied weights, on the same fixed batch, for TRAIN_STEPS steps of the
benchmark's own training step: once with plain SGD (lr 0.01, no momentum) and once
with Adam (the benchmark's optimizer, lr 1e-3), dropout off. Here the losses before each
step and the trained weights are compared with the reference framework's (the one whose
weights were copied), and a difference is named from where it shows:

- the loss differs before the first step, although the outputs after the copy agree:
  the training loss itself (a sum where the other takes a mean when the ratio is the
  batch size; otherwise a layer that computes differently in training mode, or a term
  added to the loss);
- the first SGD step differs: the gradients (scaled by one factor: loss reduction or
  learning rate; pulled toward zero in proportion to the weights: weight decay;
  otherwise the tensors whose steps differ most are named);
- only the batch-norm running means step apart: their momentum.
These are the code's: the check fails. SGD's step is lr x gradient in every framework,
so an equal first SGD step means equal gradients at the copied weights.

The rest are warnings, the framework's and not the code's: a first SGD step that differs
only in the GRU biases of the update and reset gates, as a second bias per gate makes it
differ (torch's and Keras' GRUs hold two, which only ever add, Flax's GRUCell one: a step
moves the sum twice as far; second_gru_bias), ten SGD steps that drift
apart after an equal first step (rounding that grows in a sensitive network), and Adam
steps that differ while SGD's agree (the harness builds the optimizer; the user's model
cannot change it): Keras adds epsilon to the bias-uncorrected sqrt(v) where torch and
optax add it to the corrected one, so its effective epsilon is 1/sqrt(1 - 0.999^t)
times larger, 32x at the first step; with an embedding, Keras' Adam ends far from
torch's (measured below). A warning with its size explains a learning-curve gap that is
the framework's.

Tolerances, measured (`dlbench check MODEL` on the zoo and the examples, 2026-11-28, a
2-core CPU; float32 reductions in different orders): the first SGD step within 2e-6 to
8e-5 of torch's in TensorFlow and JAX (mlp, cnn, lenet5, resnet18, lstm, dsconv,
series_cnn, regression_mlp, multi_head, tiny_lm; 2e-3 in one batch norm's scale of
dsconv at width 8), ten SGD steps within 1e-5 where the network is not sensitive to
rounding (resnet18's drift to 0.06 over ten: a warning).
Planted differences (tests/conformance/test_training_check.py: twice the gradient, a
weight decay, a batch-norm momentum, a training-mode output scale) are 0.5 apart or more.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from dlbench.conformance.weights import Weights, role_of

# |loss - reference| / max(|reference|, LOSS_FLOOR), at any step.
LOSS_RTOL = 1e-4
LOSS_FLOOR = 1e-3
# Per tensor: |trained - reference's trained| / |reference's trained - given| (L2 norms):
# how far the two trainings ended apart, in units of how far training moved the tensor.
WEIGHT_RTOL = 1e-2
STATISTICS = ("mean", "var")  # batch-norm running statistics: updated by training, not by the optimizer
# The running means' tolerance (the variances are not judged: see _gaps): a momentum given in
# the other convention (0.1 for 0.9) puts them 50% or more of a step apart.
STATISTICS_RTOL = 0.01
SCALE_SPREAD = 0.05  # "one factor for every tensor": the per-tensor estimates within 5% of each other
# Ten SGD steps after an equal first step: a warning past these (equal code measured to
# 1e-5 in most networks, 0.02 in dsconv at width 8, 0.03-0.06 with losses 0.1 in resnet18).
DRIFT_RTOL = 0.1
DRIFT_LOSS_RTOL = 1e-2
# Optimizer steps of the training comparison, in each framework and each optimizer.
TRAIN_STEPS = 10
# Adam is a warning past these: equal code and SGD steps, Adam's own arithmetic. Measured
# (10 steps): torch against optax 1e-5 to 0.03 (dsconv's batch norms), against Keras 1e-3
# to 0.05 (epsilon placement: cnn 0.02, lenet5 0.05, dsconv 0.03, series_cnn 0.03) and,
# in networks with an embedding, 1.1 (regression_mlp, losses 0.003) and 1.8 (tiny_lm,
# losses 0.1): those are the ones said.
ADAM_RTOL = 0.1
ADAM_LOSS_RTOL = 1e-2
STILL = 0.01  # a tensor that moved less than 1% of the network's typical step (per element) got no gradient to speak of


@dataclass(frozen=True)
class Compared:
    """One framework's training against the reference's."""

    framework: str
    same: bool  # the code trains alike: equal first loss, SGD steps and statistics
    words: str  # the numbers, and what differs
    own: str = ""  # a difference that is the framework's own (its Adam), "" when none


@dataclass(frozen=True)
class _Gaps:
    loss: float
    weights: float
    statistics: float | None  # the batch-norm running means; None: no batch norm


def load(path: str) -> Weights:
    with np.load(path, allow_pickle=False) as data:
        roles = [str(r) for r in data["roles"]]
        return [(role, np.asarray(data[f"arr_{i}"], dtype=np.float64)) for i, role in enumerate(roles)]


def loss_gap(losses: list[float], reference: list[float]) -> float:
    """The largest relative difference of a step's loss from the reference's."""
    return max((abs(a - b) / max(abs(b), LOSS_FLOOR) for a, b in zip(losses, reference)), default=0.0)


def typical_steps(reference: Weights, given: Weights) -> list[float]:
    """Per tensor, the floor of its movement: STILL of the network's movement per element
    (over every tensor but the statistics), scaled to the tensor's size. A tensor whose
    gradient is zero by the network's algebra (a bias just before a normalization, an
    attention key's bias) moves by rounding noise in either framework: measured against
    that noise, two equal trainings would look 100% apart."""
    moves = [
        (float(np.sum(np.square(b - g))), b.size)
        for (t, b), (_, g) in zip(reference, given)
        if role_of(t) not in STATISTICS
    ]
    total, size = sum(m for m, _ in moves), sum(n for _, n in moves)
    per_element = float(np.sqrt(total / size)) if size else 0.0
    return [STILL * per_element * float(np.sqrt(b.size)) for _, b in reference]


def weight_gaps(trained: Weights, reference: Weights, given: Weights) -> list[tuple[str, float]]:
    """(tag, relative gap) per tensor in canonical order (the measure of WEIGHT_RTOL, with
    the floor of typical_steps)."""
    out = []
    floors = typical_steps(reference, given)
    for (tag, a), (_, b), (_, g), floor in zip(trained, reference, given, floors):
        if a.shape != b.shape:
            out.append((tag, float("inf")))
            continue
        scale = max(float(np.linalg.norm(b - g)), floor, 1e-30)
        out.append((tag, float(np.linalg.norm(a - b)) / scale))
    return out


def still(trained: Weights, given: Weights) -> set[int]:
    """The tensors (by index) that an SGD training barely moved: less than STILL of the
    network's typical step. Adam scales any gradient to a step of about lr, rounding
    noise included, so these are left out of Adam's comparison."""
    floors = typical_steps(trained, given)
    return {
        i
        for i, ((t, a), (_, g), floor) in enumerate(zip(trained, given, floors))
        if role_of(t) not in STATISTICS and float(np.linalg.norm(a - g)) < floor
    }


def _gaps(
    losses: list[float], ref_losses: list[float], trained: Weights, reference: Weights, given: Weights, skip: set[int]
) -> _Gaps:
    per = [g for i, g in enumerate(weight_gaps(trained, reference, given)) if i not in skip]
    # The running means judge the momentum: torch steps its running variance toward the
    # unbiased batch variance (x n/(n-1)), Keras and Flax toward the biased one, 6.7% of the
    # variance's step apart where a batch norm sees 16 values per channel (resnet18's last
    # stage at batch 16: 6-10% over 10 steps), which is the framework's, not a momentum.
    stats = [g for t, g in per if role_of(t) == "mean"]
    return _Gaps(
        loss_gap(losses, ref_losses),
        max((g for t, g in per if role_of(t) not in STATISTICS), default=0.0),
        max(stats) if stats else None,
    )


def _where(tag: str) -> str:
    parts = tag.split("|", 2)
    return f"{parts[0]} of {parts[2]}" if len(parts) == 3 else parts[0]


def gradient_cause(
    trained: Weights, reference: Weights, given: Weights, lr: float, steps: int, sides: tuple[str, str]
) -> str:
    """Why two SGD trainings from the same weights differ: one scale on every step, a
    weight decay on one side (`sides`: this framework's name, the reference's), or the
    tensors that differ most."""
    mine = [a - g for (_, a), (_, g) in zip(trained, given)]
    theirs = [b - g for (_, b), (_, g) in zip(reference, given)]
    moved = [i for i, (tag, _) in enumerate(reference) if role_of(tag) not in STATISTICS and np.any(theirs[i])]
    scales = [float(np.vdot(mine[i], theirs[i]) / np.vdot(theirs[i], theirs[i])) for i in moved]
    if scales:
        k = float(np.median(scales))
        if max(scales) - min(scales) <= SCALE_SPREAD * abs(k) and abs(k - 1) > SCALE_SPREAD:
            return (
                f"every step is {k:.3g}x the reference's: the gradient or the learning rate is scaled (a loss "
                "summed where the other averages, over the batch or the positions; another learning rate)"
            )
    kernels = [i for i in moved if role_of(reference[i][0]) in ("kernel", "recurrent", "embedding")]
    if kernels:
        # Weight decay adds lr * wd * w to each step: over few steps w is about the given weights.
        r = np.concatenate([(mine[i] - theirs[i]).ravel() for i in kernels])
        w = np.concatenate([given[i][1].ravel() for i in kernels])
        c = float(np.vdot(r, w) / max(float(np.vdot(w, w)), 1e-30))
        if c != 0 and np.linalg.norm(r - c * w) <= 0.2 * np.linalg.norm(r):
            side = sides[0] if c < 0 else sides[1]
            return (
                f"the steps differ by a pull toward zero in proportion to the weights: weight decay (about "
                f"{abs(c) / (lr * steps):.2g} at lr {lr:g}) in {side} only"
            )
    gaps = [(t, g) for t, g in weight_gaps(trained, reference, given) if role_of(t) not in STATISTICS]
    worst = sorted(gaps, key=lambda t: -t[1])[:3]
    return "the gradients differ, most in " + ", ".join(f"the {_where(t)} ({g:.2g})" for t, g in worst)


def _is_gru_bias(tag: str, array: np.ndarray) -> bool:
    """A GRU's canonical bias (2, 3H): input biases, recurrent biases, gates z, r, n."""
    parts = tag.split("|")
    return (
        role_of(tag) == "bias"
        and len(parts) == 3
        and "GRU" in parts[1]
        and array.ndim == 2
        and array.shape[0] == 2
        and array.shape[1] % 3 == 0
    )


def _close(x: np.ndarray, y: np.ndarray) -> bool:
    return float(np.linalg.norm(x - y)) <= WEIGHT_RTOL * max(float(np.linalg.norm(y)), 1e-30)


def second_gru_bias(trained: Weights, reference: Weights, given: Weights) -> str | None:
    """Which side ("mine" or "reference") holds a second bias on its GRUs' update and reset
    gates, when the first SGD step differs only there and as that makes it differ; else None.

    torch's GRU (b_ih and b_hh) and Keras' (reset_after: input and recurrent bias) hold two
    biases for the update and reset gates, which only ever add; Flax's GRUCell holds one. The
    gradient of each of the two equals the gradient of their sum, so one SGD step moves the
    sum twice as far where there are two: in the canonical (2, 3H) bias, that side's
    recurrent z, r biases step as far as its input ones, the other side's not at all, and
    everything else steps alike."""
    holder, seen = None, False
    for (tag, a), (_, b), (_, g) in zip(trained, reference, given):
        if not _is_gru_bias(tag, a) or a.shape != b.shape:
            continue
        seen = True
        h = a.shape[1] // 3
        mine, theirs = a - g, b - g
        if not (_close(mine[0], theirs[0]) and _close(mine[1, 2 * h :], theirs[1, 2 * h :])):
            return None
        inputs = theirs[0, : 2 * h]
        floor = WEIGHT_RTOL * float(np.linalg.norm(inputs))
        if _close(mine[1, : 2 * h], inputs) and float(np.linalg.norm(theirs[1, : 2 * h])) <= floor:
            side = "mine"
        elif _close(theirs[1, : 2 * h], inputs) and float(np.linalg.norm(mine[1, : 2 * h])) <= floor:
            side = "reference"
        else:
            return None
        if holder not in (None, side):
            return None
        holder = side
    if not seen:
        return None
    others = [
        gap
        for (tag, gap), (_, a) in zip(weight_gaps(trained, reference, given), trained)
        if role_of(tag) not in STATISTICS and not _is_gru_bias(tag, a)
    ]
    return holder if all(gap <= WEIGHT_RTOL for gap in others) else None


def _first_loss_cause(first: float, reference: float, batch: int) -> str:
    ratio = first / reference if reference else float("inf")
    if any(abs(r - batch) <= 0.01 * batch for r in (ratio, 1 / ratio if ratio else 0.0)):
        return f"{ratio:.3g}x: a loss summed over the batch of {batch} where the other averages"
    return (
        "a layer that computes differently in training mode, or a term added to the loss (a regularizer, label "
        "smoothing): the outputs after the copy agree"
    )


def compare(runs: Mapping[str, Mapping[str, Any]], given: Weights, batch: int) -> list[Compared]:
    """Every framework but the first (the reference) against it, from each probe's
    `training` record (optimizer -> losses, lr, weights path, the first SGD step's weights)
    and the given weights. The code is judged on the loss before the first step and on
    the first SGD step (-lr x the gradient at the given weights, nothing compounded yet;
    the ten steps where the first was not recorded); ten steps of SGD and of Adam that
    drift apart after an equal first step are the framework's (rounding that grows, its
    own Adam) and are warnings."""
    frameworks = list(runs)
    if len(frameworks) < 2:
        return []
    ref_fw, ref = frameworks[0], runs[frameworks[0]]
    ref_trained = {opt: load(r["weights"]) for opt, r in ref.items()}
    out = []
    for fw in frameworks[1:]:
        mine = runs[fw]
        trained = {opt: load(r["weights"]) for opt, r in mine.items() if opt in ref}
        if any([a.shape for _, a in w] != [a.shape for _, a in ref_trained[o]] for o, w in trained.items()):
            out.append(Compared(fw, False, f"the trained weights do not line up with {ref_fw}'s"))
            continue
        # Tensors plain SGD left still (no gradient to speak of) are not Adam's to compare.
        quiet = still(ref_trained["sgd"], given)
        gaps = {
            o: _gaps(mine[o]["losses"], ref[o]["losses"], w, ref_trained[o], given, quiet if o == "adam" else set())
            for o, w in trained.items()
        }
        firsts = [mine["sgd"].get("first_weights"), ref["sgd"].get("first_weights")]
        if all(firsts):
            judged, steps = (load(str(firsts[0])), load(str(firsts[1]))), 1
        else:
            judged, steps = (trained["sgd"], ref_trained["sgd"]), len(mine["sgd"]["losses"])
        first, first_ref = mine["sgd"]["losses"][0], ref["sgd"]["losses"][0]
        gru = ""  # the frameworks' GRU biases, when they are what differs (second_gru_bias)
        step = _gaps([first], [first_ref], judged[0], judged[1], given, set())
        numbers = (f"first SGD step within {step.weights:.1g}" if steps == 1 else "") + "".join(
            f"; {len(mine[o]['losses'])} {o} steps: losses within {g.loss:.1g}, weights within {g.weights:.1g}"
            + (f", batch-norm means within {g.statistics:.1g}" if g.statistics is not None else "")
            for o, g in gaps.items()
        )
        numbers = numbers.removeprefix("; ")
        problems = [f"non-finite losses ({o})" for o in trained if not np.all(np.isfinite(mine[o]["losses"]))]
        if abs(first - first_ref) > LOSS_RTOL * max(abs(first_ref), LOSS_FLOOR):
            problems.append(
                f"the training loss differs before the first step ({first:.5g} against {first_ref:.5g}): "
                + _first_loss_cause(first, first_ref, batch)
            )
        elif step.weights > WEIGHT_RTOL and (
            holder := second_gru_bias(judged[0], judged[1], given) if steps == 1 else None
        ):
            two, one = (fw, ref_fw) if holder == "mine" else (ref_fw, fw)
            gru = (
                f"{fw}'s first SGD step differs from {ref_fw}'s only in the GRU biases of the update and reset "
                f"gates: {two} holds two biases for each (torch's bias_ih and bias_hh, Keras' input and recurrent "
                f"bias), which only ever add, where {one} holds one, and a step moves their sum twice as far: the "
                f"frameworks' layers, not the code; its {len(mine['sgd']['losses'])} SGD steps end "
                f"{gaps['sgd'].weights:.2g} apart (losses {gaps['sgd'].loss:.2g})"
            )
        elif step.weights > WEIGHT_RTOL:
            cause = gradient_cause(judged[0], judged[1], given, float(mine["sgd"]["lr"]), steps, (fw, ref_fw))
            problems.append(f"plain SGD steps differ: {cause}")
        elif step.statistics is not None and step.statistics > STATISTICS_RTOL:
            problems.append(
                "the weights train alike, the batch-norm running statistics step apart: their momentum differs "
                "(torch's momentum 0.1 is Keras' and Flax's 0.9)"
            )
        own = [gru] if gru else []
        sgd, adam = gaps["sgd"], gaps.get("adam")
        if not problems and not gru and steps == 1 and (sgd.loss > DRIFT_LOSS_RTOL or sgd.weights > DRIFT_RTOL):
            own.append(
                f"{fw}'s {len(mine['sgd']['losses'])} SGD steps end {sgd.weights:.2g} apart from {ref_fw}'s (losses "
                f"{sgd.loss:.2g}) after an equal first step ({step.weights:.1g}): the gradients agree at the copied "
                "weights, the difference grows over later steps; not attributed (rounding that a sensitive network "
                "amplifies, or a difference that shows only once the weights have moved)"
            )
        if not problems and not gru and adam is not None and (adam.loss > ADAM_LOSS_RTOL or adam.weights > ADAM_RTOL):
            own.append(
                f"{fw}'s Adam steps end {adam.weights:.2g} apart from {ref_fw}'s (losses {adam.loss:.2g}) while plain "
                "SGD's first step agrees: the optimizer's arithmetic, not the code (where epsilon is added: Keras "
                "adds it to the bias-uncorrected sqrt(v); how an embedding's sparse gradient is treated)"
            )
        words = numbers + (": " + "; ".join(problems) if problems else "")
        out.append(Compared(fw, not problems, words, "; ".join(own)))
    return out
