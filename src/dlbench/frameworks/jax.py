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
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from dlbench.datasets import inputs as xs
from dlbench.datasets.arrays import Arrays
from dlbench.frameworks.builders import BuilderError, accepts, call_builder, model_spec
from dlbench.frameworks.protocol import TrainSettings
from dlbench.models.deepspeech2.ctc import ctc_accuracy

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

    train_x: Any  # an array, or name -> array for named inputs (dlbench.datasets.inputs)
    train_y: Any  # an array, or head -> array for several named outputs (dlbench.heads)
    test_x: Any
    test_y: Any
    shape: Any  # (H, W, C), (T,) or (T, F); name -> shape for named inputs
    classes: Any  # head -> classes or K for several named outputs

    @property
    def n_train(self) -> int:
        return xs.rows(self.train_x)

    @property
    def n_test(self) -> int:
        return xs.rows(self.test_x)


@dataclass(frozen=True)
class _Compiled:
    """The jitted functions one (model, shapes, optimizer) needs."""

    step: Callable[..., Any]
    batch_step: Callable[..., Any]
    predict: Callable[..., Any]
    correct: Callable[..., Any]
    best: Callable[..., Any]


@partial(jax.jit, static_argnames=("n", "steps", "batch", "shuffle"))
def _epoch_plan(
    shuffle_key: jax.Array, dropout_key: jax.Array, epoch: jax.Array, *, n: int, steps: int, batch: int, shuffle: bool
):
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


class _Deterministic(nn.Module):
    """A user's Flax module whose __call__ takes only the input: the train and eval
    steps pass `deterministic` to every network, and this one has no dropout to switch."""

    inner: nn.Module

    @nn.compact
    def __call__(self, x: jax.Array, deterministic: bool = True) -> jax.Array:
        return self.inner(x)


def ctc_loss(logits: jax.Array, labels: jax.Array) -> jax.Array:
    """Per-utterance CTC loss divided by its label length, averaged over the batch
    (torch's F.ctc_loss "mean"); labels (N, L) padded with -1, blank 0."""
    label_paddings = (labels < 0).astype(jnp.float32)
    logit_paddings = jnp.zeros(logits.shape[:2], jnp.float32)  # every utterance is T' frames
    per_utterance = optax.ctc_loss(logits, logit_paddings, jnp.maximum(labels, 0), label_paddings, blank_id=0)
    return jnp.mean(per_utterance / jnp.sum(1.0 - label_paddings, axis=1))


def _loss(task: str, loss: str = "cross-entropy") -> Callable[[jax.Array, jax.Array], jax.Array]:
    if task == "ctc":
        return ctc_loss
    if task == "regress":
        # The mean over every target of every sample, as torch's F.mse_loss / l1_loss
        # (optax.l2_loss would halve it); outputs are matched to the (N, K) targets.
        if loss == "mae":
            return lambda out, y: jnp.mean(jnp.abs(out.reshape(y.shape) - y))
        return lambda out, y: jnp.mean(jnp.square(out.reshape(y.shape) - y))
    # classify and next-token alike: the mean over every label (N, or N x T positions).
    return lambda logits, y: optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()


def heads_loss(spec: Any) -> Callable[[Any, Any], jax.Array]:
    """A model of several outputs: the weighted sum of its heads' batch-mean losses
    (dlbench.heads), outputs and targets dicts head -> array."""
    parts = {head: _loss(task, spec.head_losses[head]) for head, task in spec.heads.items()}
    weights = dict(spec.loss_weights)

    def loss(out: Any, y: Any) -> jax.Array:
        return sum((weights[head] * fn(out[head], y[head]) for head, fn in parts.items()), jnp.zeros((), jnp.float32))

    return loss


def _mixed(compute: Any) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    """(cast params, cast inputs) into the compute dtype: bf16-mixed keeps float32
    master weights, optimizer state and loss, and runs the model in bfloat16
    (what jmp / Flax's dtype=bfloat16 do); float32 leaves everything alone."""
    if compute is None:
        return (lambda p: p), (lambda x: x)

    def cast(tree):
        return jax.tree.map(lambda a: a.astype(compute) if jnp.issubdtype(a.dtype, jnp.floating) else a, tree)

    return cast, cast


