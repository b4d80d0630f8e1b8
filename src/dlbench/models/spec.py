"""Framework-neutral model specifications.

A spec states what a network is (its layers, in words and as a parameter-count
formula) independently of any framework, so that the conformance tests can
check that the PyTorch, TensorFlow and JAX implementations are the same network.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

Shape = tuple[int, int, int]  # (H, W, C)


@dataclass(frozen=True)
class ModelSpec:
    name: str
    description: str
    # "nn": trained by gradient descent in a deep-learning framework;
    # "classical": a scikit-learn estimator (no epochs, no batches).
    kind: str
    # Frameworks with an implementation (module dlbench.models.<name>.<framework>).
    frameworks: tuple[str, ...]
    # Trainable parameters for (input shape, classes); None for classical models.
    param_count: Callable[[Shape, int], int] | None = None
    # None if the model can take this input, else the reason it cannot.
    check_input: Callable[[Shape], str | None] = lambda shape: None
    # Published reference counts: ((H, W, C), classes) -> trainable parameters.
    reference_counts: dict[tuple[Shape, int], int] = field(default_factory=dict)

    def unsupported_reason(self, framework: str, shape: Shape, plugin_models: tuple[str, ...] = ()) -> str | None:
        if framework not in self.frameworks and self.name not in plugin_models:
            return f"{framework} has no implementation of {self.name} (implemented in: {', '.join(self.frameworks)})"
        return self.check_input(shape)


def conv_out(size: int, kernel: int, padding: int = 0, stride: int = 1) -> int:
    """Output length of a convolution or pooling window along one axis."""
    return (size + 2 * padding - kernel) // stride + 1


def dense_params(fan_in: int, units: int) -> int:
    return fan_in * units + units


def conv_params(in_ch: int, out_ch: int, kernel: int) -> int:
    return kernel * kernel * in_ch * out_ch + out_ch
