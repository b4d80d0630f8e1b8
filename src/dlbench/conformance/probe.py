"""One framework's half of `dlbench check`, run in a process of its own.

`python -P -m dlbench.conformance.probe` reads a JSON request on stdin, builds the
model through the framework's real adapter (the code a benchmark runs), reaches
into its trainer through the framework's declared hooks (FrameworkInfo.conformance), and
prints one JSON line: the trainable-parameter count, the output shape, the
losses of Adam steps on one fixed batch, whether a second build from the same
seed repeats them, and, for the weight-copy comparison, the network's weights in
canonical order (exported to an .npz) or its logits after importing given
weights. Errors are reported as {"error": one line}, never as a traceback.
"""

from __future__ import annotations

import json
import sys
import traceback
from typing import Any

import numpy as np

from dlbench.datasets.arrays import Arrays, ArraySplit

FIXED_BATCH_STEPS = 20
REPEAT_STEPS = 5


def sample_arrays(kind: str, shape: tuple[int, ...], classes: int, n: int = 64, seed: int = 0) -> Arrays:
    """Learnable data of the model's input: one mean sample per class plus noise
    (images, features); token ids for token models."""
    rng = np.random.default_rng(seed)
    y = (np.arange(n) % classes).astype(np.int64)
    if kind == "tokens":
        x: np.ndarray = rng.integers(0, 100, size=(n, *shape)).astype(np.int64)
    else:
        means = rng.random((classes, *shape), dtype=np.float32)
        x = (means[y] + 0.1 * rng.standard_normal((n, *shape), dtype=np.float32)).astype(np.float32)
    split = ArraySplit(x, y)
    return Arrays("check", split, ArraySplit(x[:16], y[:16]), classes)


def probe(request: dict[str, Any]) -> dict[str, Any]:
    from dlbench import registry
    from dlbench.frameworks import load
    from dlbench.frameworks.protocol import TrainSettings

    framework = request["framework"]
    registry.adopt(request.get("sources") or {})
    spec = registry.model(request["model"])
    shape, classes = tuple(request["shape"]), int(request["classes"])
    info = registry.framework(framework)
    if info.conformance is None:
        raise ValueError(f"{framework} declares no conformance hooks (FrameworkInfo.conformance)")
    hooks = load(info.conformance)
    fw = info.load_adapter()
    fw.setup(variant=info.default_variant, threads=1, seed=0, device="cpu")
    native = fw.prepare(sample_arrays(spec.input_kind, shape, classes))
    settings = TrainSettings(
        model=spec.name,
        spec=spec,
        batch_size=16,
        steps=1,
        epochs=None,
        optimizer="adam",
        lr=1e-3,
        seed=0,
        model_options=dict(request.get("options") or {}),
    )
    out: dict[str, Any] = {"framework": framework}
    trainer = fw.build(native, settings)
    out["parameters"] = int(trainer.parameter_count())
    x = np.asarray(request["x"], dtype=np.int64 if spec.input_kind == "tokens" else np.float32)
    out["output_shape"] = list(hooks.forward(trainer, x).shape)
    out["losses"] = [float(v) for v in trainer.train_fixed_batch(FIXED_BATCH_STEPS)]
    again = fw.build(native, settings).train_fixed_batch(REPEAT_STEPS)
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
        out["logits"] = hooks.forward(fresh, x).tolist()
    except WeightMismatch as exc:
        out["copy_error"] = str(exc)
    return out


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
