"""The glorot-uniform init scheme for a Flax params pytree, and what it did not reach.

One job: after `model.init`, redraw every parameter the scheme knows, by its name and
place in the tree, the way torch_init and keras_init set the same layer, and list the
leaves it left alone. The builder's `kernel_init`/`bias_init` keywords reach only the
modules the builder passes them to; this pass does not depend on them. Flax's params
hold no module classes, so a layer's kind is read from its leaves' names:

- `kernel` -> Glorot uniform, limit sqrt(6 / (fan_in + fan_out)). Dense (in, out): in,
  out. Conv and ConvTranspose (*k, in, out): k*in and k*out, Keras' count (torch's for
  its transposed (in, out, *k) weight has the same sum, and only the sum counts).
  A DenseGeneral whose bias has several axes (features=(heads, head_dim)): the bias's
  axes are fan_out, the rest fan_in. Under a MultiHeadDotProductAttention (a module
  holding query, key, value and out): query/key/value (E, heads, head_dim) have fans
  E and heads*head_dim, out (heads, head_dim, E) heads*head_dim and E: the (E, E)
  map each projection is, as torch's in_proj blocks and keras_init's EinsumDense
  count it (the fans Flax's own DenseGeneral init uses too).
- `bias` -> 0 (wherever it sits, norms' and cells' included).
- `embedding` -> U(-0.05, 0.05), Keras' Embedding default.
- `scale` in a module without a kernel -> 1, a normalization's scale, when a `bias`
  sits next to it (LayerNorm, BatchNorm, GroupNorm) or the module's name says norm
  (Flax's auto names for RMSNorm and LayerNorm(use_bias=False) do); a lone `scale`
  elsewhere is a user's parameter: kept. Batch statistics (another collection) are
  not touched.
- Recurrent cells, read from their gate modules' names: LSTMCell/OptimizedLSTMCell
  (input ii, if, ig, io; recurrent hi, hf, hg, ho), GRUCell (ir, iz, in; hr, hz, hn),
  MGUCell (if, in; hf, hn), SimpleCell (i; h), ConvLSTMCell (ih; hh), and the
  zoo's fused cells (input; recurrent: one (in, gates*H) and one (H, gates*H) Dense,
  models/lstm/jax.py), a module holding exactly those submodules. The input
  kernels are drawn as one fused (in, gates*H) Glorot matrix, the recurrent kernels as
  one fused (H, gates*H) orthogonal matrix, then split per gate: Keras' kernel and
  recurrent_kernel, torch's weight_ih and weight_hh. Biases zero.

Anything else (a leaf of another name, a user's parameter) keeps the builder's init.
Draws: numpy on the host, one generator per redrawn parameter seeded with the key's
bits and the parameter's index in the tree's sorted walk: the same key and params
structure give the same weights.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from dlbench.frameworks.init_coverage import InitCoverage, KeptLayer, coverage

SCHEME = "glorot-uniform"
EMBED_INIT_LIMIT = 0.05  # Keras' Embedding default, the scheme's embedding init

# Gate module names of Flax's recurrent cells, input gates then recurrent ones, in the
# order their fused matrices are split (the order only fixes which draw lands where).
CELLS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "LSTMCell": (("ii", "if", "ig", "io"), ("hi", "hf", "hg", "ho")),
    "GRUCell": (("ir", "iz", "in"), ("hr", "hz", "hn")),
    "MGUCell": (("if", "in"), ("hf", "hn")),
    "SimpleCell": (("i",), ("h",)),
    "ConvLSTMCell": (("ih",), ("hh",)),
    # dlbench's zoo cells (models/lstm/jax.py FusedLSTMCell, FusedGRUCell): torch's and Keras' fused layout.
    "fused cell": (("input",), ("recurrent",)),
}
ATTENTION = frozenset({"query", "key", "value", "out"})


def glorot_limit(fan_in: int, fan_out: int) -> float:
    """Glorot/Xavier-uniform's bound: U(-limit, limit) has variance 2 / (fan_in + fan_out)."""
    return math.sqrt(6.0 / (fan_in + fan_out))


