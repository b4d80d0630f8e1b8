"""MFU arithmetic and the torch FLOP counter, against hand-computed cases."""

from __future__ import annotations

import pytest

from dlbench.analysis.mfu import peak_tflops, utilization


def test_mfu_against_hand_computed_case():
    # 1e12 FLOPs per step, 10 steps in 0.5 s = 20 TFLOP/s; H100 SXM dense bf16 989.5.
    u = utilization(1e12, 10, 0.5, "NVIDIA H100 80GB HBM3", "bf16-mixed")
    assert u.achieved_tflops == pytest.approx(20.0)
    assert u.mfu == pytest.approx(20.0 / 989.5)
    assert "dense bf16-mixed peak 989.5" in u.note


def test_float32_peak_is_not_the_tensor_core_peak():
    assert peak_tflops("NVIDIA H200", "float32") == 67.0
    assert peak_tflops("NVIDIA H200", "tf32") == 494.5


def test_unknown_device_gets_a_reason_not_a_guess():
    u = utilization(1e12, 1, 1.0, "cpu (AVX2)", "float32")
    assert u.achieved_tflops == pytest.approx(1.0)
    assert u.mfu is None and u.peak_tflops is None
    assert u.note.startswith("no MFU: no dense float32 peak known for 'cpu (AVX2)'")


def test_nonpositive_time_is_refused():
    with pytest.raises(ValueError, match="positive"):
        utilization(1e9, 1, 0.0, "NVIDIA H200", "float32")


def test_torch_flop_count_of_a_two_layer_mlp():
    torch = pytest.importorskip("torch")
    from torch import nn
    from torch.nn import functional as F

    from dlbench.frameworks.torch_flops import train_step_flops

    model = nn.Sequential(nn.Linear(100, 50), nn.ReLU(), nn.Linear(50, 10))
    x, y = torch.randn(32, 100), torch.randint(0, 10, (32,))
    before = [p.detach().clone() for p in model.parameters()]
    # Forward 2*32*(100*50 + 50*10); backward: weight grads of both layers (the same
    # again) plus the input grad of the second layer only (x needs no gradient).
    forward = 2 * 32 * (100 * 50 + 50 * 10)
    assert train_step_flops(model, F.cross_entropy, x, y) == 2 * forward + 2 * 32 * 50 * 10
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))  # weights untouched
    assert all(p.grad is None for p in model.parameters())
