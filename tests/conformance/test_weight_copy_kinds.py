"""The weight copy of `dlbench check` (dlbench.conformance.weights), one layer kind at a time.

Each case is one tiny network written in torch, Keras and Flax. The source framework's
weights are redrawn at random (so that every bias, gate and statistic matters), put back
into it, exported in canonical order and imported into another framework; both networks
must then give the same outputs on the same input (images channels-last for Keras and Flax,
channels-first for torch). A network that differs must fail the import with a message that
names the layer on both sides.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from dlbench.conformance import weights as W

TOL = 1e-5
# case: (input shape without the batch, token ids?, torch takes it channels-first?)
CASES: dict[str, tuple[tuple[int, ...], bool, bool]] = {
    "conv1d": ((16, 3), False, True),
    "conv2d_grouped": ((6, 6, 4), False, True),
    "conv3d": ((5, 4, 4, 2), False, True),
    "depthwise1d": ((16, 3), False, True),
    "depthwise2d": ((6, 6, 3), False, True),
    "separable2d": ((6, 6, 3), False, True),
    "conv_transpose1d": ((8, 3), False, True),
    "conv_transpose2d": ((5, 4, 3), False, True),
    "conv_transpose3d": ((3, 4, 3, 2), False, True),
    "dense_layernorm": ((6,), False, False),
    "batchnorm1d": ((16, 3), False, True),
    "groupnorm": ((16, 3), False, True),
    "embedding": ((5,), True, False),
    "lstm": ((7, 3), False, False),
    "lstm_2layer_bidirectional": ((7, 3), False, False),
    "gru": ((7, 3), False, False),
    "simple_rnn": ((7, 3), False, False),
    "attention": ((5, 8), False, False),
}
DELTAS: dict[str, float] = {}


def _torch(case: str) -> Any:
    torch = pytest.importorskip("torch")
    nn = torch.nn

    class Fn(nn.Module):
        def __init__(self, f: Callable[[Any], Any]) -> None:
            super().__init__()
            self.f = f

        def forward(self, x: Any) -> Any:
            return self.f(x)

    class SelfAttention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.mha = nn.MultiheadAttention(8, 2, batch_first=True)

        def forward(self, x: Any) -> Any:
            return self.mha(x, x, x, need_weights=False)[0]

    last = Fn(lambda out: out[0][:, -1])
    build: dict[str, Callable[[], Any]] = {
        "conv1d": lambda: nn.Sequential(nn.Conv1d(3, 4, 5)),
        "conv2d_grouped": lambda: nn.Sequential(nn.Conv2d(4, 6, 3, groups=2)),
        "conv3d": lambda: nn.Sequential(nn.Conv3d(2, 3, (3, 2, 2))),
        "depthwise1d": lambda: nn.Sequential(nn.Conv1d(3, 6, 3, groups=3)),
        "depthwise2d": lambda: nn.Sequential(nn.Conv2d(3, 6, 3, groups=3)),
        "separable2d": lambda: nn.Sequential(nn.Conv2d(3, 6, 3, groups=3, bias=False), nn.Conv2d(6, 4, 1)),
        "conv_transpose1d": lambda: nn.Sequential(nn.ConvTranspose1d(3, 4, 5, stride=2)),
        "conv_transpose2d": lambda: nn.Sequential(nn.ConvTranspose2d(3, 4, (3, 2), stride=2)),
        "conv_transpose3d": lambda: nn.Sequential(nn.ConvTranspose3d(2, 3, (2, 3, 2), stride=(1, 2, 1))),
        "dense_layernorm": lambda: nn.Sequential(nn.Linear(6, 8), nn.LayerNorm(8, eps=1e-5)),
        "batchnorm1d": lambda: nn.Sequential(nn.Conv1d(3, 4, 3), nn.BatchNorm1d(4, eps=1e-3)),
        "groupnorm": lambda: nn.Sequential(nn.Conv1d(3, 6, 3), nn.GroupNorm(3, 6, eps=1e-5)),
        "embedding": lambda: nn.Sequential(nn.Embedding(20, 4)),
        "lstm": lambda: nn.Sequential(nn.LSTM(3, 4, batch_first=True), last),
        "lstm_2layer_bidirectional": lambda: nn.Sequential(
            nn.LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=True), Fn(lambda out: out[0])
        ),
        "gru": lambda: nn.Sequential(nn.GRU(3, 4, batch_first=True), last),
        "simple_rnn": lambda: nn.Sequential(nn.RNN(3, 4, batch_first=True), last),
        "attention": lambda: nn.Sequential(SelfAttention()),
    }
    return build[case]().eval()


def _keras(case: str) -> Any:
    pytest.importorskip("tensorflow")
    importlib.import_module("dlbench.frameworks.tensorflow")  # forces KERAS_BACKEND=tensorflow
    keras = pytest.importorskip("keras")
    L = keras.layers
    shape = CASES[case][0]
    if case == "attention":
        x = keras.Input(shape)
        return keras.Model(x, L.MultiHeadAttention(2, 4)(x, x))
    bi = lambda: L.Bidirectional(L.LSTM(4, return_sequences=True))  # noqa: E731
    build: dict[str, Callable[[], list[Any]]] = {
        "conv1d": lambda: [L.Conv1D(4, 5)],
        "conv2d_grouped": lambda: [L.Conv2D(6, 3, groups=2)],
        "conv3d": lambda: [L.Conv3D(3, (3, 2, 2))],
        "depthwise1d": lambda: [L.DepthwiseConv1D(3, depth_multiplier=2)],
        "depthwise2d": lambda: [L.DepthwiseConv2D(3, depth_multiplier=2)],
        "separable2d": lambda: [L.SeparableConv2D(4, 3, depth_multiplier=2)],
        "conv_transpose1d": lambda: [L.Conv1DTranspose(4, 5, strides=2)],
        "conv_transpose2d": lambda: [L.Conv2DTranspose(4, (3, 2), strides=2)],
        "conv_transpose3d": lambda: [L.Conv3DTranspose(3, (2, 3, 2), strides=(1, 2, 1))],
        "dense_layernorm": lambda: [L.Dense(8), L.LayerNormalization(epsilon=1e-5)],
        "batchnorm1d": lambda: [L.Conv1D(4, 3), L.BatchNormalization(epsilon=1e-3)],
        "groupnorm": lambda: [L.Conv1D(6, 3), L.GroupNormalization(3, epsilon=1e-5)],
        "embedding": lambda: [L.Embedding(20, 4)],
        "lstm": lambda: [L.LSTM(4)],
        "lstm_2layer_bidirectional": lambda: [bi(), bi()],
        "gru": lambda: [L.GRU(4)],
        "simple_rnn": lambda: [L.SimpleRNN(4)],
    }
    return keras.Sequential([keras.Input(shape, dtype="int32" if CASES[case][1] else "float32"), *build[case]()])


def _flax(case: str) -> Any:
    nn = pytest.importorskip("flax.linen")
    last = lambda y: y[:, -1]  # noqa: E731
    bi = lambda: nn.Bidirectional(nn.RNN(nn.LSTMCell(4)), nn.RNN(nn.LSTMCell(4)))  # noqa: E731
    build: dict[str, Callable[[], list[Any]]] = {
        "conv1d": lambda: [nn.Conv(4, (5,), padding="VALID")],
        "conv2d_grouped": lambda: [nn.Conv(6, (3, 3), feature_group_count=2, padding="VALID")],
        "conv3d": lambda: [nn.Conv(3, (3, 2, 2), padding="VALID")],
        "depthwise1d": lambda: [nn.Conv(6, (3,), feature_group_count=3, padding="VALID")],
        "depthwise2d": lambda: [nn.Conv(6, (3, 3), feature_group_count=3, padding="VALID")],
        "separable2d": lambda: [
            nn.Conv(6, (3, 3), feature_group_count=3, padding="VALID", use_bias=False),
            nn.Conv(4, (1, 1)),
        ],
        "conv_transpose1d": lambda: [nn.ConvTranspose(4, (5,), strides=(2,), padding="VALID")],
        "conv_transpose2d": lambda: [nn.ConvTranspose(4, (3, 2), strides=(2, 2), padding="VALID")],
        "conv_transpose3d": lambda: [nn.ConvTranspose(3, (2, 3, 2), strides=(1, 2, 1), padding="VALID")],
        "dense_layernorm": lambda: [nn.Dense(8), nn.LayerNorm(epsilon=1e-5)],
        "batchnorm1d": lambda: [nn.Conv(4, (3,), padding="VALID"), nn.BatchNorm(True, epsilon=1e-3)],
        "groupnorm": lambda: [nn.Conv(6, (3,), padding="VALID"), nn.GroupNorm(3, epsilon=1e-5)],
        "embedding": lambda: [nn.Embed(20, 4)],
        "lstm": lambda: [nn.RNN(nn.OptimizedLSTMCell(4)), last],
        "lstm_2layer_bidirectional": lambda: [bi(), bi()],
        "gru": lambda: [nn.RNN(nn.GRUCell(4)), last],
        "simple_rnn": lambda: [nn.RNN(nn.SimpleCell(4)), last],
        "attention": lambda: [nn.MultiHeadDotProductAttention(num_heads=2, qkv_features=8, out_features=8)],
    }
    return nn.Sequential(build[case]())


class Net:
    """One case's network in one framework: outputs, export, import."""

    def __init__(self, fw: str, case: str) -> None:
        self.fw, self.case = fw, case
        self.model = {"torch": _torch, "tensorflow": _keras, "jax": _flax}[fw](case)
        self.variables: Any = None
        if fw == "jax":
            import jax

            # an eager init: its dicts keep creation order (an imported tree is sorted by name)
            self.order = self.variables = self.model.init(jax.random.key(0), _input(case))

    def __call__(self, x: np.ndarray) -> np.ndarray:
        if self.fw == "torch":
            import torch

            first = CASES[self.case][2]
            with torch.no_grad():
                y = self.model(torch.from_numpy(np.moveaxis(x, -1, 1).copy() if first else x))
            return np.moveaxis(y.numpy(), 1, -1) if first else y.numpy()
        if self.fw == "tensorflow":
            return np.asarray(self.model(x, training=False))
        return np.asarray(self.model.apply(self.variables, x))

    def export(self) -> W.Weights:
        if self.fw == "torch":
            return W.torch_export(self.model)
        if self.fw == "tensorflow":
            return W.keras_export(self.model)
        return W.flax_export(self.variables, self.order)

    def load(self, weights: W.Weights) -> None:
        if self.fw == "torch":
            W.torch_import(self.model, weights)
        elif self.fw == "tensorflow":
            W.keras_import(self.model, weights)
        else:
            self.variables, _ = W.flax_import(self.variables, weights, self.order)


