"""The built-in frameworks: static facts the parent needs without importing anything heavy.

Availability is decided with `importlib.util.find_spec` and versions are read
from installed distribution metadata, so `dlbench list` and `dlbench plan`
never import torch, tensorflow or jax. Adapters (`dlbench.frameworks.<name>`)
are imported only inside worker processes. Plugins (the `dlbench.frameworks`
entry-point group) are added by `dlbench.registry.frameworks()`.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FrameworkInfo:
    name: str
    variants: tuple[str, ...]
    default_variant: str
    modules: tuple[str, ...]  # import names that must be present
    distributions: tuple[str, ...]  # installed distributions whose versions are recorded
    install_hint: str
    adapter: str  # "module:Class" of the adapter
    in_default_suite: bool = True
    # Models a plugin implements beyond those whose spec lists this framework.
    models: tuple[str, ...] = ()

    def missing_modules(self) -> list[str]:
        return [m for m in self.modules if importlib.util.find_spec(m) is None]

    def unavailable_reason(self) -> str | None:
        missing = self.missing_modules()
        if missing:
            return f"{self.name} is not installed (missing: {', '.join(missing)}; {self.install_hint})"
        return None

    def versions(self) -> dict[str, str]:
        out = {}
        for dist in self.distributions:
            try:
                out[dist] = importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                out[dist] = "not installed"
        return out

    def load_adapter(self) -> Any:
        module, _, attr = self.adapter.partition(":")
        return getattr(importlib.import_module(module), attr)()


FRAMEWORKS: dict[str, FrameworkInfo] = {
    info.name: info
    for info in (
        FrameworkInfo(
            "torch",
            ("eager", "compile"),
            "eager",
            ("torch",),
            ("torch",),
            "pip install torch==2.13.0",
            "dlbench.frameworks.torch:TorchFramework",
        ),
        FrameworkInfo(
            "tensorflow",
            ("graph", "xla", "eager"),
            "graph",
            ("tensorflow", "keras"),
            ("tensorflow-cpu", "tensorflow", "keras"),
            "pip install tensorflow-cpu==2.21.0",
            "dlbench.frameworks.tensorflow:TensorFlowFramework",
        ),
        FrameworkInfo(
            "jax",
            ("jit",),
            "jit",
            ("jax", "flax", "optax"),
            ("jax", "jaxlib", "flax", "optax"),
            "pip install jax==0.10.2 jaxlib==0.10.2 flax optax",
            "dlbench.frameworks.jax:JaxFramework",
        ),
        FrameworkInfo(
            "sklearn",
            ("default",),
            "default",
            ("sklearn",),
            ("scikit-learn",),
            "pip install scikit-learn",
            "dlbench.frameworks.sklearn:SklearnFramework",
        ),
        FrameworkInfo(
            "numpy",
            ("reference",),
            "reference",
            ("numpy",),
            ("numpy",),
            "pip install numpy",
            "dlbench.frameworks.numpy:NumpyFramework",
            in_default_suite=False,
        ),
    )
}
