"""Equivalence tests for the mobile / multi-branch vision models: mobilenet_v2,
efficientnet_b0, efficientnet_b4 and inception_v3.

Full-size trainable counts are checked without training: torch builds on the meta
device, Flax through jax.eval_shape, Keras for real (a few seconds each). They must
equal the published count and the spec's formula, and keras.applications' own
model must have the same count or exactly the documented difference. The generic
training checks live in test_models.py.
"""

from __future__ import annotations

import importlib
from functools import partial

import numpy as np
import pytest

from dlbench.models import get_spec

MODELS = ("mobilenet_v2", "efficientnet_b0", "efficientnet_b4", "inception_v3")
FRAMEWORKS = ("torch", "tensorflow", "jax")
PUBLISHED = {
    "mobilenet_v2": 3_504_872,
    "efficientnet_b0": 5_288_548,
    "efficientnet_b4": 19_341_616,
    "inception_v3": 23_834_568,
}


def _reference(model: str) -> tuple[tuple[int, int, int], int]:
    ((shape, classes),) = get_spec(model).reference_counts
    return shape, classes


def _builder(model: str, framework: str):
    return importlib.import_module(f"dlbench.models.{model}.{framework}").build


def _torch_count(model: str, shape, classes: int, options) -> int:
    torch = pytest.importorskip("torch")
    with torch.device("meta"):  # shapes only: no memory, no initialization work
        net = _builder(model, "torch")(shape, classes, **options)
    return sum(p.numel() for p in net.parameters() if p.requires_grad)


def _keras_count(model) -> int:
    return int(sum(np.prod(v.shape) for v in model.trainable_weights))


def _jax_count(model: str, shape, classes: int, options) -> int:
    jax = pytest.importorskip("jax")
    net = _builder(model, "jax")(shape, classes, **options)
    variables = jax.eval_shape(
        net.init, {"params": jax.random.key(0)}, jax.ShapeDtypeStruct((1, *shape), jax.numpy.float32)
    )
    return sum(int(np.prod(leaf.shape)) for leaf in jax.tree.leaves(variables["params"]))


def _count(framework: str, model: str, shape, classes: int, options) -> int:
    if framework == "torch":
        return _torch_count(model, shape, classes, options)
    if framework == "jax":
        return _jax_count(model, shape, classes, options)
    pytest.importorskip("keras")
    return _keras_count(_builder(model, "tensorflow")(shape, classes, **options))


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_full_size_count_is_published_count(framework, model):
    spec = get_spec(model)
    shape, classes = _reference(model)
    assert spec.count(shape, classes) == PUBLISHED[model] == spec.reference_counts[(shape, classes)]
    assert _count(framework, model, shape, classes, spec.options) == PUBLISHED[model]


def test_inception_without_aux_is_torchvision_minus_its_aux_head():
    # torchvision's aux head: conv 768->128 1x1 + BN, conv 128->768 5x5 + BN, dense 768->1000.
    aux = 768 * 128 + 2 * 128 + 128 * 768 * 25 + 2 * 768 + 768 * 1000 + 1000
    assert aux == 3_326_696
    assert get_spec("inception_v3").count((299, 299, 3), 1000) == 27_161_264 - aux


# keras.applications' trainable count minus ours, at the reference input (docstrings explain).
KERAS_DIFFERENCE = {"mobilenet_v2": 0, "efficientnet_b0": 0, "efficientnet_b4": 0, "inception_v3": -17_216}


@pytest.mark.parametrize("model", MODELS)
def test_keras_applications_count(model):
    keras = pytest.importorskip("keras")
    spec = get_spec(model)
    shape, classes = _reference(model)
    app = getattr(keras.applications, spec.keras_application)(weights=None, input_shape=shape, classes=classes)
    ours = spec.count(shape, classes)
    assert _keras_count(app) - ours == KERAS_DIFFERENCE[model]
    if model == "inception_v3":
        # keras.applications' batch norms have scale=False: one gamma fewer per channel.
        from dlbench.models.inception_v3 import batchnorm_channels

        assert batchnorm_channels(shape, **spec.options) == 17_216


