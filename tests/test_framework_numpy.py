"""The numpy reference adapter: hand-written gradients, optimizers, inits, and real learning.

The gradient check compares the backward pass with central finite differences on
a float64 copy; the torch check (skipped without torch) runs the same weights and
batch through torch.nn + torch.optim in float64 and demands the same trajectory,
which pins the loss, backward, SGD-momentum and Adam to torch's definitions.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dlbench.datasets import digits
from dlbench.datasets.arrays import Arrays
from dlbench.frameworks.numpy import SGD, Adam, NumpyFramework
from dlbench.frameworks.protocol import TrainSettings
from dlbench.models.mlp import numpy as mlp_numpy


def _digits() -> Arrays:
    pytest.importorskip("sklearn")  # scikit-learn ships the digits
    return digits.load()  # real 8x8 digits, NHWC float32 in [0, 1], fixed stratified split


@pytest.fixture(scope="module")
def fw() -> NumpyFramework:
    framework = NumpyFramework()
    framework.setup(variant="reference", threads=2, seed=0, device="cpu")
    return framework


def _settings(**kw) -> TrainSettings:
    base = dict(model="mlp", batch_size=32, epochs=1, optimizer="sgd", lr=0.05, init="glorot-uniform", seed=0)
    base.update(kw)
    return TrainSettings(**base)


def test_backward_matches_finite_differences():
    rng = np.random.default_rng(1)
    # Biases drawn non-zero (torch default init) so their gradients are exercised too.
    model = mlp_numpy.build((4, 4, 1), 3, "framework-default", rng).astype(np.float64)
    x = rng.random((5, 4, 4, 1))
    y = np.array([0, 2, 1, 2, 0])
    _, grads = model.loss_and_grads(x, y)
    eps = 1e-6
    for name, param in model.params.items():
        numeric = np.zeros_like(param)
        for i in np.ndindex(param.shape):
            saved = param[i]
            param[i] = saved + eps
            plus, _ = model.loss_and_grads(x, y)
            param[i] = saved - eps
            minus, _ = model.loss_and_grads(x, y)
            param[i] = saved
            numeric[i] = (plus - minus) / (2 * eps)
        np.testing.assert_allclose(grads[name], numeric, rtol=1e-5, atol=1e-8, err_msg=name)


def test_inits_follow_their_definitions():
    fan_in = 8 * 8 * 1
    glorot = mlp_numpy.build((8, 8, 1), 10, "glorot-uniform", np.random.default_rng(0)).params
    limit = math.sqrt(6 / (fan_in + 128))
    assert np.abs(glorot["dense1.kernel"]).max() <= limit
    assert np.abs(glorot["dense1.kernel"]).max() > 0.9 * limit  # spans the range, not a narrower one
    assert not glorot["dense1.bias"].any() and not glorot["dense2.bias"].any()
    torch_like = mlp_numpy.build((8, 8, 1), 10, "framework-default", np.random.default_rng(0)).params
    for layer, fan in (("dense1", fan_in), ("dense2", 128)):
        bound = 1 / math.sqrt(fan)  # kaiming-uniform(a=sqrt(5)) and the bias share it
        for part in ("kernel", "bias"):
            values = torch_like[f"{layer}.{part}"]
            assert values.dtype == np.float32
            assert np.abs(values).max() <= bound and np.abs(values).max() > 0.8 * bound


@pytest.mark.parametrize("optimizer", ["sgd-momentum", "adam"])
def test_same_trajectory_as_torch_in_float64(optimizer):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    model = mlp_numpy.build((8, 8, 1), 10, "framework-default", rng).astype(np.float64)
    x = rng.random((16, 8, 8, 1))
    y = rng.integers(0, 10, 16)

    net = torch.nn.Sequential(
        torch.nn.Flatten(), torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)
    ).double()
    with torch.no_grad():
        for layer, name in ((net[1], "dense1"), (net[3], "dense2")):
            layer.weight.copy_(torch.from_numpy(model.params[f"{name}.kernel"].T))  # torch is (out, in)
            layer.bias.copy_(torch.from_numpy(model.params[f"{name}.bias"]))
    if optimizer == "adam":
        ours = Adam(model.params, lr=1e-2, eps=1e-8)
        theirs = torch.optim.Adam(net.parameters(), lr=1e-2, eps=1e-8)
    else:
        ours = SGD(model.params, lr=0.1, momentum=0.9)
        theirs = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)
    for _ in range(6):
        loss, grads = model.loss_and_grads(x, y)
        ours.step(model.params, grads)
        theirs.zero_grad()
        torch_loss = torch.nn.functional.cross_entropy(net(tx), ty)
        torch_loss.backward()
        theirs.step()
        assert loss == pytest.approx(torch_loss.item(), rel=1e-12)
    np.testing.assert_allclose(model.params["dense1.kernel"], net[1].weight.detach().numpy().T, atol=1e-12)
    np.testing.assert_allclose(model.params["dense2.bias"], net[3].bias.detach().numpy(), atol=1e-12)


def test_reaches_90_percent_on_digits_and_stays_float32(fw):
    data = _digits()
    trainer = fw.build(fw.prepare(data), _settings(epochs=8, optimizer="adam", lr=2e-3))
    losses = trainer.train()
    assert len(losses) == 8 and losses[-1] < losses[0]
    assert trainer.evaluate() >= 0.9
    assert all(p.dtype == np.float32 for p in trainer.model.params.values())
    assert all(a.dtype == np.float32 for a in trainer.optimizer.m.values())


def test_first_step_restores_weights_and_optimizer_state(fw):
    trainer = fw.build(fw.prepare(_digits()), _settings(optimizer="adam", lr=1e-3))
    before = {k: v.copy() for k, v in trainer.model.params.items()}
    trainer.first_step()
    for k, v in trainer.model.params.items():
        np.testing.assert_array_equal(v, before[k])
    assert trainer.optimizer.t == 0 and not any(m.any() for m in trainer.optimizer.m.values())


def test_setup_twice_and_rejects_what_it_cannot_do(fw):
    manifest = fw.setup(variant="reference", threads=2, seed=0, device="cpu")
    assert manifest["threads_intra_op"] == 2 and manifest["default_float_dtype"] == "float32"
    if "threadpools" in manifest:
        assert all(pool["num_threads"] == 2 for pool in manifest["threadpools"])
    with pytest.raises(ValueError, match="CPU only"):
        fw.setup(variant="reference", threads=2, seed=0, device="cuda")
    with pytest.raises(ValueError, match="no implementation"):
        fw.build(fw.prepare(_digits()), _settings(model="lenet5"))
