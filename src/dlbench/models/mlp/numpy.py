"""`mlp` in pure numpy: the reference network with a hand-written backward pass.

Same layers as the spec (flatten -> dense1 128 ReLU -> dense2 logits) and the
same loss as every framework (mean softmax cross-entropy on logits with integer
labels). Kernels are stored (in, out) as in Keras and Flax; torch stores them
transposed, which changes nothing but the memory layout.

All arithmetic keeps the dtype of the parameters (float32 in the harness), so
the gradient check can run the very same code on a float64 copy.

Initializers (`init`):

- "glorot-uniform": kernels ~ U(-l, l), l = sqrt(6 / (fan_in + fan_out)),
  biases zero — the shared, matched setting.
- "framework-default": numpy has no framework default, so this reference uses
  torch's `nn.Linear` defaults: kernels from kaiming-uniform with a = sqrt(5)
  (bound = gain * sqrt(3 / fan_in), gain = sqrt(2 / (1 + a^2)), which works out
  to 1 / sqrt(fan_in)) and biases ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from dlbench.models.mlp import HIDDEN
from dlbench.models.spec import Shape

DTYPE = np.float32


def _glorot_uniform(rng: np.random.Generator, fan_in: int, fan_out: int) -> tuple[np.ndarray, np.ndarray]:
    limit = math.sqrt(6.0 / (fan_in + fan_out))
    kernel = rng.uniform(-limit, limit, size=(fan_in, fan_out)).astype(DTYPE)
    return kernel, np.zeros(fan_out, dtype=DTYPE)


def _torch_default(rng: np.random.Generator, fan_in: int, fan_out: int) -> tuple[np.ndarray, np.ndarray]:
    # torch.nn.Linear.reset_parameters: kaiming_uniform_(weight, a=sqrt(5)), then
    # the bias from U(-1/sqrt(fan_in), 1/sqrt(fan_in)); weight drawn before bias.
    a = math.sqrt(5.0)
    gain = math.sqrt(2.0 / (1.0 + a * a))
    w_bound = gain * math.sqrt(3.0 / fan_in)
    kernel = rng.uniform(-w_bound, w_bound, size=(fan_in, fan_out)).astype(DTYPE)
    b_bound = 1.0 / math.sqrt(fan_in)
    bias = rng.uniform(-b_bound, b_bound, size=fan_out).astype(DTYPE)
    return kernel, bias


INITIALIZERS = {"glorot-uniform": _glorot_uniform, "framework-default": _torch_default}


def softmax_cross_entropy(logits: np.ndarray, labels: np.ndarray) -> tuple[float, np.ndarray]:
    """Mean cross-entropy of integer `labels` under softmax(`logits`), and its
    gradient with respect to the logits."""
    n = logits.shape[0]
    # Subtracting the row maximum keeps exp() from overflowing (log-sum-exp trick).
    shifted = logits - logits.max(axis=1, keepdims=True)
    exp = np.exp(shifted)
    sum_exp = exp.sum(axis=1, keepdims=True)
    log_probs = shifted - np.log(sum_exp)
    rows = np.arange(n)
    loss = -log_probs[rows, labels].mean()
    grad = exp / sum_exp
    grad[rows, labels] -= 1
    grad /= n
    return float(loss), grad


class NumpyMLP:
    """Parameters plus forward and backward; the optimizer lives in the adapter."""

    def __init__(self, params: dict[str, np.ndarray]) -> None:
        # Insertion order is the layer order; the optimizer keeps state per name.
        self.params = params

    def parameter_count(self) -> int:
        return sum(int(p.size) for p in self.params.values())

    def logits(self, x: np.ndarray) -> np.ndarray:
        p = self.params
        flat = x.reshape(x.shape[0], -1)  # a view for contiguous NHWC input
        hidden = np.maximum(flat @ p["dense1.kernel"] + p["dense1.bias"], 0)
        return hidden @ p["dense2.kernel"] + p["dense2.bias"]

    def loss_and_grads(self, x: np.ndarray, y: np.ndarray) -> tuple[float, dict[str, np.ndarray]]:
        """Mean loss on the batch and d(loss)/d(param) for every parameter."""
        p = self.params
        flat = x.reshape(x.shape[0], -1)
        pre = flat @ p["dense1.kernel"] + p["dense1.bias"]
        hidden = np.maximum(pre, 0)
        logits = hidden @ p["dense2.kernel"] + p["dense2.bias"]
        loss, d_logits = softmax_cross_entropy(logits, y)
        d_hidden = d_logits @ p["dense2.kernel"].T
        # ReLU passes the gradient only where its input was positive (0 at 0, as torch).
        d_pre = d_hidden * (pre > 0)
        grads = {
            "dense1.kernel": flat.T @ d_pre,
            "dense1.bias": d_pre.sum(axis=0),
            "dense2.kernel": hidden.T @ d_logits,
            "dense2.bias": d_logits.sum(axis=0),
        }
        return loss, grads

    def astype(self, dtype: npt.DTypeLike) -> NumpyMLP:
        """A copy with every parameter cast (the gradient check uses float64)."""
        return NumpyMLP({k: v.astype(dtype) for k, v in self.params.items()})


def build(input_shape: Shape, classes: int, init: str, rng: np.random.Generator) -> NumpyMLP:
    """A freshly initialized mlp for NHWC inputs of `input_shape`; layers are
    drawn in order (dense1, then dense2) from `rng`."""
    if init not in INITIALIZERS:
        raise ValueError(f"init {init!r} is not one of {', '.join(INITIALIZERS)}")
    draw = INITIALIZERS[init]
    h, w, c = input_shape
    k1, b1 = draw(rng, h * w * c, HIDDEN)
    k2, b2 = draw(rng, HIDDEN, classes)
    return NumpyMLP({"dense1.kernel": k1, "dense1.bias": b1, "dense2.kernel": k2, "dense2.bias": b2})
