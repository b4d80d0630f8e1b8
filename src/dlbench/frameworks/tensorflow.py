"""TensorFlow / Keras 3 adapter: the Framework and Trainer protocols, written the
way the Keras documentation writes a training script.

Expert idiom: a functional `keras.Model`, `model.compile(optimizer, loss=
SparseCategoricalCrossentropy(from_logits=True))` and `model.fit` on a
`tf.data.Dataset` built once per model from in-memory tensors
(`shuffle(len(train), seed) -> batch(drop_remainder=True) -> prefetch(AUTOTUNE)`),
no callbacks, `verbose=0`. Variants map onto compile's own switches:

    graph  jit_compile=False  (Keras wraps its train step in tf.function)
    xla    jit_compile=True   (the same tf.function, compiled by XLA)
    eager  run_eagerly=True   (no tf.function at all)

This module imports TensorFlow and Keras at top level, so only a worker imports it.
"""

from __future__ import annotations

import os
import platform
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# Keras 3 picks its backend once, at its first import: force TensorFlow here.
os.environ["KERAS_BACKEND"] = "tensorflow"
# Level 2 hides TF's C++ INFO and WARNING lines (CPU-feature notices); errors still
# print. A user's own setting wins. The value in force goes into the manifest.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from dlbench.datasets import inputs as xs
from dlbench.datasets.arrays import Arrays  # noqa: E402
from dlbench.frameworks.builders import BuilderError, call_builder, model_spec  # noqa: E402
from dlbench.frameworks.protocol import TrainSettings  # noqa: E402
from dlbench.models.deepspeech2.ctc import ctc_accuracy  # noqa: E402

VARIANTS: dict[str, dict[str, bool]] = {
    "graph": {"jit_compile": False, "run_eagerly": False},
    "xla": {"jit_compile": True, "run_eagerly": False},
    "eager": {"jit_compile": False, "run_eagerly": True},
}

# Inter-op threads under runtime setting interop-fixed (dlbench.runtime_settings);
# otherwise TF's own default (one per core) is left in force, as a plain script has it.
# Two, not one: in Keras' fit the step is a graph whose IteratorGetNext waits on
# tf.data's prefetch, and TF's executor runs independent ops (input-pipeline work,
# the optimizer's per-variable updates) concurrently on this pool; one thread
# would force them into a queue, a setting no TF expert would pick. Two is TF's
# own default on a 2-core machine. (On this shared 2-core box, 1 vs 2 measured
# within noise for LeNet-5.) Intra-op (the oneDNN kernels' threads) = `threads`.
INTER_OP_THREADS = 2

_GLOROT = {"kernel_initializer": "glorot_uniform", "bias_initializer": "zeros"}


# Batches prepared ahead of the training step under runtime setting autotune-off
# (see _train_dataset); otherwise prefetch(AUTOTUNE), what a plain script writes.
PREFETCH = 2


def ctc_loss(y_true: tf.Tensor, y_pred: tf.Tensor) -> tf.Tensor:
    """Per-utterance CTC loss divided by its label length; Keras' default reduction
    (sum over batch size) then averages over the batch: torch's F.ctc_loss "mean".

    Keras hands y_true over cast to the loss dtype; labels are (N, L) padded
    with -1, blank 0, logits (N, T', C) batch-major, every utterance T' frames.
    """
    labels = tf.cast(y_true, tf.int32)
    label_length = tf.reduce_sum(tf.cast(labels >= 0, tf.int32), axis=1)
    shape = tf.shape(y_pred)
    logit_length = tf.fill([shape[0]], shape[1])
    loss = tf.nn.ctc_loss(
        labels=tf.maximum(labels, 0),
        logits=y_pred,
        label_length=label_length,
        logit_length=logit_length,
        logits_time_major=False,
        blank_index=0,
    )
    return loss / tf.cast(label_length, loss.dtype)


