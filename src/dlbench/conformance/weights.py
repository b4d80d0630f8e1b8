"""A network's weights in one framework-neutral order, out of and into each framework.

The canonical form is Keras' and Flax's layout. Layers come in the order the framework
created them (torch's module order, Keras' layer order, Flax's creation order), so a
network written the same way in each framework lines up one to one, array by array; where
it does not, the import names the first array that does not fit, with its layer (torch
module path, Keras layer name, Flax module path) and kind on both sides. Every shape is
checked before anything is written, so a failed import leaves the network as it was.

Mapped layer kinds, their canonical arrays and each framework's conversion (all verified
by copying torch's weights into Keras and Flax, and Keras' into torch, and comparing
outputs: tests/conformance/test_weight_copy_kinds.py):

- Convolutions, 1-, 2- and 3-D, grouped and depthwise: kernel (*k, in/groups, out), bias.
  torch holds (out, in/groups, *k). A depthwise convolution is one with groups = channels
  (torch, Flax `feature_group_count`), kernel (*k, 1, channels*multiplier); Keras'
  DepthwiseConv1D/2D hold (*k, channels, multiplier), the same numbers reshaped (output
  channel c*multiplier + m in all three). Keras' SeparableConv1D/2D is a depthwise
  kernel, then a pointwise kernel (1.., channels*multiplier, out) and a bias: a depthwise
  convolution without bias followed by a 1-wide one in torch and Flax.
- Transposed convolutions, 1-, 2- and 3-D: kernel (*k, in, out/groups) as Flax's
  nn.ConvTranspose holds it with its default transpose_kernel=False, bias. Flax then
  convolves the stride-dilated input with the kernel as it is; torch's ConvTranspose
  (weight (in, out/groups, *k)) and Keras' Conv{1,2,3}DTranspose (kernel (*k, out, in))
  are the gradient of a convolution, which is the same with the kernel flipped along
  every spatial axis. So torch's weight is moved to (*k, in, out) and flipped, Keras'
  kernel has its last two axes swapped and is flipped. (A Flax ConvTranspose with
  transpose_kernel=True holds Keras' layout and is not told apart: not mapped.) Padding
  is not a weight: torch padding=0 is Keras and Flax "valid".
- Linear / Dense: kernel (in, out), bias; torch's weight is transposed. torch's first
  Linear after a convolution of C channels gets its input flattened channel-major
  (N, C, *spatial), Keras' and Flax's channel-last (N, *spatial, C): its rows are moved
  from (C, positions) to (positions, C) order, which needs only C. (A torch network
  that permutes to channel-last before its flatten is then not told apart: its copy
  fails the output comparison, which names the flatten order.)
- Embedding / nn.Embed: embedding (vocabulary, features) in all three.
- Batch norm (torch 1-, 2-, 3-D): scale, shift, running mean, running variance.
  LayerNorm and GroupNorm: scale, shift (same channel grouping in all three).
- LSTM: kernel (in, 4H), recurrent kernel (H, 4H), bias (4H), gates i, f, g(c), o as
  Keras holds them. torch's weight_ih/weight_hh are (4H, in)/(4H, H) in the same gate
  order, transposed; its two biases are summed on export, and imported as (bias, 0),
  which computes the same. Flax's LSTMCell and OptimizedLSTMCell hold per-gate Dense
  params ii, if, ig, io (kernel only) and hi, hf, hg, ho (kernel and bias): concatenated
  in that order.
- GRU: Keras' reset_after=True form (its default, and torch's): kernel (in, 3H) and
  recurrent kernel (H, 3H) with gates z, r, h(n), bias (2, 3H), input bias then
  recurrent bias. torch's gates are r, z, n: the first two gate blocks swap. Flax's
  GRUCell has biases on ir, iz, in and hn only: export gives (ir+iz+in biases,
  (0, 0, hn)); import puts the summed input and recurrent bias of z and r on iz and ir,
  and n's two biases on in and hn (the recurrent one stays inside the reset product, as
  in torch and Keras). A Keras GRU with reset_after=False (bias 3H) is a different
  function and does not fit. The zoo's FusedGRUCell (Dense "input" and "recurrent", each with
  a bias, gates r, z, n as torch orders them) maps as torch's GRU does.
- Simple RNN (torch nn.RNN, Keras SimpleRNN, Flax SimpleCell): kernel, recurrent kernel,
  bias (torch's two summed; Flax's cell holds it on `i`).
  Recurrent layers: torch's every layer and direction in order (l0, l0_reverse, l1, ...),
  Keras' Bidirectional as its forward then backward layer, Flax's cells wherever they are.
  torch's proj_size is not mapped.
- Multi-head attention: query, key and value kernels (in, heads, head_dim) with biases
  (heads, head_dim), then the output kernel (heads, head_dim, out) and bias (out), as
  Keras' MultiHeadAttention and Flax's MultiHeadDotProductAttention hold them. torch's
  nn.MultiheadAttention holds q, k, v fused in in_proj_weight (3E, E) (or separate
  q/k/v_proj_weight when kdim/vdim differ) and in_proj_bias (3E), and out_proj; head h
  is columns h*head_dim.. in every framework, so the split is a reshape, and the head
  count shows in the canonical shape. bias_k/bias_v are not mapped.

Anything else is copied as "other", in creation order, in the framework's own shape.
Each array travels with a tag "role|framework kind|layer" (a plain role is accepted
too). Each framework is imported inside its own functions: this module is imported by
one framework's probe process at a time.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

# tag of each canonical array: "role|kind|layer" (or a plain role); roles: kernel, recurrent,
# bias, scale, shift, mean, var, embedding, other
Weights = list[tuple[str, np.ndarray]]


class WeightMismatch(ValueError):
    """The canonical weights do not fit this framework's network, one to one."""


