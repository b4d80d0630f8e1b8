"""The glorot-uniform init scheme for a built torch network, and what it did not reach.

One job: re-initialize every parameter of a layer type the scheme knows the way Keras
and Flax initialize the same layer under glorot-uniform, and list the rest. Kernels get
Glorot/Xavier-uniform with Keras' fans, biases zero, recurrent kernels orthogonal,
embeddings U(-0.05, 0.05), normalization scale 1 and shift 0. Draws come from torch's
global RNG, which the adapter has seeded before building, so a seed gives the same
weights on every run (and on every device: call it before the model moves).

Glorot's limit sqrt(6 / (fan_in + fan_out)) depends on the sum of the fans only, so a
kernel stored transposed (torch's (out, in) against Keras' (in, out)) gets the same
limit as long as each framework counts the same receptive field and groups:

- Linear (out, in): fans in, out, as Keras' Dense (in, out).
- Conv{1,2,3}d (out, in/groups, *k): in/groups * k and out * k, as Keras' and Flax's
  (*k, in/groups, out).
- ConvTranspose{1,2,3}d (in, out/groups, *k): out/groups * k and in * k, as Keras'
  Conv*Transpose kernel (*k, out, in) (and Flax's ConvTranspose (*k, in, out): same sum).
- RNN/LSTM/GRU and their cells: weight_ih (gates*H, in) Glorot over the fused gate
  matrix, as Keras' kernel (in, gates*H); weight_hh (gates*H, H) orthogonal over the
  fused matrix, as Keras' recurrent_kernel (H, gates*H) (columns here, rows there:
  the same semi-orthogonal map); an LSTM's projection weight_hr (proj, H) Glorot, a
  dense map Keras has no counterpart for; every bias zero.
- MultiheadAttention: each of the q, k, v projections Glorot as the (E, E) map it is
  (the in_proj_weight blocks, or q/k/v_proj_weight when kdim/vdim differ: k is then
  (E, kdim), as Keras' key EinsumDense (kdim, heads, head_dim)); out_proj is a Linear;
  in_proj_bias and bias_k/bias_v (add_bias_kv) zero.
- Bilinear (out, in1, in2): a dense map of the outer product, fans in1*in2 and out.
- Embedding, EmbeddingBag: U(-0.05, 0.05), Keras' Embedding default; the padding_idx
  row stays zero, as torch's own init keeps it (it never trains).
- BatchNorm, InstanceNorm, LayerNorm, GroupNorm, RMSNorm: weight 1, bias 0 (reset
  explicitly: a builder may have set them); running statistics untouched.

Any other module's own trainable parameters (a user's layer holding an nn.Parameter,
PReLU, a parametrized weight's originals) keep the builder's init and are listed.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from dlbench.frameworks.init_coverage import InitCoverage, KeptLayer, coverage

SCHEME = "glorot-uniform"
EMBED_INIT_LIMIT = 0.05  # Keras' Embedding default, the scheme's embedding init

_CONV = (nn.Conv1d, nn.Conv2d, nn.Conv3d)
_CONV_TRANSPOSE = (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)
_RECURRENT = (nn.RNN, nn.LSTM, nn.GRU, nn.RNNCell, nn.LSTMCell, nn.GRUCell)
_NORMS = (
    nn.BatchNorm1d,
    nn.BatchNorm2d,
    nn.BatchNorm3d,
    nn.SyncBatchNorm,
    nn.InstanceNorm1d,
    nn.InstanceNorm2d,
    nn.InstanceNorm3d,
    nn.LayerNorm,
    nn.GroupNorm,
    nn.RMSNorm,
)
# The order matters where one known class derives from another: the first match names the kind.
_KNOWN: tuple[type[nn.Module], ...] = (
    *_CONV,
    *_CONV_TRANSPOSE,
    nn.Linear,
    nn.Bilinear,
    *_RECURRENT,
    nn.MultiheadAttention,
    nn.Embedding,
    nn.EmbeddingBag,
    *_NORMS,
)


def glorot_limit(fan_in: int, fan_out: int) -> float:
    """Glorot/Xavier-uniform's bound: U(-limit, limit) has variance 2 / (fan_in + fan_out)."""
    return math.sqrt(6.0 / (fan_in + fan_out))


def fans(module: nn.Module) -> tuple[int, int]:
    """(fan_in, fan_out) of a conv, transposed conv, Linear or Bilinear weight, counted as
    Keras and Flax count them for the same layer (see the module's docstring)."""
    if isinstance(module, _CONV):
        receptive = math.prod(module.kernel_size)
        return module.in_channels // module.groups * receptive, module.out_channels * receptive
    if isinstance(module, _CONV_TRANSPOSE):
        receptive = math.prod(module.kernel_size)
        return module.out_channels // module.groups * receptive, module.in_channels * receptive
    if isinstance(module, nn.Linear):
        return module.in_features, module.out_features
    if isinstance(module, nn.Bilinear):
        return module.in1_features * module.in2_features, module.out_features
    raise TypeError(f"no Glorot fans for {type(module).__name__}")


