"""Precision (bf16-mixed) and memory layout (channels-last) settings in each adapter:
they change how the work is done, not what is learned."""

from __future__ import annotations

import numpy as np
import pytest
from tests.conformance.test_models import _framework, _real_mnist

from dlbench.datasets.arrays import Arrays, ArraySplit
from dlbench.frameworks.protocol import TrainSettings

NN = ("torch", "tensorflow", "jax")


def _settings(**kw) -> TrainSettings:
    base = dict(model="cnn", batch_size=32, epochs=2, optimizer="adam", lr=1e-3, seed=0)
    base.update(kw)
    return TrainSettings(**base)


@pytest.mark.parametrize("framework", NN)
def test_bf16_mixed_learns_like_float32(framework):
    fw = _framework(framework)
    native = fw.prepare(_real_mnist())
    full = fw.build(native, _settings())
    mixed = fw.build(native, _settings(precision="bf16-mixed"))
    assert mixed.parameter_count() == full.parameter_count()
    loss_full, loss_mixed = full.train(), mixed.train()
    assert loss_mixed[1] < loss_mixed[0]
    # bfloat16 keeps 8 mantissa bits: the curves agree to a few percent, not bit for bit.
    assert loss_mixed[-1] == pytest.approx(loss_full[-1], rel=0.15)
    assert not np.allclose(loss_mixed, loss_full, rtol=1e-6, atol=0)  # it really ran in bfloat16
    assert mixed.evaluate() > 0.5


def test_torch_channels_last_is_the_same_function():
    fw = _framework("torch")
    native = fw.prepare(_real_mnist(n_train=256, n_test=64))
    # lenet5: no dropout, so both models see the same randomness (the global RNG).
    a = fw.build(native, _settings(model="lenet5", epochs=1, optimizer="sgd", lr=0.05))
    b = fw.build(native, _settings(model="lenet5", epochs=1, optimizer="sgd", lr=0.05, layout="channels-last"))
    import torch

    convs = [p for p in b.model.parameters() if p.dim() == 4]
    assert convs and all(p.is_contiguous(memory_format=torch.channels_last) for p in convs)
    assert b.data.x_train.is_contiguous(memory_format=torch.channels_last)
    np.testing.assert_allclose(a.train(), b.train(), rtol=1e-4)
    assert a.evaluate() == pytest.approx(b.evaluate(), abs=2 / 64)


def _first_batch(batches):
    xb, yb = next(iter(batches))
    return np.asarray(xb.cpu() if hasattr(xb, "cpu") else xb), np.asarray(yb.cpu() if hasattr(yb, "cpu") else yb)


@pytest.mark.parametrize("framework", NN)
def test_native_pipeline_gives_the_numpy_pipelines_batches_and_trains(framework):
    fw = _framework(framework)
    native = fw.prepare(_real_mnist(n_train=128, n_test=40, shape=(16, 16, 3)))
    own = fw.build(native, _settings(model="lenet5", pipeline="native", epochs=1, batch_size=16))
    shared = fw.build(native, _settings(model="lenet5", pipeline="numpy", epochs=1, batch_size=16))
    for epoch in (0, 1):
        xa, ya = _first_batch(own.augment(epoch))
        xb, yb = _first_batch(shared.augment(epoch))
        np.testing.assert_allclose(xa, xb, atol=1e-5)
        np.testing.assert_array_equal(ya, yb)
    # Normalized, not raw [0, 1] pixels: the per-channel statistics were applied.
    assert xa.min() < -0.3  # raw pixels would start at 0
    losses = own.train() + own.train()  # a second call continues with epoch 1's draws
    assert len(losses) == 2 and all(np.isfinite(losses))
    assert own._epochs_done == 2
    assert 0.0 <= own.evaluate() <= 1.0


def _random(n: int = 64) -> Arrays:
    rng = np.random.default_rng(0)

    def split(count: int) -> ArraySplit:
        return ArraySplit(rng.random((count, 28, 28, 1), dtype=np.float32), rng.integers(0, 10, count).astype(np.int64))

    return Arrays("random", split(n), split(16), 10)


def _tf32_in_force(framework: str) -> bool:
    if framework == "torch":
        import torch

        flags = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
        assert len(set(flags)) == 1, flags
        return flags[0] and torch.get_float32_matmul_precision() == "high"
    if framework == "tensorflow":
        import tensorflow as tf

        return tf.config.experimental.tensor_float_32_execution_enabled()
    import jax

    return jax.config.jax_default_matmul_precision == "tensorfloat32"


@pytest.mark.parametrize("framework", NN)
def test_tf32_is_switched_on_for_its_build_only_and_recorded(framework):
    """The switch itself (a GPU math mode: on this CPU only the flags can be checked;
    the plan refuses tf32 off a GPU). float32 builds switch it off again."""
    fw = _framework(framework)
    native = fw.prepare(_random())
    try:
        tf32 = fw.build(native, _settings(model="mlp", epochs=1, precision="tf32"))
        assert _tf32_in_force(framework)
        facts = tf32.manifest()  # what the phases relay into the fairness manifest
        assert {"torch": "cuda_matmul_allow_tf32", "tensorflow": "tf32_enabled", "jax": "tf32"}[framework] in facts
        assert "off" not in str(facts.get("tf32", "")) and all(v is not False for v in facts.values())
    finally:
        fw.build(native, _settings(model="mlp", epochs=1))
    assert not _tf32_in_force(framework)


def test_a_precision_that_would_not_run_is_refused_by_the_plan():
    from dlbench import config
    from dlbench.plan import expand

    def plan(frameworks, models, precision, device="cpu"):
        exp = config.override(
            config.default(), {"framework": frameworks, "model": models, "precision": [precision]}, {"device": device}
        )
        p = expand(exp)
        return {(c.framework, c.model) for c in p.cases}, {
            (s.cell["framework"], s.cell["model"]): s.reason for s in p.skipped
        }

    cases, skipped = plan(["torch", "tensorflow", "jax"], ["mlp"], "tf32")
    assert not cases and len(skipped) == 3
    assert all("TensorFloat-32 math mode of NVIDIA GPUs" in r and "use float32" in r for r in skipped.values())
    cases, _ = plan(["torch", "tensorflow", "jax"], ["mlp"], "tf32", device="cuda")
    assert cases == {("torch", "mlp"), ("tensorflow", "mlp"), ("jax", "mlp")}
    cases, skipped = plan(["torch", "numpy", "sklearn"], ["mlp", "knn"], "bf16-mixed")
    assert cases == {("torch", "mlp")}
    assert "numpy has no mixed-precision or TF32 mode" in skipped[("numpy", "mlp")]
    assert "sklearn has no mixed-precision or TF32 mode" in skipped[("sklearn", "knn")]
