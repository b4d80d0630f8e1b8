"""The training comparison of `dlbench check` runs every network with its dropout off
(dlbench.conformance.hooks, `dropout_off`): no two frameworks draw the same masks.
Stochastic depth is dropout too. The zoo's efficientnet writes it as Dropout with a
per-sample noise shape in Keras and as nn.Dropout in Flax, which the hooks turned off,
and as a module of its own in torch, which they missed: torch's training loss before
the first step was 2.493 against 2.5856 in TensorFlow and JAX (efficientnet_b4)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from dlbench.conformance.hooks import KERAS, TORCH
from dlbench.models import get_spec


def test_torch_efficientnet_trains_without_stochastic_depth_after_dropout_off():
    torch = pytest.importorskip("torch")
    from dlbench.models._efficientnet.torch import StochasticDepth, build

    spec = get_spec("efficientnet_b0")
    # Half of B0's depth: residual blocks, whose stochastic depth rates are above 0.
    options = spec.resolve_options(spec.tiny_options | {"depth_mult": 0.5})
    torch.manual_seed(0)
    net = build(spec.tiny_shape, 10, **options)
    drops = [name for name, m in net.named_modules() if isinstance(m, StochasticDepth) and m.rate > 0]
    assert drops
    found = TORCH.dropout_off(SimpleNamespace(model=net))
    assert set(drops) <= set(found)
    assert all(m.rate == 0.0 for m in net.modules() if isinstance(m, StochasticDepth))
    x = torch.from_numpy(np.random.default_rng(0).random((4, 3, *spec.tiny_shape[:2]), dtype=np.float32))
    net.train()
    outs = []
    for seed in (1, 2):  # other random draws, the same training-mode outputs
        torch.manual_seed(seed)
        outs.append(net(x).detach())
    assert torch.equal(*outs)


def test_torch_drop_path_layers_are_known_by_their_class_name():
    torch = pytest.importorskip("torch")

    class DropPath(torch.nn.Module):  # timm's spelling
        def __init__(self) -> None:
            super().__init__()
            self.drop_prob = 0.3

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(3, 3)
            self.path = DropPath()
            self.dropout = torch.nn.Dropout(0.5)

    net = Net()
    assert sorted(TORCH.dropout_off(SimpleNamespace(model=net))) == ["dropout", "path"]
    assert net.path.drop_prob == 0.0 and net.dropout.p == 0.0


def test_keras_stochastic_depth_layers_are_known_by_their_class_name():
    keras = pytest.importorskip("keras")

    class StochasticDepth(keras.layers.Layer):  # keras_cv's spelling: a rate, no Dropout in the name
        def __init__(self, rate: float, **kwargs) -> None:
            super().__init__(**kwargs)
            self.rate = rate

        def call(self, x):
            return x

    inputs = keras.Input((4,))
    x = keras.layers.Dense(4, name="fc")(inputs)
    x = StochasticDepth(0.2, name="depth")(x)
    x = keras.layers.Dropout(0.1, noise_shape=(None, 1), name="drop")(x)
    model = keras.Model(inputs, x)
    assert sorted(KERAS.dropout_off(SimpleNamespace(model=model))) == ["depth", "drop"]
    assert model.get_layer("depth").rate == 0.0 and model.get_layer("drop").rate == 0.0