@dataclass
class _Slot:
    """One canonical array of one layer: its shape, and how it is read and written."""

    role: str
    kind: str  # the layer's kind in its framework, e.g. "torch Conv1d"
    layer: str  # its module path / layer name
    shape: tuple[int, ...]
    get: Callable[[], np.ndarray]
    put: Callable[[np.ndarray], None]

    @property
    def tag(self) -> str:
        return f"{self.role}|{self.kind}|{self.layer}"


def role_of(tag: str) -> str:
    return tag.split("|", 1)[0]


def _describe(tag: str) -> str:
    parts = tag.split("|", 2)
    return f"the {parts[0]} of {parts[1]} '{parts[2]}'" if len(parts) == 3 else f"a {parts[0]}"


def _dims(shape: tuple[int, ...]) -> str:
    return "x".join(map(str, shape)) or "scalar"


def _layer_of(tag: str) -> str:
    parts = tag.split("|", 2)
    return parts[2] if len(parts) == 3 else ""


def _name_key(layer: str) -> str:
    """A layer's name as the three frameworks all spell it: torch's `layer2.0.conv1`,
    Keras' `layer2_0_conv1` and Flax's `layer2_0/conv1` are one name."""
    return re.sub(r"[._/\-\s]+", " ", layer.lower()).strip()


def pairing(reference: list[tuple[str, tuple[int, ...]]], mine: list[tuple[str, tuple[int, ...]]]) -> list[int] | None:
    """The order of `mine` ((layer, shape) per array) that lines up with `reference` where
    creation order does not: layer by layer, by name (the same names under each
    framework's separators), else by structure (the k-th layer of a list of shapes with
    the k-th layer of the same list: layers of one structure keep their creation order,
    layers of different structures need not). Arrays keep their order inside a layer.
    None when neither pairs every array with one of the same shape. A wrong pairing of
    two layers of one structure is not silent: the outputs after the copy differ."""
    if len(reference) != len(mine):
        return None

    def groups(arrays: list[tuple[str, tuple[int, ...]]]) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for i, (layer, _) in enumerate(arrays):
            out.setdefault(layer, []).append(i)
        return out

    ref_groups, my_groups = groups(reference), groups(mine)
    if "" in ref_groups or "" in my_groups or len(ref_groups) != len(my_groups):
        return None
    for by_name in (True, False):

        def keys(arrays: list[tuple[str, tuple[int, ...]]], grouped: dict[str, list[int]]) -> list[Any]:
            if by_name:
                return [_name_key(layer) for layer in grouped]
            seen: dict[Any, int] = {}
            out = []
            for at in grouped.values():
                shapes = tuple(arrays[i][1] for i in at)
                seen[shapes] = seen.get(shapes, -1) + 1
                out.append((shapes, seen[shapes]))
            return out

        ref_keys = keys(reference, ref_groups)
        mine_by_key = dict(zip(keys(mine, my_groups), my_groups.values()))
        if (
            len(set(ref_keys)) != len(ref_keys)
            or len(mine_by_key) != len(my_groups)
            or set(ref_keys) != set(mine_by_key)
        ):
            continue
        order = [i for k in ref_keys for i in mine_by_key[k]]
        if all(mine[i][1] == reference[j][1] for j, i in enumerate(order)):
            return order
    return None