def conv_fans(shape: tuple[int, ...]) -> tuple[int, int]:
    """A (*k, in, out) kernel's fans, Flax's and Keras' count: k*in and k*out."""
    receptive = math.prod(shape[:-2])
    return receptive * shape[-2], receptive * shape[-1]


def kernel_fans(shape: tuple[int, ...], bias_ndim: int = 1, role: str | None = None) -> tuple[int, int]:
    """A kernel's fans: `role` "in" for an attention query/key/value kernel (E, *out),
    "out" for its output kernel (*in, E); otherwise `bias_ndim` > 1 marks a DenseGeneral
    with that many output axes; otherwise a Dense or conv kernel (*k, in, out)."""
    if role == "in":
        return shape[0], math.prod(shape[1:])
    if role == "out":
        return math.prod(shape[:-1]), shape[-1]
    if bias_ndim > 1:
        return math.prod(shape[:-bias_ndim]), math.prod(shape[-bias_ndim:])
    return conv_fans(shape)


def _is_leaf(value: Any) -> bool:
    return not isinstance(value, Mapping)


def _shape(leaf: Any) -> tuple[int, ...]:
    return tuple(int(d) for d in leaf.shape)


def _cell(node: Mapping[str, Any]) -> str | None:
    """The cell a module node is, from its gate modules' names, or None."""
    for name, (inputs, recurrent) in CELLS.items():
        gates = set(inputs) | set(recurrent)
        if set(node) == gates and all(isinstance(node[g], Mapping) and "kernel" in node[g] for g in gates):
            return name
    return None


def _seed(rng_key: Any) -> list[int]:
    """The key's bits as ints, numpy's seed: a typed key (jax.random.key) or a raw uint32 one (PRNGKey)."""
    if jnp.issubdtype(rng_key.dtype, jax.dtypes.prng_key):
        rng_key = jax.random.key_data(rng_key)
    return [int(x) for x in np.asarray(rng_key).ravel()]