@torch.no_grad()
def _glorot_(tensor: torch.Tensor, fan_in: int, fan_out: int) -> None:
    limit = glorot_limit(fan_in, fan_out)
    tensor.uniform_(-limit, limit)


def _own(module: nn.Module) -> dict[str, nn.Parameter]:
    """The parameters the module holds itself (not its children's), by attribute name."""
    return dict(module.named_parameters(recurse=False))


def _init_module(module: nn.Module, kind: type[nn.Module], own: dict[str, nn.Parameter]) -> set[str]:
    """Re-initialize the parameters of a known module; the names of those it set."""
    done: set[str] = set()

    def zero(name: str) -> None:
        if own.get(name) is not None:
            nn.init.zeros_(own[name])
            done.add(name)

    if kind in _CONV or kind in _CONV_TRANSPOSE or kind in (nn.Linear, nn.Bilinear):
        if "weight" in own:  # absent when the weight is parametrized (weight_norm): kept then
            _glorot_(own["weight"], *fans(module))
            done.add("weight")
        zero("bias")
    elif kind in _RECURRENT:
        for name, param in own.items():
            if name.startswith("weight_ih"):
                # (gates*H, in): fan_in = in, fan_out = gates*H, as Keras' fused kernel.
                _glorot_(param, param.shape[1], param.shape[0])
            elif name.startswith("weight_hh"):
                nn.init.orthogonal_(param)
            elif name.startswith("weight_hr"):
                _glorot_(param, param.shape[1], param.shape[0])
            elif name.startswith("bias"):
                nn.init.zeros_(param)
            else:
                continue
            done.add(name)
    elif kind is nn.MultiheadAttention:
        if own.get("in_proj_weight") is not None:
            # Fans of the fused (3E, E) matrix would differ from Keras' and Flax's per-projection maps.
            with torch.no_grad():
                for block in own["in_proj_weight"].chunk(3, dim=0):
                    _glorot_(block, block.shape[1], block.shape[0])
            done.add("in_proj_weight")
        for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
            if own.get(name) is not None:
                _glorot_(own[name], own[name].shape[1], own[name].shape[0])
                done.add(name)
        for name in ("in_proj_bias", "bias_k", "bias_v"):
            zero(name)
    elif kind in (nn.Embedding, nn.EmbeddingBag):
        if "weight" in own:
            nn.init.uniform_(own["weight"], -EMBED_INIT_LIMIT, EMBED_INIT_LIMIT)
            padding_idx = getattr(module, "padding_idx", None)
            if padding_idx is not None:
                with torch.no_grad():
                    own["weight"][padding_idx].zero_()
            done.add("weight")
    elif kind in _NORMS:
        if own.get("weight") is not None:
            nn.init.ones_(own["weight"])
            done.add("weight")
        zero("bias")
    return done


def glorot_uniform_(model: nn.Module) -> InitCoverage:
    """Apply the glorot-uniform scheme to `model` in place (call it after building, on
    the CPU, before `.to(device)`); the layer kinds re-initialized and the layers that
    kept the builder's init (their own trainable parameters, one entry per module)."""
    applied: set[str] = set()
    done: set[int] = set()
    lazy: set[int] = set()
    # named_modules visits each module once (a shared one under its first name) in a fixed
    # order, so the RNG draws, and with them the weights, are the same for the same seed.
    modules = list(model.named_modules())
    for _, module in modules:
        own = _own(module)
        kind = next((k for k in _KNOWN if isinstance(module, k)), None)
        if any(isinstance(p, nn.parameter.UninitializedParameter) for p in own.values()):
            lazy.add(id(module))  # no shape until its first forward: nothing to draw
        elif kind is not None and (names := _init_module(module, kind, own)):
            applied.add(kind.__name__)
            done.update(id(own[name]) for name in names)
    # Second pass, once every known module has drawn: a parameter tied between a known
    # layer and another one was re-initialized, whichever of the two came first.
    kept: list[KeptLayer] = []
    counted: set[int] = set()
    for path, module in modules:
        left = 0
        for param in _own(module).values():
            if id(param) not in done and id(param) not in counted and param.requires_grad:
                counted.add(id(param))
                left += 0 if id(module) in lazy else param.numel()
        if left or id(module) in lazy:
            name = type(module).__name__ + (" (not materialized)" if id(module) in lazy else "")
            kept.append(KeptLayer(path or "(root)", name, left))
    return coverage(SCHEME, applied, kept)