def _loss(task: str, loss: str = "cross-entropy") -> Any:
    if task == "ctc":
        return ctc_loss
    if task == "regress":
        # The mean over every target of every sample, as torch's F.mse_loss / l1_loss.
        return keras.losses.MeanSquaredError() if loss == "mse" else keras.losses.MeanAbsoluteError()
    # classify and next-token alike: the mean over every label (N, or N x T positions).
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def _training_loss(spec: Any) -> Any:
    """The user's own loss for TensorFlow, called as loss(outputs, targets) like in every
    framework (Keras calls a loss with (y_true, y_pred)), else the task's; for a model of
    several outputs Keras' own form, a dict head -> loss (weighted by compile's
    loss_weights). A user's loss over several outputs is set by `_own_heads_loss`."""
    own = spec.loss_function("tensorflow")
    if spec.heads:
        return None if own is not None else {h: _loss(t, spec.head_losses[h]) for h, t in spec.heads.items()}
    if own is None:
        return _loss(spec.task, spec.loss)

    def user_loss(y_true: Any, y_pred: Any) -> Any:
        return own(y_pred, y_true)

    return user_loss


def _host(out: Any) -> Any:
    """The forward's result read to the host: one tensor, or every head's (several outputs)."""
    return xs.apply(lambda t: t.numpy(), out)


def _own_heads_loss(model: keras.Model, own: Callable[..., Any]) -> None:
    """A user's own loss of a model of several outputs receives the dict of outputs and
    the dict of targets, as in every framework; Keras would call a single loss once per
    output, so the model's compute_loss (the documented override point) calls it once."""

    def compute_loss(
        x: Any = None, y: Any = None, y_pred: Any = None, sample_weight: Any = None, training: bool = True
    ) -> Any:
        return own(y_pred, y)

    model.compute_loss = compute_loss


def _device_name(device: str) -> str:
    """ "cpu" -> "/CPU:0"; "cuda", "cuda:1", "gpu", "gpu:1" -> "/GPU:n"."""
    kind, _, index = device.lower().partition(":")
    if kind == "cpu":
        return "/CPU:0"
    if kind in ("cuda", "gpu"):
        return f"/GPU:{int(index or 0)}"
    raise ValueError(f"unknown device {device!r}; use cpu, cuda or cuda:N")


def _set_threads(threads: int, fixed_inter_op: bool) -> dict[str, Any]:
    """Set intra-op threads, and inter-op threads where `fixed_inter_op`; TF refuses
    once its runtime is initialized (a second setup() in one process), so record
    what is actually in force."""
    note = f"set to {INTER_OP_THREADS} (runtime interop-fixed)" if fixed_inter_op else "TensorFlow's default"
    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        if fixed_inter_op:
            tf.config.threading.set_inter_op_parallelism_threads(INTER_OP_THREADS)
    except RuntimeError as exc:
        note = f"not changed, TF runtime already initialized: {exc}"
    # 0 means "never set": TF then uses one thread per schedulable core.
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    intra = tf.config.threading.get_intra_op_parallelism_threads() or cores
    inter = tf.config.threading.get_inter_op_parallelism_threads() or cores
    return {
        "threads_requested": threads,
        "intra_op_threads": intra,
        "inter_op_threads": inter,
        "inter_op_threads_note": note,
    }


def _onednn_facts() -> dict[str, Any]:
    from tensorflow.python.util import _pywrap_util_port as port  # build facts, no public API

    built = bool(port.IsMklEnabled())
    env = os.environ.get("TF_ENABLE_ONEDNN_OPTS")
    # Since TF 2.9 oneDNN ops are on by default on x86-64 Linux unless the env says 0.
    default_on = platform.system() == "Linux" and platform.machine() in ("x86_64", "AMD64")
    active = built and (env not in ("0", "false", "False") if env is not None else default_on)
    return {
        "built_with_onednn": built,
        "TF_ENABLE_ONEDNN_OPTS": env,
        "onednn_opts_in_use": active,
        "built_with_xla": bool(port.IsBuiltWithXLA()),
    }


@dataclass
class TFData:
    """The dataset as TF tensors, on the host: tf.data pipelines run on the CPU and
    Keras copies each batch to the model's device, so host is where an expert keeps
    training data. Test images also go to the device in `prepare_infer`."""

    x_train: Any  # a tensor, or name -> tensor for named inputs (dlbench.datasets.inputs)
    y_train: Any  # a tensor, or head -> tensor for several named outputs (dlbench.heads)
    x_test: Any
    y_test: Any
    input_shape: Any
    num_classes: Any
    device: str


