"""JAX-specific checks of the Flax/optax adapter, beyond the shared conformance suite:
initializers (Glorot bound + zero bias, Flax's own lecun-normal default), the
fairness manifest, compile-once reuse across fresh models, and that every timed
method waits for the device (JAX dispatch is asynchronous)."""

from __future__ import annotations

import importlib.metadata
import math
import os

import numpy as np
import pytest

jax = pytest.importorskip("jax")
nn = pytest.importorskip("flax.linen")

from dlbench.datasets.arrays import Arrays, ArraySplit  # noqa: E402
from dlbench.frameworks.jax import JaxFramework  # noqa: E402
from dlbench.frameworks.protocol import TrainSettings  # noqa: E402


def _arrays(shape=(28, 28, 1), classes=10, n_train=96, n_test=40) -> Arrays:
    rng = np.random.default_rng(0)

    def split(n):
        return ArraySplit(rng.random((n, *shape), dtype=np.float32), rng.integers(0, classes, n).astype(np.int64))

    return Arrays("tiny", split(n_train), split(n_test), classes)


@pytest.fixture(scope="module")
def fw() -> JaxFramework:
    framework = JaxFramework()
    framework.setup(variant="jit", threads=2, seed=0, device="cpu")
    return framework


@pytest.fixture(scope="module")
def native(fw):
    return fw.prepare(_arrays())


def _settings(model="mlp", **kw) -> TrainSettings:
    return TrainSettings(**{"model": model, "batch_size": 16, "epochs": 1, "seed": 0, **kw})


def _kernels(params) -> list[np.ndarray]:
    return [np.asarray(layer["kernel"]) for layer in params.values()]


def test_manifest_records_what_is_in_force(fw):
    m = fw.setup(variant="jit", threads=2, seed=5, device="cpu")  # a second setup must not fail
    for dist in ("jax", "jaxlib", "flax", "optax"):
        assert m["versions"][dist] == importlib.metadata.version(dist)
    assert m["jax_enable_x64"] is False and m["float_dtype"] == "float32"
    assert m["jax_default_matmul_precision"] == "highest"
    assert m["cpu_affinity"] == sorted(os.sched_getaffinity(0))
    assert m["intra_op_threads"] == len(os.sched_getaffinity(0))
    assert m["default_backend"] == "cpu" and fw.device.platform == "cpu" and m["device"] == str(fw.device)
    assert m["variant"] == "jit" and m["variant_settings"]["jax.jit"] is True
    assert m["threads_requested"] == 2 and m["seed"] == 5
    assert m["xla_flags"] == os.environ.get("XLA_FLAGS", "")


def test_setup_rejects_unknown_variant_and_device(fw):
    with pytest.raises(ValueError, match="variant"):
        fw.setup(variant="eager", threads=2, seed=0, device="cpu")
    with pytest.raises(ValueError, match="device"):
        fw.setup(variant="jit", threads=2, seed=0, device="tpu-ish")


def test_prepare_puts_float32_and_int32_on_the_device(fw, native):
    assert native.train_x.dtype == np.float32 and native.train_y.dtype == np.int32
    assert native.train_x.devices() == {fw.device}


def test_glorot_uniform_bound_and_zero_bias(fw, native):
    trainer = fw.build(native, _settings("lenet5", init="glorot-uniform"))
    for name, layer in trainer.params.items():
        k = np.asarray(layer["kernel"])
        receptive = math.prod(k.shape[:-2])
        fan_in, fan_out = receptive * k.shape[-2], receptive * k.shape[-1]
        bound = math.sqrt(6.0 / (fan_in + fan_out))
        assert np.abs(k).max() <= bound, name
        assert np.abs(k).max() > 0.9 * bound, name  # uniform over the whole range
        assert not np.any(np.asarray(layer["bias"])), name


def test_framework_default_is_flax_lecun_normal(fw):
    native = fw.prepare(_arrays(n_train=16, n_test=8))
    trainer = fw.build(native, _settings("cnn", init="framework-default"))
    assert trainer.model.kernel_init is nn.Dense.kernel_init is nn.Conv.kernel_init
    fc1 = np.asarray(trainer.params["fc1"]["kernel"])  # 9216 x 128: a big sample
    # lecun normal: std sqrt(1/fan_in) (0.0104 here; Glorot-uniform would give 0.0146).
    assert np.std(fc1) == pytest.approx(math.sqrt(1.0 / fc1.shape[0]), rel=0.03)
    assert not np.any(np.asarray(trainer.params["fc1"]["bias"]))
    glorot = fw.build(native, _settings("cnn", init="glorot-uniform"))
    assert np.std(np.asarray(glorot.params["fc1"]["kernel"])) == pytest.approx(
        math.sqrt(2.0 / sum(fc1.shape)), rel=0.03
    )


