"""One framework's half of `dlbench check`, run in a process of its own.

`python -P -m dlbench.conformance.probe` reads a JSON request on stdin, builds the
model through the framework's real adapter (the code a benchmark runs, with the
harness's default init scheme, glorot-uniform), reaches into its trainer through the
framework's declared hooks (FrameworkInfo.conformance), and prints one JSON line: the
trainable-parameter count, the output shape, the losses of Adam steps on one fixed
batch, which trainable tensors those steps left unchanged (no gradient reached
them), a held-out batch's loss and accuracy before and after the steps (classifiers),
whether a second build from the same seed repeats the losses, what the adapter noted
about the init scheme (layers it did not reach keep the builder's own init), and,
for the weight-copy comparison, the network's weights in canonical order (exported
to an .npz) or its logits after importing given weights, and then the training from
those weights (`train_from`: the losses of SGD and Adam steps, the trained weights to
an .npz each, for dlbench.conformance.training). Errors are reported as {"error": one
line}, never as a traceback.
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Mapping
from typing import Any

import numpy as np

from dlbench.datasets.arrays import Arrays, ArraySplit

FIXED_BATCH_STEPS = 20
REPEAT_STEPS = 5
RELEVANT = 2  # regression: the input values the targets depend on
HELD_OUT = 64  # samples in the held-out batch, at least (a multiple of the class count)
HEAD_CLUSTERS = 10  # several outputs: the class means of the check's data, at least
INIT = "glorot-uniform"  # the harness's default init scheme (dlbench.config's default for `init`)
# The training comparison (dlbench.conformance.training): optimizer steps from the copied
# weights, with the benchmark's optimizer (Adam) and with plain SGD, which tells a
# difference in the gradients from one in the optimizer.
TRAIN_OPTIMIZERS = ("adam", "sgd")
SGD_LR = 0.01


def _class_means(kind: str, shape: tuple[int, ...], classes: int, n: int, seed: int, shuffled: bool) -> ArraySplit:
    rng = np.random.default_rng(seed)
    means = rng.random((classes, *shape), dtype=np.float32)  # the first draw: the same means for every split
    if shuffled:  # the held-out batch: its own noise; every class equally often, in no particular order
        rng = np.random.default_rng([seed, 1])
        y = rng.permutation(np.arange(n) % classes).astype(np.int64)
    else:
        y = (np.arange(n) % classes).astype(np.int64)
    x = (means[y] + 0.1 * rng.standard_normal((n, *shape), dtype=np.float32)).astype(np.float32)
    return ArraySplit(x, y)


def sample_arrays(
    kind: str,
    shape: tuple[int, ...],
    classes: int,
    n: int = 64,
    seed: int = 0,
    task: str = "classify",
    vocab: int = 100,
) -> Arrays:
    """Learnable data of the model's input: one mean sample per class plus noise
    (images, features, any float input); the synthetic dataset's learnable token or
    spectrogram data (tokens with class keywords, Markov sequences, CTC utterances),
    token ids 0..vocab-1. The test split is the held-out batch: the same class means (or
    keywords, chain, prototypes), other samples."""
    if task == "regress":
        return _regression(shape, classes, n, seed)
    if kind in ("tokens", "spectrogram"):
        from dlbench.datasets import synthetic

        ids = vocab if kind == "tokens" and task == "classify" else None
        try:
            opts = synthetic.SyntheticOptions(tuple(shape), classes, n, HELD_OUT, kind, task, ids)
        except ValueError:
            opts = None
        if opts is not None:
            return synthetic.load(opts, seed)
        rng = np.random.default_rng(seed)
        x: np.ndarray = rng.integers(0, vocab, size=(n, *shape)).astype(np.int64)
        y = (np.arange(n) % classes).astype(np.int64)
        return Arrays("check", ArraySplit(x, y), ArraySplit(x[:16], y[:16]), classes)
    train = _class_means(kind, shape, classes, n, seed, shuffled=False)
    held = classes * -(-HELD_OUT // classes)  # a multiple of the class count: predicting one class scores 1/classes
    return Arrays("check", train, _class_means(kind, shape, classes, held, seed, shuffled=True), classes)


def _regression(shape: tuple[int, ...], targets: int, n: int, seed: int) -> Arrays:
    """Learnable regression data: x standard normal, y a fixed linear map of x's first
    RELEVANT values (K = `targets` per sample) plus noise of sd 0.1; the held-out split
    has its own x under the same map. Few relevant values: one fixed batch of 16 samples
    is enough to learn them, so a network that learns predicts held-out targets far
    better than their mean, and one that ignores its input cannot."""
    rng = np.random.default_rng(seed)
    size = int(np.prod(shape))
    w = np.zeros((size, targets))
    w[:RELEVANT] = rng.standard_normal((min(RELEVANT, size), targets))

    def split(count: int, draw: np.random.Generator) -> ArraySplit:
        x = draw.standard_normal((count, *shape)).astype(np.float32)
        y = x.reshape(count, size) @ w + 0.1 * draw.standard_normal((count, targets))
        return ArraySplit(x, y.astype(np.float32))

    return Arrays("check", split(n, rng), split(HELD_OUT, np.random.default_rng([seed, 1])), targets)


def named_arrays(
    kinds: Mapping[str, str], shapes: Mapping[str, tuple[int, ...]], classes: int, task: str, vocab: int
) -> Arrays:
    """Learnable data of several named inputs: every float input carries its own class
    means of one set of labels (for regression, its own linear map, the targets their
    sum); a token input holds random ids, which carry no class."""
    floats = {name: kind for name, kind in kinds.items() if kind != "tokens"}
    parts = {name: sample_arrays(kind, shapes[name], classes, task=task, vocab=vocab) for name, kind in floats.items()}
    if not parts:  # ids only: labels in class order, nothing to learn them from
        parts = {"": sample_arrays("features", (1,), classes, task=task)}
    first = next(iter(parts.values()))
    rng = np.random.default_rng(3)

    def split(which: str) -> ArraySplit:
        ref = getattr(first, which)
        n = len(ref)
        x = {
            name: getattr(parts[name], which).x
            if name in parts
            else rng.integers(0, vocab, size=(n, *shapes[name])).astype(np.int64)
            for name in kinds
        }
        y = sum(getattr(p, which).y for p in parts.values()) if task == "regress" else ref.y
        return ArraySplit(x, np.asarray(y))

    return Arrays("check", split("train"), split("test"), classes)


def heads_arrays(base: Arrays, heads: Mapping[str, str], classes: Mapping[str, int], seed: int = 0) -> Arrays:
    """Learnable targets of several named outputs on classifier data (`base`, its labels
    the class of each sample's mean): a classify head's label is that class modulo the
    head's classes; a regress head's targets a fixed standard-normal vector per class
    (K per sample) plus noise of sd 0.1. Both are functions of the class, which the
    input shows, so a network that learns predicts held-out targets far better than
    the fixed batch's mean, and one that ignores its input cannot."""
    rng = np.random.default_rng([seed, 2])
    table = {h: rng.standard_normal((base.num_classes, classes[h])) for h, task in heads.items() if task == "regress"}

    def split(part: ArraySplit, draw: np.random.Generator) -> ArraySplit:
        y: dict[str, np.ndarray] = {}
        for head, task in heads.items():
            if task == "classify":
                y[head] = (part.y % classes[head]).astype(np.int64)
            else:
                noise = 0.1 * draw.standard_normal((len(part.y), classes[head]))
                y[head] = (table[head][part.y] + noise).astype(np.float32)
        return ArraySplit(part.x, y)

    train = split(base.train, np.random.default_rng([seed, 3]))
    return Arrays("check", train, split(base.test, np.random.default_rng([seed, 4])), dict(classes))


def trainable_tensors(trainer: Any) -> dict[str, np.ndarray] | None:
    """The trainable tensors of a trainer's network by name, copied to the host: torch
    (an nn.Module's parameters that require grad), Keras (trainable_weights) and Flax
    (the `params` tree); None for a trainer holding none of these."""
    model: Any = getattr(trainer, "model", None)
    if hasattr(model, "named_parameters"):
        return {n: p.detach().cpu().numpy().copy() for n, p in model.named_parameters() if p.requires_grad}
    if hasattr(model, "trainable_weights"):
        return {str(getattr(v, "path", v.name)): np.array(v, copy=True) for v in model.trainable_weights}
    params = getattr(trainer, "params", None)
    if params is not None:
        import jax

        leaves = jax.tree_util.tree_flatten_with_path(params)[0]
        return {jax.tree_util.keystr(path): np.array(leaf, copy=True) for path, leaf in leaves}
    return None


def held_out_score(hooks: Any, trainer: Any, x: np.ndarray, y: Any) -> dict[str, Any]:
    """Mean cross-entropy and accuracy of the network's logits on a held-out batch; for
    regression targets (float) the mean squared error as "loss"; for several named
    outputs head -> its score."""
    if isinstance(y, Mapping):
        outs = hooks.forward(trainer, x)
        return {head: _score(outs[head], target) for head, target in y.items()}
    return _score(hooks.forward(trainer, x), y)


def _score(output: Any, y: np.ndarray) -> dict[str, Any]:
    if y.dtype.kind == "f":
        out = np.asarray(output, dtype=np.float64).reshape(y.shape)
        return {"loss": float(np.mean(np.square(out - y))), "samples": len(y)}
    logits = np.asarray(output, dtype=np.float64)
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    loss = float(-log_p[np.arange(len(y)), y].mean())
    return {"loss": loss, "accuracy": float((logits.argmax(axis=1) == y).mean()), "samples": len(y)}


def probe(request: dict[str, Any]) -> dict[str, Any]:
    from dlbench import registry
    from dlbench.conformance import LEARN_STEPS, learned, learned_heads
    from dlbench.frameworks import load
    from dlbench.frameworks.protocol import TrainSettings

    framework = request["framework"]
    registry.adopt(request.get("sources") or {})
    spec = registry.model(request["model"])
    given = request["shape"]
    shape: Any = {k: tuple(v) for k, v in given.items()} if isinstance(given, dict) else tuple(given)
    # head -> classes or K for several named outputs (the check's own choice, in the request).
    given_classes = request["classes"]
    heads: Mapping[str, int] = {h: int(c) for h, c in given_classes.items()} if isinstance(given_classes, dict) else {}
    # Several outputs: data of at least HEAD_CLUSTERS class means, each head's labels a function
    # of the mean (heads_arrays), so that a head of few classes does not start near its best.
    classify = [c for h, c in heads.items() if spec.heads[h] == "classify"]
    classes = max([HEAD_CLUSTERS, *classify]) if heads else int(given_classes)
    info = registry.framework(framework)
    if info.conformance is None:
        raise ValueError(f"{framework} declares no conformance hooks (FrameworkInfo.conformance)")
    hooks = load(info.conformance)
    fw = info.load_adapter()
    fw.setup(variant=info.default_variant, threads=1, seed=0, device="cpu")
    vocab = int(request.get("vocab", 100))
    if isinstance(shape, dict):  # named inputs: each input's own learnable data, shared labels
        arrays = named_arrays(spec.inputs, shape, classes, task=spec.task, vocab=vocab)
    else:
        arrays = sample_arrays(spec.input_kind, shape, classes, task=spec.task, vocab=vocab)
    if heads:
        arrays = heads_arrays(arrays, spec.heads, heads)
    native = fw.prepare(arrays)
    settings = TrainSettings(
        model=spec.name,
        spec=spec,
        # A regression's fixed batch is every training sample (64): 16 samples of a few
        # input values are interpolated exactly by any small MLP, which then predicts
        # held-out targets barely better than their mean (measured: 1.42-1.74 against 1.84).
        batch_size=64 if spec.task == "regress" else 16,
        steps=1,
        epochs=None,
        optimizer="adam",
        lr=1e-3,
        init=INIT,
        seed=0,
        # The spec's defaults overlaid with the given options, as a benchmark's case has them.
        model_options=spec.resolve_options(request.get("options") or {}),
    )
    out: dict[str, Any] = {"framework": framework, "task": spec.task, "init": INIT, "batch_size": settings.batch_size}
    trainer = fw.build(native, settings)
    facts = getattr(trainer, "facts", None)
    facts = facts if isinstance(facts, dict) else trainer.manifest()
    for key in ("init_note", "init_kept_parameters"):
        if key in facts:
            out[key] = facts[key]
    out["parameters"] = int(trainer.parameter_count())
    model = getattr(trainer, "model", None)
    if hasattr(model, "named_modules") and hasattr(model, "named_parameters"):  # an nn.Module
        from dlbench.conformance.weights import torch_redundant

        out["redundant"] = torch_redundant(model)
    elif hasattr(model, "get_layer") and hasattr(model, "layers"):  # a Keras model
        from dlbench.conformance.weights import keras_redundant

        out["redundant"] = keras_redundant(model)

    def sample(values: Any, kind: str) -> np.ndarray:
        return np.asarray(values, dtype=np.int64 if kind == "tokens" else np.float32)

    raw_x = request["x"]
    x: Any = (
        {name: sample(v, spec.inputs[name]) for name, v in raw_x.items()}
        if isinstance(raw_x, dict)
        else sample(raw_x, spec.input_kind)
    )
    first = hooks.forward(trainer, x)
    if isinstance(first, Mapping):
        out["output_shape"] = {head: list(v.shape) for head, v in first.items()}
    else:
        out["output_shape"] = list(first.shape)
    if out["parameters"] == 0:  # nothing to train: an optimizer step would only raise
        out["losses"], out["repeat_losses"] = [], []
        return out
    # "Does it learn" is judged at the model's check size where the check gives one
    # (request["learn_options"]: a zoo model's tiny_options when the user set no option):
    # the same layers and training code at widths that learn a 64-sample batch in 200 steps
    # on a CPU. At full size alexnet (4096-unit layers, dropout 0.5) barely moves under Adam
    # 1e-3 on it (held-out .10 after 200 steps, 580 s): the optimizer's scale, not the code.
    learn_settings = settings
    if request.get("learn_options") is not None:
        from dataclasses import replace

        learn_settings = replace(settings, model_options=spec.resolve_options(request["learn_options"]))
        trainer = fw.build(native, learn_settings)
        out["learn_options"] = dict(request["learn_options"])
        out["learn_parameters"] = int(trainer.parameter_count())
    if heads:
        shapes = out["output_shape"]
        scored = isinstance(shapes, dict) and set(shapes) == set(heads) and all(len(v) == 2 for v in shapes.values())
    else:
        scored = spec.task in ("classify", "regress") and len(out["output_shape"]) == 2
    held_x, held_y = arrays.test.x, arrays.test.y
    if scored:
        out["held_out_before"] = held_out_score(hooks, trainer, held_x, held_y)
        for score, train_y, test_y in (
            zip(out["held_out_before"].values(), arrays.train.y.values(), held_y.values())
            if heads
            else [(out["held_out_before"], arrays.train.y, held_y)]
        ):
            if test_y.dtype.kind == "f":  # regression: the MSE of predicting the fixed batch's mean target
                mean = np.asarray(train_y[: settings.batch_size], dtype=np.float64).mean(axis=0)
                score["baseline"] = float(np.mean(np.square(test_y - mean)))
    before = trainable_tensors(trainer)
    out["losses"] = [float(v) for v in trainer.train_fixed_batch(FIXED_BATCH_STEPS)]
    after = trainable_tensors(trainer)
    if before is not None and after is not None:
        # Adam moves a tensor whose gradient was not zero at some step; one left exactly
        # as built got no gradient in FIXED_BATCH_STEPS steps.
        out["tensors"] = len(before)
        out["unchanged"] = [n for n, v in before.items() if n in after and np.array_equal(v, after[n])]
    # More steps, in the same run, while the rule (dlbench.conformance.learned) is not met.
    steps, losses = FIXED_BATCH_STEPS, list(out["losses"])
    while True:
        held = held_out_score(hooks, trainer, held_x, held_y) if scored else None
        if held is not None:
            out["held_out_after"] = held
        judged = (
            learned_heads(losses, spec.heads, heads, out.get("held_out_before"), held)
            if heads
            else learned(losses, classes, out.get("held_out_before"), held)
        )
        if judged[0] or steps >= LEARN_STEPS[-1]:
            break
        more = next(n for n in LEARN_STEPS if n > steps) - steps
        losses += [float(v) for v in trainer.train_fixed_batch(more)]
        steps += more
    out["steps"] = steps
    if steps > FIXED_BATCH_STEPS:
        out["more_losses"] = losses[FIXED_BATCH_STEPS:]
    again = fw.build(native, learn_settings).train_fixed_batch(REPEAT_STEPS)
    out["repeat_losses"] = [float(v) for v in again]
    fresh = fw.build(native, settings)
    from dlbench.conformance.weights import WeightMismatch, perturbed

    if request.get("export_to"):  # the reference: its weights, perturbed, for every framework
        given = perturbed(hooks.export(fresh))
        np.savez(request["export_to"], *[a for _, a in given], roles=np.array([r for r, _ in given]))
    elif request.get("import_from"):
        with np.load(request["import_from"], allow_pickle=False) as data:
            roles = [str(r) for r in data["roles"]]
            given = [(role, data[f"arr_{i}"]) for i, role in enumerate(roles)]
    else:
        return out
    try:
        hooks.load(fresh, given)
        logits = hooks.forward(fresh, x)
        out["logits"] = {h: v.tolist() for h, v in logits.items()} if isinstance(logits, Mapping) else logits.tolist()
    except WeightMismatch as exc:
        out["copy_error"] = str(exc)
        return out
    if request.get("train_to"):
        out["training"] = {
            optimizer: train_from(info, hooks, arrays, settings, given, optimizer, request["train_to"])
            for optimizer in TRAIN_OPTIMIZERS
        }
    return out


def train_from(
    info: Any, hooks: Any, arrays: Arrays, settings: Any, given: Any, optimizer: str, folder: str
) -> dict[str, Any]:
    """TRAIN_STEPS optimizer steps of the benchmark's own training step, on the probe's
    fixed batch, from the given (copied) weights: the loss before each step, written
    with the trained weights (canonical order) to FOLDER/<framework>-<optimizer>.npz for
    the parent to compare across frameworks (dlbench.conformance.training).

    The network trains with its dropout off (no two frameworks draw the same masks) and
    torch's second LSTM / RNN bias frozen at the zero the copy gave it: with both biases
    trained, their sum moves twice as far a step as the one bias of Keras and Flax (the
    framework's design, reported on its own, not a difference in the code). A fresh
    adapter builds it, so that no step compiled with dropout on is reused."""
    from dataclasses import replace

    fw = info.load_adapter()
    fw.setup(variant=info.default_variant, threads=1, seed=0, device="cpu")
    native = fw.prepare(arrays)
    # SGD without momentum: its step is lr x the gradient, so two frameworks' steps compare
    # the gradients themselves; Adam's compares the optimizer too.
    lr = settings.lr if optimizer == settings.optimizer else SGD_LR
    trainer = fw.build(native, replace(settings, optimizer=optimizer, lr=lr, momentum=0.0))
    dropout_off = getattr(hooks, "dropout_off", None)
    off = dropout_off(trainer) if dropout_off is not None else None
    hooks.load(trainer, given)
    frozen = _freeze_redundant(trainer)
    from dlbench.conformance.training import TRAIN_STEPS
    from dlbench.conformance.weights import aligned

    def save(suffix: str) -> str:
        trained = aligned(hooks.export(trainer), given)  # array by array against the reference's
        path = f"{folder}/{info.name}-{optimizer}{suffix}.npz"
        np.savez(path, *[a for _, a in trained], roles=np.array([r for r, _ in trained]))
        return path

    # The weights after the first step too: one SGD step is -lr x the gradient at the given
    # weights exactly, before any difference compounds (what names a difference).
    losses = [float(v) for v in trainer.train_fixed_batch(1)]
    first = save("-first")
    losses += [float(v) for v in trainer.train_fixed_batch(TRAIN_STEPS - 1)]
    return {
        "losses": losses,
        "lr": lr,
        "weights": save(""),
        "first_weights": first,
        "dropout_off": off if off is not None else "no dropout_off hook: dropout as built",
        "frozen": frozen,
    }


def _freeze_redundant(trainer: Any) -> list[str]:
    """torch's second LSTM / RNN biases (dlbench.conformance.weights.torch_redundant) made
    untrainable, so that torch trains as Keras and Flax, which hold one bias; their names.
    A GRU's redundant part is two thirds of a tensor and Keras holds it too: it trains as it
    is, and training.compare names the step it adds against Flax."""
    model: Any = getattr(trainer, "model", None)
    if not (hasattr(model, "named_modules") and hasattr(model, "named_parameters")):
        return []
    from dlbench.conformance.weights import torch_redundant

    names = {name for name, _ in torch_redundant(model) if not name.endswith("]")}  # whole tensors only
    for name, param in model.named_parameters():
        if name in names:
            param.requires_grad_(False)
    return sorted(names)


def main() -> None:
    import os

    os.environ["DLBENCH_WORKER"] = "1"  # a model file imported here must not start runs (see dlbench.api)
    try:
        result = probe(json.loads(sys.stdin.read()))
    except Exception as exc:  # reported as one line; the traceback goes to stderr for a bug report
        traceback.print_exc(file=sys.stderr)
        first = str(exc).splitlines()[0] if str(exc) else ""
        result = {"error": f"{type(exc).__name__}: {first}"}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