class TensorFlowFramework:
    name = "tensorflow"
    variants = tuple(VARIANTS)
    default_variant = "graph"

    def __init__(self) -> None:
        self.variant = self.default_variant
        self.device = "/CPU:0"
        self.autotune = True  # tf.data's default; runtime autotune-off turns it off

    def setup(
        self, *, variant: str, threads: int, seed: int, device: str, runtime: tuple[str, ...] = ()
    ) -> dict[str, Any]:
        if variant not in VARIANTS:
            raise ValueError(f"unknown tensorflow variant {variant!r}; known: {', '.join(VARIANTS)}")
        if keras.backend.backend() != "tensorflow":
            raise RuntimeError(
                f"keras was imported with backend {keras.backend.backend()!r} "
                "before this adapter; the tensorflow adapter needs a fresh process"
            )
        self.variant = variant
        self.device = _device_name(device)
        # All of the following must happen before TF's runtime initializes (the
        # first op or device listing); a repeated setup() only records them.
        hidden_gpus = None
        if self.device.startswith("/CPU"):
            try:
                tf.config.set_visible_devices([], "GPU")  # no silent GPU use on a cpu run
                hidden_gpus = True
            except RuntimeError:
                hidden_gpus = False
        threads_info = _set_threads(threads, "interop-fixed" in runtime)
        self.autotune = "autotune-off" not in runtime
        tf.config.experimental.enable_tensor_float_32_execution(False)
        keras.config.set_floatx("float32")
        keras.utils.set_random_seed(seed)
        logical = [d.name for d in tf.config.list_logical_devices()]
        gpus = [d.name for d in tf.config.list_logical_devices("GPU")]
        if self.device.startswith("/GPU") and not gpus:
            raise RuntimeError(
                f"device {device!r} requested but TensorFlow sees no GPU (cuda build: {tf.test.is_built_with_cuda()})"
            )
        build = dict(tf.sysconfig.get_build_info())
        return {
            "framework": self.name,
            "variant": variant,
            "versions": {"tensorflow": tf.__version__, "keras": keras.__version__},
            "keras_backend": keras.backend.backend(),
            **threads_info,
            "default_dtype": keras.config.floatx(),
            "tf32_enabled": tf.config.experimental.tensor_float_32_execution_enabled(),
            "device": self.device,
            "devices": logical,
            "gpu": bool(gpus),
            "gpus_hidden_for_cpu_run": hidden_gpus,
            **VARIANTS[variant],
            "inference_function": (
                "model(x, training=False) called eagerly"
                if variant == "eager"
                else f"tf.function(model(x, training=False), jit_compile={VARIANTS[variant]['jit_compile']})"
            ),
            "first_step": "model.fit on a one-batch dataset (traces the train function fit reuses)",
            "data_pipeline": "tf.data from in-memory tensors: shuffle(len(train), seed, reshuffle each "
            "epoch) -> batch(drop_remainder=True) [-> repeat() for steps] -> "
            + (
                "prefetch(AUTOTUNE), tf.data autotune on (its default)"
                if self.autotune
                else f"prefetch({PREFETCH}), tf.data autotune off (runtime autotune-off)"
            ),
            "last_batch": "drop (train, infer); included in evaluate",
            "build_info": {k: build[k] for k in sorted(build) if k.startswith(("is_", "cuda", "cudnn"))},
            "onednn": _onednn_facts(),
            "env": {
                k: os.environ.get(k)
                for k in (
                    "TF_CPP_MIN_LOG_LEVEL",
                    "XLA_FLAGS",
                    "TF_XLA_FLAGS",
                    "TF_ENABLE_ONEDNN_OPTS",
                    "KERAS_BACKEND",
                    "OMP_NUM_THREADS",
                )
            },
            # Not enabled (it can slow kernels); same-seed CPU runs already agree to 1e-5.
            "op_determinism": False,
        }

    def _memory_device(self) -> str:
        return self.device.strip("/").replace("device:", "")

    def reset_memory_peak(self) -> None:
        try:
            tf.config.experimental.reset_memory_stats(self._memory_device())
        except (ValueError, RuntimeError):
            pass  # the device keeps no allocator statistics; memory_peak() says so

    def memory_peak(self) -> tuple[int | None, str]:
        """Peak of TF's allocator on the trial's device since the last reset."""
        device = self._memory_device()
        try:
            return int(
                tf.config.experimental.get_memory_info(device)["peak"]
            ), f"tf.config.experimental.get_memory_info({device!r})['peak']"
        except (ValueError, RuntimeError) as exc:
            return None, f"TensorFlow keeps no allocator statistics for {device}: {exc}"

    def prepare(self, arrays: Arrays) -> TFData:
        with tf.device("/CPU:0"):
            return TFData(
                x_train=xs.apply(tf.constant, arrays.train.x),
                y_train=xs.apply(tf.constant, arrays.train.y),
                x_test=xs.apply(tf.constant, arrays.test.x),
                y_test=xs.apply(np.asarray, arrays.test.y),
                input_shape=arrays.input_shape,
                num_classes=arrays.num_classes,
                device=self.device,
            )

    def build(self, native: TFData, settings: TrainSettings) -> KerasTrainer:
        augment = None
        if settings.pipeline != "preloaded":
            native, augment = self._pipeline(native, settings)
        trainer = KerasTrainer(native, settings, self.variant, autotune=self.autotune)
        trainer.augment = augment
        return trainer

    def _pipeline(self, native: TFData, settings: TrainSettings) -> tuple[TFData, Any]:
        """Normalized test data and an epoch -> tf.data.Dataset function for the chosen
        pipeline ("native": dlbench.pipelines.tensorflow, a tf.data map/batch/prefetch
        pipeline; "numpy": the shared host pipeline wrapped with from_generator)."""
        from dataclasses import replace

        from dlbench.pipelines import numpy as np_pipeline
        from dlbench.pipelines import tensorflow as tf_pipeline
        from dlbench.pipelines.cache import prepared
        from dlbench.pipelines.params import epoch_params

        if xs.is_named(native.input_shape) or len(native.input_shape) != 3:
            raise ValueError(f"pipeline {settings.pipeline}: augmentation needs image input")

        def build(stats):
            graph = tf_pipeline.Augmenter(stats.mean, stats.std)
            with tf.device("/CPU:0"):
                return graph, replace(native, x_test=graph.normalize(native.x_test))

        aug = self._aug = prepared(getattr(self, "_aug", None), native, lambda: native.x_train.numpy(), build)
        stats, host, graph, normalized = aug.stats, aug.host, aug.augmenter, aug.normalized
        b, seed, n = settings.batch_size, settings.seed, int(native.x_train.shape[0])
        if settings.pipeline == "native":

            def dataset(epoch: int) -> tf.data.Dataset:
                return graph.epoch_batches(native.x_train, native.y_train, epoch_params(seed, epoch, n), b)
        else:
            on_host = np_pipeline.Augmenter(stats.mean, stats.std)
            y_host = native.y_train.numpy()
            h, w, c = native.input_shape
            spec = (tf.TensorSpec((b, h, w, c), tf.float32), tf.TensorSpec((b,), tf.int64))

            def dataset(epoch: int) -> tf.data.Dataset:
                params = epoch_params(seed, epoch, n)
                return tf.data.Dataset.from_generator(
                    lambda: on_host.epoch_batches(host, y_host, params, b), output_signature=spec
                ).prefetch(tf.data.AUTOTUNE)

        return normalized, dataset