def _make_step(
    model: nn.Module,
    tx: optax.GradientTransformation,
    task: str = "classify",
    compute: Any = None,
    loss: str = "cross-entropy",
    own: Callable[..., Any] | None = None,
) -> tuple[Callable[..., Any], Callable[..., Any]]:
    # A user's own training loss (loss(outputs, targets), jnp), else the task's.
    loss_of = own if own is not None else _loss(task, loss)
    cast_params, cast_x = _mixed(compute)

    # `state` holds the model's non-trainable collections (batch-norm running
    # statistics: "batch_stats"); an empty dict for models without any.
    def loss_fn(params, state, x, y, key):
        params, x = cast_params(params), cast_x(x)
        if state:
            logits, new_state = model.apply(
                {"params": params, **state}, x, deterministic=False, rngs={"dropout": key}, mutable=list(state)
            )
            # Running statistics stay float32 whatever the compute dtype.
            new_state = jax.tree.map(lambda new, old: new.astype(old.dtype), new_state, state)
        else:
            logits = model.apply({"params": params}, x, deterministic=False, rngs={"dropout": key})
            new_state = state
        # Outputs in float32 for the loss (a dict of them for several heads).
        return loss_of(jax.tree.map(lambda a: a.astype(jnp.float32), logits), y), new_state

    def batch_step(params, state, opt_state, loss_sum, i, xb, yb, keys):
        (loss, state), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, state, xb, yb, keys[i])
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), state, opt_state, loss_sum + loss, i + 1, loss

    def step(params, state, opt_state, loss_sum, i, x_all, y_all, table, keys):
        idx = table[i]  # row i of the epoch's index table; the gather below is fused
        return batch_step(params, state, opt_state, loss_sum, i, xs.take(x_all, idx), xs.take(y_all, idx), keys)

    # The counter is not donated: train_fixed_batch passes the same one every step.
    # batch_step serves augmentation pipelines, which hand over ready batches.
    return jax.jit(step, donate_argnums=(0, 1, 2, 3)), jax.jit(batch_step, donate_argnums=(0, 1, 2, 3))