def _input(case: str) -> np.ndarray:
    shape, tokens, _ = CASES[case]
    rng = np.random.default_rng(3)
    if tokens:
        return rng.integers(0, 20, size=(2, *shape)).astype(np.int32)
    return rng.standard_normal((2, *shape)).astype(np.float32)


def _randomized(weights: W.Weights, seed: int = 7) -> W.Weights:
    """Every array redrawn (variances positive), so that a bias or gate put in the wrong place shows."""
    rng = np.random.default_rng(seed)
    return [
        (
            tag,
            (rng.uniform(0.5, 1.5, a.shape) if W.role_of(tag) == "var" else 0.5 * rng.standard_normal(a.shape)).astype(
                a.dtype
            ),
        )
        for tag, a in weights
    ]


DIRECTIONS = [("torch", "tensorflow"), ("torch", "jax"), ("tensorflow", "torch"), ("jax", "torch")]


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("source,target", DIRECTIONS)
def test_copied_weights_give_the_same_outputs(case: str, source: str, target: str) -> None:
    src, dst = Net(source, case), Net(target, case)
    src.load(_randomized(src.export()))
    given = src.export()
    src.load(given)  # the source's own import and export are inverse to each other
    again = src.export()
    assert [t for t, _ in again] == [t for t, _ in given]
    for (_, a), (_, b) in zip(again, given):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-6)
    dst.load(given)
    x = _input(case)
    want, got = src(x), dst(x)
    assert want.shape == got.shape
    delta = float(np.abs(want - got).max())
    DELTAS[f"{case} {source}->{target}"] = delta
    print(f"{case} {source}->{target}: max |Δ| {delta:.2g}")
    assert delta <= TOL * max(1.0, float(np.abs(want).max())), f"{case} {source}->{target}: max |Δ| {delta}"


