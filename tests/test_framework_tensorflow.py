"""TensorFlow/Keras adapter checks that the cross-framework conformance suite does
not make: the fairness manifest, threads, the xla and eager variants, Adam's
epsilon, that first_step really spares train() its trace, and what
train_fixed_batch's losses mean. Data and step counts are tiny (TF is slow to
import and trace)."""

from __future__ import annotations

import numpy as np
import pytest

from dlbench.datasets.arrays import Arrays, ArraySplit
from dlbench.frameworks import FRAMEWORKS
from dlbench.frameworks.protocol import TrainSettings

pytestmark = pytest.mark.skipif(
    FRAMEWORKS["tensorflow"].unavailable_reason() is not None, reason=str(FRAMEWORKS["tensorflow"].unavailable_reason())
)

THREADS = 2  # the conformance suite uses 2 as well: TF keeps the first value set in a process


@pytest.fixture(scope="module")
def tfmod():
    from dlbench.frameworks import tensorflow as tfmod

    return tfmod


@pytest.fixture(scope="module")
def fw(tfmod):
    fw = tfmod.TensorFlowFramework()
    fw.setup(variant="graph", threads=THREADS, seed=0, device="cpu")
    return fw


def _arrays(shape=(12, 12, 1), classes=4, n_train=64, n_test=20, seed=0) -> Arrays:
    rng = np.random.default_rng(seed)
    means = rng.random((classes, *shape), dtype=np.float32)

    def split(n):
        y = rng.integers(0, classes, n).astype(np.int64)
        return ArraySplit((0.6 * means[y] + 0.4 * rng.random((n, *shape), dtype=np.float32)), y)

    return Arrays("tiny", split(n_train), split(n_test), classes)


def _settings(model="mlp", **kw) -> TrainSettings:
    base = dict(model=model, batch_size=16, epochs=1, optimizer="sgd", lr=0.05, seed=0)
    base.update(kw)
    return TrainSettings(**base)


BODY = """
fw.setup(variant="graph", threads=THREADS, seed=0, device="cpu")  # as the module's fixture does
m = fw.setup(variant="xla", threads=THREADS, seed=1, device="cpu")  # second call: no crash
assert m["versions"] == {"tensorflow": tf.__version__, "keras": keras.__version__}
assert m["keras_backend"] == "tensorflow"
assert m["default_dtype"] == "float32" and m["tf32_enabled"] is False
assert (m["jit_compile"], m["run_eagerly"]) == (True, False)
assert m["intra_op_threads"] == THREADS == tf.config.threading.get_intra_op_parallelism_threads()
# No runtime setting given: TF's own inter-op pool (0: never set, one thread per core), as
# a plain script has it (interop-fixed is checked on a real worker: test_runtime_settings).
assert tf.config.threading.get_inter_op_parallelism_threads() == 0
assert m["inter_op_threads"] == len(os.sched_getaffinity(0))
assert m["inter_op_threads_note"] == "TensorFlow's default"
assert "prefetch(AUTOTUNE), tf.data autotune on" in m["data_pipeline"]
# TF refuses to change threads once initialized: the value in force is recorded.
m1 = fw.setup(variant="graph", threads=THREADS - 1, seed=0, device="cpu")
assert m1["threads_requested"] == THREADS - 1 and m1["intra_op_threads"] == THREADS
assert "already initialized" in m1["inter_op_threads_note"]
assert m["device"] == "/CPU:0" and m["gpu"] is False and any("CPU" in d for d in m["devices"])
assert isinstance(m["onednn"]["built_with_onednn"], bool)
assert m["env"]["TF_CPP_MIN_LOG_LEVEL"] is not None
assert "is_cuda_build" in m["build_info"]
m = fw.setup(variant="eager", threads=THREADS, seed=0, device="cpu")
assert (m["jit_compile"], m["run_eagerly"]) == (False, True)
fw.setup(variant="graph", threads=THREADS, seed=0, device="cpu")
with pytest.raises(ValueError, match="unknown tensorflow variant"):
    fw.setup(variant="compile", threads=THREADS, seed=0, device="cpu")
"""


# TensorFlow takes its thread settings once per process, and whichever test of this process
# initialized its runtime first decides them; the manifest's thread facts are checked where
# this adapter is the first to set them: a fresh process, as every trial's worker is.
MANIFEST_CHECK = """
import os
import keras
import pytest
import tensorflow as tf
from dlbench.frameworks.tensorflow import TensorFlowFramework

THREADS = {threads}
fw = TensorFlowFramework()
{body}
print("manifest checks passed")
"""


def test_manifest_records_versions_precision_threads_and_variant():
    import subprocess
    import sys

    script = MANIFEST_CHECK.format(threads=THREADS, body=BODY)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and "manifest checks passed" in done.stdout, done.stderr[-3000:]