def aligned(weights: Weights, reference: Weights) -> Weights:
    """`weights` (one framework's export) in the order of `reference` (another's), paired
    as an import pairs them (pairing); as they are where creation order already lines up
    or nothing pairs them."""
    shapes = [tuple(np.shape(a)) for _, a in weights]
    if shapes == [tuple(np.shape(a)) for _, a in reference]:
        return weights
    order = pairing(
        [(_layer_of(t), tuple(np.shape(a))) for t, a in reference],
        [(_layer_of(t), s) for (t, _), s in zip(weights, shapes)],
    )
    return weights if order is None else [weights[i] for i in order]


def _copy(slots: list[_Slot], weights: Weights, where: str) -> int:
    """Checks every shape, then writes every array; names the first that does not fit.
    Where creation order does not line the arrays up, they are paired by layer name or
    structure (pairing) before anything is said not to fit."""
    in_order = len(slots) == len(weights) and all(
        slot.shape == tuple(np.shape(a)) for slot, (_, a) in zip(slots, weights)
    )
    if not in_order:
        order = pairing([(_layer_of(t), tuple(np.shape(a))) for t, a in weights], [(s.layer, s.shape) for s in slots])
        if order is not None:
            slots = [slots[i] for i in order]
    for i, (slot, (tag, array)) in enumerate(zip(slots, weights)):
        if tuple(np.shape(array)) != slot.shape:
            raise WeightMismatch(
                f"array {i} is {_dims(tuple(np.shape(array)))} in the reference ({_describe(tag)}), "
                f"{_dims(slot.shape)} in {where} ({_describe(slot.tag)})"
            )
    if len(slots) != len(weights):
        n = min(len(slots), len(weights))
        extra = (
            f"{_describe(weights[n][0])} in the reference has no counterpart"
            if len(weights) > n
            else f"{_describe(slots[n].tag)} in {where} has none in the reference"
        )
        raise WeightMismatch(f"{where} holds {len(slots)} weight arrays, the reference {len(weights)}: {extra}")
    for slot, (_, array) in zip(slots, weights):
        slot.put(np.ascontiguousarray(array))
    return len(slots)


def _flip(a: np.ndarray, spatial: int) -> np.ndarray:
    return np.ascontiguousarray(np.flip(a, axis=tuple(range(spatial))))


# -- torch -------------------------------------------------------------------------


def _swap_rz_last(a: np.ndarray) -> np.ndarray:
    """Gate blocks r, z, n along the last axis <-> z, r, n (its own inverse)."""
    r, z, n = np.split(a, 3, axis=-1)
    return np.concatenate([z, r, n], axis=-1)


def _swap_rz(a: np.ndarray) -> np.ndarray:
    """torch's GRU gate blocks r, z, n along axis 0 <-> canonical z, r, n (its own inverse)."""
    h = a.shape[0] // 3
    return np.concatenate([a[h : 2 * h], a[:h], a[2 * h :]])


def _same(a: np.ndarray) -> np.ndarray:
    return a


def _reshaper(shape: tuple[int, ...], before: bool = False, after: bool = False) -> Callable[[np.ndarray], np.ndarray]:
    """a (transposed `before`) reshaped to `shape` (and transposed `after`)."""

    def reshape(a: np.ndarray) -> np.ndarray:
        out = (a.T if before else a).reshape(shape)
        return out.T if after else out

    return reshape


