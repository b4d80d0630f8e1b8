"""FLOPs of one PyTorch training step (forward + backward), counted, not estimated.

Counted by PyTorch's own `torch.utils.flop_counter.FlopCounterMode`, which adds up
the FLOPs of every matmul, convolution and attention kernel the step dispatches
(2 per multiply-add; elementwise ops, norms and the optimizer count 0, as MFU
conventionally leaves them out). The step runs on the *meta* device: the
parameters and the batch are meta tensors passed through
`torch.func.functional_call`, so nothing is computed, no memory is used and the
real model's weights are not touched. The count depends only on the network and
the batch's shape, so a precision (tf32, bf16) changes the peak it is divided by,
never the count.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn


def train_step_flops(
    model: nn.Module,
    loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    xb: Any,
    yb: torch.Tensor,
) -> int:
    """FLOPs of loss(model(xb), yb).backward() for this batch (forward + backward).

    Raises what the meta run raises (an op without a meta kernel, say): the caller
    records why there is no count instead of guessing one."""
    from torch.func import functional_call
    from torch.utils.flop_counter import FlopCounterMode

    meta = {
        name: (t.detach().to("meta").requires_grad_(t.requires_grad) if t.is_floating_point() else t.to("meta"))
        for name, t in [*model.named_parameters(), *model.named_buffers()]
    }
    was_training = model.training
    model.train()
    try:
        with FlopCounterMode(display=False) as counter:
            # A model of several named inputs takes one dict: each tensor on the meta device.
            x = {k: v.to("meta") for k, v in xb.items()} if isinstance(xb, dict) else xb.to("meta")
            out = functional_call(model, meta, (x,))
            loss(out, yb.to("meta")).backward()
    finally:
        model.train(was_training)
    return int(counter.get_total_flops())
