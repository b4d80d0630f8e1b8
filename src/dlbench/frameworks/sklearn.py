"""The scikit-learn adapter: classical models (today `knn`) behind the Trainer protocol.

Classical estimators have no epochs, batches, losses or trainable parameters,
so the protocol maps onto them like this:

- `parameter_count()` is 0; `first_step()` does nothing (nothing to compile);
- `train()` is `fit` (for KNN: validating and indexing the training set) and
  returns [] because there is no loss;
- `evaluate()` is the accuracy of `predict` on every test sample;
- `prepare_infer` / `infer` / `predict_batch` run `predict` on full batches of
  the flattened test set (the batch size only sets the chunk size);
- `train_fixed_batch` raises NotImplementedError: there is no optimizer step.

Images are flattened once in `prepare` (seed 000 fed KNN flattened pixels).

Threads: scikit-learn's brute-force neighbour search runs on OpenMP and BLAS,
its tree searches on joblib; `setup` limits the OpenMP and BLAS pools with
threadpoolctl (held for the process, as `torch.set_num_threads` is) and each
estimator gets `n_jobs=threads`, so every path uses the same thread count as
the other frameworks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import sklearn
from sklearn.base import ClassifierMixin
from sklearn.neighbors import KNeighborsClassifier

from dlbench.datasets.arrays import Arrays
from dlbench.frameworks.host_batches import HostBatches
from dlbench.frameworks.numpy import check_cpu, limit_threads, numpy_build_facts
from dlbench.frameworks.protocol import TrainSettings
from dlbench.models.knn import N_NEIGHBORS


def _knn(threads: int) -> KNeighborsClassifier:
    # algorithm="auto" lets scikit-learn choose as its users get it; the choice
    # is read back after fit (`_fit_method`) and recorded.
    return KNeighborsClassifier(n_neighbors=N_NEIGHBORS, algorithm="auto", n_jobs=threads)


ESTIMATORS: dict[str, Callable[[int], ClassifierMixin]] = {"knn": _knn}


@dataclass(frozen=True)
class SklearnData:
    """Flattened (N, H*W*C) float32 features and int64 labels."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray


class SklearnTrainer:
    """One fresh, unfitted estimator and the data it is fitted on."""

    def __init__(self, data: SklearnData, settings: TrainSettings, estimator: ClassifierMixin) -> None:
        self.data, self.settings, self.estimator = data, settings, estimator
        self._fitted = False
        self._infer_batches = HostBatches()

    def parameter_count(self) -> int:
        return 0  # a classical estimator has no trainable parameters

    def first_step(self) -> None:
        # Nothing to trace or compile, and fitting here would do train()'s work.
        return None

    def train(self) -> list[float]:
        self.estimator.fit(self.data.x_train, self.data.y_train)
        self._fitted = True
        return []  # no loss to report

    def _check_fitted(self) -> None:
        if not self._fitted:
            raise RuntimeError(f"{self.settings.model}: call train() (fit) before predicting")

    def evaluate(self) -> float:
        self._check_fitted()
        predicted = self.estimator.predict(self.data.x_test)
        return float(np.mean(predicted == self.data.y_test))

    def prepare_infer(self, batch_size: int) -> int:
        return self._infer_batches.prepare(self.data.x_test, batch_size)

    def _batches(self, batch_size: int) -> list[np.ndarray]:
        self._check_fitted()
        return self._infer_batches.get(batch_size)

    def infer(self, batch_size: int) -> int:
        count = 0
        for batch in self._batches(batch_size):
            self.estimator.predict(batch)
            count += len(batch)
        return count

    def predict_batch(self, batch_size: int, index: int) -> None:
        self.estimator.predict(self._batches(batch_size)[index])

    def train_fixed_batch(self, steps: int) -> list[float]:
        raise NotImplementedError(
            f"{self.settings.model} is a classical scikit-learn estimator: it has no loss "
            "and no optimizer, so there are no training steps to take on a fixed batch"
        )

    def manifest(self) -> dict[str, Any]:
        """Facts only known once the estimator is fitted (for the fairness manifest):
        for KNN the search algorithm 'auto' resolved to (brute / kd_tree / ball_tree)."""
        est = self.estimator
        facts: dict[str, Any] = {"estimator": type(est).__name__, "n_jobs": getattr(est, "n_jobs", None)}
        if isinstance(est, KNeighborsClassifier):
            facts.update({"n_neighbors": est.n_neighbors, "weights": est.weights, "algorithm_requested": est.algorithm})
            if self._fitted:
                facts.update({"algorithm_used": est._fit_method, "metric": est.effective_metric_})
        return facts


class SklearnFramework:
    """Framework adapter for scikit-learn's classical models (CPU only)."""

    name = "sklearn"
    variants: tuple[str, ...] = ("default",)
    default_variant = "default"

    def __init__(self) -> None:
        self.threads = 1

    def setup(
        self, *, variant: str, threads: int, seed: int, device: str, runtime: tuple[str, ...] = ()
    ) -> dict[str, Any]:
        # `runtime`: nothing to apply in-process here (no inter-op pool, no tf.data).
        if variant not in self.variants:
            raise ValueError(f"sklearn variant {variant!r} is not one of {', '.join(self.variants)}")
        check_cpu(self.name, device)
        self.threads = threads
        config = sklearn.get_config()
        manifest: dict[str, Any] = {
            "scikit-learn": sklearn.__version__,
            "numpy": np.__version__,
            "variant": variant,
            "device": "cpu",
            "default_float_dtype": "float32",  # of the features; sklearn picks its own accumulators
            # OpenMP/BLAS pools are the intra-op threads; joblib's n_jobs the other level.
            "threads_intra_op": threads,
            "threads_inter_op": 1,
            "n_jobs": threads,
            "knn_n_neighbors": N_NEIGHBORS,
            "knn_algorithm": "auto (the resolved algorithm is in the trainer's manifest after fit)",
            # Sets the chunk size of brute-force distance computations, hence speed.
            "sklearn_working_memory_mib": config.get("working_memory"),
            "sklearn_assume_finite": config.get("assume_finite"),
        }
        manifest.update(numpy_build_facts())
        manifest.update(limit_threads(threads))
        return manifest

    def prepare(self, arrays: Arrays) -> SklearnData:
        def flat(x: np.ndarray) -> np.ndarray:
            return np.ascontiguousarray(x.reshape(len(x), -1), dtype=np.float32)

        return SklearnData(flat(arrays.train.x), arrays.train.y, flat(arrays.test.x), arrays.test.y)

    def build(self, native: SklearnData, settings: TrainSettings) -> SklearnTrainer:
        if settings.model not in ESTIMATORS:
            raise ValueError(
                f"sklearn has no implementation of model {settings.model!r} (implemented: {', '.join(ESTIMATORS)})"
            )
        return SklearnTrainer(native, settings, ESTIMATORS[settings.model](self.threads))
