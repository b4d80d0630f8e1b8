"""A network's weights in one framework-neutral order, out of and into each framework.

The canonical form is Keras' and Flax's: convolution kernels (kh, kw, in/groups,
out), dense kernels (in, out), biases, and for a batch norm its scale, shift,
running mean and running variance, in that order. Layers come in the order the
framework created them (torch's module order, Keras' layer order, Flax's
creation order), so a network written the same way in each framework lines up
one to one; where it does not, the import names the first array that does not
fit. Depthwise kernels are (kh, kw, 1, channels) as torch and Flax hold them;
Keras' (kh, kw, channels, 1) is reshaped. Each framework is imported inside its
own functions: this module is imported by one framework's probe process at a time.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# role of each canonical array: kernel, bias, scale, shift, mean, var, other
Weights = list[tuple[str, np.ndarray]]


class WeightMismatch(ValueError):
    """The canonical weights do not fit this framework's network, one to one."""


def _fit(target_shape: tuple[int, ...], role: str, array: np.ndarray, index: int, where: str) -> np.ndarray:
    if tuple(array.shape) == tuple(target_shape):
        return array
    raise WeightMismatch(
        f"array {index} ({role}) is {'x'.join(map(str, array.shape))} in the reference, "
        f"{'x'.join(map(str, target_shape))} in {where}"
    )


# -- torch -------------------------------------------------------------------------


def torch_export(model: Any) -> Weights:
    import torch
    from torch import nn

    out: Weights = []
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.Conv2d):
                out.append(("kernel", module.weight.numpy().transpose(2, 3, 1, 0).copy()))
                if module.bias is not None:
                    out.append(("bias", module.bias.numpy().copy()))
            elif isinstance(module, nn.Linear):
                out.append(("kernel", module.weight.numpy().T.copy()))
                if module.bias is not None:
                    out.append(("bias", module.bias.numpy().copy()))
            elif isinstance(module, nn.modules.batchnorm._BatchNorm):
                for role, t in (
                    ("scale", module.weight),
                    ("shift", module.bias),
                    ("mean", module.running_mean),
                    ("var", module.running_var),
                ):
                    if t is not None:
                        out.append((role, t.numpy().copy()))
            else:
                out += [("other", p.detach().numpy().copy()) for p in module.parameters(recurse=False)]
    return out


def torch_import(model: Any, weights: Weights) -> int:
    import torch
    from torch import nn

    targets: list[tuple[Any, str, Any]] = []  # (tensor, role, to-torch transform)
    for module in model.modules():
        if isinstance(module, nn.Conv2d):
            targets.append((module.weight, "kernel", lambda a: a.transpose(3, 2, 0, 1)))
            if module.bias is not None:
                targets.append((module.bias, "bias", None))
        elif isinstance(module, nn.Linear):
            targets.append((module.weight, "kernel", lambda a: a.T))
            if module.bias is not None:
                targets.append((module.bias, "bias", None))
        elif isinstance(module, nn.modules.batchnorm._BatchNorm):
            for t, role in (
                (module.weight, "scale"),
                (module.bias, "shift"),
                (module.running_mean, "mean"),
                (module.running_var, "var"),
            ):
                if t is not None:
                    targets.append((t, role, None))
        else:
            targets += [(p, "other", None) for p in module.parameters(recurse=False)]
    _same_count(len(targets), len(weights), "torch")
    with torch.no_grad():
        for i, ((tensor, _role, to_torch), (role, array)) in enumerate(zip(targets, weights)):
            value = to_torch(array) if to_torch is not None else array
            value = _fit(tuple(tensor.shape), role, np.ascontiguousarray(value), i, "torch")
            tensor.copy_(torch.from_numpy(np.ascontiguousarray(value)))
    return len(targets)


# -- keras -------------------------------------------------------------------------


def _keras_layers(model: Any) -> list[Any]:
    out = []
    for layer in model.layers:
        inner = getattr(layer, "layers", None)
        out += _keras_layers(layer) if inner else [layer]
    return out


def _keras_roles(layer: Any) -> list[tuple[Any, str]]:
    import keras

    if isinstance(layer, keras.layers.BatchNormalization):
        pairs = [(layer.gamma, "scale"), (layer.beta, "shift"), (layer.moving_mean, "mean")]
        return [(v, r) for v, r in [*pairs, (layer.moving_variance, "var")] if v is not None]
    out = []
    for v in layer.weights:
        name = v.path.rsplit("/", 1)[-1]
        role = "kernel" if "kernel" in name else "bias" if name == "bias" else "other"
        out.append((v, role))
    return out