@pytest.mark.parametrize("variant", ["xla", "eager"])
def test_variants_run_and_build_the_same_network(fw, tfmod, variant):
    data = fw.prepare(_arrays())
    graph = tfmod.KerasTrainer(data, _settings("lenet5"), "graph")
    other = tfmod.KerasTrainer(data, _settings("lenet5"), variant)
    assert other.parameter_count() == graph.parameter_count()
    assert other.model.jit_compile is (variant == "xla")
    assert other.model.run_eagerly is (variant == "eager")
    # Same seed, same initial weights in every variant.
    for a, b in zip(graph.model.get_weights(), other.model.get_weights()):
        np.testing.assert_array_equal(a, b)
    mlp = tfmod.KerasTrainer(data, _settings("mlp", epochs=None, steps=5), variant)
    mlp.first_step()
    losses = mlp.train()
    assert len(losses) == 1 and np.isfinite(losses[0])
    assert mlp.prepare_infer(8) == 2 and mlp.infer(8) == 16
    mlp.predict_batch(8, 1)
    assert 0.0 <= mlp.evaluate() <= 1.0


def test_adam_epsilon_is_the_setting_not_keras_default(fw, tfmod):
    import tensorflow as tf

    eps, lr, g = 1e-8, 1e-3, 1e-9
    trainer = tfmod.KerasTrainer(fw.prepare(_arrays()), _settings(optimizer="adam", lr=lr, adam_epsilon=eps), "graph")
    opt = trainer.model.optimizer
    assert float(opt.epsilon) == eps and opt.get_config()["epsilon"] == eps
    # Numerically: one Adam step with a tiny gradient, where epsilon dominates.
    # Keras adds epsilon to the *uncorrected* sqrt(v) ("epsilon hat"), so after step 1
    # the update is lr * g / (g + eps / sqrt(1 - beta2)); Keras' default 1e-7 would
    # give a 10x smaller step.
    variables = trainer.model.trainable_variables
    before = [v.numpy() for v in variables]
    opt.apply_gradients([(tf.fill(v.shape, g), v) for v in variables])
    step = before[1] - variables[1].numpy()  # dense1 bias: starts at 0, so no float32 cancellation
    expected = lr * g / (g + eps / np.sqrt(1 - 0.999))
    np.testing.assert_allclose(step, expected, rtol=1e-3)


def test_first_step_traces_the_function_fit_uses(fw, tfmod):
    trainer = tfmod.KerasTrainer(fw.prepare(_arrays()), _settings(), "graph")
    traces = []
    step = trainer.model.train_step

    def counting_train_step(data):  # Python body runs only while TF traces
        traces.append(len(data))
        return step(data)

    trainer.model.train_step = counting_train_step
    trainer.first_step()
    assert len(traces) == 1
    trainer.train()
    assert len(traces) == 1, "fit retraced after first_step"


def test_first_step_restores_weights_optimizer_and_dropout_state(fw, tfmod):
    trainer = tfmod.KerasTrainer(fw.prepare(_arrays()), _settings("cnn", optimizer="sgd", momentum=0.9), "graph")
    model, opt = trainer.model, trainer.model.optimizer
    before = [v.numpy() for v in model.variables + opt.variables]
    trainer.first_step()
    after = [v.numpy() for v in model.variables + opt.variables]
    assert len(before) == len(after)
    for a, b in zip(before, after):
        np.testing.assert_array_equal(a, b)
    assert int(opt.iterations.numpy()) == 0


def test_train_fixed_batch_returns_loss_before_each_update(fw, tfmod):
    data = fw.prepare(_arrays())
    trainer = tfmod.KerasTrainer(data, _settings(), "graph")
    x, y = trainer._first_batch()
    initial = trainer.model.test_on_batch(x, y, return_dict=True)["loss"]
    losses = trainer.train_fixed_batch(3)
    assert losses[0] == pytest.approx(initial, rel=1e-5)
    assert losses[1] < losses[0]
    assert trainer.model.optimizer.iterations.numpy() == 3


def test_epochs_and_steps_count_optimizer_steps(fw, tfmod):
    data = fw.prepare(_arrays(n_train=70))  # 4 full batches of 16, 6 samples dropped
    trainer = tfmod.KerasTrainer(data, _settings(epochs=2), "graph")
    assert len(trainer.train()) == 2
    assert trainer.model.optimizer.iterations.numpy() == 8
    trainer = tfmod.KerasTrainer(data, _settings(epochs=None, steps=10), "graph")
    assert len(trainer.train()) == 1
    assert trainer.model.optimizer.iterations.numpy() == 10


@pytest.mark.parametrize(
    "init,expected",
    [
        ("framework-default", {}),  # nothing passed: Keras' own layer defaults apply
        ("glorot-uniform", {"kernel_initializer": "glorot_uniform", "bias_initializer": "zeros"}),
    ],
)
def test_init_setting_reaches_the_model_builder(fw, tfmod, monkeypatch, init, expected):
    import keras

    from dlbench.models.mlp import tensorflow as mlp_tf

    seen = []
    real_build = mlp_tf.build

    def spy(shape, classes, **kwargs):
        seen.append(kwargs)
        return real_build(shape, classes, **kwargs)

    monkeypatch.setattr(mlp_tf, "build", spy)
    trainer = tfmod.KerasTrainer(fw.prepare(_arrays()), _settings(init=init), "graph")
    assert seen == [expected]
    layer = trainer.model.get_layer("dense1")
    # Keras' defaults happen to be the same glorot/zeros pair.
    assert isinstance(layer.kernel_initializer, keras.initializers.GlorotUniform)
    assert isinstance(layer.bias_initializer, keras.initializers.Zeros)
