"""Torch-specific checks beyond the conformance suite: init, manifest, data layout,
first_step restoration, epoch/step bookkeeping and the torch.compile variant."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from dlbench.datasets.arrays import Arrays, ArraySplit  # noqa: E402
from dlbench.frameworks.protocol import Framework, Trainer, TrainSettings  # noqa: E402
from dlbench.frameworks.torch import TorchFramework  # noqa: E402
from dlbench.models import get_spec  # noqa: E402


def _arrays(shape=(28, 28, 1), classes=10, n_train=96, n_test=40, seed=0) -> Arrays:
    rng = np.random.default_rng(seed)
    means = rng.random((classes, *shape), dtype=np.float32)

    def split(n: int) -> ArraySplit:
        y = rng.integers(0, classes, n).astype(np.int64)
        x = (0.6 * means[y] + 0.4 * rng.random((n, *shape), dtype=np.float32)).astype(np.float32)
        return ArraySplit(x, y)

    return Arrays("torch-tests", split(n_train), split(n_test), classes)


def _settings(model: str, **kw) -> TrainSettings:
    base = dict(model=model, batch_size=32, epochs=1, optimizer="sgd", lr=0.05, init="glorot-uniform", seed=0)
    base.update(kw)
    return TrainSettings(**base)


@pytest.fixture(scope="module")
def fw() -> TorchFramework:
    f = TorchFramework()
    f.setup(variant="eager", threads=2, seed=0, device="cpu")
    return f


@pytest.fixture(scope="module")
def native(fw):
    return fw.prepare(_arrays())


def _layers(model):
    return [m for m in model.modules() if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))]


def test_protocols_are_satisfied(fw, native):
    assert isinstance(fw, Framework)
    assert isinstance(fw.build(native, _settings("mlp")), Trainer)
    assert (fw.name, fw.variants, fw.default_variant) == ("torch", ("eager", "compile"), "eager")


def test_manifest_records_threads_precision_and_build_facts():
    f = TorchFramework()
    manifest = f.setup(variant="eager", threads=1, seed=0, device="cpu")
    assert manifest["intra_op_threads"] == torch.get_num_threads() == 1
    assert manifest["inter_op_threads"] == torch.get_num_interop_threads()
    assert manifest["cuda_matmul_allow_tf32"] is False and manifest["cudnn_allow_tf32"] is False
    assert manifest["default_dtype"] == "torch.float32"
    assert manifest["mkldnn_available"] == torch.backends.mkldnn.is_available()
    assert manifest["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert manifest["device"] == "cpu" and manifest["variant"] == "eager"
    assert manifest["variant_settings"] == {"torch.compile": False}
    assert manifest["versions"] == {"torch": torch.__version__}
    # A second setup in one process must not crash (inter-op threads are fixed by then).
    again = f.setup(variant="eager", threads=2, seed=0, device="cpu")
    assert again["intra_op_threads"] == 2
    assert again["inter_op_threads"] == torch.get_num_interop_threads()


def test_setup_rejects_unknown_variant_and_missing_cuda():
    f = TorchFramework()
    with pytest.raises(ValueError, match="variant"):
        f.setup(variant="xla", threads=2, seed=0, device="cpu")
    with pytest.raises(ValueError, match="device"):
        f.setup(variant="eager", threads=2, seed=0, device="tpu")
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError, match="cuda"):
            f.setup(variant="eager", threads=2, seed=0, device="cuda")


def test_prepare_converts_once_to_contiguous_nchw_float32(fw):
    data = _arrays(shape=(16, 16, 3), classes=7, n_train=8, n_test=4)
    native = fw.prepare(data)
    assert native.x_train.shape == (8, 3, 16, 16) and native.x_train.is_contiguous()
    assert native.x_train.dtype == torch.float32 and native.y_train.dtype == torch.int64
    np.testing.assert_array_equal(native.x_test.numpy(), data.test.x.transpose(0, 3, 1, 2))
    assert native.input_shape == (16, 16, 3)


@pytest.mark.parametrize("model", ["lenet5", "cnn"])
def test_glorot_uniform_has_the_glorot_bound_and_zero_bias(fw, native, model):
    trainer = fw.build(native, _settings(model, init="glorot-uniform"))
    for layer in _layers(trainer.model):
        w = layer.weight.detach()
        if w.ndim == 4:  # (out, in, kh, kw)
            fan_in, fan_out = w.shape[1] * w.shape[2] * w.shape[3], w.shape[0] * w.shape[2] * w.shape[3]
        else:  # (out, in)
            fan_in, fan_out = w.shape[1], w.shape[0]
        bound = math.sqrt(6.0 / (fan_in + fan_out))
        assert w.abs().max().item() <= bound + 1e-7
        # A uniform draw of >= 150 values reaches close to the bound; its std is bound/sqrt(3).
        assert w.abs().max().item() > 0.9 * bound
        assert w.std().item() == pytest.approx(bound / math.sqrt(3), rel=0.2)
        assert torch.count_nonzero(layer.bias).item() == 0


def test_framework_default_init_is_torch_default_and_reproducible(fw, native):
    glorot = fw.build(native, _settings("lenet5", init="glorot-uniform"))
    default_a = fw.build(native, _settings("lenet5", init="framework-default"))
    default_b = fw.build(native, _settings("lenet5", init="framework-default"))
    for g, a, b in zip(_layers(glorot.model), _layers(default_a.model), _layers(default_b.model)):
        assert torch.equal(a.weight, b.weight) and torch.equal(a.bias, b.bias)
        assert not torch.equal(a.weight, g.weight)
        # torch's default: kaiming-uniform(a=sqrt(5)) kernel -> bound 1/sqrt(fan_in); uniform bias.
        fan_in = a.weight[0].numel()
        assert a.weight.abs().max().item() <= 1 / math.sqrt(fan_in) + 1e-7
        assert torch.count_nonzero(a.bias).item() > 0


def test_first_step_restores_weights_and_optimizer_state_exactly(fw, native):
    trainer = fw.build(native, _settings("cnn", optimizer="adam", lr=1e-3))
    before = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    trainer.first_step()
    for k, v in trainer.model.state_dict().items():
        assert torch.equal(v, before[k]), k
    assert trainer.optimizer.state_dict()["state"] == {}
    # Parameters keep their identity, so the optimizer still updates the model's tensors.
    assert all(p is q for p, q in zip(trainer.optimizer.param_groups[0]["params"], trainer.model.parameters()))


def test_dropout_is_on_in_training_and_off_in_evaluation(fw, native):
    trainer = fw.build(native, _settings("cnn"))
    xb = native.x_test[:8]
    trainer.train_fixed_batch(1)
    assert trainer.model.training
    assert not torch.equal(trainer.forward(xb), trainer.forward(xb))  # dropout masks differ
    first = trainer.evaluate()
    assert not trainer.model.training
    assert trainer.evaluate() == first
    with torch.inference_mode():
        assert torch.equal(trainer.forward(xb), trainer.forward(xb))


def test_steps_cycle_through_reshuffled_epochs(fw, native):
    # 96 samples, batch 32: 3 steps per epoch. 6 steps = exactly the first two epochs,
    # with the same seeded shuffles, so the one mean equals the mean of the two epoch means.
    by_epoch = fw.build(native, _settings("mlp", epochs=2)).train()
    by_steps = fw.build(native, _settings("mlp", epochs=None, steps=6)).train()
    assert len(by_epoch) == 2 and len(by_steps) == 1
    assert by_steps[0] == pytest.approx(sum(by_epoch) / 2, rel=1e-6)
    unshuffled = fw.build(native, _settings("mlp", epochs=2, shuffle=False)).train()
    assert not np.allclose(unshuffled, by_epoch)


def test_inference_needs_prepared_batches(fw, native):
    trainer = fw.build(native, _settings("mlp"))
    with pytest.raises(KeyError, match="prepare_infer"):
        trainer.infer(16)
    assert trainer.prepare_infer(16) == 2  # 40 test samples: two full batches
    assert trainer.infer(16) == 32
    trainer.predict_batch(16, 1)


def test_compile_variant_matches_eager(native):
    """One short test of torch.compile (a cold inductor compile takes ~30 s on CPU)."""
    eager = TorchFramework()
    eager.setup(variant="eager", threads=2, seed=0, device="cpu")
    reference = eager.build(native, _settings("mlp", epochs=None, steps=4)).train()

    f = TorchFramework()
    manifest = f.setup(variant="compile", threads=2, seed=0, device="cpu")
    compiled = manifest["variant_settings"]
    assert (compiled["torch.compile"], compiled["mode"], compiled["backend"]) == (True, "default", "inductor")
    assert compiled["inductor_cache_dir"]
    trainer = f.build(native, _settings("mlp", epochs=None, steps=4))
    assert isinstance(trainer.forward, torch._dynamo.eval_frame.OptimizedModule)
    assert trainer.parameter_count() == get_spec("mlp").param_count((28, 28, 1), 10)
    trainer.first_step()  # compiles; must leave the weights as built
    np.testing.assert_allclose(trainer.train(), reference, rtol=1e-4)
    assert 0.0 <= trainer.evaluate() <= 1.0
    assert trainer.prepare_infer(32) == 1
    assert trainer.infer(32) == 32


def test_flops_are_counted_after_training_once_per_network_and_equal_the_counter(fw, native):
    from torch.nn import functional as F

    from dlbench.frameworks.torch_flops import train_step_flops

    settings = _settings("lenet5", batch_size=16)
    first = fw.build(native, settings)
    assert "train_flops_per_step" not in first.facts  # build() (a timed phase) counts nothing
    counted = first.manifest()["train_flops_per_step"]
    expected = train_step_flops(first.model, F.cross_entropy, native.x_train[:16], native.y_train[:16])
    assert counted == expected > 0
    second = fw.build(native, settings)  # the next repeat's trainer reuses the count
    assert second.flop_counts is first.flop_counts and second.manifest()["train_flops_per_step"] == counted
    # LeNet-5's forward at batch 16 by hand: conv 6x(5x5x1) over 28x28, conv 16x(5x5x6) over 10x10,
    # then 400x120, 120x84, 84x10; 2 FLOPs per multiply-add; the step is about 3x that.
    forward = 2 * 16 * (28 * 28 * 6 * 25 + 10 * 10 * 16 * 150 + 400 * 120 + 120 * 84 + 84 * 10)
    assert 2.5 * forward < counted < 3 * forward