def _optimizer(settings: TrainSettings) -> keras.optimizers.Optimizer:
    if settings.optimizer == "sgd":
        return keras.optimizers.SGD(learning_rate=settings.lr, momentum=settings.momentum)
    # Keras' own epsilon default is 1e-7; the matched setting overrides it. Keras adds
    # epsilon to the bias-*uncorrected* sqrt(v) (the paper's "epsilon hat"), torch and
    # optax to the corrected one: at step t Keras' effective epsilon is
    # eps / sqrt(1 - 0.999**t) (31.6x at t=1, 1.26x at t=1000). Only the value is
    # matched; the formula is each framework's own.
    return keras.optimizers.Adam(learning_rate=settings.lr, beta_1=0.9, beta_2=0.999, epsilon=settings.adam_epsilon)


class StepLosses(keras.callbacks.Callback):
    """Records the training loss of each of the first `steps` optimizer steps of fit
    (across epochs and across several fit calls that share this callback).

    Keras 3 hands on_train_batch_end the loss tracker's running mean over the epoch
    (a float32 total / count, reset at each epoch's start), so the loss of the k-th
    batch of an epoch (k from 0) is (k + 1) * m_k - k * m_{k-1}, differenced in
    float64 after training. Its error is that of the float32 means: about k ulps of
    the loss (at 16 steps and a loss near 2.3, up to ~4e-6).

    Cost: `async_safe` keeps Keras' default asynchronous dispatch of batch-end hooks
    (its executor thread turns the logs into floats for the History callback on every
    step anyway, loss_curve or not); without it Keras would read the loss on the main
    thread after every step, a host sync inside the timed loop. The hook only stores
    that float, so the training loop itself does not change.
    """

    async_safe = True

    def __init__(self, steps: int) -> None:
        super().__init__()
        self.steps = steps
        self._offset = 0  # optimizer steps of earlier epochs
        self._last_batch = -1  # highest batch index of the current epoch
        self._means: dict[int, tuple[int, float]] = {}  # step -> (batch in its epoch, running mean)
        # Batch-end hooks may run concurrently on Keras' executor threads (in any order);
        # Keras waits for all of them before on_epoch_end.
        self._lock = threading.Lock()

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        with self._lock:
            self._last_batch = max(self._last_batch, batch)
            step = self._offset + batch
            if step < self.steps and logs is not None and "loss" in logs:
                self._means[step] = (batch, float(logs["loss"]))

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        with self._lock:
            self._offset += self._last_batch + 1
            self._last_batch = -1

    def losses(self) -> list[float]:
        return losses_from_running_means([self._means[step] for step in range(min(self.steps, len(self._means)))])


