"""How `dlbench check`'s probe (dlbench.conformance.probe) reaches into each built-in
framework's trainer: the network's logits, its weights exported and imported in
canonical order, and its dropout turned off for the training comparison. Each object
here is a framework's `conformance` hooks (dlbench.frameworks.FrameworkInfo); a plugin
gives its own with the same three methods (forward, export, load) and, optionally,
dropout_off (without it, its training is compared with dropout as built).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

# Stochastic depth (drop-path) layers, which drop a sample's whole residual branch in
# training: no framework has one under a common base class, so they are known by their
# class name (torchvision.ops.StochasticDepth, timm's DropPath, keras_cv's
# StochasticDepth, the zoo efficientnet's own) and their rate by its attribute name.
# Measured (2026-11-29, `dlbench check efficientnet_b4`): with torch's left on, its loss
# before the first training step was 2.493 against 2.5856 in TensorFlow and JAX, whose
# stochastic depth is a Dropout layer and was off.
STOCHASTIC_DEPTH = ("stochasticdepth", "droppath")
RATE_ATTRIBUTES = ("p", "rate", "drop_prob")


def stochastic_depth_off(layer: Any) -> bool:
    """Sets a stochastic-depth layer's rate to 0; whether `layer` was one with a rate above 0."""
    if not any(word in type(layer).__name__.lower() for word in STOCHASTIC_DEPTH):
        return False
    hit = False
    for attr in RATE_ATTRIBUTES:
        value = getattr(layer, attr, None)
        if isinstance(value, float) and value > 0:
            setattr(layer, attr, 0.0)
            hit = True
    return hit


class TorchCheck:
    @staticmethod
    def forward(trainer: Any, x: np.ndarray) -> Any:
        """Logits of the trainer's network on x (NHWC / NDHWC / (N, L, C) series / token
        ids; name -> one of them for named inputs), in evaluation mode, in the layout the
        adapter hands the network."""
        import torch

        from dlbench.frameworks.builders import model_spec

        spec = model_spec(trainer.settings)

        def tensor(a: np.ndarray, kind: str) -> Any:
            t = torch.from_numpy(np.ascontiguousarray(a))
            if t.ndim == 4:
                t = t.permute(0, 3, 1, 2).contiguous()
            elif t.ndim == 5:
                t = t.permute(0, 4, 1, 2, 3).contiguous()
            elif t.ndim == 3 and kind == "series":
                t = t.transpose(1, 2).contiguous()
            elif a.dtype.kind in "iu":
                t = t.long()
            return t.to(trainer.data.device)

        if isinstance(x, dict):
            t: Any = {name: tensor(a, spec.inputs.get(name, "")) for name, a in x.items()}
        else:
            t = tensor(x, spec.input_kind)
        trainer.model.eval()
        with torch.no_grad():
            out = trainer.model(t)
            if isinstance(out, dict):  # several named outputs: head -> output
                return {head: np.asarray(v.cpu().numpy()) for head, v in out.items()}
            return np.asarray(out.cpu().numpy())

    @staticmethod
    def export(trainer: Any) -> Any:
        from dlbench.conformance import weights

        return weights.torch_export(trainer.model)

    @staticmethod
    def load(trainer: Any, given: Any) -> None:
        from dlbench.conformance import weights

        weights.torch_import(trainer.model, given)

    @staticmethod
    def dropout_off(trainer: Any) -> list[str]:
        """Every dropout of the network set to rate 0, by where it is: dropout modules,
        nn.LSTM/GRU/RNN's dropout between layers, nn.MultiheadAttention's on the weights,
        and stochastic depth (STOCHASTIC_DEPTH). No two frameworks draw the same masks,
        so trajectories compare only without them."""
        import torch

        found = []
        for name, m in trainer.model.named_modules():
            if isinstance(m, torch.nn.modules.dropout._DropoutNd) and m.p > 0:
                m.p = 0.0
            elif isinstance(m, (torch.nn.RNNBase, torch.nn.MultiheadAttention)) and m.dropout > 0:
                m.dropout = 0.0
            elif not stochastic_depth_off(m):
                continue
            found.append(name or type(m).__name__)
        return found