def _forward(framework: str, model: str, x: np.ndarray, classes: int) -> np.ndarray:
    spec = get_spec(model)
    shape, options = x.shape[1:], spec.resolve_options(spec.tiny_options)
    if framework == "torch":
        torch = pytest.importorskip("torch")
        net = _builder(model, "torch")(shape, classes, **options).eval()
        with torch.no_grad():
            return net(torch.from_numpy(x).permute(0, 3, 1, 2)).numpy()
    if framework == "jax":
        jax = pytest.importorskip("jax")
        net = _builder(model, "jax")(shape, classes, **options)
        # Jitted: one XLA compile is far quicker than dispatching ~100 layers op by op.
        variables = jax.jit(net.init)({"params": jax.random.key(0)}, x)
        return np.asarray(jax.jit(partial(net.apply, deterministic=True))(variables, x))
    pytest.importorskip("keras")
    return np.asarray(_builder(model, "tensorflow")(shape, classes, **options)(x, training=False))


@pytest.mark.parametrize("model", MODELS)
def test_output_shapes_equal_across_frameworks(model):
    shape = get_spec(model).tiny_shape
    x = np.random.default_rng(0).random((2, *shape), dtype=np.float32)
    outs = {fw: _forward(fw, model, x, 7) for fw in FRAMEWORKS}
    assert {o.shape for o in outs.values()} == {(2, 7)}
    assert all(np.all(np.isfinite(o)) for o in outs.values())


def test_efficientnet_block_table():
    from dlbench.models._efficientnet import blocks

    b0 = blocks(1.0, 1.0, 0.2)
    assert len(b0) == 16 and len(blocks(1.4, 1.8, 0.2)) == 32
    # Squeeze width comes from the block's input channels (16 -> 4), not the expanded 96.
    assert (b0[1].inp, b0[1].expanded, b0[1].squeeze) == (16, 96, 4)
    assert b0[0].drop_rate == 0.0 and b0[-1].drop_rate == pytest.approx(0.2 * 15 / 16)
    assert [b.residual for b in b0].count(True) == 9


def test_stochastic_depth_rates_match_spec_in_torch_and_keras():
    from dlbench.models._efficientnet import blocks

    spec = get_spec("efficientnet_b0")
    options = spec.resolve_options(spec.tiny_options | {"depth_mult": 0.5})
    expected = [
        b.drop_rate for b in blocks(options["width_mult"], options["depth_mult"], 0.2) if b.residual and b.drop_rate > 0
    ]
    assert expected  # the configuration has shortcut blocks that can be dropped
    pytest.importorskip("torch")
    from dlbench.models._efficientnet.torch import StochasticDepth

    net = _builder("efficientnet_b0", "torch")((32, 32, 3), 10, **options)
    assert [m.rate for m in net.modules() if isinstance(m, StochasticDepth) and m.rate > 0] == expected
    keras = pytest.importorskip("keras")
    model = _builder("efficientnet_b0", "tensorflow")((32, 32, 3), 10, **options)
    dropped = [
        layer.rate
        for layer in model.layers
        if isinstance(layer, keras.layers.Dropout) and layer.noise_shape is not None
    ]
    assert dropped == pytest.approx(expected)


def test_torch_stochastic_depth_drops_whole_samples_in_training_only():
    torch = pytest.importorskip("torch")
    from dlbench.models._efficientnet.torch import StochasticDepth

    layer = StochasticDepth(0.5)
    x = torch.ones(256, 3, 4, 4)
    torch.manual_seed(0)
    y = layer.train()(x)
    per_sample = y.flatten(1)
    assert set(per_sample.unique().tolist()) <= {0.0, 2.0}  # kept samples are scaled by 1 / (1 - p)
    assert (per_sample.min(1).values == per_sample.max(1).values).all()  # whole sample kept or dropped
    assert 0.3 < (per_sample[:, 0] == 0).float().mean() < 0.7
    assert torch.equal(layer.eval()(x), x)


