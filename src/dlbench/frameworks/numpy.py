"""The numpy adapter: a dependency-free reference Framework (variant "reference").

It exists for two reasons. It runs the whole harness pipeline in a second
(no torch / TensorFlow / JAX import), and it is a numerical reference: forward
and backward by hand (`dlbench.models.<model>.numpy`), SGD with momentum and
Adam written exactly as torch and optax define them, float32 throughout.

Randomness: one `np.random.default_rng(settings.seed)` per built model draws
the initial weights, then the per-epoch permutations, so a seed fixes the run.

Threads: numpy has no thread setting of its own; its BLAS (OpenBLAS here) and
any OpenMP runtime are limited with threadpoolctl once in `setup`, held for the
process like `torch.set_num_threads`. Limiting around each call instead would
cost ~25 us per call, which would distort batch-1 latency.

This module also holds the threadpoolctl helpers the sklearn adapter shares.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from dlbench.datasets.arrays import Arrays
from dlbench.frameworks.host_batches import HostBatches
from dlbench.frameworks.protocol import TrainSettings

DTYPE = np.float32
EVAL_BATCH = 1024  # evaluate() chunk: bounds memory, covers every sample

# The threadpoolctl limiter currently held for this process (None: none applied).
_HELD_LIMIT: Any = None


def limit_threads(threads: int) -> dict[str, Any]:
    """Limit every BLAS and OpenMP pool in the process to `threads` and keep the
    limit until the next call; return what is in force, for the manifest."""
    global _HELD_LIMIT
    try:
        from threadpoolctl import ThreadpoolController, threadpool_info
    except ImportError:
        return {
            "threadpoolctl": "not installed: BLAS/OpenMP threads left at their defaults",
            "omp_num_threads_env": os.environ.get("OMP_NUM_THREADS"),
        }
    if _HELD_LIMIT is not None:
        # A repeated setup() replaces the earlier limit instead of stacking on it.
        _HELD_LIMIT.restore_original_limits()
    _HELD_LIMIT = ThreadpoolController().limit(limits=threads)
    import threadpoolctl

    pools = [
        {
            k: info.get(k)
            for k in ("user_api", "internal_api", "prefix", "version", "num_threads", "threading_layer", "architecture")
            if k in info
        }
        for info in threadpool_info()
    ]
    return {
        "threadpoolctl": threadpoolctl.__version__,
        "threadpools": pools,
        "omp_num_threads_env": os.environ.get("OMP_NUM_THREADS"),
    }


def check_cpu(name: str, device: str) -> None:
    if device != "cpu":
        raise ValueError(f"{name} runs on the CPU only; device {device!r} is not supported")


def numpy_build_facts() -> dict[str, Any]:
    """BLAS library and SIMD extensions numpy was built with (they set its speed)."""
    try:
        config = np.show_config(mode="dicts")
    except (TypeError, ValueError):  # numpy < 1.26 prints instead of returning
        return {}
    blas = config.get("Build Dependencies", {}).get("blas", {})
    simd = config.get("SIMD Extensions", {})
    return {
        "numpy_blas": {k: blas.get(k) for k in ("name", "version", "openblas configuration")},
        "numpy_simd": {"baseline": simd.get("baseline"), "found": simd.get("found")},
    }


class SGD:
    """torch.optim.SGD / optax.sgd: buf = momentum * buf + g; p -= lr * buf.
    With momentum 0 this is plain SGD (no buffer kept)."""

    def __init__(self, params: dict[str, np.ndarray], lr: float, momentum: float) -> None:
        self.lr, self.momentum = lr, momentum
        self.buf = {k: np.zeros_like(v) for k, v in params.items()} if momentum else {}

    def step(self, params: dict[str, np.ndarray], grads: dict[str, np.ndarray]) -> None:
        for k, g in grads.items():
            if self.momentum:
                # torch seeds the buffer with g on the first step; m * 0 + g is the same.
                buf = self.buf[k]
                buf *= self.momentum
                buf += g
                g = buf
            params[k] -= self.lr * g

    def state(self) -> dict[str, Any]:
        return {"buf": {k: v.copy() for k, v in self.buf.items()}}

    def load(self, state: dict[str, Any]) -> None:
        self.buf = {k: v.copy() for k, v in state["buf"].items()}


class Adam:
    """torch.optim.Adam (= optax.adam): m, v moments with bias correction,
    p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps); optax's
    m_hat / (sqrt(v_hat) + eps) is the same expression rearranged."""

    def __init__(
        self, params: dict[str, np.ndarray], lr: float, eps: float, b1: float = 0.9, b2: float = 0.999
    ) -> None:
        self.lr, self.eps, self.b1, self.b2 = lr, eps, b1, b2
        self.t = 0
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}

    def step(self, params: dict[str, np.ndarray], grads: dict[str, np.ndarray]) -> None:
        self.t += 1
        # Bias corrections are Python floats (as in torch), so float32 arrays stay float32.
        step_size = self.lr / (1.0 - self.b1**self.t)
        sqrt_bc2 = (1.0 - self.b2**self.t) ** 0.5
        for k, g in grads.items():
            m, v = self.m[k], self.v[k]
            m *= self.b1
            m += (1.0 - self.b1) * g
            v *= self.b2
            v += (1.0 - self.b2) * (g * g)
            params[k] -= step_size * m / (np.sqrt(v) / sqrt_bc2 + self.eps)

    def state(self) -> dict[str, Any]:
        return {
            "t": self.t,
            "m": {k: a.copy() for k, a in self.m.items()},
            "v": {k: a.copy() for k, a in self.v.items()},
        }

    def load(self, state: dict[str, Any]) -> None:
        self.t = state["t"]
        self.m = {k: a.copy() for k, a in state["m"].items()}
        self.v = {k: a.copy() for k, a in state["v"].items()}


def make_optimizer(settings: TrainSettings, params: dict[str, np.ndarray]) -> SGD | Adam:
    if settings.optimizer == "sgd":
        return SGD(params, settings.lr, settings.momentum)
    if settings.optimizer == "adam":
        return Adam(params, settings.lr, settings.adam_epsilon)
    raise ValueError(f"optimizer {settings.optimizer!r} is not supported by numpy")


@dataclass(frozen=True)
class NumpyData:
    """The dataset as contiguous float32 / int64 arrays (already numpy's form)."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    input_shape: tuple[int, ...]
    num_classes: int


class NumpyTrainer:
    """One model, its optimizer and its data; implements the Trainer protocol."""

    def __init__(self, data: NumpyData, settings: TrainSettings, model: Any, rng: np.random.Generator) -> None:
        n_train = len(data.y_train)
        if settings.steps_per_epoch(n_train) < 1:
            raise ValueError(f"batch_size {settings.batch_size} exceeds the {n_train} training samples")
        self.data, self.settings, self.model, self.rng = data, settings, model, rng
        self.optimizer = make_optimizer(settings, model.params)
        self._infer_batches = HostBatches()

    def parameter_count(self) -> int:
        return self.model.parameter_count()

    def _step(self, x: np.ndarray, y: np.ndarray) -> float:
        loss, grads = self.model.loss_and_grads(x, y)
        self.optimizer.step(self.model.params, grads)
        return loss

    def first_step(self) -> None:
        params = {k: v.copy() for k, v in self.model.params.items()}
        opt_state = self.optimizer.state()
        b = self.settings.batch_size
        self._step(self.data.x_train[:b], self.data.y_train[:b])
        # Restore in place so references to the parameter arrays stay valid.
        for k, v in params.items():
            self.model.params[k][...] = v
        self.optimizer.load(opt_state)

    def train(self) -> list[float]:
        s, x, y = self.settings, self.data.x_train, self.data.y_train
        n, b = len(y), s.batch_size
        per_epoch = s.steps_per_epoch(n)
        total = s.total_steps(n)
        epoch_means: list[float] = []
        done, run_sum = 0, 0.0
        while done < total:
            order = self.rng.permutation(n) if s.shuffle else np.arange(n)
            steps = min(per_epoch, total - done)
            epoch_sum = 0.0
            for i in range(steps):
                # One vectorized gather per batch; no per-sample Python.
                idx = order[i * b : (i + 1) * b]
                epoch_sum += self._step(x[idx], y[idx])
            done += steps
            run_sum += epoch_sum
            epoch_means.append(epoch_sum / steps)
        if s.steps is not None:
            return [run_sum / total]
        return epoch_means

    def evaluate(self) -> float:
        x, y = self.data.x_test, self.data.y_test
        correct = 0
        for start in range(0, len(y), EVAL_BATCH):
            logits = self.model.logits(x[start : start + EVAL_BATCH])
            correct += int((logits.argmax(axis=1) == y[start : start + EVAL_BATCH]).sum())
        return correct / len(y)

    def prepare_infer(self, batch_size: int) -> int:
        return self._infer_batches.prepare(self.data.x_test, batch_size)

    def _batches(self, batch_size: int) -> list[np.ndarray]:
        return self._infer_batches.get(batch_size)

    def infer(self, batch_size: int) -> int:
        count = 0
        for batch in self._batches(batch_size):
            self.model.logits(batch)
            count += len(batch)
        return count

    def predict_batch(self, batch_size: int, index: int) -> None:
        self.model.logits(self._batches(batch_size)[index])

    def train_fixed_batch(self, steps: int) -> list[float]:
        b = self.settings.batch_size
        x, y = self.data.x_train[:b], self.data.y_train[:b]
        return [self._step(x, y) for _ in range(steps)]


class NumpyFramework:
    """Framework adapter for the pure-numpy reference implementations."""

    name = "numpy"
    variants: tuple[str, ...] = ("reference",)
    default_variant = "reference"

    def __init__(self) -> None:
        self.threads: int | None = None

    def setup(
        self, *, variant: str, threads: int, seed: int, device: str, runtime: tuple[str, ...] = ()
    ) -> dict[str, Any]:
        # `runtime`: nothing to apply in-process here (no inter-op pool, no tf.data).
        if variant not in self.variants:
            raise ValueError(f"numpy variant {variant!r} is not one of {', '.join(self.variants)}")
        check_cpu(self.name, device)
        self.threads = threads
        manifest: dict[str, Any] = {
            "numpy": np.__version__,
            "variant": variant,
            "device": "cpu",
            "default_float_dtype": np.dtype(DTYPE).name,
            # BLAS threads are the intra-op threads; numpy has no inter-op pool.
            "threads_intra_op": threads,
            "threads_inter_op": 1,
            "rng": "numpy.random.default_rng(settings.seed) per built model (init, then shuffles)",
            "framework_default_init": "none in numpy: torch's (kaiming-uniform a=sqrt(5), uniform bias)",
        }
        manifest.update(numpy_build_facts())
        manifest.update(limit_threads(threads))
        return manifest

    def prepare(self, arrays: Arrays) -> NumpyData:
        return NumpyData(
            np.ascontiguousarray(arrays.train.x, dtype=DTYPE),
            np.ascontiguousarray(arrays.train.y),
            np.ascontiguousarray(arrays.test.x, dtype=DTYPE),
            np.ascontiguousarray(arrays.test.y),
            arrays.input_shape,
            arrays.num_classes,
        )

    def build(self, native: NumpyData, settings: TrainSettings) -> NumpyTrainer:
        try:
            module = importlib.import_module(f"dlbench.models.{settings.model}.numpy")
        except ModuleNotFoundError as err:
            # Re-raise a missing dependency; a missing model module is a clear ValueError.
            if not f"dlbench.models.{settings.model}.numpy".startswith(err.name or "\0"):
                raise
            raise ValueError(f"numpy has no implementation of model {settings.model!r}") from None
        rng = np.random.default_rng(settings.seed)
        model = module.build(native.input_shape, native.num_classes, settings.init, rng)
        return NumpyTrainer(native, settings, model, rng)
