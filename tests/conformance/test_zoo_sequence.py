"""Full-size sequence models (lstm, deepspeech2, transformer) without training:
trainable counts per framework equal to the spec (torch on the meta device,
Flax through jax.eval_shape, Keras built), BERT-base arithmetic, output shapes
equal across frameworks, and the task losses (CTC, next-token) equal across
frameworks on fixed, hand-checkable inputs.
"""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest

from dlbench.models import get_spec
from dlbench.models.deepspeech2.ctc import ctc_accuracy, edit_distance, greedy_decode
from dlbench.models.transformer import BERT_BASE_UNCASED

# (model, input shape, classes, options): the full-size configurations.
FULL = [
    ("transformer", (128,), 2, {"preset": "bert_base"}),
    ("lstm", (35,), 10_000, {}),
    ("deepspeech2", (200, 161), 29, {}),
    ("deepspeech2", (200, 161), 29, {"rnn": "lstm", "rnn_layers": 3, "hidden": 512}),
]


def _options(model: str, options: dict) -> dict:
    return get_spec(model).resolve_options(options)


def _torch_count(model: str, shape, classes: int, options: dict) -> int:
    torch = pytest.importorskip("torch")
    build = importlib.import_module(f"dlbench.models.{model}.torch").build
    with torch.device("meta"):  # shapes only: no memory, no init work
        net = build(shape, classes, **_options(model, options))
    return sum(p.numel() for p in net.parameters() if p.requires_grad)


def _flax_count(model: str, shape, classes: int, options: dict) -> int:
    jax = pytest.importorskip("jax")
    build = importlib.import_module(f"dlbench.models.{model}.jax").build
    net = build(shape, classes, **_options(model, options))
    dtype = jax.numpy.int32 if len(shape) == 1 else jax.numpy.float32
    variables = jax.eval_shape(net.init, {"params": jax.random.key(0)}, jax.ShapeDtypeStruct((1, *shape), dtype))
    return sum(int(np.prod(leaf.shape)) for leaf in jax.tree.leaves(variables["params"]))


def _keras_count(model: str, shape, classes: int, options: dict) -> int:
    pytest.importorskip("tensorflow")
    importlib.import_module("dlbench.frameworks.tensorflow")  # forces KERAS_BACKEND=tensorflow
    build = importlib.import_module(f"dlbench.models.{model}.tensorflow").build
    net = build(shape, classes, **_options(model, options))
    return int(sum(np.prod(v.shape) for v in net.trainable_weights))


def test_bert_base_arithmetic() -> None:
    h, v, p, layers, ff = 768, 30_522, 512, 12, 3072
    layer = 4 * (h * h + h) + 2 * h + (h * ff + ff) + (ff * h + h) + 2 * h
    assert layer == 7_087_872
    word, position, token_type, embed_norm = v * h, p * h, 2 * h, 2 * h
    pooler = h * h + h
    assert word + position + token_type + embed_norm + layers * layer + pooler == BERT_BASE_UNCASED
    classifier = h * 2 + 2
    ours = get_spec("transformer").count((128,), 2, {"preset": "bert_base"})
    assert ours == BERT_BASE_UNCASED - token_type - pooler + classifier == 108_891_650


@pytest.mark.parametrize("count", [_torch_count, _flax_count, _keras_count], ids=["torch", "jax", "tensorflow"])
@pytest.mark.parametrize("model,shape,classes,options", FULL, ids=[f"{m}{o or ''}" for m, _, _, o in FULL])
def test_full_size_counts(count, model, shape, classes, options) -> None:
    assert count(model, shape, classes, options) == get_spec(model).count(shape, classes, options)


def test_documented_default_counts() -> None:
    assert get_spec("lstm").count((35,), 10_000) == 19_775_200
    assert get_spec("deepspeech2").count((200, 161), 29) == 56_563_133


# -- output shapes -------------------------------------------------------------

SMALL = [
    ("lstm", (7,), 11, {"embed": 8, "hidden": 12, "layers": 2}),
    ("transformer", (9,), 3, {"layers": 1, "hidden": 16, "heads": 2, "ff": 32, "vocab": 20, "max_len": 12}),
    ("deepspeech2", (21, 13), 6, {"rnn": "gru", "rnn_layers": 2, "hidden": 8, "conv_channels": 4}),
    ("deepspeech2", (20, 13), 6, {"rnn": "lstm", "rnn_layers": 1, "hidden": 8, "conv_channels": 4}),
]


def _input(shape, n=2):
    rng = np.random.default_rng(0)
    if len(shape) == 1:
        return rng.integers(0, 5, (n, *shape)).astype(np.int32)
    return rng.standard_normal((n, *shape)).astype(np.float32)