def _torch_slots(model: Any) -> list[_Slot]:
    import torch
    from torch import nn

    slots: list[_Slot] = []
    seen: set[int] = set()
    kind = at = ""
    channels = 0  # out channels of the last convolution since a dense or recurrent layer: a flatten's C

    def numpy(t: Any) -> np.ndarray:
        return np.array(t.detach().cpu().numpy())

    def setter(t: Any, to_torch: Callable[[np.ndarray], np.ndarray] = _same) -> Callable[[np.ndarray], None]:
        def put(a: np.ndarray) -> None:
            t.copy_(torch.from_numpy(np.ascontiguousarray(to_torch(a))).to(t.dtype))

        return put

    def slot(
        role: str, t: Any, shape: tuple[int, ...], get: Callable[[np.ndarray], np.ndarray], put: Any = _same
    ) -> _Slot:
        return _Slot(role, kind, at, tuple(int(d) for d in shape), lambda: get(numpy(t)), setter(t, put))

    def plain(role: str, t: Any) -> _Slot:
        return slot(role, t, tuple(t.shape), _same)

    def conv(m: Any) -> list[_Slot]:
        w = m.weight
        n = w.ndim - 2
        if isinstance(m, nn.modules.conv._ConvTransposeNd):  # (in, out/g, *k) -> (*k, in, out/g), flipped
            out = [
                slot(
                    "kernel",
                    w,
                    (*w.shape[2:], w.shape[0], w.shape[1]),
                    lambda a: _flip(a.transpose(*range(2, n + 2), 0, 1), n),
                    lambda a: _flip(a, n).transpose(n, n + 1, *range(n)),
                )
            ]
        else:  # (out, in/g, *k) -> (*k, in/g, out)
            out = [
                slot(
                    "kernel",
                    w,
                    (*w.shape[2:], w.shape[1], w.shape[0]),
                    lambda a: a.transpose(*range(2, n + 2), 1, 0),
                    lambda a: a.transpose(n + 1, n, *range(n)),
                )
            ]
        return out + ([plain("bias", m.bias)] if m.bias is not None else [])

    def recurrent(m: Any) -> list[_Slot]:
        nonlocal at
        order = _swap_rz if m.mode == "GRU" else _same
        name, out = at, []
        for layer in range(m.num_layers):
            for sfx in ("", "_reverse")[: 2 if m.bidirectional else 1]:
                at = f"{name}[l{layer}{sfx}]"
                for role, w in (("kernel", "weight_ih"), ("recurrent", "weight_hh")):
                    t = getattr(m, f"{w}_l{layer}{sfx}")
                    out.append(slot(role, t, t.shape[::-1], lambda a: order(a).T, lambda a: order(a.T)))
                if not m.bias:
                    continue
                b_ih, b_hh = getattr(m, f"bias_ih_l{layer}{sfx}"), getattr(m, f"bias_hh_l{layer}{sfx}")
                out.append(_torch_rnn_bias(b_ih, b_hh, m.mode == "GRU", kind, at, numpy, setter))
        at = name
        return out

    def attention(m: Any) -> list[_Slot]:
        nonlocal at
        if m.bias_k is not None:
            raise WeightMismatch(f"{kind} '{at}': add_bias_kv is not mapped")
        e, heads = m.embed_dim, m.num_heads
        hd, name, out = e // heads, at, []
        for i, (proj, dim) in enumerate(zip("qkv", (e, m.kdim, m.vdim))):
            at = f"{name}.{proj}"
            w = m.in_proj_weight[i * e : (i + 1) * e] if m._qkv_same_embed_dim else getattr(m, f"{proj}_proj_weight")
            out.append(
                slot("kernel", w, (dim, heads, hd), _reshaper((-1, heads, hd), True), _reshaper((dim, e), False, True))
            )
            if m.in_proj_bias is not None:
                b = m.in_proj_bias[i * e : (i + 1) * e]
                out.append(slot("bias", b, (heads, hd), lambda a: a.reshape(heads, hd), lambda a: a.reshape(e)))
        at = f"{name}.out_proj"
        w = m.out_proj.weight
        o = int(w.shape[0])
        out.append(slot("kernel", w, (heads, hd, o), lambda a: a.T.reshape(heads, hd, o), lambda a: a.reshape(e, o).T))
        if m.out_proj.bias is not None:
            out.append(plain("bias", m.out_proj.bias))
        at = name
        return out

    def walk(module: Any, name: str) -> None:
        nonlocal kind, at, channels
        if id(module) in seen:
            return
        seen.add(id(module))
        kind, at = f"torch {type(module).__name__}", name or "(model)"
        if isinstance(module, nn.modules.conv._ConvNd):
            slots.extend(conv(module))
            channels = int(module.out_channels)
        elif isinstance(module, nn.Linear):
            slots.append(_torch_dense_kernel(module.weight, channels, slot))
            slots.extend([plain("bias", module.bias)] if module.bias is not None else [])
            channels = 0
        elif isinstance(module, nn.Embedding | nn.EmbeddingBag):
            slots.append(plain("embedding", module.weight))
        elif isinstance(module, nn.modules.batchnorm._BatchNorm):
            pairs = (("scale", module.weight), ("shift", module.bias))
            stats = (("mean", module.running_mean), ("var", module.running_var))
            slots.extend(plain(role, t) for role, t in (*pairs, *stats) if t is not None)
        elif isinstance(module, nn.LayerNorm | nn.GroupNorm):
            pairs = (("scale", module.weight), ("shift", module.bias))
            slots.extend(plain(role, t) for role, t in pairs if t is not None)
        elif isinstance(module, nn.RNNBase) and not getattr(module, "proj_size", 0):
            slots.extend(recurrent(module))
            channels = 0
        elif isinstance(module, nn.MultiheadAttention):
            slots.extend(attention(module))
            return  # its out_proj is among its canonical arrays
        else:
            slots.extend(plain("other", p) for p in module.parameters(recurse=False))
        for child_name, child in module.named_children():
            walk(child, f"{name}.{child_name}" if name else child_name)

    walk(model, "")
    return slots