def keras_export(model: Any) -> Weights:
    import keras

    out: Weights = []
    for layer in _keras_layers(model):
        for v, role in _keras_roles(layer):
            a = np.asarray(v.numpy())
            if isinstance(layer, keras.layers.DepthwiseConv2D) and role == "kernel":
                a = a.reshape(a.shape[0], a.shape[1], 1, -1)
            out.append((role, a))
    return out


def keras_import(model: Any, weights: Weights) -> int:
    import keras

    targets = [(layer, v, role) for layer in _keras_layers(model) for v, role in _keras_roles(layer)]
    _same_count(len(targets), len(weights), "tensorflow")
    for i, ((layer, v, _), (role, array)) in enumerate(zip(targets, weights)):
        if isinstance(layer, keras.layers.DepthwiseConv2D) and role == "kernel" and array.ndim == 4:
            array = array.reshape(tuple(v.shape)) if array.size == int(np.prod(v.shape)) else array
        v.assign(_fit(tuple(v.shape), role, array, i, "tensorflow"))
    return len(targets)


# -- flax --------------------------------------------------------------------------


def _flax_walk(params: Any, stats: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], str, str]]:
    """(module path, leaf name, role) in creation order; batch norm leaves get their stats."""
    out = []
    leaves = {k: v for k, v in params.items() if not hasattr(v, "items")}
    if leaves:
        is_norm = "scale" in leaves and stats is not None and "mean" in stats
        for name in leaves:
            role = {"kernel": "kernel", "bias": "shift" if is_norm else "bias", "scale": "scale"}.get(name, "other")
            out.append((path, name, role))
        if is_norm:
            out += [(path, "mean", "mean"), (path, "var", "var")]
    for name, sub in params.items():
        if hasattr(sub, "items"):
            out += _flax_walk(sub, stats.get(name) if stats is not None else None, (*path, name))
    return out


def _get(tree: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        tree = tree[key]
    return tree


def flax_export(variables: dict[str, Any], order: dict[str, Any]) -> Weights:
    """`order`: the same network's variables from an eager (un-jitted) init, whose dicts
    keep creation order; a jitted init returns them sorted by name (Dense_10 before Dense_2)."""
    params, stats = variables["params"], variables.get("batch_stats", {})
    out: Weights = []
    for path, name, role in _flax_walk(order["params"], order.get("batch_stats", {})):
        tree = _get(stats if role in ("mean", "var") else params, path)
        out.append((role, np.asarray(tree[name])))
    return out


def flax_import(variables: dict[str, Any], weights: Weights, order: dict[str, Any]) -> tuple[dict[str, Any], int]:
    import jax

    tree = jax.tree.map(np.asarray, variables)  # mutable numpy copies, same structure
    tree = _thaw(tree)
    params, stats = tree["params"], tree.get("batch_stats", {})
    slots = _flax_walk(order["params"], order.get("batch_stats", {}))
    _same_count(len(slots), len(weights), "jax")
    for i, ((path, name, _), (role, array)) in enumerate(zip(slots, weights)):
        holder = _get(stats if role in ("mean", "var") else params, path)
        holder[name] = _fit(tuple(np.shape(holder[name])), role, array, i, "jax")
    return tree, len(slots)


def _thaw(tree: Any) -> Any:
    return {k: _thaw(v) for k, v in tree.items()} if hasattr(tree, "items") else tree


# Batch-norm scale, shift and statistics are drawn from these ranges instead of a fresh
# network's 1, 0, 0, 1, so that an epsilon or momentum convention shows in the logits.
NORM_RANGES = {"scale": (0.5, 1.5), "shift": (-0.2, 0.2), "mean": (-0.2, 0.2), "var": (0.5, 1.5)}


def perturbed(weights: Weights, seed: int = 1) -> Weights:
    """The weights with every batch-norm array redrawn from NORM_RANGES (seeded)."""
    rng = np.random.default_rng(seed)
    return [
        (role, rng.uniform(*NORM_RANGES[role], size=a.shape).astype(a.dtype) if role in NORM_RANGES else a)
        for role, a in weights
    ]


def _same_count(have: int, given: int, where: str) -> None:
    if have != given:
        raise WeightMismatch(f"{where} holds {have} weight arrays, the reference {given}")