class KerasCheck:
    @staticmethod
    def forward(trainer: Any, x: np.ndarray) -> Any:
        out = trainer.model(x, training=False)
        if isinstance(out, dict):  # several named outputs: head -> output
            return {head: np.asarray(v) for head, v in out.items()}
        return np.asarray(out)

    @staticmethod
    def export(trainer: Any) -> Any:
        from dlbench.conformance import weights

        return weights.keras_export(trainer.model)

    @staticmethod
    def load(trainer: Any, given: Any) -> None:
        from dlbench.conformance import weights

        weights.keras_import(trainer.model, given)

    @staticmethod
    def dropout_off(trainer: Any) -> list[str]:
        """Every dropout of the network set to rate 0 before its first training step
        traces it: Dropout layers (and their spatial / Gaussian / alpha kin; stochastic
        depth written as Dropout with a per-sample noise_shape, keras.applications'
        idiom), stochastic-depth layers (STOCHASTIC_DEPTH), and the input and recurrent
        dropout of RNN cells and MultiHeadAttention."""
        found = []
        for layer in trainer.model._flatten_layers(include_self=False, recursive=True):
            hit = stochastic_depth_off(layer)
            if "Dropout" in type(layer).__name__ and float(getattr(layer, "rate", 0.0) or 0.0) > 0:
                layer.rate, hit = 0.0, True
            for attr in ("dropout", "recurrent_dropout", "_dropout"):
                value = getattr(layer, attr, None)
                if isinstance(value, float) and value > 0:
                    try:
                        setattr(layer, attr, 0.0)
                    except AttributeError:  # a read-only view of its cell's (keras.layers.LSTM.dropout)
                        continue
                    hit = True
            if hit:
                found.append(layer.name)
        return found


class FlaxCheck:
    @staticmethod
    def forward(trainer: Any, x: np.ndarray) -> Any:
        variables = {"params": trainer.params, **trainer.state}

        def cast(a: np.ndarray) -> np.ndarray:
            return a.astype(np.int32) if a.dtype.kind in "iu" else a

        xs = {name: cast(a) for name, a in x.items()} if isinstance(x, dict) else cast(x)
        out = trainer.model.apply(variables, xs, deterministic=True)
        if isinstance(out, Mapping):  # several named outputs: head -> output
            return {head: np.asarray(v) for head, v in out.items()}
        return np.asarray(out)

    @staticmethod
    def _creation_order(trainer: Any) -> Any:
        """The Flax network's variables from an eager init: dicts in creation order."""
        import jax
        import jax.numpy as jnp

        x = trainer.data.train_x
        if isinstance(x, dict):
            dummy: Any = {name: jnp.zeros((1, *a.shape[1:]), a.dtype) for name, a in x.items()}
        else:
            dummy = jnp.zeros((1, *x.shape[1:]), x.dtype)
        return trainer.model.init({"params": jax.random.key(0)}, dummy)

    @staticmethod
    def export(trainer: Any) -> Any:
        from dlbench.conformance import weights

        return weights.flax_export({"params": trainer.params, **trainer.state}, FlaxCheck._creation_order(trainer))

    @staticmethod
    def load(trainer: Any, given: Any) -> None:
        from dlbench.conformance import weights

        state = {"params": trainer.params, **trainer.state}
        tree, _ = weights.flax_import(state, given, FlaxCheck._creation_order(trainer))
        trainer.params = tree.pop("params")
        trainer.state = tree

    @staticmethod
    def dropout_off(trainer: Any) -> list[str]:
        """Flax modules are frozen dataclasses: nn.Dropout (stochastic depth too, as
        nn.Dropout with broadcast_dims over a sample) is made the identity for this
        process (the probe's own, which trains nothing else afterwards) before the
        trainer's step is first traced; the list fills with the dropout modules' paths
        as that trace calls them. The trainer must come from a fresh adapter: one that
        compiled this step before (with dropout) serves it from its cache."""
        import flax.linen as nn

        found: list[str] = []

        def identity(self: Any, inputs: Any, *args: Any, **kwargs: Any) -> Any:
            where = "/".join(str(p) for p in getattr(self, "path", ()) or ()) or str(getattr(self, "name", "Dropout"))
            if where not in found and float(getattr(self, "rate", 0.0)) > 0:
                found.append(where)
            return inputs

        nn.Dropout.__call__ = identity
        # Attention's own dropout (on the attention weights) is no nn.Dropout module: it is
        # drawn inside the attention function while `deterministic` is false. Measured on
        # the zoo transformer: the loss before the first step was 2.83 in JAX against torch's
        # 2.74 with dropout off everywhere else.
        attention = nn.MultiHeadDotProductAttention.__call__

        def without_dropout(self: Any, *args: Any, **kwargs: Any) -> Any:
            where = "/".join(str(p) for p in getattr(self, "path", ()) or ()) or str(getattr(self, "name", "attention"))
            if float(getattr(self, "dropout_rate", 0.0) or 0.0) > 0 and f"{where} (attention)" not in found:
                found.append(f"{where} (attention)")
            kwargs["deterministic"] = True
            return attention(self, *args, **kwargs)

        nn.MultiHeadDotProductAttention.__call__ = without_dropout
        return found


TORCH, KERAS, FLAX = TorchCheck(), KerasCheck(), FlaxCheck()
