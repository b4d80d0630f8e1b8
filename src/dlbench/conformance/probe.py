"""One framework's half of `dlbench check`, run in a process of its own.

`python -P -m dlbench.conformance.probe` reads a JSON request on stdin, builds the
model through the framework's real adapter (the code a benchmark runs), and
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


def _forward(framework: str, trainer: Any, x: np.ndarray) -> np.ndarray:
    """Logits of the trainer's network on x (NHWC / token ids), in evaluation mode."""
    if framework == "torch":
        import torch

        t = torch.from_numpy(x)
        t = t.permute(0, 3, 1, 2).contiguous() if t.ndim == 4 else (t.long() if x.dtype.kind in "iu" else t)
        trainer.model.eval()
        with torch.no_grad():
            return np.asarray(trainer.model(t.to(trainer.data.device)).cpu().numpy())
    if framework == "tensorflow":
        return np.asarray(trainer.model(x, training=False))
    variables = {"params": trainer.params, **trainer.state}
    xs = x.astype(np.int32) if x.dtype.kind in "iu" else x
    return np.asarray(trainer.model.apply(variables, xs, deterministic=True))


def _creation_order(trainer: Any) -> Any:
    """The Flax network's variables from an eager init: dicts in creation order."""
    import jax
    import jax.numpy as jnp

    dummy = jnp.zeros((1, *trainer.data.shape), trainer.data.train_x.dtype)
    return trainer.model.init({"params": jax.random.key(0)}, dummy)


def _export(framework: str, trainer: Any) -> Any:
    from dlbench.conformance import weights

    if framework == "torch":
        return weights.torch_export(trainer.model)
    if framework == "tensorflow":
        return weights.keras_export(trainer.model)
    return weights.flax_export({"params": trainer.params, **trainer.state}, _creation_order(trainer))


def _import(framework: str, trainer: Any, given: Any) -> None:
    from dlbench.conformance import weights

    if framework == "torch":
        weights.torch_import(trainer.model, given)
    elif framework == "tensorflow":
        weights.keras_import(trainer.model, given)
    else:
        tree, _ = weights.flax_import({"params": trainer.params, **trainer.state}, given, _creation_order(trainer))
        trainer.params = tree.pop("params")
        trainer.state = tree


def probe(request: dict[str, Any]) -> dict[str, Any]:
    from dlbench import registry
    from dlbench.frameworks.protocol import TrainSettings

    framework = request["framework"]
    registry.adopt(request.get("sources") or {})
    spec = registry.model(request["model"])
    shape, classes = tuple(request["shape"]), int(request["classes"])
    fw = registry.framework(framework).load_adapter()
    fw.setup(variant=registry.framework(framework).default_variant, threads=1, seed=0, device="cpu")
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
    out["output_shape"] = list(_forward(framework, trainer, x).shape)
    out["losses"] = [float(v) for v in trainer.train_fixed_batch(FIXED_BATCH_STEPS)]
    again = fw.build(native, settings).train_fixed_batch(REPEAT_STEPS)
    out["repeat_losses"] = [float(v) for v in again]
    fresh = fw.build(native, settings)
    from dlbench.conformance.weights import WeightMismatch, perturbed

    if request.get("export_to"):  # the reference: its weights, perturbed, for every framework
        given = perturbed(_export(framework, fresh))
        np.savez(request["export_to"], *[a for _, a in given], roles=np.array([r for r, _ in given]))
    elif request.get("import_from"):
        with np.load(request["import_from"], allow_pickle=False) as data:
            roles = [str(r) for r in data["roles"]]
            given = [(role, data[f"arr_{i}"]) for i, role in enumerate(roles)]
    else:
        return out
    try:
        _import(framework, fresh, given)
        out["logits"] = _forward(framework, fresh, x).tolist()
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
