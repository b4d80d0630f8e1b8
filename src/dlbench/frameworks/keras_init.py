"""The glorot-uniform init scheme for a built Keras model, and what it did not reach.

One job: after the builder returns, re-initialize every weight of a layer type the
scheme knows, nested models and layers included, the way torch_init and flax_init do
for the same layer, and list the layers whose trainable weights it left alone. The
builder's `kernel_initializer`/`bias_initializer` keywords reach only the layers the
builder passes them to; this pass does not depend on them.

Kernels get Glorot-uniform, U(-limit, limit) with limit = sqrt(6 / (fan_in + fan_out)),
with fans counted so that the same layer gets the same limit in all three frameworks:

- Dense (in, out); Conv1D/2D/3D (*k, in/groups, out): k*in/groups and k*out, Keras'
  own count; Conv*Transpose (*k, out, in): k*out and k*in, torch's count for its
  (in, out, *k) weight (Flax's (*k, in, out) has the same sum, and only the sum counts).
- DepthwiseConv (*k, in, multiplier): k and k*in*multiplier, the fans of the grouped
  conv it is (torch Conv(groups=in), Flax Conv(feature_group_count=in)); Keras' own
  GlorotUniform would count k*in and k*multiplier. SeparableConv: its depthwise kernel
  so, its pointwise kernel as a 1x1 conv.
- EinsumDense (MultiHeadAttention's projections): the kernel axes that appear in the
  input's subscripts are fan_in, the others fan_out. The query kernel (E, heads,
  head_dim) then has fans E and heads*head_dim, the (E, E) map torch's in_proj block
  is; Keras' own GlorotUniform would count E*heads and E*head_dim.
- LSTMCell/GRUCell/SimpleRNNCell (under LSTM, GRU, SimpleRNN, Bidirectional):
  kernel (in, gates*H) Glorot over the fused gate matrix, recurrent_kernel (H, gates*H)
  orthogonal over the fused matrix, bias zero. Keras' LSTM adds 1 to the forget gate's
  bias by default (unit_forget_bias=True); the scheme says zero biases everywhere,
  as torch's and Flax's LSTMs are set, so the forget bias is zero too.
  ConvLSTM's cell: kernel as a conv, recurrent kernel orthogonal over (k*H, gates*H).
- Embedding: U(-0.05, 0.05). BatchNormalization, LayerNormalization,
  GroupNormalization: gamma 1, beta 0; RMSNormalization: scale 1; moving statistics
  untouched.

Draws use seeded Keras initializers, one seed per weight in walk order from a base
seed: the `seed` argument, or else one drawn from Python's `random`, which
keras.utils.set_random_seed (called by the trainer before building) has seeded. The
same seed and model give the same weights.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from typing import Any

import keras

from dlbench.frameworks.init_coverage import InitCoverage, KeptLayer, coverage

SCHEME = "glorot-uniform"
EMBED_INIT_LIMIT = 0.05  # Keras' Embedding default, the scheme's embedding init


def _classes(*names: str) -> tuple[Any, ...]:
    # getattr: a layer type this Keras version lacks (RMSNormalization came in 3.9) is just not matched.
    return tuple(c for name in names if (c := getattr(keras.layers, name, None)) is not None)


_DENSE = _classes("Dense")
_EINSUM = _classes("EinsumDense")
_CONV = _classes("Conv1D", "Conv2D", "Conv3D")
_CONV_TRANSPOSE = _classes("Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose")
_DEPTHWISE = _classes("DepthwiseConv1D", "DepthwiseConv2D")
_SEPARABLE = _classes("SeparableConv1D", "SeparableConv2D")
_CELLS = _classes("LSTMCell", "GRUCell", "SimpleRNNCell")
_EMBEDDING = _classes("Embedding")
_KERNELS = _DENSE + _EINSUM + _CONV + _CONV_TRANSPOSE + _DEPTHWISE  # one kernel, maybe a bias
_NORMS = _classes("BatchNormalization", "LayerNormalization", "GroupNormalization", "RMSNormalization")


def glorot_limit(fan_in: int, fan_out: int) -> float:
    """Glorot/Xavier-uniform's bound: U(-limit, limit) has variance 2 / (fan_in + fan_out)."""
    return math.sqrt(6.0 / (fan_in + fan_out))


