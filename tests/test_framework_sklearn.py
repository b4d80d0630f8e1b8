"""The scikit-learn adapter: KNN on scikit-learn's real digits through the Trainer protocol.

tests/conformance parametrizes only `nn` models, so this file is where `knn`
is checked: accuracy on real data, the protocol mapping (fit / predict /
batches), the recorded facts, and the errors for what KNN cannot do.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sklearn")

from sklearn.neighbors import KNeighborsClassifier  # noqa: E402

from dlbench.datasets import digits  # noqa: E402
from dlbench.datasets.arrays import Arrays  # noqa: E402
from dlbench.frameworks import FRAMEWORKS  # noqa: E402
from dlbench.frameworks.protocol import Framework, Trainer, TrainSettings  # noqa: E402
from dlbench.models.knn import N_NEIGHBORS  # noqa: E402


@pytest.fixture(scope="module")
def data() -> Arrays:
    return digits.load()  # real 8x8 digits, NHWC float32 in [0, 1], fixed stratified split


@pytest.fixture(scope="module")
def fw():
    framework = FRAMEWORKS["sklearn"].load_adapter()
    framework.setup(variant="default", threads=2, seed=0, device="cpu")
    return framework


def _settings(**kw) -> TrainSettings:
    return TrainSettings(**{"model": "knn", "batch_size": 32, **kw})


def test_knn_reaches_95_percent_on_digits_through_the_protocol(fw, data):
    assert isinstance(fw, Framework)
    trainer = fw.build(fw.prepare(data), _settings())
    assert isinstance(trainer, Trainer)
    assert trainer.parameter_count() == 0
    trainer.first_step()  # a no-op, but callable like every framework's
    assert trainer.train() == []
    accuracy = trainer.evaluate()
    assert accuracy >= 0.95
    # The adapter adds nothing to scikit-learn: same predictions as the plain estimator.
    plain = KNeighborsClassifier(n_neighbors=N_NEIGHBORS).fit(data.train.x.reshape(len(data.train), -1), data.train.y)
    expected = plain.predict(data.test.x.reshape(len(data.test), -1))
    assert accuracy == pytest.approx(np.mean(expected == data.test.y))


def test_inference_uses_full_prepared_batches(fw, data):
    trainer = fw.build(fw.prepare(data), _settings())
    trainer.train()
    n_test = len(data.test)
    assert n_test % 32 != 0  # so the dropped partial batch is exercised
    assert trainer.prepare_infer(32) == n_test // 32
    assert trainer.infer(32) == (n_test // 32) * 32
    trainer.predict_batch(32, n_test // 32 - 1)
    with pytest.raises(RuntimeError, match="prepare_infer"):
        trainer.infer(7)


def test_manifest_records_threads_and_the_algorithm_knn_chose(fw, data):
    manifest = fw.setup(variant="default", threads=1, seed=0, device="cpu")  # a second setup is fine
    try:
        assert manifest["scikit-learn"] and manifest["n_jobs"] == 1 and manifest["threads_intra_op"] == 1
        assert manifest["threadpools"] and all(pool["num_threads"] == 1 for pool in manifest["threadpools"])
        trainer = fw.build(fw.prepare(data), _settings())
        assert "algorithm_used" not in trainer.manifest()  # unknown until fitted
        trainer.train()
        facts = trainer.manifest()
        assert facts["algorithm_used"] == trainer.estimator._fit_method
        assert facts["algorithm_used"] in {"brute", "kd_tree", "ball_tree"}
        assert facts["n_jobs"] == 1 and facts["n_neighbors"] == N_NEIGHBORS
    finally:
        manifest = fw.setup(variant="default", threads=2, seed=0, device="cpu")
    assert all(pool["num_threads"] == 2 for pool in manifest["threadpools"])


def test_what_knn_cannot_do_fails_clearly(fw, data):
    native = fw.prepare(data)
    trainer = fw.build(native, _settings())
    with pytest.raises(RuntimeError, match="train"):
        trainer.evaluate()  # not fitted yet
    with pytest.raises(NotImplementedError, match="no optimizer"):
        trainer.train_fixed_batch(3)
    with pytest.raises(ValueError, match="no implementation"):
        fw.build(native, _settings(model="mlp"))
    with pytest.raises(ValueError, match="CPU only"):
        fw.setup(variant="default", threads=2, seed=0, device="cuda")
    with pytest.raises(ValueError, match="variant"):
        fw.setup(variant="jit", threads=2, seed=0, device="cpu")
