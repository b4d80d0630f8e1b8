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

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

# One sample's shape: (H, W, C) for images, (T,) for token sequences,
# (T, F) for spectrogram frames.
Shape = tuple[int, ...]

INPUT_KINDS = ("image", "tokens", "spectrogram")
# classify: logits (N, classes) vs labels (N,); next-token: logits (N, T, vocab)
# vs labels (N, T); ctc: logits (N, T', alphabet) vs padded label sequences.
TASKS = ("classify", "next-token", "ctc")


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
    tiny_shape: Shape | None = None
    input_kind: str = "image"
    task: str = "classify"
    # Non-image models: (sample shape, classes) of the synthetic dataset for the
    # resolved options, e.g. lstm -> ((35,), vocab). Image models use [synthetic].
    synthetic_data: Callable[[Mapping[str, Any]], tuple[Shape, int]] | None = None
    # keras.applications constructor with the same architecture, when there is one,
    # e.g. "VGG16"; the conformance suite compares trainable counts with it.
    keras_application: str | None = None

    def __post_init__(self) -> None:
        if self.input_kind not in INPUT_KINDS:
            raise ValueError(f"{self.name}: input_kind {self.input_kind!r} is not one of {', '.join(INPUT_KINDS)}")
        if self.task not in TASKS:
            raise ValueError(f"{self.name}: task {self.task!r} is not one of {', '.join(TASKS)}")
        unknown = set(self.tiny_options) - set(self.options)
        if unknown:
            raise ValueError(f"{self.name}: tiny_options {sorted(unknown)} are not options")

    def unsupported_reason(self, framework: str, shape: Shape, plugin_models: tuple[str, ...] = ()) -> str | None:
        if framework not in self.frameworks and self.name not in plugin_models:
            return f"{framework} has no implementation of {self.name} (implemented in: {', '.join(self.frameworks)})"
        return self.check_input(shape)

    def resolve_options(self, given: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Defaults overlaid with `given`; an unknown name or a value of the wrong type is an error."""
        resolved = dict(self.options)
        for key, value in (given or {}).items():
            if key not in self.options:
                allowed = ", ".join(sorted(self.options)) or "none"
                raise ValueError(f"model {self.name} has no option {key!r} (options: {allowed})")
            default = self.options[key]
            if isinstance(default, bool) != isinstance(value, bool) or (
                    default is not None and not isinstance(value, type(default))
                    and not (isinstance(default, float) and isinstance(value, int))):
                raise ValueError(f"model {self.name} option {key!r} must be "
                                 f"{type(default).__name__} like its default {default!r}, got {value!r}")
            resolved[key] = value
        return resolved

    def count(self, shape: Shape, classes: int, options: Mapping[str, Any] | None = None) -> int:
        """Trainable parameters of this model for `shape`, `classes` and `options`."""
        if self.param_count is None:
            raise ValueError(f"{self.name} is not a neural network: it has no parameter count")
        return self.param_count(shape, classes, **self.resolve_options(options))


def conv_out(size: int, kernel: int, padding: int = 0, stride: int = 1) -> int:
    """Output length of a convolution or pooling window along one axis."""
    return (size + 2 * padding - kernel) // stride + 1


def same_out(size: int, stride: int) -> int:
    """Output length of a 'same'-padded convolution or pooling with `stride`."""
    return -(-size // stride)


def dense_params(fan_in: int, units: int) -> int:
    return fan_in * units + units


def conv_params(in_ch: int, out_ch: int, kernel: int, bias: bool = True, groups: int = 1) -> int:
    return kernel * kernel * (in_ch // groups) * out_ch + (out_ch if bias else 0)


def batchnorm_params(channels: int) -> int:
    """Trainable parameters of a batch norm (scale and shift); running statistics are not parameters."""
    return 2 * channels