def _torch_dense_kernel(w: Any, channels: int, slot: Callable[..., _Slot]) -> _Slot:
    """nn.Linear's weight (out, in) as the canonical kernel (in, out). After a convolution
    of C channels (`channels`; 0: none since the last dense or recurrent layer), a flatten
    hands torch's first dense layer its inputs channel-major, (C, *spatial), where Keras
    and Flax hand theirs channel-last, (*spatial, C): the kernel's rows are moved to that
    order, which needs only C (the spatial positions keep their order). Global pooling
    leaves one position: the move is then the identity."""
    out, n = int(w.shape[0]), int(w.shape[1])
    if channels <= 0 or n % channels or n == channels:
        return slot("kernel", w, (n, out), lambda a: a.T, lambda a: a.T)
    c, positions = channels, n // channels

    def get(a: np.ndarray) -> np.ndarray:
        return a.T.reshape(c, positions, out).transpose(1, 0, 2).reshape(n, out)

    def put(a: np.ndarray) -> np.ndarray:
        return a.reshape(positions, c, out).transpose(1, 0, 2).reshape(n, out).T

    return slot("kernel", w, (n, out), get, put)


def _torch_rnn_bias(b_ih: Any, b_hh: Any, gru: bool, kind: str, at: str, numpy: Any, setter: Any) -> _Slot:
    """GRU: (2, 3H), input bias then recurrent bias, gates z, r, n (b_hn stays inside the
    reset product); LSTM, simple RNN: the two summed, imported as (bias, 0), which computes the same."""

    def get() -> np.ndarray:
        if gru:
            return np.stack([_swap_rz(numpy(b_ih)), _swap_rz(numpy(b_hh))])
        return np.asarray(numpy(b_ih) + numpy(b_hh))

    def put(a: np.ndarray) -> None:
        setter(b_ih)(_swap_rz(a[0]) if gru else a)
        setter(b_hh)(_swap_rz(a[1]) if gru else np.zeros_like(a))

    shape = (2, int(b_ih.shape[0])) if gru else (int(b_ih.shape[0]),)
    return _Slot("bias", kind, at, shape, get, put)


