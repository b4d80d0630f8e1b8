"""The JAX adapter (Flax linen + optax), variant "jit".

Why Flax *linen* and not NNX: a linen model is a stateless description; its
parameters are a plain pytree, so the training step is one pure function
`(params, opt_state, ...) -> (params, opt_state, loss)` handed straight to
`jax.jit`. Each call goes through jit's C++ fast path and costs only the
flattening of a few arrays. `nnx.jit` instead walks the object graph of the
module on every call (split before, merge after) in Python, overhead that would
be charged to JAX, not to XLA. An NNX user chasing speed ends up writing
`nnx.split` + a pure `jax.jit` step, i.e. this same code; linen says it directly.

The expert idiom, and why each part is here:
- Data goes to the device once, in `prepare()`; labels as int32 (JAX's default
  integer width, float32/int32 everywhere since jax_enable_x64 is off).
- One jitted step with params, optimizer state and the running loss sum donated,
  so XLA updates them in place. The step takes the whole preloaded training set,
  the epoch's (steps, batch) index table and dropout keys, and a step counter it
  carries on the device; it picks its row and gathers the batch inside the
  compiled function. Measured on this 2-core CPU, gathering inside halves the MLP
  step (0.55 vs 1.19 ms) against eager `x[idx]` dispatches outside it, since
  every eager op is a dispatch; the carried counter means no host-to-device
  copy and no slicing op per step. (Returning the epoch's rows as separate
  arrays from one jit was tried and rejected: 600 outputs took 11 s to compile.)
- Per epoch, one jitted call draws the permutation (`jax.random.permutation` on
  a key folded from the seed and the epoch) and the dropout keys. Losses are
  summed on the device and read once, at the end of `train()`.
- Compiled functions are cached on the framework object by everything they
  close over (model name, input shape, classes, optimizer hyperparameters); a
  fresh model with the same shapes reuses them without retracing, which is how
  JAX users work (one `jit` per step function, new parameters each run).
- Dispatch is asynchronous: every timed method ends with `jax.block_until_ready`
  on what it produced (on CPU a call otherwise returns long before the work ends).

Threads: XLA:CPU has no intra-op setting in the Python API; its thread pool is
sized from the process's CPU affinity mask when the backend starts, so the
harness pins the worker (os.sched_setaffinity) before `setup()`; the mask in
force is recorded. No XLA_FLAGS are set; whatever the environment holds is recorded.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from dlbench.datasets.arrays import Arrays
from dlbench.frameworks.protocol import TrainSettings

# Evaluation batch (untimed accuracy pass): large enough to need few dispatches,
# small enough that the cnn's activations stay well under a GiB.
EVAL_BATCH = 1000


def _backends_initialized() -> bool:
    """Whether XLA backends already exist (then platform and thread settings are fixed)."""
    try:
        from jax._src import xla_bridge
        return bool(xla_bridge.backends_are_initialized())
    except (ImportError, AttributeError):  # private API moved: assume the worst
        return True


def _platform(device: str) -> str:
    kind = device.split(":")[0].lower()
    if kind == "cpu":
        return "cpu"
    if kind in ("cuda", "gpu"):
        return "gpu"
    raise ValueError(f"jax adapter: unknown device {device!r} (use cpu, cuda or gpu)")


@dataclass(frozen=True)
class JaxData:
    """The dataset on the device, as `prepare()` leaves it."""

    train_x: jax.Array
    train_y: jax.Array
    test_x: jax.Array
    test_y: jax.Array
    shape: tuple[int, int, int]
    classes: int

    @property
    def n_train(self) -> int:
        return int(self.train_x.shape[0])

    @property
    def n_test(self) -> int:
        return int(self.test_x.shape[0])


@dataclass(frozen=True)
class _Compiled:
    """The jitted functions one (model, shapes, optimizer) needs."""

    step: Callable[..., Any]
    predict: Callable[..., Any]
    correct: Callable[..., Any]


@partial(jax.jit, static_argnames=("n", "steps", "batch", "shuffle"))
def _epoch_plan(shuffle_key: jax.Array, dropout_key: jax.Array, epoch: jax.Array, *,
                n: int, steps: int, batch: int, shuffle: bool):
    """One epoch's (steps, batch) index table, its (steps,) dropout keys, a zero
    loss sum and a zero step counter: one dispatch per epoch."""
    if shuffle:
        order = jax.random.permutation(jax.random.fold_in(shuffle_key, epoch), n)
    else:
        order = jnp.arange(n)
    # The partial last batch is dropped (a second batch shape would recompile).
    idx = order[: steps * batch].reshape(steps, batch)
    keys = jax.random.split(jax.random.fold_in(dropout_key, epoch), steps)
    return idx, keys, jnp.zeros((), jnp.float32), jnp.zeros((), jnp.int32)


def _make_step(model: nn.Module, tx: optax.GradientTransformation) -> Callable[..., Any]:
    def loss_fn(params, x, y, key):
        logits = model.apply({"params": params}, x, deterministic=False, rngs={"dropout": key})
        return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

    def step(params, opt_state, loss_sum, i, x_all, y_all, table, keys):
        idx = table[i]  # row i of the epoch's index table; the gather below is fused
        loss, grads = jax.value_and_grad(loss_fn)(params, x_all[idx], y_all[idx], keys[i])
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss_sum + loss, i + 1, loss

    # The counter is not donated: train_fixed_batch passes the same one every step.
    return jax.jit(step, donate_argnums=(0, 1, 2))


def _make_eval(model: nn.Module) -> tuple[Callable[..., Any], Callable[..., Any]]:
    @jax.jit
    def predict(params, x):
        return model.apply({"params": params}, x, deterministic=True)

    @partial(jax.jit, static_argnames=("size",))
    def correct(params, x_all, y_all, start, *, size):
        # dynamic_slice with a traced start: one compiled executable per batch
        # size, not one per offset.
        x = jax.lax.dynamic_slice_in_dim(x_all, start, size)
        y = jax.lax.dynamic_slice_in_dim(y_all, start, size)
        logits = model.apply({"params": params}, x, deterministic=True)
        return jnp.sum(jnp.argmax(logits, axis=-1) == y)

    return predict, correct


def _optimizer(settings: TrainSettings) -> optax.GradientTransformation:
    if settings.optimizer == "sgd":
        # optax's heavy-ball momentum (v = m v + g; p -= lr v) is torch's SGD momentum.
        return optax.sgd(settings.lr, momentum=settings.momentum or None)
    return optax.adam(settings.lr, b1=0.9, b2=0.999, eps=settings.adam_epsilon)


class JaxFramework:
    name = "jax"
    variants: tuple[str, ...] = ("jit",)
    default_variant = "jit"

    def __init__(self) -> None:
        self.device: jax.Device | None = None
        self._cache: dict[tuple[Any, ...], _Compiled] = {}

    def setup(self, *, variant: str, threads: int, seed: int, device: str) -> dict[str, Any]:
        if variant not in self.variants:
            raise ValueError(f"jax adapter: unknown variant {variant!r} (known: {', '.join(self.variants)})")
        platform = _platform(device)
        initialized = _backends_initialized()
        # A CPU trial on a GPU machine must not start CUDA (it would grab 75% of
        # the GPU's memory): JAX_PLATFORMS=cpu, the JAX user's switch. Only
        # possible before the backends exist; a second setup() keeps what is in force.
        if platform == "cpu" and not initialized and not os.environ.get("JAX_PLATFORMS"):
            jax.config.update("jax_platforms", "cpu")
        jax.config.update("jax_enable_x64", False)
        # float32 matmuls/convolutions really in float32 (no TF32 on GPUs),
        # matching the other adapters.
        jax.config.update("jax_default_matmul_precision", "highest")
        self.device = jax.devices(platform)[int(device.split(":")[1]) if ":" in device else 0]
        jax.config.update("jax_default_device", self.device)
        # sched_getaffinity is Linux-only; elsewhere every core is assumed usable.
        affinity = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
            else list(range(os.cpu_count() or 1))
        return {
            "framework": self.name,
            "variant": variant,
            "variant_settings": {"jax.jit": True, "donate_argnums": "params, opt_state, loss_sum",
                                 "train_loop": "python loop over one jitted step per batch",
                                 "api": "flax.linen"},
            "versions": {d: importlib.metadata.version(d) for d in ("jax", "jaxlib", "flax", "optax")},
            "device": str(self.device),
            "device_kind": self.device.device_kind,
            "default_backend": jax.default_backend(),
            "devices": [str(d) for d in jax.devices()],
            "jax_platforms": jax.config.jax_platforms,
            "backend_initialized_before_setup": initialized,
            "threads_requested": threads,
            "cpu_affinity": affinity,
            # XLA:CPU sizes one thread pool from the affinity mask; independent
            # ops of a computation share that pool (no separate inter-op pool).
            "intra_op_threads": len(affinity),
            "inter_op_threads": "shared with intra-op pool",
            "thread_control": "CPU affinity mask (XLA:CPU has no thread-count API)",
            "float_dtype": "float32",
            "jax_enable_x64": bool(jax.config.jax_enable_x64),
            "jax_default_matmul_precision": jax.config.jax_default_matmul_precision,
            "tf32": "off (matmul precision highest)",
            "xla_flags": os.environ.get("XLA_FLAGS", ""),
            "xla_python_client_preallocate": os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE", "default"),
            "compilation_cache_dir": jax.config.jax_compilation_cache_dir,
            "seed": seed,
            "rng": "jax.random threefry keys from settings.seed (no global RNG state)",
            "label_dtype": "int32",
        }

    def memory_peak(self) -> tuple[int | None, str]:
        """XLA's device allocator peak (not resettable: since process start)."""
        stats = self.device.memory_stats() if self.device is not None else None
        if not stats or "peak_bytes_in_use" not in stats:
            return None, f"{self.device} reports no memory statistics (XLA:CPU keeps none)"
        return int(stats["peak_bytes_in_use"]), "device.memory_stats()['peak_bytes_in_use'] since process start"

    def prepare(self, arrays: Arrays) -> JaxData:
        put = partial(jax.device_put, device=self.device)
        data = JaxData(
            train_x=put(arrays.train.x), train_y=put(arrays.train.y.astype(np.int32)),
            test_x=put(arrays.test.x), test_y=put(arrays.test.y.astype(np.int32)),
            shape=arrays.input_shape, classes=arrays.num_classes,
        )
        jax.block_until_ready((data.train_x, data.train_y, data.test_x, data.test_y))
        return data

    def build(self, native: JaxData, settings: TrainSettings) -> "JaxTrainer":
        module = importlib.import_module(f"dlbench.models.{settings.model}.jax")
        if settings.init == "glorot-uniform":
            # variance_scaling counts a conv kernel's fans as in*kh*kw and out*kh*kw.
            model = module.build(native.shape, native.classes,
                                 kernel_init=nn.initializers.glorot_uniform(),
                                 bias_init=nn.initializers.zeros_init())
        else:
            model = module.build(native.shape, native.classes)  # Flax's defaults
        tx = _optimizer(settings)
        return JaxTrainer(native, settings, model, tx, self._compiled(settings, native, model, tx))

    def _compiled(self, settings: TrainSettings, native: JaxData, model: nn.Module,
                  tx: optax.GradientTransformation) -> _Compiled:
        # Initializers and seed are absent from the key: `apply` never calls
        # initializers, so the functions built from the first model serve all.
        key = (settings.model, native.shape, native.classes, settings.optimizer,
               settings.lr, settings.momentum, settings.adam_epsilon)
        if key not in self._cache:
            predict, correct = _make_eval(model)
            self._cache[key] = _Compiled(_make_step(model, tx), predict, correct)
        return self._cache[key]