def orthogonal(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """A (..., out) matrix flattened to (prod(...), out) with orthonormal rows or columns,
    whichever are fewer: Keras' Orthogonal and jax.nn.initializers.orthogonal's draw."""
    rows, cols = math.prod(shape[:-1]), shape[-1]
    q, r = np.linalg.qr(rng.standard_normal((max(rows, cols), min(rows, cols))))
    q *= np.sign(np.diag(r))  # the sign fix that makes Q uniform over the orthogonal group
    return (q.T if rows < cols else q).reshape(shape)


def _like(values: np.ndarray, leaf: Any) -> Any:
    # The leaf's dtype (bfloat16 params included) and, for a jax.Array, its device.
    out = jnp.asarray(values, dtype=leaf.dtype)
    return jax.device_put(out, leaf.sharding) if isinstance(leaf, jax.Array) else out


class _Pass:
    """One walk over the params: the new tree, what was redrawn, what was kept.

    Draws run on the host with numpy, one generator per redrawn parameter seeded with
    the key's bits and the parameter's index in the sorted walk: a few milliseconds for
    any network, where jax.random would compile each new shape (eagerly) or the whole
    pass (jitted), seconds to tens of seconds on a CPU.
    """

    def __init__(self, rng_key: Any) -> None:
        self.seed = _seed(rng_key)
        self.draws = 0
        self.applied: set[str] = set()
        self.kept: list[KeptLayer] = []

    def _rng(self) -> np.random.Generator:
        self.draws += 1
        return np.random.default_rng([*self.seed, self.draws])

    def uniform(self, leaf: Any, limit: float) -> Any:
        return _like(self._rng().uniform(-limit, limit, _shape(leaf)), leaf)

    def glorot(self, leaf: Any, fans: tuple[int, int]) -> Any:
        return self.uniform(leaf, glorot_limit(*fans))

    def keep(self, path: tuple[str, ...], leaf: Any) -> Any:
        self.kept.append(KeptLayer("/".join(path), path[-1], math.prod(_shape(leaf))))
        return leaf

    def node(self, node: Mapping[str, Any], path: tuple[str, ...], role: str | None = None) -> dict[str, Any]:
        """A module's dict: its own leaves by their names, its submodules recursively."""
        if (cell := _cell(node)) is not None:
            return self.cell(node, path, cell)
        leaves = {k: v for k, v in node.items() if _is_leaf(v)}
        out: dict[str, Any] = {}
        attention = ATTENTION <= {k for k, v in node.items() if not _is_leaf(v)}
        for name in sorted(node):
            value = node[name]
            if not _is_leaf(value):
                sub_role = ("out" if name == "out" else "in") if attention and name in ATTENTION else None
                out[name] = self.node(value, (*path, name), sub_role)
            else:
                out[name] = self.leaf(leaves, name, (*path, name), role)
        if attention:
            self.applied.add("MultiHeadDotProductAttention")
        return out

    def leaf(self, leaves: Mapping[str, Any], name: str, path: tuple[str, ...], role: str | None) -> Any:
        value = leaves[name]
        module = path[-2] if len(path) > 1 else ""
        if name == "kernel" and len(_shape(value)) >= 2:
            bias = leaves.get("bias")
            outputs = len(_shape(bias)) if bias is not None else 1
            if role is None:  # an attention projection counts as its attention module
                self.applied.add("DenseGeneral" if outputs > 1 else "Dense" if len(_shape(value)) == 2 else "Conv")
            return self.glorot(value, kernel_fans(_shape(value), outputs, role))
        if name == "bias":
            return _like(np.zeros(_shape(value)), value)
        if name == "embedding":
            self.applied.add("Embed")
            return self.uniform(value, EMBED_INIT_LIMIT)
        if name == "scale" and "kernel" not in leaves and ("bias" in leaves or "norm" in module.lower()):
            self.applied.add("norm")
            return _like(np.ones(_shape(value)), value)
        return self.keep(path, value)

    def cell(self, node: Mapping[str, Any], path: tuple[str, ...], cell: str) -> dict[str, Any]:
        """A recurrent cell: fused input kernels Glorot, fused recurrent kernels orthogonal, biases zero."""
        inputs, recurrent = CELLS[cell]
        out: dict[str, Any] = {g: dict(node[g]) for g in (*inputs, *recurrent)}
        for gates, recurrent_gates in ((inputs, False), (recurrent, True)):
            kernels = [node[g]["kernel"] for g in gates]
            shape = _shape(kernels[0])
            fused = (*shape[:-1], sum(_shape(k)[-1] for k in kernels))  # (..., in, gates*H)
            if recurrent_gates:
                # Flattened to (prod(...), gates*H) as Keras' Orthogonal does; for a Dense gate (H, gates*H).
                drawn = orthogonal(self._rng(), fused)
            else:
                limit = glorot_limit(*conv_fans(fused))
                drawn = self._rng().uniform(-limit, limit, fused)
            ends = np.cumsum([_shape(k)[-1] for k in kernels])[:-1]
            for gate, kernel, block in zip(gates, kernels, np.split(drawn, ends, axis=-1)):
                out[gate]["kernel"] = _like(block, kernel)
        for gate in out:
            for name, value in node[gate].items():
                if name == "bias":
                    out[gate][name] = _like(np.zeros(_shape(value)), value)
                elif name != "kernel" and _is_leaf(value):
                    out[gate][name] = self.keep((*path, gate, name), value)
        self.applied.add(cell)
        return out


def glorot_uniform_(params: Any, rng_key: Any) -> tuple[Any, InitCoverage]:
    """(the params redrawn under the glorot-uniform scheme, what it reached and what it
    kept). `params`: the "params" collection of `model.init`'s output, or the whole
    variables dict ({"params": ..., "batch_stats": ...}), whose other collections come
    back untouched. `rng_key`: a jax.random key (typed or raw), used only here."""
    variables = isinstance(params, Mapping) and isinstance(params.get("params"), Mapping)
    tree = params["params"] if variables else params
    walk = _Pass(rng_key)
    new: Any = walk.node(tree, ())
    if variables:
        new = {**params, "params": new}
    if type(params) is not dict and isinstance(params, Mapping):
        # A FrozenDict in, a FrozenDict out: the caller's type.
        from flax.core import freeze

        new = freeze(new)
    return new, coverage(SCHEME, walk.applied, walk.kept)