def torch_redundant(model: Any) -> list[tuple[str, int]]:
    """Trainable parameters of a torch network that compute nothing another parameter does
    not: (where, count) per tensor or part of one. nn.LSTM and nn.RNN add bias_hh to bias_ih
    in every step, so only their sum counts (Keras and Flax hold that one bias). nn.GRU adds
    the reset and update gates' b_hr, b_hz to b_ir, b_iz the same way (the first two thirds
    of bias_hh, listed as `bias_hh_l0[r,z]`); its b_hn sits inside the reset product and
    computes (Flax's GRUCell holds b_ir, b_iz, b_in and b_hn)."""
    found = []
    for name, m in model.named_modules():
        mode = getattr(m, "mode", None)
        if mode not in ("LSTM", "RNN_TANH", "RNN_RELU", "GRU") or not getattr(m, "bias", False):
            continue
        for pname, param in m.named_parameters(recurse=False):
            if not (pname.startswith("bias_hh") and param.requires_grad):
                continue
            where = f"{name or type(m).__name__}.{pname}"
            if mode == "GRU":
                found.append((f"{where}[r,z]", 2 * int(param.numel()) // 3))
            else:
                found.append((where, int(param.numel())))
    return found


def keras_redundant(model: Any) -> list[tuple[str, int]]:
    """The same for Keras: a GRU in its reset_after form (the default, torch's) holds an
    input and a recurrent bias per gate, and the update and reset gates' recurrent biases
    only ever add to the input ones: (where, 2 x units) per such layer (Bidirectional's two
    directions each)."""
    import keras

    found = []
    for layer in _keras_layers(model):
        cell = getattr(layer, "cell", layer)
        if isinstance(layer, keras.layers.GRU) and getattr(cell, "reset_after", False) and cell.use_bias:
            if layer.trainable:
                found.append((f"{layer.name}.recurrent_bias[z,r]", 2 * int(cell.units)))
    return found


def torch_export(model: Any) -> Weights:
    import torch

    with torch.no_grad():
        return [(s.tag, s.get()) for s in _torch_slots(model)]


def torch_import(model: Any, weights: Weights) -> int:
    import torch

    with torch.no_grad():
        return _copy(_torch_slots(model), weights, "torch")


# -- keras -------------------------------------------------------------------------


def _keras_layers(model: Any) -> list[Any]:
    import keras

    out = []
    for layer in model.layers:
        inner = getattr(layer, "layers", None)
        if inner:
            out += _keras_layers(layer)
        elif isinstance(layer, keras.layers.Bidirectional):
            out += [layer.forward_layer, layer.backward_layer]
        else:
            out.append(layer)
    return out


def _keras_slots(model: Any) -> list[_Slot]:
    import keras

    depthwise = (keras.layers.DepthwiseConv1D, keras.layers.DepthwiseConv2D)
    separable = (keras.layers.SeparableConv1D, keras.layers.SeparableConv2D)
    transposed = (keras.layers.Conv1DTranspose, keras.layers.Conv2DTranspose, keras.layers.Conv3DTranspose)
    names = {"gamma": "scale", "beta": "shift", "moving_mean": "mean", "moving_variance": "var"}
    names |= {"embeddings": "embedding", "recurrent_kernel": "recurrent", "bias": "bias"}
    slots: list[_Slot] = []
    for layer in _keras_layers(model):
        kind = f"Keras {type(layer).__name__}"
        variables = list(layer.weights)
        if isinstance(layer, keras.layers.BatchNormalization):
            variables = [
                v for v in (layer.gamma, layer.beta, layer.moving_mean, layer.moving_variance) if v is not None
            ]
        for v in variables:
            slot = _keras_slot(layer, v, kind, names, depthwise + separable, transposed)
            inner = v.path.partition(f"{layer.name}/")[2]
            if not isinstance(layer, keras.layers.RNN) and "/" in inner:
                # A layer built of layers (MultiHeadAttention's query, key, value and output; a
                # custom layer's embeddings): one group per inner layer, as torch and Flax hold
                # them, for the pairing by name or structure.
                slot.layer = f"{layer.name}/{inner.rsplit('/', 1)[0]}"
            slots.append(slot)
    return slots


def _keras_slot(layer: Any, v: Any, kind: str, names: dict[str, str], depthwise: tuple, transposed: tuple) -> _Slot:
    name = v.path.rsplit("/", 1)[-1]
    role = names.get(name, "kernel" if "kernel" in name else "other")
    shape = tuple(int(d) for d in v.shape)
    n = len(shape) - 2
    reshaped = name in ("kernel", "depthwise_kernel") and isinstance(layer, depthwise)
    flipped = name == "kernel" and isinstance(layer, transposed)
    if reshaped:  # (*k, channels, multiplier) <-> (*k, 1, channels*multiplier)
        shape = (*shape[:-2], 1, shape[-2] * shape[-1])
    elif flipped:  # (*k, out, in) <-> (*k, in, out) flipped along the spatial axes (Flax's convention)
        shape = (*shape[:-2], shape[-1], shape[-2])

    def get() -> np.ndarray:
        a = np.array(v.numpy())
        return a.reshape(shape) if reshaped else _flip(np.swapaxes(a, -1, -2), n) if flipped else a

    def put(a: np.ndarray) -> None:
        v.assign(a.reshape(tuple(v.shape)) if reshaped else np.swapaxes(_flip(a, n), -1, -2) if flipped else a)

    return _Slot(role, kind, layer.name, shape, get, put)


def keras_export(model: Any) -> Weights:
    return [(s.tag, s.get()) for s in _keras_slots(model)]


def keras_import(model: Any, weights: Weights) -> int:
    return _copy(_keras_slots(model), weights, "tensorflow")


# -- flax --------------------------------------------------------------------------

_LSTM_GATES = ("i", "f", "g", "o")
_GRU_CELL = {"ir", "iz", "in", "hr", "hz", "hn"}
_ATTENTION = ("query", "key", "value", "out")


def _flax_kind(path: tuple[str, ...], default: str) -> str:
    auto = re.fullmatch(r"([A-Za-z]+)_\d+", path[-1]) if path else None
    return f"Flax {auto.group(1) if auto else default}"


def _flax_slots(order: dict[str, Any], tree: dict[str, Any]) -> list[_Slot]:
    """The canonical arrays of `tree` (mutable numpy dicts: read and written in place), in the
    creation order of `order`'s dicts."""
    params, stats = tree["params"], tree.get("batch_stats", {})

    def leaf(role: str, holder: dict[str, Any], name: str, kind: str, at: str) -> _Slot:
        def put(a: np.ndarray) -> None:
            holder[name] = a.astype(np.asarray(holder[name]).dtype)

        return _Slot(role, kind, at, tuple(np.shape(holder[name])), lambda: np.asarray(holder[name]), put)

    def joined(role: str, parts: list[tuple[dict[str, Any], str]], kind: str, at: str) -> _Slot:
        """One canonical array that is `parts` concatenated along their last axis."""
        widths = [int(np.shape(h[n])[-1]) for h, n in parts]
        first = tuple(np.shape(parts[0][0][parts[0][1]]))

        def put(a: np.ndarray) -> None:
            for (h, n), piece in zip(parts, np.split(a, np.cumsum(widths)[:-1], axis=-1)):
                h[n] = piece.astype(np.asarray(h[n]).dtype)

        get = lambda: np.concatenate([np.asarray(h[n]) for h, n in parts], axis=-1)  # noqa: E731
        return _Slot(role, kind, at, (*first[:-1], sum(widths)), get, put)

    def gru_bias(cell: dict[str, Any], kind: str, at: str) -> _Slot:
        # canonical (2, 3H) z, r, n: input biases, recurrent biases; Flax holds iz, ir, in and hn
        def get() -> np.ndarray:
            b = [np.asarray(cell[g]["bias"]) for g in ("iz", "ir", "in")]
            return np.stack([np.concatenate(b), np.concatenate([0 * b[0], 0 * b[1], np.asarray(cell["hn"]["bias"])])])

        def put(a: np.ndarray) -> None:
            z, r, n = np.split(a, 3, axis=-1)
            cell["iz"]["bias"], cell["ir"]["bias"] = z[0] + z[1], r[0] + r[1]
            cell["in"]["bias"], cell["hn"]["bias"] = n[0], n[1]

        h = int(np.shape(cell["hn"]["bias"])[0])
        return _Slot("bias", kind, at, (2, 3 * h), get, put)

    def rz_swapped(role: str, holder: dict[str, Any], name: str, kind: str, at: str) -> _Slot:
        """An array whose last axis holds gates r, z, n (torch's order) as canonical z, r, n."""

        def put(a: np.ndarray) -> None:
            holder[name] = _swap_rz_last(a).astype(np.asarray(holder[name]).dtype)

        get = lambda: _swap_rz_last(np.asarray(holder[name]))  # noqa: E731
        return _Slot(role, kind, at, tuple(np.shape(holder[name])), get, put)

    def fused_gru(cell: dict[str, Any], kind: str, at: str) -> list[_Slot]:
        # The zoo's FusedGRUCell (models/lstm/jax.py): Dense "input" and "recurrent", each with
        # a bias, gates r, z, n as torch fuses them: canonical kernel, recurrent, bias (2, 3H).
        i, h = cell["input"], cell["recurrent"]

        def put(a: np.ndarray) -> None:
            i["bias"] = _swap_rz_last(a[0]).astype(np.asarray(i["bias"]).dtype)
            h["bias"] = _swap_rz_last(a[1]).astype(np.asarray(h["bias"]).dtype)

        get = lambda: np.stack([_swap_rz_last(np.asarray(i["bias"])), _swap_rz_last(np.asarray(h["bias"]))])  # noqa: E731
        bias = _Slot("bias", kind, at, (2, int(np.shape(i["bias"])[-1])), get, put)
        return [
            rz_swapped("kernel", i, "kernel", kind, f"{at}/input"),
            rz_swapped("recurrent", h, "kernel", kind, f"{at}/recurrent"),
            bias,
        ]

    def walk(node: dict[str, Any], held: dict[str, Any], held_stats: Any, path: tuple[str, ...]) -> list[_Slot]:
        at = "/".join(path) or "(model)"
        keys = set(node)
        if (
            keys == {"input", "recurrent"}
            and all(set(node[k]) == {"kernel", "bias"} for k in keys)
            and int(np.shape(node["input"]["kernel"])[-1]) % 3 == 0
        ):
            return fused_gru(held, _flax_kind(path, "GRUCell"), at)
        if {f"{s}{g}" for s in "ih" for g in _LSTM_GATES} <= keys:
            kind = _flax_kind(path, "LSTMCell")
            return [
                joined("kernel", [(held[f"i{g}"], "kernel") for g in _LSTM_GATES], kind, at),
                joined("recurrent", [(held[f"h{g}"], "kernel") for g in _LSTM_GATES], kind, at),
                joined("bias", [(held[f"h{g}"], "bias") for g in _LSTM_GATES], kind, at),
            ]
        if _GRU_CELL <= keys:
            kind = _flax_kind(path, "GRUCell")
            return [
                joined("kernel", [(held[f"i{g}"], "kernel") for g in "zrn"], kind, at),
                joined("recurrent", [(held[f"h{g}"], "kernel") for g in "zrn"], kind, at),
                gru_bias(held, kind, at),
            ]
        if keys == {"i", "h"} and "bias" in node["i"] and "bias" not in node["h"]:  # SimpleCell
            kind = _flax_kind(path, "SimpleCell")
            ii, hh = held["i"], held["h"]
            return [leaf("kernel", ii, "kernel", kind, at), leaf("recurrent", hh, "kernel", kind, at)] + [
                leaf("bias", ii, "bias", kind, at)
            ]
        if keys == set(_ATTENTION):
            kind = _flax_kind(path, "MultiHeadDotProductAttention")
            return [
                leaf(role, held[part], name, kind, f"{at}/{part}")
                for part in _ATTENTION
                for role, name in (("kernel", "kernel"), ("bias", "bias"))
                if name in node[part]
            ]
        out: list[_Slot] = []
        # A layer's own arrays in the canonical order (kernel before bias, scale before shift):
        # under a lifted transform (nn.RNN's scan) Flax hands its dicts back sorted by name.
        rank = {"embedding": 0, "kernel": 0, "scale": 0, "bias": 1}
        leaves = sorted((name for name, v in node.items() if not hasattr(v, "items")), key=lambda n: rank.get(n, 2))
        if leaves:
            is_norm = "scale" in leaves
            has_stats = is_norm and held_stats is not None and "mean" in held_stats
            default = (
                "BatchNorm" if has_stats else "norm" if is_norm else "Embed" if "embedding" in leaves else "module"
            )
            kind = _flax_kind(path, default)
            for name in leaves:
                role = {"kernel": "kernel", "scale": "scale", "embedding": "embedding"}.get(name, "other")
                role = ("shift" if is_norm else "bias") if name == "bias" else role
                out.append(leaf(role, held, name, kind, at))
            if has_stats:
                out += [leaf("mean", held_stats, "mean", kind, at), leaf("var", held_stats, "var", kind, at)]
        for name, sub in node.items():
            if hasattr(sub, "items"):
                sub_stats = held_stats.get(name) if held_stats is not None else None
                out += walk(sub, held[name], sub_stats, (*path, name))
        return out

    return walk(order["params"], params, stats, ())


def _numpy_tree(variables: dict[str, Any]) -> dict[str, Any]:
    import jax

    return _thaw(jax.tree.map(np.asarray, variables))  # mutable numpy copies, same structure


def flax_export(variables: dict[str, Any], order: dict[str, Any]) -> Weights:
    """`order`: the same network's variables from an eager (un-jitted) init, whose dicts
    keep creation order; a jitted init returns them sorted by name (Dense_10 before Dense_2)."""
    return [(s.tag, s.get()) for s in _flax_slots(order, _numpy_tree(variables))]


def flax_import(variables: dict[str, Any], weights: Weights, order: dict[str, Any]) -> tuple[dict[str, Any], int]:
    tree = _numpy_tree(variables)
    return tree, _copy(_flax_slots(order, tree), weights, "jax")


def _thaw(tree: Any) -> Any:
    return {k: _thaw(v) for k, v in tree.items()} if hasattr(tree, "items") else tree


# Batch-norm scale, shift and statistics are drawn from these ranges instead of a fresh
# network's 1, 0, 0, 1, so that an epsilon or momentum convention shows in the logits.
NORM_RANGES = {"scale": (0.5, 1.5), "shift": (-0.2, 0.2), "mean": (-0.2, 0.2), "var": (0.5, 1.5)}


def perturbed(weights: Weights, seed: int = 1) -> Weights:
    """The weights with every norm array redrawn from NORM_RANGES (seeded)."""
    rng = np.random.default_rng(seed)
    out: Weights = []
    for tag, a in weights:
        role = role_of(tag)
        out.append((tag, rng.uniform(*NORM_RANGES[role], size=a.shape).astype(a.dtype) if role in NORM_RANGES else a))
    return out