@pytest.mark.parametrize("model", MODELS)
def test_batch_norm_settings_torch_and_keras(model):
    torch = pytest.importorskip("torch")
    keras = pytest.importorskip("keras")
    spec_module = importlib.import_module(f"dlbench.models.{'_efficientnet' if 'efficientnet' in model else model}")
    spec = get_spec(model)
    shape, options = spec.tiny_shape, spec.resolve_options(spec.tiny_options)
    bns = [m for m in _builder(model, "torch")(shape, 10, **options).modules() if isinstance(m, torch.nn.BatchNorm2d)]
    torch_momentum = round(1 - options["bn_momentum"], 8)  # torch weighs the new batch, Keras the old average
    assert bns and {(m.eps, m.momentum) for m in bns} == {(spec_module.BN_EPSILON, torch_momentum)}
    layers = [
        la
        for la in _builder(model, "tensorflow")(shape, 10, **options).layers
        if isinstance(la, keras.layers.BatchNormalization)
    ]
    assert len(layers) == len(bns)
    assert {(la.epsilon, la.momentum) for la in layers} == {(spec_module.BN_EPSILON, options["bn_momentum"])}


def test_inception_rejects_inputs_below_75():
    spec = get_spec("inception_v3")
    assert spec.check_input((75, 75, 3)) is None
    assert "75x75" in spec.check_input((74, 80, 3))


def _inception_torch(shape, classes: int):
    torch = pytest.importorskip("torch")
    spec = get_spec("inception_v3")
    torch.manual_seed(0)
    return _builder("inception_v3", "torch")(shape, classes, **spec.resolve_options(spec.tiny_options))


def _inception_keras(shape, classes: int):
    pytest.importorskip("keras")
    spec = get_spec("inception_v3")
    return _builder("inception_v3", "tensorflow")(shape, classes, **spec.resolve_options(spec.tiny_options))


def test_inception_weight_copy_from_torch_gives_torchs_logits_in_keras():
    """The check's own copy (dlbench.conformance.weights) from torch into Keras. A functional
    model lists its layers by depth, not in build order: with Keras' automatic names the
    copy paired same-shaped convs of different branches by structure (the check's logits
    0.36 apart at full size). Named after torch's modules, they pair by name."""
    torch = pytest.importorskip("torch")
    from dlbench.conformance import weights

    shape, classes = get_spec("inception_v3").tiny_shape, 5
    net = _inception_torch(shape, classes)
    given = weights.perturbed(weights.torch_export(net))  # batch-norm statistics off 0 and 1: they count
    weights.torch_import(net, given)
    model = _inception_keras(shape, classes)
    mine = [(s.layer, s.shape) for s in weights._keras_slots(model)]
    theirs = [(s.layer, s.shape) for s in weights._torch_slots(net)]
    assert [s for _, s in mine] != [s for _, s in theirs], "Keras lists the layers in another order than torch"
    order = weights.pairing(theirs, mine)
    assert order is not None and [mine[i][0] for i in order] == [layer.replace(".", "_") for layer, _ in theirs], (
        "every Keras layer pairs with the torch module of its name"
    )
    weights.keras_import(model, given)
    x = np.random.default_rng(2).random((3, *shape), dtype=np.float32)
    with torch.no_grad():
        expected = net.eval()(torch.from_numpy(x).permute(0, 3, 1, 2).contiguous()).numpy()
    np.testing.assert_allclose(np.asarray(model(x, training=False)), expected, rtol=1e-4, atol=1e-5)


def test_inception_keras_layer_names_are_the_same_in_every_build():
    """Keras' automatic names count up across the builds of one process (conv2d_99, then
    conv2d_100, which sorts before it), and Grappler's arithmetic optimizer summed a block
    input's branch gradients in an order that follows the names: the check's second build
    from seed 0 trained apart from the first. Fixed names: the same sum in every build."""
    shape = get_spec("inception_v3").tiny_shape
    first, second = (_inception_keras(shape, 5) for _ in range(2))
    names = [layer.name for layer in first.layers]
    assert names == [layer.name for layer in second.layers]
    assert {"stem_0_0", "stem_0_1", "mixed_0_branches_3_1_0", "classifier_1"} <= set(names)