def conv_fans(shape: tuple[int, ...]) -> tuple[int, int]:
    """A (*k, in, out) kernel's fans, Keras' and Flax's count: k*in and k*out."""
    receptive = math.prod(shape[:-2])
    return receptive * shape[-2], receptive * shape[-1]


def depthwise_fans(shape: tuple[int, ...]) -> tuple[int, int]:
    """A depthwise (*k, in, multiplier) kernel's fans as the grouped conv it is: k and k*in*multiplier."""
    receptive = math.prod(shape[:-2])
    return receptive, receptive * shape[-2] * shape[-1]


def einsum_fans(equation: str, shape: tuple[int, ...]) -> tuple[int, int]:
    """An EinsumDense kernel's fans: the product of the axes it contracts with the input
    (their subscripts appear in the input's), and of the axes it adds to the output."""
    inputs = equation.split("->")[0].replace("...", "")
    x, kernel = (part.strip() for part in inputs.split(","))
    if len(kernel) != len(shape):  # not the equation this kernel was built from: count it as a dense map
        return math.prod(shape[:-1]), shape[-1]
    fan_in = math.prod(size for axis, size in zip(kernel, shape) if axis in x)
    fan_out = math.prod(size for axis, size in zip(kernel, shape) if axis not in x)
    return fan_in, fan_out


def _shape(variable: Any) -> tuple[int, ...]:
    return tuple(int(d) for d in variable.shape)


def _walk(layer: Any, path: str, seen: set[int]) -> Iterator[tuple[str, Any, list[Any]]]:
    """(path, layer, its own weights) for `layer` and every layer under it, once each
    (a shared layer under its first path), children in Keras' tracking order."""
    seen.add(id(layer))
    # _flatten_layers is Keras' own way to list a layer's direct sublayers (Model.layers
    # uses it); there is no public equivalent for a plain Layer's children.
    children = list(layer._flatten_layers(include_self=False, recursive=False))
    below = {id(v) for child in children for v in child.weights}  # a shared child's too: not this layer's own
    yield path, layer, [v for v in layer.weights if id(v) not in below]
    for child in children:
        if id(child) not in seen:
            yield from _walk(child, f"{path}/{child.name}" if path else child.name, seen)


class _Draws:
    """Seeded Keras initializers, a fresh integer seed per weight: reproducible in walk order."""

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def _next(self) -> int:
        self.seed += 1
        return self.seed

    def uniform(self, variable: Any, limit: float) -> None:
        init = keras.initializers.RandomUniform(-limit, limit, seed=self._next())
        variable.assign(init(_shape(variable), dtype=variable.dtype))

    def glorot(self, variable: Any, fan_in: int, fan_out: int) -> None:
        self.uniform(variable, glorot_limit(fan_in, fan_out))

    def orthogonal(self, variable: Any) -> None:
        # Keras' Orthogonal flattens (..., out) to (prod(...), out): the fused (H, gates*H) matrix.
        init = keras.initializers.Orthogonal(seed=self._next())
        variable.assign(init(_shape(variable), dtype=variable.dtype))

    @staticmethod
    def constant(variable: Any, value: float) -> None:
        variable.assign(keras.ops.full(_shape(variable), value, dtype=variable.dtype))


def _is_conv_lstm_cell(layer: Any) -> bool:
    # ConvLSTM1D/2D/3D's cell is not exported by keras.layers: matched by its class name and package.
    return type(layer).__name__ == "ConvLSTMCell" and type(layer).__module__.startswith("keras.")


