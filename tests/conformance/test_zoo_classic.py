"""Equivalence tests for the classic vision models: alexnet, vgg16, resnet18/50/152.

- Full-size trainable counts per framework equal the published (torchvision)
  count and the spec's formula, without training: torch under the meta device,
  Flax through `jax.eval_shape`, Keras built for real.
- keras.applications: VGG16 has exactly our count; ResNet50/152 (v1, a bias on
  every convolution) exceed ours by exactly the number of conv output channels.
- The three frameworks compute the same function: torch's weights (with
  non-trivial batch-norm statistics) copied into the Keras and Flax models give
  the same eval-mode logits, at input sizes that exercise torch's symmetric
  stride-2 padding, odd sizes and the adaptive pool on 1x1 and 2x1 maps.
- The Keras and Flax adaptive average pools equal torch's AdaptiveAvgPool2d.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from dlbench.models import get_spec
from dlbench.models._resnet import conv_bias_count

MODELS = ("alexnet", "vgg16", "resnet18", "resnet50", "resnet152")
FRAMEWORKS = ("torch", "tensorflow", "jax")
REFERENCE = ((224, 224, 3), 1000)
PUBLISHED = {
    "alexnet": 61_100_840,
    "vgg16": 138_357_544,
    "resnet18": 11_689_512,
    "resnet50": 25_557_032,
    "resnet152": 60_192_808,
}
# Per model: the smallest input it takes (a 1x1 feature map before the pool) and a
# non-square one with odd sides (2x1 maps for alexnet/vgg; odd/even stride-2 inputs for resnet).
EQUIVALENCE_SHAPES = {
    "alexnet": [(63, 63, 3), (100, 83, 3)],
    "vgg16": [(32, 32, 3), (64, 40, 3)],
    "resnet18": [(28, 28, 1), (30, 31, 3)],
    "resnet50": [(16, 16, 3), (30, 31, 3)],
    "resnet152": [(28, 28, 1), (33, 18, 2)],
}


def _module(model: str, framework: str):
    return importlib.import_module(f"dlbench.models.{model}.{framework}")


def _count_torch(model: str, shape, classes: int, options: dict) -> int:
    import torch

    with torch.device("meta"):  # shapes only: no memory, no initializer work
        net = _module(model, "torch").build(shape, classes, **options)
    return sum(p.numel() for p in net.parameters() if p.requires_grad)


def _count_jax(model: str, shape, classes: int, options: dict) -> int:
    import jax
    import jax.numpy as jnp

    net = _module(model, "jax").build(shape, classes, **options)
    variables = jax.eval_shape(net.init, jax.random.key(0), jnp.zeros((1, *shape), jnp.float32))
    return sum(int(np.prod(leaf.shape)) for leaf in jax.tree.leaves(variables["params"]))


def _count_keras(model: str, shape, classes: int, options: dict) -> int:
    import keras

    net = _module(model, "tensorflow").build(shape, classes, **options)
    count = sum(int(np.prod(v.shape)) for v in net.trainable_weights)
    del net
    keras.backend.clear_session()
    return count


COUNTERS = {"torch": _count_torch, "jax": _count_jax, "tensorflow": _count_keras}


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("model", MODELS)
def test_full_size_count_is_published_count(model, framework):
    spec = get_spec(model)
    shape, classes = REFERENCE
    assert spec.reference_counts[REFERENCE] == PUBLISHED[model]
    assert spec.count(shape, classes) == PUBLISHED[model]
    options = spec.resolve_options()
    assert COUNTERS[framework](model, shape, classes, options) == PUBLISHED[model]


@pytest.mark.parametrize("model", ["alexnet", "vgg16", "resnet18"])
def test_count_does_not_depend_on_input_size(model):
    # Adaptive pooling (alexnet, vgg16) / global pooling (resnet) before the classifier.
    spec = get_spec(model)
    small = (64, 64, 3) if model == "alexnet" else (32, 32, 3)
    assert spec.count(small, 1000) == spec.count((224, 224, 3), 1000) == PUBLISHED[model]
    assert _count_torch(model, small, 1000, spec.resolve_options()) == PUBLISHED[model]


@pytest.mark.parametrize("model", [m for m in MODELS if get_spec(m).keras_application])
def test_keras_application_count(model):
    import keras

    spec = get_spec(model)
    app = getattr(keras.applications, spec.keras_application)(
        weights=None, input_shape=REFERENCE[0], classes=REFERENCE[1]
    )
    theirs = sum(int(np.prod(v.shape)) for v in app.trainable_weights)
    del app
    keras.backend.clear_session()
    ours = spec.count(*REFERENCE)
    if model == "vgg16":
        assert theirs == ours  # the same network: Flatten of 7x7x512, fc1, fc2, predictions
    else:
        # Keras' ResNet v1 puts a bias on every convolution (torchvision: none, BN follows);
        # moving the stride from the first 1x1 to the 3x3 conv (v1 -> v1.5) changes no count.
        module = importlib.import_module(f"dlbench.models.{model}")
        extra = conv_bias_count(REFERENCE[0], module.BLOCK, module.BLOCKS)
        assert theirs - ours == extra
        assert extra == {"resnet50": 26_560, "resnet152": 75_712}[model]


def test_check_input_sizes():
    assert get_spec("alexnet").check_input((63, 63, 3)) is None
    assert "63x63" in get_spec("alexnet").check_input((62, 100, 3))
    assert get_spec("vgg16").check_input((32, 32, 1)) is None
    assert "32x32" in get_spec("vgg16").check_input((32, 31, 3))
    assert get_spec("resnet50").check_input((1, 1, 3)) is None
    assert get_spec("resnet50").check_input((8, 8)) is not None


@pytest.mark.parametrize("size,out", [((10, 13), 7), ((3, 5), 6), ((1, 1), 7), ((7, 7), 7), ((12, 6), 6)])
def test_adaptive_pool_matches_torch(size, out):
    import torch

    from dlbench.models.alexnet.jax import adaptive_avg_pool
    from dlbench.models.alexnet.tensorflow import AdaptiveAveragePooling2D

    x = np.random.default_rng(0).standard_normal((2, *size, 3)).astype(np.float32)
    expected = torch.nn.functional.adaptive_avg_pool2d(torch.from_numpy(x).permute(0, 3, 1, 2), out)
    expected = expected.permute(0, 2, 3, 1).numpy()
    np.testing.assert_allclose(np.asarray(adaptive_avg_pool(x, out)), expected, rtol=1e-6, atol=1e-6)
    keras_out = AdaptiveAveragePooling2D(out)(x)
    np.testing.assert_allclose(np.asarray(keras_out), expected, rtol=1e-6, atol=1e-6)


# -- the same function in all three frameworks ----------------------------------


def _torch_model(model: str, shape, classes: int):
    """The tiny torch model, seeded, with batch-norm affine parameters and running
    statistics moved away from their trivial (1, 0, 0, 1) start so that they count."""
    import torch

    spec = get_spec(model)
    torch.manual_seed(0)
    net = _module(model, "torch").build(shape, classes, **spec.resolve_options(spec.tiny_options))
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for m in net.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                for t, lo, hi in (
                    (m.weight, 0.5, 1.5),
                    (m.bias, -0.2, 0.2),
                    (m.running_mean, -0.2, 0.2),
                    (m.running_var, 0.5, 1.5),
                ):
                    t.copy_(torch.empty(t.shape).uniform_(lo, hi, generator=gen))
    return net.eval()


def _layers(net):
    """(torch name parts, kind, {name: numpy array}) for every layer with weights, in
    NHWC conventions: conv kernels (kh, kw, in, out), dense kernels (in, out), and the
    first fc after an adaptive pool re-ordered from (c, h, w) to (h, w, c) flattening."""
    import torch

    pool = getattr(net, "avgpool", None)
    side = pool.output_size if isinstance(pool, torch.nn.AdaptiveAvgPool2d) else 1
    side = side[0] if isinstance(side, tuple) else side
    first_fc = True
    for name, m in net.named_modules():
        parts = name.split(".")
        if isinstance(m, torch.nn.Conv2d):
            arrays = {"kernel": m.weight.detach().numpy().transpose(2, 3, 1, 0)}
            kind = "conv"
        elif isinstance(m, torch.nn.Linear):
            w = m.weight.detach().numpy()
            if first_fc and side > 1:
                c = w.shape[1] // (side * side)
                w = w.reshape(w.shape[0], c, side, side).transpose(0, 2, 3, 1).reshape(w.shape[0], -1)
            first_fc = False
            arrays, kind = {"kernel": w.T}, "dense"
        elif isinstance(m, torch.nn.BatchNorm2d):
            arrays = {"scale": m.weight.detach().numpy(), "mean": m.running_mean.numpy(), "var": m.running_var.numpy()}
            kind = "bn"
        else:
            continue
        if m.bias is not None:
            arrays["bias"] = m.bias.detach().numpy()
        yield parts, kind, arrays


def _into_keras(net, keras_model) -> int:
    assigned = 0
    for parts, kind, arrays in _layers(net):
        layer = keras_model.get_layer("_".join(parts))
        if kind == "bn":
            pairs = [
                (layer.gamma, "scale"),
                (layer.beta, "bias"),
                (layer.moving_mean, "mean"),
                (layer.moving_variance, "var"),
            ]
        else:
            pairs = [(layer.kernel, "kernel")] + ([(layer.bias, "bias")] if "bias" in arrays else [])
        for var, key in pairs:
            assert tuple(var.shape) == arrays[key].shape, (parts, key)
            var.assign(arrays[key])
            assigned += int(arrays[key].size) if key not in ("mean", "var") else 0
    return assigned


def _flax_path(parts: list[str]) -> tuple[str, ...]:
    # ResNet blocks are submodules ("layer1_0" / "conv1"); everything else is flat.
    if parts[0].startswith("layer"):
        return (f"{parts[0]}_{parts[1]}", "_".join(parts[2:]))
    return ("_".join(parts),)


def _into_flax(net, variables: dict) -> tuple[dict, int]:
    import jax.numpy as jnp

    params, stats = variables["params"], variables.get("batch_stats", {})
    assigned = 0
    for parts, kind, arrays in _layers(net):
        path = _flax_path(parts)
        p, s = params, stats
        for key in path:
            p = p[key]
            s = s[key] if kind == "bn" else s
        names = {"scale": "scale", "bias": "bias"} if kind == "bn" else {"kernel": "kernel", "bias": "bias"}
        for ours, theirs in names.items():
            if theirs in arrays:
                assert p[ours].shape == arrays[theirs].shape, (path, ours)
                p[ours] = jnp.asarray(arrays[theirs])
                assigned += int(arrays[theirs].size)
        if kind == "bn":
            s["mean"], s["var"] = jnp.asarray(arrays["mean"]), jnp.asarray(arrays["var"])
    return variables, assigned


@pytest.mark.parametrize("which", [0, 1])
@pytest.mark.parametrize("model", MODELS)
def test_same_function_in_all_frameworks(model, which):
    import jax
    import jax.numpy as jnp
    import keras
    import torch

    spec = get_spec(model)
    options = spec.resolve_options(spec.tiny_options)
    shape, classes = EQUIVALENCE_SHAPES[model][which], 5
    x = np.random.default_rng(2).random((3, *shape), dtype=np.float32)

    net = _torch_model(model, shape, classes)
    with torch.no_grad():
        expected = net(torch.from_numpy(x).permute(0, 3, 1, 2).contiguous()).numpy()
    assert expected.shape == (3, classes)
    total = sum(p.numel() for p in net.parameters())
    scale = max(1.0, float(np.abs(expected).max()))

    keras_model = _module(model, "tensorflow").build(shape, classes, **options)
    assert _into_keras(net, keras_model) == total  # every trainable weight came from torch
    got_keras = np.asarray(keras_model(x, training=False))
    keras.backend.clear_session()
    np.testing.assert_allclose(got_keras, expected, rtol=1e-4, atol=1e-5 * scale)

    flax_model = _module(model, "jax").build(shape, classes, **options)
    variables = jax.tree.map(lambda a: a, flax_model.init(jax.random.key(0), jnp.zeros((1, *shape))))
    variables, assigned = _into_flax(net, dict(variables))
    assert assigned == total == sum(int(a.size) for a in jax.tree.leaves(variables["params"]))
    got_flax = np.asarray(flax_model.apply(variables, jnp.asarray(x), deterministic=True))
    np.testing.assert_allclose(got_flax, expected, rtol=1e-4, atol=1e-5 * scale)