@pytest.mark.parametrize("model,shape,classes,options", SMALL, ids=[f"{m}-{s}" for m, s, _, _ in SMALL])
def test_output_shapes_equal_across_frameworks(model, shape, classes, options) -> None:
    torch = pytest.importorskip("torch")
    jax = pytest.importorskip("jax")
    importlib.import_module("dlbench.frameworks.tensorflow")
    opts = _options(model, options)
    x = _input(shape)
    tnet = importlib.import_module(f"dlbench.models.{model}.torch").build(shape, classes, **opts).eval()
    with torch.no_grad():
        xt = torch.from_numpy(x).long() if x.dtype == np.int32 else torch.from_numpy(x)
        torch_shape = tuple(tnet(xt).shape)
    keras_shape = tuple(
        importlib.import_module(f"dlbench.models.{model}.tensorflow")
        .build(shape, classes, **opts)(x, training=False)
        .shape
    )
    fnet = importlib.import_module(f"dlbench.models.{model}.jax").build(shape, classes, **opts)
    variables = fnet.init({"params": jax.random.key(0)}, x)
    flax_shape = tuple(fnet.apply(variables, x).shape)
    assert torch_shape == keras_shape == flax_shape
    if model == "deepspeech2":
        from dlbench.models.deepspeech2 import front_end_out

        assert torch_shape == (2, front_end_out(*shape)[0], classes) == (2, math.ceil(shape[0] / 2), classes)
    elif model == "lstm":
        assert torch_shape == (2, shape[0], classes)
    else:
        assert torch_shape == (2, classes)


# -- losses --------------------------------------------------------------------


def _losses(task: str):
    """The three adapters' loss functions for `task`, each taking numpy (logits, labels)."""
    torch = pytest.importorskip("torch")
    jnp = pytest.importorskip("jax.numpy")
    tf_adapter = importlib.import_module("dlbench.frameworks.tensorflow")
    torch_adapter = importlib.import_module("dlbench.frameworks.torch")
    jax_adapter = importlib.import_module("dlbench.frameworks.jax")
    tf_loss = tf_adapter._loss(task)
    return {
        "torch": lambda lg, y: float(torch_adapter.LOSSES[task](torch.from_numpy(lg), torch.from_numpy(y))),
        # The ctc function returns per-utterance values; Keras' default reduction
        # (sum over batch size) averages them, as np.mean does here.
        "tensorflow": lambda lg, y: float(np.mean(tf_loss(y, lg))),
        "jax": lambda lg, y: float(jax_adapter._loss(task)(jnp.asarray(lg), jnp.asarray(y.astype(np.int32)))),
    }


def test_ctc_loss_equal_across_frameworks_hand_checked() -> None:
    # Uniform logits over {blank, 1, 2}, 3 frames. Label [1]: 6 of the 27 paths
    # collapse to it (a single run of 1s among blanks) -> -ln(6/27). Label [1, 2]:
    # 12, 012, 102, 112, 122 -> 5 paths -> -ln(5/27), divided by its length 2.
    logits = np.zeros((2, 3, 3), np.float32)
    labels = np.array([[1, -1], [1, 2]], np.int64)
    expected = (math.log(27 / 6) / 1 + math.log(27 / 5) / 2) / 2
    for name, loss in _losses("ctc").items():
        assert loss(logits, labels) == pytest.approx(expected, rel=1e-5), name


def test_ctc_loss_equal_across_frameworks_random() -> None:
    rng = np.random.default_rng(1)
    logits = rng.standard_normal((4, 9, 6)).astype(np.float32)
    labels = np.array([[1, 2, 2, 5], [3, -1, -1, -1], [4, 4, -1, -1], [5, 1, 3, -1]], np.int64)
    values = {name: loss(logits, labels) for name, loss in _losses("ctc").items()}
    assert values["tensorflow"] == pytest.approx(values["torch"], rel=1e-5)
    assert values["jax"] == pytest.approx(values["torch"], rel=1e-5)


def test_next_token_loss_equal_across_frameworks() -> None:
    rng = np.random.default_rng(2)
    logits = rng.standard_normal((2, 3, 5)).astype(np.float32)
    targets = rng.integers(0, 5, (2, 3)).astype(np.int64)
    shifted = logits - logits.max(-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    expected = -np.take_along_axis(log_probs, targets[..., None], -1).mean()  # mean over all 6 positions
    for name, loss in _losses("next-token").items():
        assert loss(logits, targets) == pytest.approx(float(expected), rel=1e-5), name


# -- the ctc metric ------------------------------------------------------------


def test_greedy_decode_and_cer() -> None:
    best = np.array([[0, 1, 1, 0, 1, 2, 2, 0], [3, 3, 3, 0, 0, 0, 0, 0]])
    assert [d.tolist() for d in greedy_decode(best)] == [[1, 1, 2], [3]]
    assert edit_distance(np.array([1, 2, 3]), np.array([1, 3])) == 1
    assert edit_distance(np.array([]), np.array([4, 4])) == 2
    assert edit_distance(np.array([1, 2]), np.array([2, 1])) == 2
    labels = np.array([[1, 1, 2, -1], [3, 4, -1, -1]])
    # Errors: 0 for [1, 1, 2]; 1 (deleted 4) for [3, 4]; 5 label symbols.
    assert ctc_accuracy(best, labels) == pytest.approx(1 - 1 / 5)
    assert ctc_accuracy(np.zeros((1, 5), np.int64), np.array([[1, 2]])) == 0.0