def _mismatch(torch_net: Any, keras_layers: Callable[[Any], list[Any]], shape: tuple[int, ...]) -> str:
    pytest.importorskip("tensorflow")
    importlib.import_module("dlbench.frameworks.tensorflow")
    keras = pytest.importorskip("keras")
    model = keras.Sequential([keras.Input(shape), *keras_layers(keras.layers)])
    with pytest.raises(W.WeightMismatch) as caught:
        W.keras_import(model, W.torch_export(torch_net))
    return str(caught.value)


def test_a_different_kernel_size_names_the_layer_in_both_frameworks() -> None:
    nn = pytest.importorskip("torch.nn")
    net = nn.Sequential()
    net.add_module("stem", nn.Conv1d(3, 4, 5))
    message = _mismatch(net, lambda L: [L.Conv1D(4, 3, name="stem_conv")], (16, 3))
    assert "torch Conv1d 'stem'" in message and "Keras Conv1D 'stem_conv'" in message
    assert "5x3x4 in the reference" in message and "3x3x4 in tensorflow" in message


def test_an_lstm_against_a_gru_names_both_kinds() -> None:
    nn = pytest.importorskip("torch.nn")
    message = _mismatch(nn.Sequential(nn.LSTM(3, 4, batch_first=True)), lambda L: [L.GRU(4, name="rnn")], (7, 3))
    assert "torch LSTM '0[l0]'" in message and "Keras GRU 'rnn'" in message


