"""The glorot-uniform scheme reaches every layer with weights in torch, Keras and Flax,
or says which layers kept the builder's init.

For each framework one small network holds a layer of each kind the scheme covers,
with biases and norms built away from the scheme's values, plus a user's layer with a
parameter of its own. After `glorot_uniform_`: every kernel lies within its Glorot
limit sqrt(6 / (fan_in + fan_out)) and fills it (a fifth of a uniform's draws lie
above 0.8 * limit), biases are zero, recurrent kernels are semi-orthogonal over the
fused gate matrix, embeddings lie within 0.05, norms are at 1 / 0; the same seed gives
the same weights; the user's layer is reported with its path and count. The fans the
three modules count for the same conv, transposed conv, depthwise conv and attention
projection are equal.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

from dlbench.frameworks.init_coverage import InitCoverage, KeptLayer, coverage


def glorot(fan_in: int, fan_out: int) -> float:
    return math.sqrt(6.0 / (fan_in + fan_out))


def assert_glorot(w, limit: float, what: str) -> None:
    a = np.abs(np.asarray(w, dtype=np.float64)).ravel()
    assert a.max() <= limit * (1 + 1e-6), f"{what}: max {a.max():.4f} above the limit {limit:.4f}"
    # U(-L, L): 20% of the draws above 0.8 L; a narrower init (torch's default) has none there.
    assert a.size >= 50, f"{what}: too small to tell"
    assert (a > 0.8 * limit).mean() > 0.1, f"{what}: does not fill the limit {limit:.4f} (max {a.max():.4f})"


def assert_semi_orthogonal(w, what: str) -> None:
    """Rows or columns orthonormal, whichever are fewer: W W^T = I or W^T W = I."""
    w = np.asarray(w, dtype=np.float64).reshape(-1, np.shape(w)[-1])
    gram = w @ w.T if w.shape[0] <= w.shape[1] else w.T @ w
    np.testing.assert_allclose(gram, np.eye(len(gram)), atol=1e-5, err_msg=what)


def assert_zero(b, what: str) -> None:
    assert not np.asarray(b).any(), what


# ---------------------------------------------------------------- the record


def test_the_note_names_the_kept_layers_and_the_facts_are_empty_when_none():
    full = coverage("glorot-uniform", {"Linear", "Conv1d"}, [])
    assert full.note() == "glorot-uniform on Conv1d, Linear" and full.as_facts() == {}
    part = coverage("glorot-uniform", {"Linear", "Conv1d"}, [KeptLayer("head.scale", "Scale", 16)])
    assert (
        part.note() == "glorot-uniform on Conv1d, Linear; kept the builder's init: 'head.scale' (Scale, 16 parameters)"
    )
    assert part.as_facts() == {
        "init_note": part.note(),
        "init_kept_parameters": 16,
        "init_kept_layers": [{"path": "head.scale", "kind": "Scale", "parameters": 16}],
    }
    many = InitCoverage("glorot-uniform", (), tuple(KeptLayer(f"l{i}", "X", 1) for i in range(6)))
    assert many.kept_parameters == 6 and many.note().endswith("'l3' (X, 1 parameter), 2 more layers (2 parameters)")


# ---------------------------------------------------------------- torch


def _torch_net():
    import torch
    from torch import nn

    class Scale(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.scale = nn.Parameter(torch.full((16,), 2.0))

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv1d(4, 16, 3)
            self.conv2 = nn.Conv2d(4, 12, 3, groups=2)
            self.conv3 = nn.Conv3d(2, 8, 2)
            self.tconv1 = nn.ConvTranspose1d(4, 16, 3)
            self.tconv2 = nn.ConvTranspose2d(4, 12, 3, groups=2)
            self.tconv3 = nn.ConvTranspose3d(2, 8, 2)
            self.linear = nn.Linear(8, 32)
            self.bilinear = nn.Bilinear(4, 5, 6)
            self.rnn = nn.RNN(6, 10)
            self.lstm = nn.LSTM(6, 8, num_layers=2, bidirectional=True)
            self.gru = nn.GRU(6, 8)
            self.cell = nn.LSTMCell(6, 8)
            self.attn = nn.MultiheadAttention(16, 2)
            self.cross = nn.MultiheadAttention(16, 2, kdim=6, vdim=10, add_bias_kv=True)
            self.embed = nn.Embedding(50, 8, padding_idx=0)
            self.bn = nn.BatchNorm2d(6)
            self.ln = nn.LayerNorm(6)
            self.gn = nn.GroupNorm(2, 6)
            self.inorm = nn.InstanceNorm1d(6, affine=True)
            self.head = nn.Sequential(nn.Linear(32, 16))
            self.head.scale = Scale()
            for module in (self.bn, self.ln, self.gn, self.inorm):  # away from 1 / 0: the reset must show
                nn.init.constant_(module.weight, 3.0)
                nn.init.constant_(module.bias, 2.0)

    torch.manual_seed(7)
    return Net()


def test_torch_reaches_every_layer_kind():
    from dlbench.frameworks.torch_init import glorot_uniform_

    net = _torch_net()
    cov = glorot_uniform_(net)
    w = {k: v.detach().numpy() for k, v in net.named_parameters()}
    assert_glorot(w["conv1.weight"], glorot(4 * 3, 16 * 3), "Conv1d")
    assert_glorot(w["conv2.weight"], glorot(2 * 9, 12 * 9), "Conv2d groups=2")
    assert_glorot(w["conv3.weight"], glorot(2 * 8, 8 * 8), "Conv3d")
    # Transposed (in, out/groups, *k): fans out/groups*k and in*k, Keras' (*k, out, in) count.
    assert_glorot(w["tconv1.weight"], glorot(16 * 3, 4 * 3), "ConvTranspose1d")
    assert_glorot(w["tconv2.weight"], glorot(6 * 9, 4 * 9), "ConvTranspose2d groups=2")
    assert_glorot(w["tconv3.weight"], glorot(8 * 8, 2 * 8), "ConvTranspose3d")
    assert_glorot(w["linear.weight"], glorot(8, 32), "Linear")
    assert_glorot(w["bilinear.weight"], glorot(4 * 5, 6), "Bilinear")
    assert_glorot(w["rnn.weight_ih_l0"], glorot(6, 10), "RNN input kernel")
    assert_semi_orthogonal(w["rnn.weight_hh_l0"], "RNN recurrent kernel")
    for layer, width in (("l0", 6), ("l0_reverse", 6), ("l1", 16), ("l1_reverse", 16)):
        assert_glorot(w[f"lstm.weight_ih_{layer}"], glorot(width, 4 * 8), f"LSTM weight_ih_{layer}")
        assert_semi_orthogonal(w[f"lstm.weight_hh_{layer}"], f"LSTM weight_hh_{layer}")
    assert_glorot(w["gru.weight_ih_l0"], glorot(6, 3 * 8), "GRU input kernel")
    assert_semi_orthogonal(w["gru.weight_hh_l0"], "GRU recurrent kernel")
    assert_glorot(w["cell.weight_ih"], glorot(6, 4 * 8), "LSTMCell input kernel")
    assert_semi_orthogonal(w["cell.weight_hh"], "LSTMCell recurrent kernel")
    for i, block in enumerate(np.split(w["attn.in_proj_weight"], 3)):
        assert_glorot(block, glorot(16, 16), f"attention in_proj block {i}")
    assert_glorot(w["attn.out_proj.weight"], glorot(16, 16), "attention out_proj")
    assert_glorot(w["cross.q_proj_weight"], glorot(16, 16), "attention q_proj")
    assert_glorot(w["cross.k_proj_weight"], glorot(6, 16), "attention k_proj (kdim)")
    assert_glorot(w["cross.v_proj_weight"], glorot(10, 16), "attention v_proj (vdim)")
    assert np.abs(w["embed.weight"]).max() <= 0.05 and np.abs(w["embed.weight"]).max() > 0.04
    assert_zero(w["embed.weight"][0], "the padding row stays zero")
    for name in ("bn", "ln", "gn", "inorm"):
        assert (w[f"{name}.weight"] == 1).all() and not w[f"{name}.bias"].any(), name
    biases = [k for k in w if "bias" in k and not k.startswith(("bn.", "ln.", "gn.", "inorm."))]
    assert len(biases) >= 20
    for name in biases:
        assert_zero(w[name], name)

    assert set(cov.applied) >= {
        "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "Linear",
        "Bilinear", "RNN", "LSTM", "GRU", "LSTMCell", "MultiheadAttention", "Embedding", "BatchNorm2d",
        "LayerNorm", "GroupNorm", "InstanceNorm1d",
    }  # fmt: skip
    assert cov.kept == (KeptLayer("head.scale", "Scale", 16),)
    assert (w["head.scale.scale"] == 2).all()  # left as built
    assert "kept the builder's init: 'head.scale' (Scale, 16 parameters)" in cov.note()
    assert cov.as_facts()["init_kept_parameters"] == 16


def test_torch_same_seed_same_weights():
    from dlbench.frameworks.torch_init import glorot_uniform_

    first = _torch_net()  # seeds torch's RNG, builds
    glorot_uniform_(first)
    second = _torch_net()
    glorot_uniform_(second)
    for (name, a), b in zip(first.state_dict().items(), second.state_dict().values()):
        assert (a == b).all(), name


# ---------------------------------------------------------------- Keras


@pytest.fixture(scope="module")
def keras_init():
    pytest.importorskip("tensorflow")
    os.environ["KERAS_BACKEND"] = "tensorflow"  # as the adapter sets it, before keras is imported
    from dlbench.frameworks import keras_init

    return keras_init


def _keras_net():
    import keras

    L = keras.layers

    class Scale(L.Layer):
        def build(self, shape):
            self.scale = self.add_weight(shape=(shape[-1],), initializer="ones", name="scale")

        def call(self, x):
            return x * self.scale

    keras.utils.set_random_seed(7)
    odd = {"bias_initializer": "ones"}  # away from 0: the reset must show
    norm = {"gamma_initializer": "zeros", "beta_initializer": "ones"}
    image, volume = keras.Input((6, 6, 4)), keras.Input((4, 4, 4, 2))
    seq, tokens = keras.Input((5, 6)), keras.Input((5,), dtype="int32")
    outs = [
        L.Conv1D(16, 3, name="conv1", **odd)(seq),
        L.Conv2D(12, 3, groups=2, name="conv2", **odd)(image),
        L.Conv3D(8, 2, name="conv3", **odd)(volume),
        L.Conv1DTranspose(16, 3, name="tconv1", **odd)(L.Dense(4)(seq)),
        L.Conv2DTranspose(12, 3, name="tconv2", **odd)(image),
        L.Conv3DTranspose(8, 2, name="tconv3", **odd)(volume),
        L.DepthwiseConv2D(3, depth_multiplier=4, name="depthwise", **odd)(image),
        L.SeparableConv2D(12, 3, depth_multiplier=4, name="separable", **odd)(image),
        L.SimpleRNN(10, name="rnn", **odd)(seq),
        L.Bidirectional(L.LSTM(8, name="lstm", **odd), name="bi")(seq),
        L.GRU(8, name="gru", **odd)(seq),
        L.MultiHeadAttention(2, 8, name="attn", **odd)(L.Dense(16, name="proj")(seq), seq),
        L.Embedding(50, 8, name="embed")(tokens),
        L.BatchNormalization(name="bn", **norm)(image),
        L.LayerNormalization(name="ln", **norm)(seq),
        L.GroupNormalization(2, name="gn", **norm)(seq),
        keras.Sequential([L.Dense(32, name="inner", **odd), Scale(name="scale")], name="head")(seq),
    ]
    return keras.Model([image, volume, seq, tokens], outs)


def test_keras_reaches_every_layer_kind(keras_init):
    model = _keras_net()
    cov = keras_init.glorot_uniform_(model, seed=7)
    w = {v.path: v.numpy() for v in model.weights}
    assert_glorot(w["conv1/kernel"], glorot(6 * 3, 16 * 3), "Conv1D")
    assert_glorot(w["conv2/kernel"], glorot(2 * 9, 12 * 9), "Conv2D groups=2")
    assert_glorot(w["conv3/kernel"], glorot(2 * 8, 8 * 8), "Conv3D")
    assert_glorot(w["tconv1/kernel"], glorot(16 * 3, 4 * 3), "Conv1DTranspose")
    assert_glorot(w["tconv2/kernel"], glorot(12 * 9, 4 * 9), "Conv2DTranspose")
    assert_glorot(w["tconv3/kernel"], glorot(8 * 8, 2 * 8), "Conv3DTranspose")
    # Depthwise as the grouped conv it is: each output sees one input channel.
    assert_glorot(w["depthwise/kernel"], glorot(9, 9 * 16), "DepthwiseConv2D")
    assert_glorot(w["separable/depthwise_kernel"], glorot(9, 9 * 16), "SeparableConv2D depthwise")
    assert_glorot(w["separable/pointwise_kernel"], glorot(16, 12), "SeparableConv2D pointwise")
    cells = {"rnn": 1, "bi/forward_lstm": 4, "bi/backward_lstm": 4, "gru": 3}
    for name, gates in cells.items():
        (cell,) = {p.rsplit("/", 1)[0] for p in w if p.startswith(name + "/") and p.endswith("recurrent_kernel")}
        units = 10 if name == "rnn" else 8
        assert_glorot(w[f"{cell}/kernel"], glorot(6, gates * units), f"{cell} kernel")
        assert_semi_orthogonal(w[f"{cell}/recurrent_kernel"], f"{cell} recurrent kernel")
        assert_zero(w[f"{cell}/bias"], f"{cell} bias (no unit forget bias under the scheme)")
    for proj in ("query", "key", "value"):
        # (E, heads, head_dim): the (E, heads*head_dim) map torch's in_proj block is.
        width = 16 if proj == "query" else 6
        assert_glorot(w[f"attn/{proj}/kernel"], glorot(width, 16), f"attention {proj}")
    assert_glorot(w["attn/attention_output/kernel"], glorot(16, 16), "attention output")
    assert np.abs(w["embed/embeddings"]).max() <= 0.05 and np.abs(w["embed/embeddings"]).max() > 0.04
    for name in ("bn", "ln", "gn"):
        assert (w[f"{name}/gamma"] == 1).all() and not w[f"{name}/beta"].any(), name
    assert (w["bn/moving_variance"] == 1).all() and not w["bn/moving_mean"].any()  # untouched
    biases = [p for p in w if p.endswith("/bias")]
    assert len(biases) >= 15
    for name in biases:
        assert_zero(w[name], name)

    assert set(cov.applied) >= {
        "Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose", "Conv3DTranspose", "DepthwiseConv2D",
        "SeparableConv2D", "Dense", "EinsumDense", "SimpleRNNCell", "LSTMCell", "GRUCell", "Embedding",
        "BatchNormalization", "LayerNormalization", "GroupNormalization",
    }  # fmt: skip
    assert cov.kept == (KeptLayer("head/scale", "Scale", 32),)
    assert (w["head/scale/scale"] == 1).all()
    assert "'head/scale' (Scale, 32 parameters)" in cov.note()


def test_keras_same_seed_same_weights(keras_init):
    runs = []
    for _ in range(2):
        model = _keras_net()
        keras_init.glorot_uniform_(model)  # the base seed from Python's random, which set_random_seed seeded
        runs.append([v.numpy() for v in model.weights])
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------- Flax


@pytest.fixture(scope="module")
def flax_parts():
    pytest.importorskip("flax")
    import flax.linen as nn
    import jax
    import jax.numpy as jnp

    from dlbench.frameworks import flax_init
    from dlbench.models.lstm.jax import cell as zoo_cell

    class Scale(nn.Module):
        @nn.compact
        def __call__(self, x):
            return x * self.param("scale", nn.initializers.ones, (x.shape[-1],))

    class Net(nn.Module):
        @nn.compact
        def __call__(self, image, volume, seq, tokens):
            return [
                nn.Conv(16, (3,), name="conv1")(seq),
                nn.Conv(12, (3, 3), feature_group_count=2, name="conv2")(image),
                nn.Conv(8, (2, 2, 2), name="conv3")(volume),
                nn.ConvTranspose(16, (3,), name="tconv1")(nn.Dense(4)(seq)),
                nn.ConvTranspose(12, (3, 3), name="tconv2")(image),
                nn.ConvTranspose(8, (2, 2, 2), name="tconv3")(volume),
                nn.Conv(16, (3, 3), feature_group_count=4, name="depthwise")(image),
                nn.RNN(nn.SimpleCell(10, name="rnn"))(seq),
                nn.RNN(nn.OptimizedLSTMCell(8, name="lstm"))(seq),
                nn.RNN(nn.GRUCell(8, name="gru"))(seq),
                nn.RNN(zoo_cell("lstm", 8, None, None), name="zoo_lstm")(seq),  # the zoo's fused layout
                nn.MultiHeadDotProductAttention(2, qkv_features=16, out_features=16, name="attn")(
                    nn.Dense(16, name="proj")(seq), seq
                ),
                nn.Embed(50, 8, name="embed")(tokens),
                nn.BatchNorm(use_running_average=False, name="bn")(image),
                nn.LayerNorm(name="ln")(seq),
                nn.GroupNorm(2, name="gn")(seq),
                nn.RMSNorm()(seq),
                Scale(name="head")(nn.Dense(32, name="inner")(seq)),
            ]

    inputs = (
        jnp.zeros((1, 6, 6, 4)),
        jnp.zeros((1, 4, 4, 4, 2)),
        jnp.zeros((1, 5, 6)),
        jnp.zeros((1, 5), jnp.int32),
    )
    # The real tree's names and shapes, traced without compiling init (seconds on a CPU), every
    # leaf at 0.5: away from the scheme's values, so each redraw and reset shows.
    shapes = jax.eval_shape(Net().init, jax.random.key(7), *inputs)
    variables = jax.tree_util.tree_map(lambda leaf: np.full(leaf.shape, 0.5, leaf.dtype), shapes)
    return flax_init, variables, jax


def test_flax_reaches_every_layer_kind(flax_parts):
    flax_init, variables, jax = flax_parts
    new, cov = flax_init.glorot_uniform_(variables, jax.random.key(1))
    assert new["batch_stats"] is variables["batch_stats"]  # other collections come back untouched
    p = jax.tree_util.tree_map(np.asarray, new["params"])
    assert_glorot(p["conv1"]["kernel"], glorot(6 * 3, 16 * 3), "Conv 1-D")
    assert_glorot(p["conv2"]["kernel"], glorot(2 * 9, 12 * 9), "Conv 2-D groups=2")
    assert_glorot(p["conv3"]["kernel"], glorot(2 * 8, 8 * 8), "Conv 3-D")
    assert_glorot(p["tconv1"]["kernel"], glorot(4 * 3, 16 * 3), "ConvTranspose 1-D")
    assert_glorot(p["tconv2"]["kernel"], glorot(4 * 9, 12 * 9), "ConvTranspose 2-D")
    assert_glorot(p["tconv3"]["kernel"], glorot(2 * 8, 8 * 8), "ConvTranspose 3-D")
    assert_glorot(p["depthwise"]["kernel"], glorot(9, 9 * 16), "Conv depthwise (groups=in)")
    assert_glorot(p["rnn"]["i"]["kernel"], glorot(6, 10), "SimpleCell input kernel")
    assert_semi_orthogonal(p["rnn"]["h"]["kernel"], "SimpleCell recurrent kernel")
    lstm = (("ii", "if", "ig", "io"), ("hi", "hf", "hg", "ho"))
    for cell, (gates_in, gates_h) in (("lstm", lstm), ("gru", (("ir", "iz", "in"), ("hr", "hz", "hn")))):
        params = p[cell]
        fused_in = np.concatenate([params[g]["kernel"] for g in gates_in], axis=-1)
        fused_h = np.concatenate([params[g]["kernel"] for g in gates_h], axis=-1)
        assert_glorot(fused_in, glorot(6, len(gates_in) * 8), f"{cell} fused input kernel")
        assert_semi_orthogonal(fused_h, f"{cell} fused recurrent kernel")
    zoo = p["zoo_lstm"]["cell"]
    assert_glorot(zoo["input"]["kernel"], glorot(6, 4 * 8), "zoo's fused LSTM input kernel")
    assert_semi_orthogonal(zoo["recurrent"]["kernel"], "zoo's fused LSTM recurrent kernel")
    for proj in ("query", "key", "value"):
        width = 16 if proj == "query" else 6
        assert_glorot(p["attn"][proj]["kernel"], glorot(width, 16), f"attention {proj}")
    assert_glorot(p["attn"]["out"]["kernel"], glorot(16, 16), "attention out")
    assert np.abs(p["embed"]["embedding"]).max() <= 0.05 and np.abs(p["embed"]["embedding"]).max() > 0.04
    for name in ("bn", "ln", "gn"):
        assert (p[name]["scale"] == 1).all() and not p[name]["bias"].any(), name
    assert (p["RMSNorm_0"]["scale"] == 1).all()
    biases = [path for path, _ in jax.tree_util.tree_flatten_with_path(p)[0] if path[-1].key == "bias"]
    assert len(biases) >= 20
    for path, leaf in jax.tree_util.tree_flatten_with_path(p)[0]:
        if path[-1].key == "bias" and path[0].key not in ("bn", "ln", "gn"):
            assert_zero(leaf, jax.tree_util.keystr(path))

    assert set(cov.applied) >= {
        "Conv", "Dense", "SimpleCell", "LSTMCell", "GRUCell", "fused cell", "MultiHeadDotProductAttention", "Embed",
        "norm",
    }  # fmt: skip
    assert cov.kept == (KeptLayer("head/scale", "scale", 32),)
    assert (p["head"]["scale"] == 0.5).all()  # left as built
    assert "'head/scale' (scale, 32 parameters)" in cov.note()


def test_flax_same_key_same_weights(flax_parts):
    flax_init, variables, jax = flax_parts
    first, _ = flax_init.glorot_uniform_(variables["params"], jax.random.key(3))
    second, _ = flax_init.glorot_uniform_(variables["params"], jax.random.key(3))
    other, _ = flax_init.glorot_uniform_(variables["params"], jax.random.key(4))
    same = jax.tree_util.tree_map(lambda a, b: bool((a == b).all()), first, second)
    assert all(jax.tree_util.tree_leaves(same))
    assert not (np.asarray(first["conv1"]["kernel"]) == np.asarray(other["conv1"]["kernel"])).all()


# ---------------------------------------------------------------- the same layer, three frameworks


def test_conv_transposed_depthwise_and_attention_fans_agree_across_frameworks(keras_init, flax_parts):
    """The Glorot limit each module would draw the same layer's kernel from, from its real shape."""
    from torch import nn

    from dlbench.frameworks import torch_init

    flax_init, _, _ = flax_parts
    import keras

    def keras_kernel(layer, shape, name="kernel"):
        layer.build(shape)
        return next(v for v in layer.weights if v.name == name)

    cases = {
        # name: torch module, (keras fans), (flax fans) of the same layer: 4 -> 12 channels, 3x3
        "conv": (
            nn.Conv2d(4, 12, 3),
            keras_init.conv_fans(tuple(keras_kernel(keras.layers.Conv2D(12, 3), (None, 8, 8, 4)).shape)),
            flax_init.kernel_fans((3, 3, 4, 12)),
        ),
        "grouped conv": (
            nn.Conv2d(4, 12, 3, groups=2),
            keras_init.conv_fans(tuple(keras_kernel(keras.layers.Conv2D(12, 3, groups=2), (None, 8, 8, 4)).shape)),
            flax_init.kernel_fans((3, 3, 2, 12)),
        ),
        "transposed conv": (
            nn.ConvTranspose2d(4, 12, 3),
            keras_init.conv_fans(tuple(keras_kernel(keras.layers.Conv2DTranspose(12, 3), (None, 8, 8, 4)).shape)),
            flax_init.kernel_fans((3, 3, 4, 12)),
        ),
        "transposed conv 1-D": (
            nn.ConvTranspose1d(4, 12, 5),
            keras_init.conv_fans(tuple(keras_kernel(keras.layers.Conv1DTranspose(12, 5), (None, 8, 4)).shape)),
            flax_init.kernel_fans((5, 4, 12)),
        ),
        "depthwise conv": (
            nn.Conv2d(4, 8, 3, groups=4),
            keras_init.depthwise_fans(
                tuple(keras_kernel(keras.layers.DepthwiseConv2D(3, depth_multiplier=2), (None, 8, 8, 4)).shape)
            ),
            flax_init.kernel_fans((3, 3, 1, 8)),
        ),
    }
    for name, (module, keras_fans, flax_fans) in cases.items():
        limits = {glorot(*torch_init.fans(module)), glorot(*keras_fans), glorot(*flax_fans)}
        assert max(limits) - min(limits) < 1e-12, f"{name}: {limits}"

    # Attention, E = 16, 2 heads of 8: torch's in_proj block and out_proj are (16, 16) maps.
    mha = keras.layers.MultiHeadAttention(2, 8)
    mha.build((None, 5, 16), (None, 5, 16))
    query, out = mha._query_dense, mha._output_dense
    keras_limits = {
        glorot(*keras_init.einsum_fans(query.equation, tuple(query.kernel.shape))),
        glorot(*keras_init.einsum_fans(out.equation, tuple(out.kernel.shape))),
    }
    flax_limits = {
        glorot(*flax_init.kernel_fans((16, 2, 8), role="in")),
        glorot(*flax_init.kernel_fans((2, 8, 16), role="out")),
    }
    assert keras_limits == flax_limits == {glorot(16, 16)}
