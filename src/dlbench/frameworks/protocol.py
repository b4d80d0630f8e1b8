"""The contract every framework adapter fulfils (a Protocol, not a base class).

A worker process imports exactly one adapter module. The generic phase code
(`dlbench.trial.phases`) drives it like this, once per trial:

    fw = TorchFramework()
    manifest = fw.setup(variant="eager", threads=2, seed=0, device="cpu")
    native = fw.prepare(arrays)                 # host -> framework tensors, untimed
    for repeat in range(warmup + repeats):
        trainer = fw.build(native, settings_for(repeat))   # fresh model, repeat's seed
        trainer.first_step()        # compile / trace / first step, timed apart;
                                    # leaves the model exactly as freshly built
        losses = trainer.train()    # the configured epochs or steps, timed
        acc = trainer.evaluate()    # top-1 test accuracy
        trainer.prepare_infer(b)    # batches for inference, untimed
        trainer.infer(b)            # one pass over the test set, timed
        trainer.predict_batch(b, i) # one batch, timed per call (latency)

Every method that runs device work returns only after that work is finished
(`torch.cuda.synchronize()`, `block_until_ready()`, a host read of the TF
result): the caller reads its clock right after the call returns.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

from dlbench.datasets.arrays import Arrays
from dlbench.protocol_settings import Protocol as _Declared

INITS = ("framework-default", "glorot-uniform")
OPTIMIZERS = ("sgd", "adam")
LAST_BATCH = ("drop",)


@dataclass(frozen=True)
class TrainSettings:
    """Everything that decides what one repeat trains; all of it is recorded.

    Exactly one of `epochs` and `steps` is set. With `steps`, the data is
    cycled (reshuffled each pass) until that many optimizer steps are done.
    `init` is `framework-default` (each framework's own initializers) or
    `glorot-uniform` (Glorot/Xavier-uniform kernels, zero biases, identical
    in every framework). Adam uses `adam_epsilon` everywhere (1e-8, torch's
    and optax's default; Keras' own default 1e-7 is overridden).
    The partial last batch is dropped in every framework (a smaller batch
    would trigger a recompile in torch.compile, XLA and JAX).
    """

    model: str
    batch_size: int
    # Defaults are the protocol's and the matrix's (dlbench.protocol_settings, config.MATRIX_DEFAULTS).
    epochs: int | None = _Declared.epochs
    steps: int | None = _Declared.steps
    optimizer: str = "sgd"
    lr: float = 0.01
    momentum: float = _Declared.momentum
    adam_epsilon: float = 1e-8
    init: str = "glorot-uniform"
    seed: int = _Declared.seed
    shuffle: bool = True
    last_batch: str = "drop"
    # The model's options (depth, width, preset...), resolved against its spec's
    # defaults; passed to every framework's builder as keyword arguments.
    model_options: dict[str, Any] = field(default_factory=dict)
    # "float32", "tf32" (float32 tensors, TensorFloat-32 matmuls and convolutions on
    # NVIDIA GPUs) or "bf16-mixed" (bfloat16 compute, float32 weights, optimizer and loss).
    precision: str = "float32"
    # "native", "channels-last" or "channels-first" (image models; see dlbench.plan.layout_reason).
    layout: str = "native"
    # Training-data pipeline: "preloaded" (device tensors, shuffle only), or CIFAR-style
    # augmentation (pad-4 random crop, horizontal flip, per-channel normalization)
    # written in the framework's own ops ("native") or as the shared numpy pipeline ("numpy").
    pipeline: str = "preloaded"
    # Record the global training loss of each of the first `loss_curve` steps (0: off),
    # read back by the trainer's step_losses() after train(); on in a distributed
    # scenario for every case alike, so that loss curves can be compared step by step.
    loss_curve: int = 0
    # The model's spec (dlbench.models.spec.ModelSpec) as the worker's registry resolved it,
    # the user's own included; None: the built-in model called `model`. Not a setting.
    spec: Any = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if (self.epochs is None) == (self.steps is None):
            raise ValueError("set exactly one of epochs and steps")
        if self.init not in INITS:
            raise ValueError(f"init {self.init!r} is not one of {', '.join(INITS)}")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer {self.optimizer!r} is not one of {', '.join(OPTIMIZERS)}")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        del out["spec"]
        return out

    def steps_per_epoch(self, n_train: int) -> int:
        """Full batches in one pass over n_train samples (last partial batch dropped)."""
        return n_train // self.batch_size

    def total_steps(self, n_train: int) -> int:
        if self.steps is not None:
            return self.steps
        assert self.epochs is not None
        return self.epochs * self.steps_per_epoch(n_train)


@runtime_checkable
class Trainer(Protocol):
    """One freshly built model with its optimizer and compiled step functions."""

    def parameter_count(self) -> int:
        """Trainable parameters (batch-norm running statistics are not parameters)."""
        ...

    def first_step(self) -> None:
        """Trace/compile and run one training step on the first batch, synchronized,
        then restore weights and optimizer state to what `build` produced, so that
        `train()` follows the same trajectory as if `first_step` had never run."""
        ...

    def train(self) -> list[float]:
        """Train for the configured epochs/steps; return the mean training loss of
        each epoch (for `steps`, one value for the whole run). Synchronized."""
        ...

    def evaluate(self) -> float:
        """Top-1 accuracy on the test split, in [0, 1]."""
        ...

    def prepare_infer(self, batch_size: int) -> int:
        """Cut the test split into batches of `batch_size` on the device (untimed);
        return the number of full batches."""
        ...

    def infer(self, batch_size: int) -> int:
        """Forward pass over every prepared batch; return samples processed. Synchronized."""
        ...

    def predict_batch(self, batch_size: int, index: int) -> None:
        """Forward pass over prepared batch `index` only. Synchronized."""
        ...

    def train_fixed_batch(self, steps: int) -> list[float]:
        """Conformance helper: `steps` optimizer steps on the first training batch,
        returning the loss before each step."""
        ...


@runtime_checkable
class Framework(Protocol):
    """A framework adapter. Its module imports the framework at top level and is
    imported only in a worker; the parent reads the static facts (name, variants,
    distribution names) from `dlbench.frameworks.FRAMEWORKS` instead."""

    name: str
    variants: tuple[str, ...]
    default_variant: str

    def setup(
        self, *, variant: str, threads: int, seed: int, device: str, runtime: tuple[str, ...] = ()
    ) -> dict[str, Any]:
        """Import the framework, set threads, seeds, float32 and the variant's
        settings; return the fairness manifest entries that were set (versions,
        threads, precision, compiler settings, library build info). `runtime`: the
        names of dlbench.runtime_settings the case imposes; an adapter applies those
        it implements in-process (interop-fixed, autotune-off) and leaves every other
        setting at the framework's default (malloc-fixed is the worker's environment)."""
        ...

    def prepare(self, arrays: Arrays) -> Any:
        """Move the dataset into framework-native form (untimed). Returns a handle
        passed to `build`."""
        ...

    def build(self, native: Any, settings: TrainSettings) -> Trainer:
        """A fresh model and optimizer initialized from `settings.seed`."""
        ...