def _make_eval(
    model: nn.Module, compute: Any = None
) -> tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any]]:
    cast_params, cast_x = _mixed(compute)

    def logits_of(params, state, x):
        return model.apply({"params": cast_params(params), **state}, cast_x(x), deterministic=True)

    @jax.jit
    def predict(params, state, x):
        return logits_of(params, state, x)

    @partial(jax.jit, static_argnames=("size",))
    def correct(params, state, x_all, y_all, start, *, size):
        # dynamic_slice with a traced start: one compiled executable per batch
        # size, not one per offset.
        x = xs.apply(lambda a: jax.lax.dynamic_slice_in_dim(a, start, size), x_all)
        y = jax.lax.dynamic_slice_in_dim(y_all, start, size)
        return jnp.sum(jnp.argmax(logits_of(params, state, x), axis=-1) == y)  # every position for next-token

    @partial(jax.jit, static_argnames=("size",))
    def best(params, state, x_all, start, *, size):
        # Per-frame argmax for CTC decoding on the host.
        x = xs.apply(lambda a: jax.lax.dynamic_slice_in_dim(a, start, size), x_all)
        return jnp.argmax(logits_of(params, state, x), axis=-1)

    return predict, correct, best


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
        self._inits: dict[tuple[Any, ...], Callable[..., Any]] = {}

    def setup(
        self, *, variant: str, threads: int, seed: int, device: str, runtime: tuple[str, ...] = ()
    ) -> dict[str, Any]:
        # `runtime`: nothing to apply in-process here (no inter-op pool, no tf.data).
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
        # This process's own devices: the same list as jax.devices() in one process; in a
        # multi-process JAX run (dlbench.frameworks.jax_dist, multiworker) jax.devices()
        # is every process's, and index 0 would be another process's device.
        self.device = jax.local_devices(backend=platform)[int(device.split(":")[1]) if ":" in device else 0]
        jax.config.update("jax_default_device", self.device)
        # sched_getaffinity is Linux-only; elsewhere every core is assumed usable.
        affinity = (
            sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))
        )
        return {
            "framework": self.name,
            "variant": variant,
            "variant_settings": {
                "jax.jit": True,
                "donate_argnums": "params, opt_state, loss_sum",
                "train_loop": "python loop over one jitted step per batch",
                "init": "jax.jit(model.init), compiled once per model structure and init scheme",
                "api": "flax.linen",
            },
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

        def inputs(x: np.ndarray) -> np.ndarray:
            return x.astype(np.int32) if x.dtype.kind in "iu" else x  # token ids: JAX's int32

        data = JaxData(
            train_x=put(xs.apply(inputs, arrays.train.x)),
            train_y=put(xs.apply(inputs, arrays.train.y)),  # class ids int32, regression targets float32
            test_x=put(xs.apply(inputs, arrays.test.x)),
            test_y=put(xs.apply(inputs, arrays.test.y)),
            shape=arrays.input_shape,
            classes=arrays.num_classes,
        )
        jax.block_until_ready((data.train_x, data.train_y, data.test_x, data.test_y))
        return data

    def build(self, native: JaxData, settings: TrainSettings) -> JaxTrainer:
        spec = model_spec(settings)
        # variance_scaling counts a conv kernel's fans as in*kh*kw and out*kh*kw; without
        # init keywords the modules keep Flax's defaults (framework-default).
        init = (
            {"kernel_init": nn.initializers.glorot_uniform(), "bias_init": nn.initializers.zeros_init()}
            if settings.init == "glorot-uniform"
            else {}
        )
        model, note = call_builder(spec, "jax", native.shape, native.classes, settings.model_options, init)
        if not isinstance(model, nn.Module):
            raise BuilderError(
                f"model {spec.name}: the jax builder returned a {type(model).__name__}, not a Flax module"
            )
        if not accepts(type(model).__call__, ("deterministic",)):
            model = _Deterministic(model)
        tx = _optimizer(settings)
        augment = None
        if settings.pipeline != "preloaded":
            native, augment = self._pipeline(native, settings)
        # model.init run eagerly dispatches every initializer op by op (seconds for a
        # deep net); jitted once per model structure and init scheme, a build is one call.
        init_key = (
            settings.model,
            tuple(sorted(settings.model_options.items())),
            repr(native.shape),  # a dict for named inputs: the key must be hashable
            repr(native.classes),  # a dict for several outputs: the key must be hashable
            settings.init,
        )
        if init_key not in self._inits:
            self._inits[init_key] = jax.jit(model.init)
        # TensorFloat-32 matmuls and convolutions for precision tf32 only ("highest", as
        # setup set it, otherwise). A process-wide setting, as TF32 is in torch and
        # TensorFlow; each trial is a process of its own, and every build sets it.
        tf32 = settings.precision == "tf32"
        jax.config.update("jax_default_matmul_precision", "tensorfloat32" if tf32 else "highest")
        trainer = JaxTrainer(
            native, settings, model, tx, self._compiled(settings, native, model, tx), init=self._inits[init_key]
        )
        trainer.augment = augment
        if note and spec.builtin:  # a user's model got the scheme after its build (JaxTrainer)
            trainer.facts["init_note"] = note
        if tf32:
            trainer.facts["jax_default_matmul_precision"] = jax.config.jax_default_matmul_precision
            trainer.facts["tf32"] = "on (matmul precision tensorfloat32)"
        return trainer

    def _pipeline(self, native: JaxData, settings: TrainSettings) -> tuple[JaxData, Callable[[int], Any]]:
        """Normalized test data and an epoch -> batches function for the chosen pipeline
        ("native": dlbench.pipelines.jax, jitted on the device; "numpy": the shared host
        pipeline, each batch put on the device)."""
        from dataclasses import replace

        from dlbench.pipelines import jax as jax_pipeline
        from dlbench.pipelines import numpy as np_pipeline
        from dlbench.pipelines.cache import prepared
        from dlbench.pipelines.params import epoch_params

        if xs.is_named(native.shape) or len(native.shape) != 3:
            raise ValueError(f"pipeline {settings.pipeline}: augmentation needs image input")

        def build(stats):
            on_device = jax_pipeline.Augmenter(stats.mean, stats.std, device=self.device)
            return on_device, replace(native, test_x=jax.block_until_ready(on_device.normalize(native.test_x)))

        aug = self._aug = prepared(getattr(self, "_aug", None), native, lambda: np.asarray(native.train_x), build)
        stats, host, on_device, normalized = aug.stats, aug.host, aug.augmenter, aug.normalized
        b, seed, n = settings.batch_size, settings.seed, native.n_train
        if settings.pipeline == "native":

            def batches(epoch: int):
                return on_device.epoch_batches(native.train_x, native.train_y, epoch_params(seed, epoch, n), b)
        else:
            on_host = np_pipeline.Augmenter(stats.mean, stats.std)
            y_host = np.asarray(native.train_y)

            def batches(epoch: int):
                for xb, yb in on_host.epoch_batches(host, y_host, epoch_params(seed, epoch, n), b):
                    yield jax.device_put(xb, self.device), jax.device_put(yb.astype(np.int32), self.device)

        return normalized, batches

    def _compiled(
        self, settings: TrainSettings, native: JaxData, model: nn.Module, tx: optax.GradientTransformation
    ) -> _Compiled:
        # Initializers and seed are absent from the key: `apply` never calls
        # initializers, so the functions built from the first model serve all.
        key = (
            settings.model,
            tuple(sorted(settings.model_options.items())),
            repr(native.shape),  # a dict for named inputs: the key must be hashable
            repr(native.classes),
            settings.optimizer,
            settings.lr,
            settings.momentum,
            settings.adam_epsilon,
            settings.precision,
        )
        if key not in self._cache:
            compute = jnp.bfloat16 if settings.precision == "bf16-mixed" else None
            predict, correct, best = _make_eval(model, compute)
            spec = model_spec(settings)
            self._cache[key] = _Compiled(
                *_make_step(
                    model,
                    tx,
                    spec.task,
                    compute,
                    spec.loss,
                    spec.loss_function("jax") or (heads_loss(spec) if spec.heads else None),
                ),
                predict,
                correct,
                best,
            )
        return self._cache[key]


class JaxTrainer:
    def __init__(
        self,
        data: JaxData,
        settings: TrainSettings,
        model: nn.Module,
        tx: optax.GradientTransformation,
        fns: _Compiled,
        init: Callable[..., Any] | None = None,
    ) -> None:
        self.data, self.settings, self.model, self.fns = data, settings, model, fns
        self.steps_per_epoch = settings.steps_per_epoch(data.n_train)
        if self.steps_per_epoch < 1:
            raise ValueError(f"batch size {settings.batch_size} exceeds the {data.n_train} training samples")
        # Everything the step sees is committed to the data's device: jit's
        # dispatch cache tells committed from uncommitted arrays, and step
        # outputs are committed, so uncommitted inputs (fresh init, plain
        # jnp.zeros) would give the step a second cache entry.
        self._device = next(iter(jax.tree.leaves(data.train_x)[0].devices()))
        put = partial(jax.device_put, device=self._device)
        init_key, dropout_key, shuffle_key = jax.random.split(jax.random.key(settings.seed), 3)
        self._dropout_key, self._shuffle_key = put(dropout_key), put(shuffle_key)
        dummy = xs.apply(lambda a: jnp.zeros((1, *a.shape[1:]), a.dtype), data.train_x)
        variables = dict((init or model.init)({"params": init_key}, dummy))
        params = variables.pop("params")
        # What the manifest must say about this network: an init scheme its builder could
        # not take, or the layers the scheme did not reach (set by build, updated here).
        self.facts: dict[str, Any] = {}
        spec = model_spec(settings)
        if settings.init == "glorot-uniform" and not spec.builtin:
            # A user's builder may take kernel_init and still leave modules at Flax's
            # defaults (or take none): the scheme is applied to every parameter after the
            # build, and what it could not reach is named (the zoo passes it everywhere).
            from dlbench.frameworks.flax_init import glorot_uniform_

            params, coverage = glorot_uniform_(params, jax.random.fold_in(init_key, 1))
            self.facts = coverage.as_facts()
        self.params = put(params)
        # Non-trainable collections (batch-norm statistics), threaded through the step.
        self.state = put(variables)
        self.opt_state = put(tx.init(self.params))
        self._first_idx = put(jnp.arange(settings.batch_size))
        self._epochs_done = 0
        # The first settings.loss_curve step losses of the last train() call: the step's
        # own loss output (not donated), kept on the device in the loop, read after it.
        self._curve_values: list[float] = []
        # epoch -> that epoch's (xb, yb) batches, when an augmentation pipeline runs.
        self.augment: Callable[[int], Any] | None = None
        self._infer_batches: tuple[jax.Array, ...] = ()
        jax.block_until_ready((self.params, self.state, self.opt_state))

    def manifest(self) -> dict[str, Any]:
        return dict(self.facts)

    def parameter_count(self) -> int:
        return sum(int(leaf.size) for leaf in jax.tree.leaves(self.params))

    def _plan(self, epoch: int):
        return _epoch_plan(
            self._shuffle_key,
            self._dropout_key,
            epoch,
            n=self.data.n_train,
            steps=self.steps_per_epoch,
            batch=self.settings.batch_size,
            shuffle=self.settings.shuffle,
        )

    def first_step(self) -> None:
        # Params and optimizer state are donated to the step: keep copies and put
        # them back, so train() starts from the freshly built model.
        saved = jax.tree.map(jnp.copy, (self.params, self.state, self.opt_state))
        table, keys, zero, i = self._plan(0)  # compiles the per-epoch plan too
        if self.augment is not None:
            # Compile the pipeline's batch function and the step that takes its batches.
            xb, yb = next(iter(self.augment(0)))
            out = self.fns.batch_step(self.params, self.state, self.opt_state, zero, i, xb, yb, keys)
        else:
            out = self.fns.step(
                self.params, self.state, self.opt_state, zero, i, self.data.train_x, self.data.train_y, table, keys
            )
        jax.block_until_ready(out)
        self.params, self.state, self.opt_state = saved
        jax.block_until_ready(saved)

    def train(self) -> list[float]:
        s = self.settings
        total = s.total_steps(self.data.n_train)
        x, y, step = self.data.train_x, self.data.train_y, self.fns.step
        params, state, opt_state = self.params, self.state, self.opt_state
        sums: list[jax.Array] = []
        done, epoch = 0, self._epochs_done
        loss_sum = None
        curve: list[jax.Array] = []
        while done < total:
            table, keys, zero, i = self._plan(epoch)
            # Per epoch a fresh sum in epochs mode; one sum for the whole run with steps.
            if loss_sum is None or s.steps is None:
                loss_sum = zero
            count = min(self.steps_per_epoch, total - done)
            # The epoch's first `head` steps keep their loss output (loss curve); the
            # rest run the plain loop. With loss_curve 0, head is 0: the per-step loop
            # is exactly the one without recording.
            head = min(count, s.loss_curve - len(curve))
            if self.augment is not None:
                # The pipeline shuffles, crops, flips and normalizes (seeded per
                # epoch); the table above only supplies the dropout keys' count.
                # One iterator for both loops (zip stops at the range first, so the
                # first loop takes exactly `head` batches).
                batches = iter(self.augment(epoch))
                for _, (xb, yb) in zip(range(head), batches):
                    params, state, opt_state, loss_sum, i, loss = self.fns.batch_step(
                        params, state, opt_state, loss_sum, i, xb, yb, keys
                    )
                    curve.append(loss)
                for _, (xb, yb) in zip(range(count - head), batches):
                    params, state, opt_state, loss_sum, i, _ = self.fns.batch_step(
                        params, state, opt_state, loss_sum, i, xb, yb, keys
                    )
            else:
                for _ in range(head):
                    params, state, opt_state, loss_sum, i, loss = step(
                        params, state, opt_state, loss_sum, i, x, y, table, keys
                    )
                    curve.append(loss)
                for _ in range(count - head):
                    params, state, opt_state, loss_sum, i, _ = step(
                        params, state, opt_state, loss_sum, i, x, y, table, keys
                    )
            done += count
            epoch += 1
            if s.steps is None:
                sums.append(loss_sum)
        if s.steps is not None:
            sums.append(loss_sum)
        self.params, self.state, self.opt_state = params, state, opt_state
        # A later train() call (time to accuracy: one epoch per call) goes on with
        # the next epoch's permutation, not epoch 0's again.
        self._epochs_done = epoch
        jax.block_until_ready((params, state, opt_state, sums))
        counts = [self.steps_per_epoch] * len(sums) if s.steps is None else [total]
        values, curve_values = jax.device_get((sums, curve))
        self._curve_values = [float(v) for v in curve_values]
        return [float(v) / c for v, c in zip(values, counts)]

    def step_losses(self) -> list[float]:
        """The training loss of each of the first `settings.loss_curve` steps of the
        last train() call (the mean over that step's batch; [] when loss_curve is 0)."""
        return list(self._curve_values)

    def evaluate(self) -> Any:
        """Top-1 accuracy (classify), token top-1 accuracy over every position
        (next-token), 1 - CER of greedy decoding (ctc, computed on the host), the test
        error (regress), or head -> each head's quality (several outputs: dlbench.heads)."""
        task = model_spec(self.settings).task
        if task == "regress":
            return self.test_loss()
        if task == "multi-output":
            return self._evaluate_heads()
        if task != "classify":
            return self._evaluate_sequences(task)
        n, correct = self.data.n_test, []
        for start in range(0, n, EVAL_BATCH):
            size = min(EVAL_BATCH, n - start)  # the partial last batch compiles a second shape: untimed
            correct.append(
                self.fns.correct(self.params, self.state, self.data.test_x, self.data.test_y, start, size=size)
            )
        return int(sum(jax.device_get(correct))) / n

    def test_loss(self) -> float:
        """The training loss over the whole test split (partial last batch included),
        each sample weighted equally: the mean error (regress), the mean cross-entropy
        per token (next-token, the log of the perplexity). Batches at the training
        batch size through the inference forward (a partial one compiles once more)."""
        spec = model_spec(self.settings)
        loss_of = _loss(spec.task, spec.loss)
        n, b = self.data.n_test, self.settings.batch_size
        host_x, host_y = xs.apply(np.asarray, self.data.test_x), np.asarray(self.data.test_y)
        total = 0.0
        for start in range(0, n, b):
            xb = jax.device_put(xs.take(host_x, slice(start, start + b)), self._device)
            out = self.fns.predict(self.params, self.state, xb)
            yb = host_y[start : start + b]
            total += float(loss_of(jnp.asarray(out, jnp.float32), jnp.asarray(yb))) * len(yb)
        return total / n

    def _evaluate_heads(self) -> dict[str, float]:
        """head -> its quality (dlbench.heads.scores) over the whole test split, batches
        of EVAL_BATCH through the inference forward, the outputs read to the host."""
        from dlbench import heads

        n, outs = self.data.n_test, []
        host_x = xs.apply(np.asarray, self.data.test_x)
        for start in range(0, n, EVAL_BATCH):
            xb = jax.device_put(xs.take(host_x, slice(start, start + EVAL_BATCH)), self._device)
            outs.append(jax.device_get(self.fns.predict(self.params, self.state, xb)))
        targets = xs.apply(np.asarray, self.data.test_y)
        return heads.scores(model_spec(self.settings), heads.concat(outs), targets)

    def _evaluate_sequences(self, task: str) -> float:
        # Per-position logits of EVAL_BATCH sequences can be GiBs (N x T x vocab):
        # sequence models evaluate at the training batch size.
        n, b = self.data.n_test, self.settings.batch_size
        args = (self.params, self.state, self.data.test_x)
        if task == "ctc":
            paths = [self.fns.best(*args, start, size=min(b, n - start)) for start in range(0, n, b)]
            return ctc_accuracy(np.concatenate(jax.device_get(paths)), np.asarray(self.data.test_y))
        correct = [self.fns.correct(*args, self.data.test_y, start, size=min(b, n - start)) for start in range(0, n, b)]
        return int(sum(jax.device_get(correct))) / int(self.data.test_y.size)

    def prepare_infer(self, batch_size: int) -> int:
        count = self.data.n_test // batch_size
        # Cut on the host and put each batch on the device as its own array, so the
        # timed loop is one dispatch per batch and nothing else. (A jitted split
        # returning `count` outputs compiles in seconds to minutes as count grows.)
        host = xs.apply(np.asarray, self.data.test_x)
        self._infer_batches = tuple(
            jax.device_put(
                [xs.take(host, slice(i * batch_size, (i + 1) * batch_size)) for i in range(count)], self._device
            )
        )
        if count:
            # Compile the forward pass for this batch shape here, untimed.
            jax.block_until_ready(self.fns.predict(self.params, self.state, self._infer_batches[0]))
        return count

    def _batches(self, batch_size: int) -> tuple[jax.Array, ...]:
        if not self._infer_batches or xs.rows(self._infer_batches[0]) != batch_size:
            raise RuntimeError(f"call prepare_infer({batch_size}) first")
        return self._infer_batches

    def infer(self, batch_size: int) -> int:
        batches, predict, params, state = self._batches(batch_size), self.fns.predict, self.params, self.state
        jax.block_until_ready([predict(params, state, xb) for xb in batches])
        return len(batches) * batch_size

    def predict_batch(self, batch_size: int, index: int) -> None:
        jax.block_until_ready(self.fns.predict(self.params, self.state, self._batches(batch_size)[index]))

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
            self.params, self.state, self.opt_state, loss_sum, _, loss = self.fns.step(
                self.params,
                self.state,
                self.opt_state,
                loss_sum,
                put(jnp.zeros((), jnp.int32)),
                self.data.train_x,
                self.data.train_y,
                table,
                keys,
            )
            losses.append(loss)
        jax.block_until_ready((self.params, losses))
        return [float(v) for v in jax.device_get(losses)]
