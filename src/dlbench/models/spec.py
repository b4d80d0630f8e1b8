"""Framework-neutral model specifications.

A spec states what a network is (its layers, in words and as a parameter-count
formula) independently of any framework, so that the conformance tests can
check that the PyTorch, TensorFlow and JAX implementations are the same network.

Models may take options (depth, width, hidden size, a named preset): a spec
lists them with their defaults, and every framework's builder receives the
resolved options as keyword arguments. `tiny_options` is a small configuration
of the same code, used by the conformance suite so that every framework x
model trains in CI; the full-size counts are checked without training.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

# One sample's shape, channels last: (H, W, C) for images, (L, C) for series
# (1-D signals), (D, H, W, C) for volumes, (T,) for token sequences, (T, F) for
# spectrogram frames, (F,) for feature vectors. Each framework receives its own
# layout (torch channels-first; Keras and Flax channels-last as stored).
Shape = tuple[int, ...]

INPUT_KINDS = ("image", "series", "volume", "tokens", "spectrogram", "features", "named")
# classify: logits (N, classes) vs labels (N,); regress: outputs (N, K) vs float
# targets (N, K); next-token: logits (N, T, vocab) vs labels (N, T); ctc: logits
# (N, T', alphabet) vs padded label sequences.
# multi-output: a user's model of several named heads (dlbench.heads), each classify or
# regress, the outputs a dict name -> output, the targets a dict name -> targets.
TASKS = ("classify", "regress", "next-token", "ctc", "multi-output")
# Units of the regression losses (and of the error stored as their quality).
LOSS_UNITS = {"mse": "squared target units", "mae": "target units"}
# The losses each task may minimize (the first is its default).
TASK_LOSSES = {
    "classify": ("cross-entropy",),
    "regress": ("mse", "mae"),
    "next-token": ("cross-entropy",),
    "ctc": ("ctc",),
    # The weighted sum of the heads' batch-mean losses (each head's loss: head_losses).
    "multi-output": ("sum",),
}


def short_repr(value: Any, limit: int = 60) -> str:
    """repr(value) cut to `limit` characters, for one-line error messages (a fuzzed
    value can be a megabyte string or a table nested a thousand levels deep)."""
    try:
        text = repr(value)
    except RecursionError:
        return f"<{type(value).__name__} nested too deeply to show>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True)
class OptionRange:
    """The values a numeric model option (or each element of a tuple option) may take.

    Checked when an experiment is parsed, so that a value no worker can build
    (a negative width, a NaN dropout) is refused with its range instead of
    failing inside a framework later."""

    kind: type  # int or float
    low: float
    high: float
    low_open: bool = False  # (low, ... rather than [low, ...
    high_open: bool = False  # ..., high) rather than ..., high]
    why: str = ""  # the reason for the bounds, shown with them

    def contains(self, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if self.kind is int and not isinstance(value, int):
            return False
        if isinstance(value, float) and not math.isfinite(value):
            return False
        above = value > self.low if self.low_open else value >= self.low
        below = value < self.high if self.high_open else value <= self.high
        return above and below

    def describe(self, plural: bool = False) -> str:
        what = (
            ("integers" if plural else "an integer")
            if self.kind is int
            else ("finite numbers" if plural else "a finite number")
        )
        low, high = (f"{b:g}" if isinstance(b, float) else str(b) for b in (self.low, self.high))
        text = f"{what} in {'(' if self.low_open else '['}{low}, {high}{')' if self.high_open else ']'}"
        return f"{text} ({self.why})" if self.why else text


# Sizes (units, channels, vocabulary, sequence length): the batch_size bound. Beyond
# 2**20 no framework here builds the layer; below it an oversized model fails as
# out-of-memory, which is a stored result.
WIDTH = OptionRange(int, 1, 2**20)
# Depths (layers, blocks, convolutions per stage): the deepest published networks
# have about a thousand layers (ResNet-1001).
DEPTH = OptionRange(int, 1, 1024)
# Dropout, stochastic depth, batch-norm momentum (Keras/Flax convention): 1 would
# drop everything, or never update the running statistics.
FRACTION = OptionRange(float, 0.0, 1.0, high_open=True)
# Width and depth multipliers (MobileNet, EfficientNet, Inception).
MULTIPLIER = OptionRange(float, 0.0, 16.0, low_open=True)


@dataclass(frozen=True)
class ModelSpec:
    name: str
    description: str
    # "nn": trained by gradient descent in a deep-learning framework;
    # "classical": a scikit-learn estimator (no epochs, no batches).
    kind: str
    # Frameworks with an implementation (module dlbench.models.<name>.<framework>).
    frameworks: tuple[str, ...]
    # Trainable parameters for (input shape, classes, **options); None for classical models.
    param_count: Callable[..., int] | None = None
    # None if the model can take this input, else the reason it cannot.
    check_input: Callable[[Shape], str | None] = lambda shape: None
    # Published reference counts at the default options: ((shape), classes) -> trainable parameters.
    reference_counts: dict[tuple[Shape, int], int] = field(default_factory=dict)
    # Where the reference counts come from (paper, torchvision, keras.applications).
    reference_source: str = ""
    # Option name -> default value; builders take them as keyword arguments.
    options: Mapping[str, Any] = field(default_factory=dict)
    # A small configuration of the same code for the conformance suite (CI).
    tiny_options: Mapping[str, Any] = field(default_factory=dict)
    # Input for the conformance suite's training tests; None: the suite's image defaults.
    tiny_shape: Any = None
    input_kind: str = "image"
    # input_kind "named": name -> the kind of each input (a user's model of several inputs).
    inputs: Mapping[str, str] = field(default_factory=dict)
    task: str = "classify"
    # task "multi-output": head name -> its task (classify or regress), in the model's order;
    # head name -> its loss (one of TASK_LOSSES[task]); head name -> its weight in the sum.
    heads: Mapping[str, str] = field(default_factory=dict)
    head_losses: Mapping[str, str] = field(default_factory=dict)
    loss_weights: Mapping[str, float] = field(default_factory=dict)
    # Non-image models: (sample shape, classes) of the synthetic dataset for the
    # resolved options, e.g. lstm -> ((35,), vocab). Image models use [synthetic].
    synthetic_data: Callable[[Mapping[str, Any]], tuple[Shape, int]] | None = None
    # keras.applications constructor with the same architecture, when there is one,
    # e.g. "VGG16"; the conformance suite compares trainable counts with it.
    keras_application: str | None = None
    # Allowed values of numeric options (each element, for a tuple option). Integer
    # and integer-tuple options default to WIDTH; float options and options whose
    # default is None must declare theirs (or their choices).
    option_ranges: Mapping[str, OptionRange] = field(default_factory=dict)
    # String options: the allowed values.
    option_choices: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    # Rules across options (transformer: hidden divisible by heads): raises ValueError.
    check_options: Callable[[Mapping[str, Any]], None] | None = None
    # framework -> its builder: a callable or a "module:attr" string. Empty for the
    # built-ins, whose builders are `build` in dlbench.models.<name>.<framework>.
    builders: Mapping[str, Any] = field(default_factory=dict)
    # framework -> the training loss a user gives for it (a callable or "module:attr"):
    # loss(outputs, targets) -> the batch's mean, in that framework's tensors. Empty: the
    # task's own loss (`loss`). The task's quality metric is computed as without it.
    losses: Mapping[str, Any] = field(default_factory=dict)
    # What is minimized: softmax cross-entropy of the logits (classify), per token
    # (next-token) or CTC for the zoo; mean squared or absolute error (regress).
    loss: str = "cross-entropy"
    # Where the spec comes from, shown by `dlbench list`: "built-in", "plugin <dist>",
    # or the file / module the user named.
    origin: str = "built-in"

    def __post_init__(self) -> None:
        if self.input_kind not in INPUT_KINDS:
            raise ValueError(f"{self.name}: input_kind {self.input_kind!r} is not one of {', '.join(INPUT_KINDS)}")
        if self.task not in TASKS:
            raise ValueError(f"{self.name}: task {self.task!r} is not one of {', '.join(TASKS)}")
        if self.task in ("regress",) and self.loss not in TASK_LOSSES[self.task]:
            allowed = " or ".join(TASK_LOSSES[self.task])
            raise ValueError(f"{self.name}: a {self.task} model minimizes {allowed}, not {self.loss!r}")
        if (self.task == "multi-output") != bool(self.heads) or set(self.head_losses) != set(self.heads):
            raise ValueError(f"{self.name}: a multi-output model names its heads, each with a loss, and only it does")
        unknown = set(self.tiny_options) - set(self.options)
        if unknown:
            raise ValueError(f"{self.name}: tiny_options {sorted(unknown)} are not options")
        undeclared = set(self.option_ranges) | set(self.option_choices)
        if undeclared - set(self.options):
            raise ValueError(
                f"{self.name}: ranges or choices for {sorted(undeclared - set(self.options))}, which are not options"
            )
        for key, default in self.options.items():
            if key in self.option_choices or isinstance(default, bool):
                continue
            if self.option_range(key) is None:
                raise ValueError(
                    f"{self.name}: option {key!r} (default {default!r}) needs a declared range "
                    "(option_ranges) or choices (option_choices)"
                )
        # The defaults and the CI configuration must pass the checks a user's values pass.
        self.resolve_options(self.options)
        self.resolve_options(self.tiny_options)

    @property
    def builtin(self) -> bool:
        return self.origin == "built-in"

    @property
    def quality(self) -> tuple[str, str]:
        """(metric, unit) of the test-set quality the worker stores in phase "accuracy":
        accuracy (a fraction; token accuracy for next-token, 1 - CER for ctc), or for
        regress the test error under the model's loss."""
        if self.task == "regress":
            return (self.loss, LOSS_UNITS[self.loss])
        return ("accuracy", "fraction")

    def head_quality(self, head: str) -> tuple[str, str]:
        """(metric, unit) of one head's quality, the metric naming the head
        ("accuracy/kind", "mse/price"; dlbench.heads)."""
        from dlbench import heads

        if self.heads[head] == "regress":
            loss = self.head_losses[head]
            return heads.metric(loss, head), LOSS_UNITS[loss]
        return heads.metric("accuracy", head), "fraction"

    @property
    def loss_unit(self) -> str:
        """The unit of the training loss the worker stores ("" for a user's own loss)."""
        if self.losses:
            return ""
        if self.task == "multi-output":
            return "total of the heads' weighted losses"
        return LOSS_UNITS.get(self.loss, "nats") if self.task == "regress" else "nats"

    def builder(self, framework: str) -> Callable[..., Any]:
        """The function that builds this network in `framework` (imports it: call this
        in a worker, or in a process that may import the framework)."""
        import importlib

        target = self.builders.get(framework) if self.builders else f"dlbench.models.{self.name}.{framework}:build"
        if target is None:
            raise KeyError(f"model {self.name} has no {framework} builder (builders: {', '.join(self.builders)})")
        if callable(target):
            return target
        module, _, attr = str(target).partition(":")
        return getattr(importlib.import_module(module), attr or "build")

    def loss_function(self, framework: str) -> Callable[..., Any] | None:
        """The user's training loss for `framework` (imported: call it in a worker), or None."""
        import importlib

        target = self.losses.get(framework)
        if target is None or callable(target):
            return target
        module, _, attr = str(target).partition(":")
        return getattr(importlib.import_module(module), attr)

    def option_range(self, key: str) -> OptionRange | None:
        """The declared range of a numeric option, WIDTH for an undeclared integer (or
        integer-tuple) option, None for the rest (strings with choices, booleans)."""
        if key in self.option_ranges:
            return self.option_ranges[key]
        default = self.options[key]
        if (isinstance(default, int) and not isinstance(default, bool)) or (
            isinstance(default, tuple) and default and all(type(v) is int for v in default)
        ):
            return WIDTH
        return None

    def _checked(self, key: str, value: Any) -> Any:
        """`value` for option `key`, normalized (a list for a tuple option becomes a
        tuple), or ValueError naming the option and what it allows."""
        default = self.options[key]
        said = f"model {self.name} option {key!r} = {short_repr(value)}"
        if key in self.option_choices:
            choices = self.option_choices[key]
            if isinstance(value, bool) or not any(value == c and type(value) is type(c) for c in choices):
                raise ValueError(f"{said}: allowed: {', '.join(map(str, choices))}")
            return value
        rng = self.option_range(key)
        if isinstance(default, tuple) and rng is not None:
            if (
                not isinstance(value, list | tuple)
                or len(value) != len(default)
                or not all(rng.contains(v) for v in value)
            ):
                raise ValueError(
                    f"{said}: must be a list of {len(default)} {rng.describe(plural=True)}, "
                    f"like its default {list(default)}"
                )
            return tuple(value)
        if rng is not None:
            if value is None and default is None:
                return None
            if not rng.contains(value):
                unset = " (or left out)" if default is None else ""
                raise ValueError(f"{said}: must be {rng.describe()}{unset}")
            return value
        if isinstance(default, bool) != isinstance(value, bool) or (
            default is not None and not isinstance(value, type(default))
        ):
            raise ValueError(
                f"model {self.name} option {key!r} must be "
                f"{type(default).__name__} like its default {default!r}, got {short_repr(value)}"
            )
        return value

    def unsupported_reason(self, framework: str, shape: Shape, plugin_models: tuple[str, ...] = ()) -> str | None:
        if framework not in self.frameworks and self.name not in plugin_models:
            if not self.builtin:
                return f"{self.name} has no {framework} builder (builders: {', '.join(self.frameworks)})"
            return f"{framework} has no implementation of {self.name} (implemented in: {', '.join(self.frameworks)})"
        if self.builtin and self.kind != "classical" and self.input_kind == "image" and len(shape) != 3:
            # Checked first: every built-in image network's own check (and builder) unpacks
            # (H, W, C); knn takes any sample shape, a user's model says what it takes.
            return (
                f"{self.name} takes images, (H, W, C) per sample; this dataset's samples have shape "
                f"{tuple(shape)} (feature vectors or sequences): use a model for them"
            )
        reason = self.check_input(shape)
        return f"{self.name} {reason}" if reason and not self.builtin else reason

    def resolve_options(self, given: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Defaults overlaid with `given`, normalized (lists become tuples). An unknown
        name, a value of the wrong type or outside its range, or options that do not
        fit together (check_options) is a ValueError naming the option."""
        resolved = dict(self.options)
        for key, value in (given or {}).items():
            if key not in self.options:
                allowed = ", ".join(sorted(self.options)) or "none"
                raise ValueError(f"model {self.name} has no option {short_repr(key)} (options: {allowed})")
            resolved[key] = self._checked(key, value)
        if self.check_options is not None:
            self.check_options(resolved)
        return resolved

    def count(self, shape: Shape, classes: int, options: Mapping[str, Any] | None = None) -> int:
        """Trainable parameters of this model for `shape`, `classes` and `options`."""
        if self.param_count is None:
            what = "is not a neural network" if self.kind == "classical" else "declares no parameter-count formula"
            raise ValueError(f"{self.name} {what}: it has no parameter count")
        return self.param_count(shape, classes, **self.resolve_options(options))


def conv_out(size: int, kernel: int, padding: int = 0, stride: int = 1) -> int:
    """Output length of a convolution or pooling window along one axis."""
    return (size + 2 * padding - kernel) // stride + 1


def dense_params(fan_in: int, units: int) -> int:
    return fan_in * units + units


def conv_params(in_ch: int, out_ch: int, kernel: int, bias: bool = True, groups: int = 1) -> int:
    return kernel * kernel * (in_ch // groups) * out_ch + (out_ch if bias else 0)


def batchnorm_params(channels: int) -> int:
    """Trainable parameters of a batch norm (scale and shift); running statistics are not parameters."""
    return 2 * channels