def losses_from_running_means(means: list[tuple[int, float]]) -> list[float]:
    """Per-step losses from consecutive steps' (batch index in its epoch, Keras'
    running mean of the epoch's losses so far): (k + 1) * m_k - k * m_{k-1}."""
    out: list[float] = []
    previous = 0.0
    for batch, mean in means:
        out.append((batch + 1) * mean - batch * (previous if batch else 0.0))
        previous = mean
    return out


class KerasTrainer:
    """One compiled Keras model, its optimizer and its training dataset."""

    def __init__(self, data: TFData, settings: TrainSettings, variant: str, autotune: bool = True) -> None:
        self.data = data
        self.autotune = autotune
        self.settings = settings
        self.variant = variant
        self.options = VARIANTS[variant]
        spec = model_spec(settings)
        self.task = spec.task
        # Framework-default passes no initializer at all, so Keras' layer defaults apply
        # (glorot_uniform kernels and zero biases, as it happens).
        init = _GLOROT if settings.init == "glorot-uniform" else {}
        # The seed fixes the initializers, dropout's SeedGenerators (Keras draws them
        # from its global RNG at layer creation) and TF's global seed for tf.data.
        keras.utils.set_random_seed(settings.seed)
        # bf16-mixed: Keras' own mixed-precision policy (bfloat16 compute, float32
        # variables), set while the layers are created (each keeps the policy it was
        # built with) and restored at once so that no other trial inherits it.
        policy = "mixed_bfloat16" if settings.precision == "bf16-mixed" else "float32"
        # TensorFloat-32 for precision tf32 only (setup switched it off: float32 means
        # float32); a process-wide switch, and each trial is a process of its own.
        tf.config.experimental.enable_tensor_float_32_execution(settings.precision == "tf32")
        previous = keras.config.dtype_policy()
        keras.config.set_dtype_policy(policy)
        try:
            with tf.device(data.device):
                self.model, note = call_builder(
                    spec, "tensorflow", data.input_shape, data.num_classes, settings.model_options, init
                )
        finally:
            keras.config.set_dtype_policy(previous)
        if not isinstance(self.model, keras.Model):
            raise BuilderError(
                f"model {spec.name}: the tensorflow builder returned a {type(self.model).__name__}, not a keras.Model"
            )
        # What the manifest must say about this network (an init scheme its builder could not take).
        self.facts: dict[str, Any] = {"init_note": note} if note else {}
        if settings.init == "glorot-uniform" and not spec.builtin:
            # A user's builder may take the init keywords and still leave layers at Keras'
            # defaults (or take none): the scheme is applied to every layer with weights
            # after the build, and what it could not reach is named (the zoo's builders
            # pass the keywords to every layer).
            from dlbench.frameworks.keras_init import glorot_uniform_

            with tf.device(data.device):
                self.facts = glorot_uniform_(self.model, seed=settings.seed).as_facts()
        if settings.precision == "tf32":
            self.facts["tf32_enabled"] = tf.config.experimental.tensor_float_32_execution_enabled()
        with tf.device(data.device):
            own = spec.loss_function("tensorflow")
            if spec.heads and own is not None:
                _own_heads_loss(self.model, own)
            self.model.compile(
                optimizer=_optimizer(settings),
                loss=_training_loss(spec),
                # Several outputs: Keras sums the heads' batch-mean losses with these weights.
                loss_weights=dict(spec.loss_weights) if spec.heads and own is None else None,
                jit_compile=self.options["jit_compile"],
                run_eagerly=self.options["run_eagerly"],
            )
            # Create the optimizer's slots now, so that first_step's snapshot covers
            # every optimizer variable (momenta, Adam moments, the iteration count).
            self.model.optimizer.build(self.model.trainable_variables)
        self.train_ds = self._train_dataset()
        # epoch -> that epoch's tf.data.Dataset, when an augmentation pipeline runs.
        self.augment: Any = None
        self._epochs_done = 0
        self._batches: list[tf.Tensor] = []
        self._batch_size = 0
        self._forward = self._make_forward()
        # The first settings.loss_curve step losses of the last train() call.
        self._curve_values: list[float] = []

    # -- data ---------------------------------------------------------------------

    def _train_dataset(self) -> tf.data.Dataset:
        s, n = self.settings, xs.rows(self.data.x_train)
        ds = tf.data.Dataset.from_tensor_slices((self.data.x_train, self.data.y_train))
        if s.shuffle:
            ds = ds.shuffle(n, seed=s.seed, reshuffle_each_iteration=True)
        ds = ds.batch(s.batch_size, drop_remainder=True)
        if s.steps is not None:
            ds = ds.repeat()  # cycle through reshuffled epochs until `steps` are done
        if self.autotune:
            return ds.prefetch(tf.data.AUTOTUNE)  # what a plain script writes
        # Runtime autotune-off: the pipeline is a shuffle and a batch of tensors in memory,
        # with nothing to tune, and autotune's background thread stalled fit() by ~310 ms
        # at the end of 2 in 8 calls (the iterator's deletion waits for it: one
        # TFE_DeleteTensorHandle in the profile, no op running; ResNet-18 at batch 16,
        # 8 steps, 297-626 ms a call with it, 262-328 ms in 8 of 8 without).
        options = tf.data.Options()
        options.autotune.enabled = False
        return ds.prefetch(PREFETCH).with_options(options)

    def _first_batch(self) -> tuple[tf.Tensor, tf.Tensor]:
        b = self.settings.batch_size
        return xs.take(self.data.x_train, slice(None, b)), xs.take(self.data.y_train, slice(None, b))

    # -- training -----------------------------------------------------------------

    def manifest(self) -> dict[str, Any]:
        return dict(self.facts)

    def parameter_count(self) -> int:
        return int(sum(np.prod(v.shape) for v in self.model.trainable_weights))

    def first_step(self) -> None:
        model, opt = self.model, self.model.optimizer
        # model.variables, not get_weights(): it includes dropout's SeedGenerator state.
        weights = [v.numpy() for v in model.variables]
        slots = [v.numpy() for v in opt.variables]
        # Why fit and not train_on_batch: both go through model.train_function, but
        # train_on_batch feeds one_step_on_data an (x, y, None) tuple from a Python
        # generator, while fit feeds it (x, y) from a tf.data iterator inside a second
        # tf.function (multi_step_on_iterator). Different input structure -> fit
        # retraces anyway (keras 3.15 backend/tensorflow/trainer.py; measured on
        # LeNet-5: the first fit after train_on_batch took +0.2 s in graph mode and
        # +2.6 s with XLA). A one-batch fit on a dataset with the same element_spec
        # traces both functions exactly as train() will call them.
        x, y = self._first_batch()
        one = tf.data.Dataset.from_tensor_slices((x, y)).batch(self.settings.batch_size, drop_remainder=True)
        if self.augment is not None:  # the pipeline's element_spec, so train() does not retrace
            one = self.augment(0).take(1)
        with tf.device(self.data.device):
            history = model.fit(one, epochs=1, shuffle=False, verbose=0)
        float(history.history["loss"][0])  # host read: the step has finished
        for v, value in zip(model.variables, weights):
            v.assign(value)
        for v, value in zip(opt.variables, slots):
            v.assign(value)  # includes `iterations`, so Adam's bias correction restarts

    def step_losses(self) -> list[float]:
        """The training loss of each of the first `settings.loss_curve` steps of the
        last train() call ([] when loss_curve is 0)."""
        return list(self._curve_values)

    def _recorder(self) -> StepLosses | None:
        """The step-loss callback when loss_curve is on; None leaves fit's callbacks
        exactly as they are without it."""
        return StepLosses(self.settings.loss_curve) if self.settings.loss_curve else None

    def train(self) -> list[float]:
        s = self.settings
        # shuffle=False: the dataset shuffles itself (fit's flag is ignored for a
        # tf.data.Dataset and would only print a warning).
        if self.augment is not None:
            return self._train_augmented()
        recorder = self._recorder()
        callbacks = [recorder] if recorder is not None else None
        with tf.device(self.data.device):
            if s.steps is not None:
                history = self.model.fit(
                    self.train_ds, epochs=1, steps_per_epoch=s.steps, shuffle=False, verbose=0, callbacks=callbacks
                )
            else:
                history = self.model.fit(self.train_ds, epochs=s.epochs, shuffle=False, verbose=0, callbacks=callbacks)
        self._curve_values = recorder.losses() if recorder is not None else []
        # Per-epoch mean of the batch losses (Keras' loss tracker, equal batch sizes).
        return [float(v) for v in history.history["loss"]]

    def _train_augmented(self) -> list[float]:
        """One fit per epoch on that epoch's pipeline (its draws are seeded per epoch);
        fit reuses its compiled train function across datasets of one element_spec."""
        s = self.settings
        n = xs.rows(self.data.x_train)
        per_epoch = s.steps_per_epoch(n)
        remaining, losses, weighted = s.total_steps(n), [], 0.0
        # One recorder across the per-epoch fits: it counts steps over all of them.
        recorder = self._recorder()
        callbacks = [recorder] if recorder is not None else None
        while remaining > 0:
            steps = min(per_epoch, remaining)
            with tf.device(self.data.device):
                history = self.model.fit(
                    self.augment(self._epochs_done),
                    epochs=1,
                    steps_per_epoch=steps,
                    shuffle=False,
                    verbose=0,
                    callbacks=callbacks,
                )
            loss = float(history.history["loss"][0])
            losses.append(loss)
            weighted += loss * steps
            remaining -= steps
            self._epochs_done += 1
        self._curve_values = recorder.losses() if recorder is not None else []
        return losses if s.steps is None else [weighted / s.total_steps(n)]

    def train_fixed_batch(self, steps: int) -> list[float]:
        x, y = self._first_batch()
        losses = []
        with tf.device(self.data.device):
            for _ in range(steps):
                # train_on_batch reports the loss of this step's forward pass, computed
                # before apply_gradients: the loss *before* the step, as wanted.
                logs = self.model.train_on_batch(x, y, return_dict=True)
                losses.append(float(logs["loss"]))
        return losses

    # -- evaluation and inference -------------------------------------------------

    def evaluate(self) -> Any:
        # The model.evaluate idiom without compiling an accuracy metric into the
        # training step (which would add work to every timed step): predict over
        # every test sample, partial last batch included, then compare on the host.
        test = tf.data.Dataset.from_tensor_slices(self.data.x_test).batch(self.settings.batch_size)
        if self.task == "regress":
            return self.test_loss()
        if self.task == "multi-output":
            from dlbench import heads

            with tf.device(self.data.device):
                outputs = self.model.predict(test, verbose=0)  # a dict head -> (N, ...) array
            return heads.scores(model_spec(self.settings), outputs, self.data.y_test)
        if self.task != "classify":
            return self._evaluate_sequences(test)
        with tf.device(self.data.device):
            logits = self.model.predict(test, verbose=0)
        return float(np.mean(np.argmax(logits, axis=1) == self.data.y_test))

    def test_loss(self) -> float:
        """The task's loss over the whole test split (partial last batch included), each
        sample weighted equally: the mean error (regress), the mean cross-entropy per
        token (next-token, the log of the perplexity); not a user's training loss."""
        y = self.data.y_test
        b = self.settings.batch_size
        spec = model_spec(self.settings)
        loss = _loss(spec.task, spec.loss)
        total = 0.0
        with tf.device(self.data.device):
            for start in range(0, len(y), b):
                out = self.model(xs.take(self.data.x_test, slice(start, start + b)), training=False)
                yb = y[start : start + b]
                total += float(loss(yb, tf.reshape(out, yb.shape) if self.task == "regress" else out)) * len(yb)
        return total / len(y)

    def _evaluate_sequences(self, test: tf.data.Dataset) -> float:
        """Token top-1 accuracy (next-token) or 1 - CER of greedy decoding (ctc).

        Per-position logits of a whole test split can be GiBs (N x T x vocab),
        so only the per-position argmax comes back to the host, batch by batch,
        from a function of its own (not `_forward`, whose trace the timed
        inference uses and which a partial batch would retrace).
        """
        model = self.model

        def best(x: tf.Tensor) -> tf.Tensor:
            return tf.argmax(model(x, training=False), axis=-1, output_type=tf.int32)

        if not self.options["run_eagerly"]:
            best = tf.function(best, jit_compile=self.options["jit_compile"])
        with tf.device(self.data.device):
            paths = np.concatenate([best(x).numpy() for x in test])
        if self.task == "ctc":
            return ctc_accuracy(paths, self.data.y_test)
        return float(np.mean(paths == self.data.y_test))

    def _make_forward(self) -> Callable[[tf.Tensor], tf.Tensor]:
        """The forward pass used by infer and predict_batch. Not model.predict: it
        builds a data adapter, an epoch iterator and callbacks on every call and
        concatenates through numpy, a fixed per-call cost that would dominate the
        batch-1 latency (LeNet-5, batch 1, this machine: predict 75 ms per call,
        predict_on_batch 0.92 ms, this function 0.68 ms). A tf.function around model(x, training=False) is the
        documented fast path for small batches ("use __call__ for small inputs");
        it follows the variant: graph, XLA (jit_compile=True), or plain eager."""
        model = self.model

        def forward(x: tf.Tensor) -> tf.Tensor:
            return model(x, training=False)

        if self.options["run_eagerly"]:
            return forward
        return tf.function(forward, jit_compile=self.options["jit_compile"], reduce_retracing=True)

    def prepare_infer(self, batch_size: int) -> int:
        n = xs.rows(self.data.x_test) // batch_size
        with tf.device(self.data.device):
            # tf.identity under the device scope copies each batch onto the device.
            self._batches = [
                xs.apply(tf.identity, xs.take(self.data.x_test, slice(i * batch_size, (i + 1) * batch_size)))
                for i in range(n)
            ]
            if self._batches:
                # Trace/compile the forward for this shape here, untimed, so that
                # infer() and predict_batch() measure the steady state (a fresh model
                # per repeat means a fresh tf.function per repeat).
                _host(self._forward(self._batches[0]))
        self._batch_size = batch_size
        return n

    def _check_prepared(self, batch_size: int) -> None:
        if batch_size != self._batch_size:
            raise RuntimeError(f"prepare_infer({batch_size}) was not called (prepared batch size: {self._batch_size})")

    def infer(self, batch_size: int) -> int:
        self._check_prepared(batch_size)
        with tf.device(self.data.device):
            outputs = [self._forward(x) for x in self._batches]
        for out in outputs:
            _host(out)  # host read of every result: the predictions exist, work is done
        return len(outputs) * batch_size

    def predict_batch(self, batch_size: int, index: int) -> None:
        self._check_prepared(batch_size)
        with tf.device(self.data.device):
            _host(self._forward(self._batches[index]))