def _init_layer(layer: Any, own: dict[str, Any], draws: _Draws) -> tuple[str | None, set[str]]:
    """Re-initialize the weights of a known layer: (its kind, the names of the weights set)."""
    done: set[str] = set()

    def glorot(name: str, fans: tuple[int, int]) -> None:
        draws.glorot(own[name], *fans)
        done.add(name)

    def constant(name: str, value: float) -> None:
        if name in own:
            draws.constant(own[name], value)
            done.add(name)

    kind = None
    if isinstance(layer, _CELLS) or _is_conv_lstm_cell(layer):
        kind = type(layer).__name__
        if "kernel" in own:
            glorot("kernel", conv_fans(_shape(own["kernel"])))  # (in, gates*H) is a 1x1 conv's count
        if "recurrent_kernel" in own:
            draws.orthogonal(own["recurrent_kernel"])
            done.add("recurrent_kernel")
        constant("bias", 0.0)
    elif isinstance(layer, _KERNELS):
        kind = next(c.__name__ for c in _KERNELS if isinstance(layer, c))
        if "kernel" in own:
            shape = _shape(own["kernel"])
            if isinstance(layer, _DEPTHWISE):
                glorot("kernel", depthwise_fans(shape))
            elif isinstance(layer, _EINSUM):
                glorot("kernel", einsum_fans(layer.equation, shape))
            else:  # Dense's (in, out) included: receptive field 1
                glorot("kernel", conv_fans(shape))
        constant("bias", 0.0)
    elif isinstance(layer, _SEPARABLE):
        kind = type(layer).__name__
        if "depthwise_kernel" in own:
            glorot("depthwise_kernel", depthwise_fans(_shape(own["depthwise_kernel"])))
        if "pointwise_kernel" in own:
            glorot("pointwise_kernel", conv_fans(_shape(own["pointwise_kernel"])))
        constant("bias", 0.0)
    elif isinstance(layer, _EMBEDDING):
        kind = "Embedding"
        if "embeddings" in own:
            draws.uniform(own["embeddings"], EMBED_INIT_LIMIT)
            done.add("embeddings")
    elif isinstance(layer, _NORMS):
        kind = next(c.__name__ for c in _NORMS if isinstance(layer, c))
        constant("gamma", 1.0)
        constant("scale", 1.0)
        constant("beta", 0.0)
    return kind, done


def _floating(variable: Any) -> bool:
    # A quantized layer's int8 kernel and its scales are not the scheme's to draw: kept.
    return "float" in str(variable.dtype)


def glorot_uniform_(model: Any, seed: int | None = None) -> InitCoverage:
    """Apply the glorot-uniform scheme to a built Keras model (or layer) in place; the
    layer kinds re-initialized and the layers whose own trainable weights it left as
    built. Call it once the model's weights exist (a functional or Sequential model with
    an Input has them when its builder returns; a subclassed one after its first call or
    `build`). `seed`: the base of the per-weight seeds; None draws it from Python's
    `random`, which keras.utils.set_random_seed seeds."""
    draws = _Draws(seed if seed is not None else random.randint(1, 10**9))
    applied: set[str] = set()
    kept: list[KeptLayer] = []
    if not getattr(model, "built", True):
        # A subclassed model creates its weights on its first call, after this pass: say so
        # rather than report a full coverage of the none it has yet.
        kept.append(KeptLayer(model.name, type(model).__name__ + " (not built)", 0))
    for path, layer, weights in _walk(model, "", set()):
        # Weights by their own name ("kernel", "bias"): Keras names them so whatever the attribute.
        own = {v.name: v for v in weights if _floating(v)}
        kind, done = _init_layer(layer, own, draws)
        if kind is not None and done:
            applied.add(kind)
        set_ids = {id(own[name]) for name in done}
        left = sum(math.prod(_shape(v)) for v in weights if v.trainable and id(v) not in set_ids)
        if left:
            kept.append(KeptLayer(path or model.name, type(layer).__name__, left))
    return coverage(SCHEME, applied, kept)
