"""How `dlbench check`'s probe (dlbench.conformance.probe) reaches into each built-in
framework's trainer: the network's logits, and its weights exported and imported in
canonical order. Each object here is a framework's `conformance` hooks
(dlbench.frameworks.FrameworkInfo); a plugin gives its own with the same three methods.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np


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


TORCH, KERAS, FLAX = TorchCheck(), KerasCheck(), FlaxCheck()