class JaxTrainer:
    def __init__(self, data: JaxData, settings: TrainSettings, model: nn.Module,
                 tx: optax.GradientTransformation, fns: _Compiled) -> None:
        self.data, self.settings, self.model, self.fns = data, settings, model, fns
        self.steps_per_epoch = settings.steps_per_epoch(data.n_train)
        if self.steps_per_epoch < 1:
            raise ValueError(f"batch size {settings.batch_size} exceeds the {data.n_train} training samples")
        # Everything the step sees is committed to the data's device: jit's
        # dispatch cache tells committed from uncommitted arrays, and step
        # outputs are committed, so uncommitted inputs (fresh init, plain
        # jnp.zeros) would give the step a second cache entry.
        self._device = next(iter(data.train_x.devices()))
        put = partial(jax.device_put, device=self._device)
        init_key, dropout_key, shuffle_key = jax.random.split(jax.random.key(settings.seed), 3)
        self._dropout_key, self._shuffle_key = put(dropout_key), put(shuffle_key)
        dummy = jnp.zeros((1, *data.shape), jnp.float32)
        self.params = put(model.init({"params": init_key}, dummy)["params"])
        self.opt_state = put(tx.init(self.params))
        self._first_idx = put(jnp.arange(settings.batch_size))
        self._infer_batches: tuple[jax.Array, ...] = ()
        jax.block_until_ready((self.params, self.opt_state))

    def parameter_count(self) -> int:
        return sum(int(leaf.size) for leaf in jax.tree.leaves(self.params))

    def _plan(self, epoch: int):
        return _epoch_plan(self._shuffle_key, self._dropout_key, epoch, n=self.data.n_train,
                           steps=self.steps_per_epoch, batch=self.settings.batch_size,
                           shuffle=self.settings.shuffle)

    def first_step(self) -> None:
        # Params and optimizer state are donated to the step: keep copies and put
        # them back, so train() starts from the freshly built model.
        saved = jax.tree.map(jnp.copy, (self.params, self.opt_state))
        table, keys, zero, i = self._plan(0)  # compiles the per-epoch plan too
        out = self.fns.step(self.params, self.opt_state, zero, i, self.data.train_x,
                            self.data.train_y, table, keys)
        jax.block_until_ready(out)
        self.params, self.opt_state = saved
        jax.block_until_ready(saved)

    def train(self) -> list[float]:
        s = self.settings
        total = s.total_steps(self.data.n_train)
        x, y, step = self.data.train_x, self.data.train_y, self.fns.step
        params, opt_state = self.params, self.opt_state
        sums: list[jax.Array] = []
        done, epoch = 0, 0
        loss_sum = None
        while done < total:
            table, keys, zero, i = self._plan(epoch)
            # Per epoch a fresh sum in epochs mode; one sum for the whole run with steps.
            if loss_sum is None or s.steps is None:
                loss_sum = zero
            for _ in range(min(self.steps_per_epoch, total - done)):
                params, opt_state, loss_sum, i, _ = step(params, opt_state, loss_sum, i, x, y, table, keys)
            done += min(self.steps_per_epoch, total - done)
            epoch += 1
            if s.steps is None:
                sums.append(loss_sum)
        if s.steps is not None:
            sums.append(loss_sum)
        self.params, self.opt_state = params, opt_state
        jax.block_until_ready((params, opt_state, sums))
        counts = [self.steps_per_epoch] * len(sums) if s.steps is None else [total]
        return [float(v) / c for v, c in zip(jax.device_get(sums), counts)]

    def evaluate(self) -> float:
        n, correct = self.data.n_test, []
        for start in range(0, n, EVAL_BATCH):
            size = min(EVAL_BATCH, n - start)  # the partial last batch compiles a second shape: untimed
            correct.append(self.fns.correct(self.params, self.data.test_x, self.data.test_y, start, size=size))
        return int(sum(jax.device_get(correct))) / n

    def prepare_infer(self, batch_size: int) -> int:
        count = self.data.n_test // batch_size
        # Cut on the host and put each batch on the device as its own array, so the
        # timed loop is one dispatch per batch and nothing else. (A jitted split
        # returning `count` outputs compiles in seconds to minutes as count grows.)
        host = np.asarray(self.data.test_x)
        self._infer_batches = tuple(jax.device_put(
            [host[i * batch_size:(i + 1) * batch_size] for i in range(count)], self._device))
        if count:
            # Compile the forward pass for this batch shape here, untimed.
            jax.block_until_ready(self.fns.predict(self.params, self._infer_batches[0]))
        return count

    def _batches(self, batch_size: int) -> tuple[jax.Array, ...]:
        if not self._infer_batches or self._infer_batches[0].shape[0] != batch_size:
            raise RuntimeError(f"call prepare_infer({batch_size}) first")
        return self._infer_batches

    def infer(self, batch_size: int) -> int:
        batches, predict, params = self._batches(batch_size), self.fns.predict, self.params
        jax.block_until_ready([predict(params, xb) for xb in batches])
        return len(batches) * batch_size

    def predict_batch(self, batch_size: int, index: int) -> None:
        jax.block_until_ready(self.fns.predict(self.params, self._batches(batch_size)[index]))

    def train_fixed_batch(self, steps: int) -> list[float]:
        # The same shapes as train()'s step (no extra compile): every table row is
        # the first batch; a fresh dropout mask per step from a key stream of its own.
        rows = self.steps_per_epoch
        table = jnp.broadcast_to(self._first_idx, (rows, self.settings.batch_size))
        put = partial(jax.device_put, device=self._device)
        loss_sum = put(jnp.zeros((), jnp.float32))
        losses = []
        for n in range(steps):
            keys = jax.random.split(jax.random.fold_in(self._dropout_key, 10**6 + n), rows)
            self.params, self.opt_state, loss_sum, _, loss = self.fns.step(
                self.params, self.opt_state, loss_sum, put(jnp.zeros((), jnp.int32)),
                self.data.train_x, self.data.train_y, table, keys)
            losses.append(loss)
        jax.block_until_ready((self.params, losses))
        return [float(v) for v in jax.device_get(losses)]