def test_fresh_model_with_same_shapes_does_not_recompile(fw, native):
    a = fw.build(native, _settings(seed=1))
    a.first_step()
    a.prepare_infer(8)
    b = fw.build(native, _settings(seed=2, init="framework-default"))
    b.first_step()
    b.train()
    b.prepare_infer(8)
    b.train_fixed_batch(2)
    assert a.fns is b.fns
    assert a.fns.step._cache_size() == 1
    assert a.fns.predict._cache_size() == 1


def test_first_step_restores_initial_weights(fw, native):
    trainer = fw.build(native, _settings("mlp", optimizer="adam", lr=1e-2))
    before = [k.copy() for k in _kernels(trainer.params)]
    trainer.first_step()
    for k0, k1 in zip(before, _kernels(trainer.params)):
        np.testing.assert_array_equal(k0, k1)


@pytest.fixture
def blocked(monkeypatch) -> list[list]:
    """Records the leaves of every jax.block_until_ready call (and still blocks)."""
    calls: list[list] = []
    real = jax.block_until_ready

    def spy(tree):
        calls.append(jax.tree.leaves(tree))
        return real(tree)

    monkeypatch.setattr(jax, "block_until_ready", spy)
    return calls


def _contains(leaves: list, array) -> bool:
    return any(leaf is array for leaf in leaves)


def test_timed_methods_block_until_ready(fw, native, blocked):
    trainer = fw.build(native, _settings("mlp"))
    blocked.clear()
    trainer.first_step()
    assert blocked, "first_step did not wait for the device"
    blocked.clear()
    trainer.train()
    assert all(_contains(blocked[-1], leaf) for leaf in jax.tree.leaves(trainer.params))
    assert all(leaf.is_ready() for leaf in jax.tree.leaves(trainer.params))
    count = trainer.prepare_infer(8)
    blocked.clear()
    assert trainer.infer(8) == count * 8
    assert len(blocked) == 1 and len(blocked[0]) == count
    assert all(out.shape == (8, 10) for out in blocked[0])
    blocked.clear()
    trainer.predict_batch(8, count - 1)
    assert len(blocked) == 1 and blocked[0][0].shape == (8, 10)


def test_train_losses_per_epoch_and_steps_mode(fw, native):
    per_epoch = fw.build(native, _settings("mlp", epochs=3, lr=0.1)).train()
    assert len(per_epoch) == 3 and per_epoch[-1] < per_epoch[0]
    # 96 samples / 16 = 6 steps per epoch: 6 steps = one epoch, so the same mean loss.
    by_steps = fw.build(native, _settings("mlp", epochs=None, steps=6, lr=0.1)).train()
    assert by_steps == pytest.approx(per_epoch[:1], rel=1e-6)


def test_evaluate_covers_the_partial_batch(fw):
    data = _arrays(n_train=32, n_test=1003)  # 1003 = one full eval batch + 3
    native = fw.prepare(data)
    trainer = fw.build(native, _settings("mlp"))
    logits = np.concatenate(
        [
            np.asarray(trainer.fns.predict(trainer.params, trainer.state, native.test_x[i : i + 500]))
            for i in range(0, 1003, 500)
        ]
    )
    expected = float(np.mean(logits.argmax(-1) == data.test.y))
    assert trainer.evaluate() == pytest.approx(expected, abs=1e-12)


def test_inference_at_batch_one_prepares_every_sample(fw, native):
    # Latency runs use batch 1: one device array per sample, no per-count compile.
    trainer = fw.build(native, _settings("mlp"))
    n = int(native.test_x.shape[0])
    assert trainer.prepare_infer(1) == n
    assert trainer.infer(1) == n
    trainer.predict_batch(1, n - 1)
    with pytest.raises(RuntimeError, match="prepare_infer"):
        trainer.infer(4)