def test_a_keras_gru_without_reset_after_does_not_fit() -> None:
    nn = pytest.importorskip("torch.nn")
    message = _mismatch(nn.Sequential(nn.GRU(3, 4)), lambda L: [L.GRU(4, reset_after=False, name="gru")], (7, 3))
    assert "bias of torch GRU" in message and "2x12 in the reference" in message and "12 in tensorflow" in message


def test_an_extra_layer_is_named() -> None:
    nn = pytest.importorskip("torch.nn")
    net = nn.Sequential(nn.Linear(6, 8), nn.Linear(8, 2))
    message = _mismatch(net, lambda L: [L.Dense(8, name="hidden")], (6,))
    assert "holds 2 weight arrays, the reference 4" in message and "torch Linear '1'" in message


def test_flax_names_its_module_path() -> None:
    nn = pytest.importorskip("torch.nn")
    jax = pytest.importorskip("jax")
    fnn = pytest.importorskip("flax.linen")
    model = fnn.Sequential([fnn.RNN(fnn.GRUCell(4))])
    variables = model.init(jax.random.key(0), np.zeros((2, 7, 3), np.float32))
    with pytest.raises(W.WeightMismatch) as caught:
        W.flax_import(variables, W.torch_export(nn.LSTM(3, 4)), variables)
    assert "torch LSTM '(model)[l0]'" in str(caught.value) and "GRUCell 'layers_0/cell'" in str(caught.value)


def test_layers_pair_by_name_across_each_framework_spelling() -> None:
    # torch's module path, Keras' layer name and Flax's module path are one name; creation
    # order differs (the shortcut first in Keras), the pairing follows the names.
    reference = [("layer1.0.conv1", (3, 3, 4, 4)), ("layer1.0.bn1", (4,)), ("layer1.0.downsample.0", (1, 1, 4, 4))]
    mine = [("layer1_0_downsample_0", (1, 1, 4, 4)), ("layer1_0_conv1", (3, 3, 4, 4)), ("layer1_0_bn1", (4,))]
    assert W.pairing(reference, mine) == [1, 2, 0]
    flax = [("layer1_0/downsample_0", (1, 1, 4, 4)), ("layer1_0/conv1", (3, 3, 4, 4)), ("layer1_0/bn1", (4,))]
    assert W.pairing(reference, flax) == [1, 2, 0]


def test_layers_pair_by_structure_where_names_differ() -> None:
    # A two-input model: torch created the LSTM first, Keras the station embedding first.
    reference = [("rnn", (6, 128)), ("rnn", (32, 128)), ("rnn", (128,)), ("station", (20, 8)), ("head", (40, 1))]
    mine = [("station_embedding", (20, 8)), ("lstm", (6, 128)), ("lstm", (32, 128)), ("lstm", (128,)), ("out", (40, 1))]
    assert W.pairing(reference, mine) == [1, 2, 3, 0, 4]


