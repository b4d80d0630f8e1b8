"""torch.profiler traces of real training steps, reduced by PyTorch's rule table."""

from __future__ import annotations

import numpy as np
import pytest

from dlbench.datasets.arrays import Arrays, ArraySplit
from dlbench.explain.categories import attribute, categorize
from dlbench.explain.events import OpEvent
from dlbench.frameworks.protocol import TrainSettings

torch = pytest.importorskip("torch", reason="PyTorch is not installed")

STEPS = 4


def _arrays(shape, n=64, classes=10) -> Arrays:
    rng = np.random.default_rng(0)

    def split(k):
        return ArraySplit(rng.random((k, *shape), dtype=np.float32), rng.integers(0, classes, k).astype(np.int64))

    return Arrays("tiny", split(n), split(16), classes)


def _recorded(model, shape, optimizer):
    from dlbench.explain import profile_torch
    from dlbench.frameworks.torch import TorchFramework

    fw = TorchFramework()
    fw.setup(variant="eager", threads=2, seed=0, device="cpu")
    native = fw.prepare(_arrays(shape))
    settings = TrainSettings(model=model, batch_size=16, epochs=None, steps=STEPS, optimizer=optimizer, lr=0.01)
    trainer = fw.build(native, settings)
    trainer.first_step()
    trainer.train()
    recording = profile_torch.record(trainer.train)
    return recording, attribute(recording.events, profile_torch.RULES, recording.wall_s, STEPS)


@pytest.fixture(scope="module")
def lenet5():
    return _recorded("lenet5", (28, 28, 1), "sgd")


@pytest.fixture(scope="module")
def resnet18():
    return _recorded("resnet18", (32, 32, 3), "adam")


def test_lenet5_step_is_split_into_its_op_categories(lenet5):
    recording, b = lenet5
    assert recording.source.startswith("torch.profiler")
    for category in ("convolution", "matmul", "elementwise", "reduction", "optimizer", "data_movement"):
        assert b.per_step[category] > 0, category
    assert b.busy_s <= recording.wall_s * 1.05  # self times: nothing counted twice
    assert b.per_step["other"] < 0.10 * b.busy_s / STEPS
    assert b.step_s == pytest.approx(max(recording.wall_s, b.busy_s) / STEPS)
    assert b.top_ops["convolution"][0][0] in ("aten::convolution_backward", "aten::mkldnn_convolution")


def test_resnet18_has_batch_norm_and_adam_work(resnet18):
    recording, b = resnet18
    assert b.per_step["normalization"] > 0
    assert b.per_step["convolution"] > b.per_step["matmul"]
    # Adam's per-parameter arithmetic (div, sqrt, lerp_, addcdiv_) sits inside Optimizer.step.
    optimizer_ops = {name for name, _ in b.top_ops["optimizer"]}
    assert optimizer_ops & {"aten::div", "aten::sqrt", "aten::addcdiv_", "aten::lerp_", "Optimizer.step#Adam.step"}
    assert b.per_step["other"] < 0.10 * b.busy_s / STEPS
    assert b.busy_s <= recording.wall_s * 1.05


def test_the_table_names_torch_ops_as_intended():
    from dlbench.explain.profile_torch import RULES

    def cat(name, *scopes):
        return categorize(OpEvent(name, "t", 0.0, 1.0, scopes), RULES)

    assert cat("aten::add_", "Optimizer.step#SGD.step") == "optimizer"
    assert cat("aten::add_") == "elementwise"
    assert cat("aten::mkldnn_convolution", "aten::conv2d", "aten::convolution") == "convolution"
    assert cat("aten::addmm", "aten::linear") == "matmul"
    assert cat("aten::native_batch_norm") == "normalization"
    assert cat("aten::max_pool2d_with_indices") == "reduction"
    assert cat("aten::index") == "data_movement"
    assert cat("autograd::engine::evaluate_function: ConvolutionBackward0") == "overhead"
    assert cat("## Call CompiledFxGraph fabc ##") == "elementwise"
    # Seen in the dai study's LSTM and DeepSpeech2 traces, where they had fallen into "other".
    assert cat("aten::mkldnn_rnn_layer_backward") == "matmul"
    assert cat("aten::tanh_") == cat("aten::sigmoid_") == "elementwise"
    assert cat("aten::unsafe_split") == "data_movement"
    # On a GPU, host ops are launches: overhead, counted only where no kernel runs.
    assert cat("aten::mm", "host") == "overhead"
    assert cat("sm90_xmma_gemm_f32f32_tf32f32") == "matmul"
    assert cat("void at::native::vectorized_elementwise_kernel<4>") == "elementwise"