def test_layers_of_one_structure_keep_their_order_and_nothing_else_pairs() -> None:
    # Two norms of one shape: the k-th with the k-th, wherever the other layers sit.
    reference = [("a", (8, 16)), ("n1", (16,)), ("n2", (16,))]
    mine = [("n_first", (16,)), ("dense", (8, 16)), ("n_second", (16,))]
    assert W.pairing(reference, mine) == [1, 0, 2]
    assert W.pairing(reference, [("x", (8, 16)), ("y", (16,))]) is None  # a layer missing
    assert W.pairing(reference, [("a", (8, 16)), ("n1", (16,)), ("n2", (17,))]) is None  # another shape


def test_a_two_input_network_copies_across_creation_orders() -> None:
    """The issue's forecaster in small: torch creates the LSTM before the station
    embedding, Keras the embedding first (its dict inputs sorted by name); the copy pairs
    them by structure and the outputs agree."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("tensorflow")
    importlib.import_module("dlbench.frameworks.tensorflow")
    keras = pytest.importorskip("keras")

    class Forecaster(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.rnn = torch.nn.LSTM(3, 8, batch_first=True)
            self.station = torch.nn.Embedding(5, 2)
            self.head = torch.nn.Linear(10, 1)

        def forward(self, x: dict[str, Any]) -> Any:
            h = self.rnn(x["window"])[0][:, -1]
            return self.head(torch.cat([h, self.station(x["station"]).flatten(1)], dim=1))

    L = keras.layers
    window, station = keras.Input((6, 3), name="window"), keras.Input((1,), dtype="int32", name="station")
    embedded = L.Flatten()(L.Embedding(5, 2, name="station_embedding")(station))
    out = L.Dense(1, name="out")(L.Concatenate()([L.LSTM(8, name="lstm")(window), embedded]))
    model = keras.Model({"station": station, "window": window}, out)
    net = Forecaster().eval()
    W.torch_import(net, _randomized(W.torch_export(net)))
    W.keras_import(model, W.torch_export(net))
    rng = np.random.default_rng(3)
    x = {"window": rng.standard_normal((4, 6, 3)).astype(np.float32), "station": rng.integers(0, 5, (4, 1))}
    with torch.no_grad():
        want = net({"window": torch.from_numpy(x["window"]), "station": torch.from_numpy(x["station"])}).numpy()
    got = np.asarray(model({"window": x["window"], "station": x["station"].astype(np.int32)}))
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)


def test_torch_flattens_channel_major_and_the_copy_moves_the_dense_rows() -> None:
    """conv -> flatten -> dense: torch's dense rows are (C, H, W) ordered, Keras' (H, W, C);
    the copy moves them (knowing C from the convolution) and the outputs agree."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("tensorflow")
    importlib.import_module("dlbench.frameworks.tensorflow")
    keras = pytest.importorskip("keras")
    net = torch.nn.Sequential(
        torch.nn.Conv2d(2, 3, 3), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(3 * 4 * 5, 4)
    )
    net.eval()
    L = keras.layers
    model = keras.Sequential([keras.Input((6, 7, 2)), L.Conv2D(3, 3, activation="relu"), L.Flatten(), L.Dense(4)])
    W.torch_import(net, _randomized(W.torch_export(net)))
    W.keras_import(model, W.torch_export(net))
    x = np.random.default_rng(4).standard_normal((2, 6, 7, 2)).astype(np.float32)
    with torch.no_grad():
        want = net(torch.from_numpy(x).permute(0, 3, 1, 2).contiguous()).numpy()
    np.testing.assert_allclose(np.asarray(model(x)), want, rtol=0, atol=1e-5)
    # and back: Keras' export into torch gives torch the same function
    W.torch_import(net, W.keras_export(model))
    with torch.no_grad():
        again = net(torch.from_numpy(x).permute(0, 3, 1, 2).contiguous()).numpy()
    np.testing.assert_allclose(again, want, rtol=0, atol=1e-5)
