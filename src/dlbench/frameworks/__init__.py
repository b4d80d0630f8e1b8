"""The built-in frameworks: static facts the parent needs without importing anything heavy.

Availability is decided with `importlib.util.find_spec` and versions are read
from installed distribution metadata, so `dlbench list` and `dlbench plan`
never import torch, tensorflow or jax. Adapters (`dlbench.frameworks.<name>`)
are imported only inside worker processes. Plugins (the `dlbench.frameworks`
entry-point group) are added by `dlbench.registry.frameworks()`.

A framework's capabilities are declared here, on its `FrameworkInfo`, and nowhere
else: its variants, its data-parallel strategies (each with the module that
implements it and how its processes are launched), its profiler, the layouts,
precisions, input pipelines, devices and runtime settings it has, how its
parameters are counted and how `dlbench check` probes it. Code outside this
package asks these fields ("does this framework have strategy X?") and never
matches a framework's name, so a plugin declares the same things a built-in does.
Everything is a plain value or a "module:attr" string: reading it imports nothing.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
from dataclasses import dataclass
from typing import Any

LAUNCHERS = ("in-process", "multiprocess")


@dataclass(frozen=True)
class Limit:
    """A combination a strategy refuses: cases of `variant` ("" for any) on `device`
    ("" for any) are skipped with `reason` (plan says "strategy S: <reason>")."""

    reason: str
    variant: str = ""
    device: str = ""

    def applies(self, variant: str, device: str) -> bool:
        return self.variant in ("", variant) and self.device in ("", device)


@dataclass(frozen=True)
class Strategy:
    """A data-parallel strategy a framework implements (see dlbench.distributed).

    module: implements it in the worker (`setup(fw, ctx, **runtime)`,
    `build(fw, native, settings, ctx)`, `shutdown`; see dlbench.frameworks.torch_dist),
    imported only there. launcher: "in-process" (one process holds every replica) or
    "multiprocess" (one rank process per replica, dlbench.launchers.multiprocess).
    environment: "module:function" (ctx, inherited env) -> the variables a rank
    process starts with, set before the framework is imported (must import no
    framework); "" for none. port_per_rank: every rank listens on a port of its own
    (TensorFlow's workers); else all meet at rank 0's. limits: what it refuses."""

    name: str
    module: str
    launcher: str = "in-process"
    environment: str = ""
    port_per_rank: bool = False
    limits: tuple[Limit, ...] = ()

    @property
    def multiprocess(self) -> bool:
        return self.launcher == "multiprocess"


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
    # -- capabilities (module-level docstring) --
    # Data-parallel strategies beyond "single" (which every framework has).
    strategies: tuple[Strategy, ...] = ()
    # The module of its profiler for `explain` (`record(train)` and `RULES`, see
    # dlbench.explain.profile_torch); None: not profiled.
    profiler: str | None = None
    # Memory layouts it can be asked for beyond "native"; refused_layouts: (layout,
    # why) for those it refuses with a reason of its own.
    layouts: tuple[str, ...] = ()
    refused_layouts: tuple[tuple[str, str], ...] = ()
    precisions: tuple[str, ...] = ("float32",)
    pipelines: tuple[str, ...] = ("preloaded",)  # input pipelines (config.PIPELINES)
    devices: tuple[str, ...] = ("cpu", "cuda")
    # Runtime settings it applies in-process (dlbench.runtime_settings), beyond those
    # every framework has.
    runtime_settings: tuple[str, ...] = ()
    # It builds a model's network from the model's builder for it (spec.builder(name)):
    # a user's dlbench.Model may give it one.
    networks: bool = False
    # "module:function" (spec, shape, classes, options) -> trainable parameters of the
    # model as it builds it, run in a subprocess of its own by dlbench.param_counts.
    param_counter: str | None = None
    # "module:attr" of the probe's hooks for `dlbench check` (forward, export, load;
    # see dlbench.conformance.hooks).
    conformance: str | None = None
    # (device, setting, value): the value it is known to run fastest with on a device,
    # which `explain`'s ablation tries where A and B agree (dlbench.explain.ablation).
    best_known: tuple[tuple[str, str, str], ...] = ()

    def strategy(self, name: str) -> Strategy | None:
        """Its declared strategy `name` (None for "single" and strategies it lacks)."""
        return next((s for s in self.strategies if s.name == name), None)

    def has_strategy(self, name: str) -> bool:
        return name == "single" or self.strategy(name) is not None

    def layout_refusal(self, layout: str) -> str | None:
        return dict(self.refused_layouts).get(layout)

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
        return load(self.adapter)()


def load(target: str) -> Any:
    """The object a "module:attr" string names (the module alone without ":attr")."""
    module, colon, attr = target.partition(":")
    imported = importlib.import_module(module)
    return getattr(imported, attr) if colon else imported


# What the three deep-learning frameworks share.
_NN_PRECISIONS = ("float32", "tf32", "bf16-mixed")
_NN_PIPELINES = ("preloaded", "native", "numpy")
_TF_XLA_CPU = Limit(
    "TensorFlow's XLA variant does not run distributed on a CPU here (mirrored: 'Trying to access "
    "resource ... located in device CPU:1 from device CPU:0'; multiworker: the all-reduce does not "
    "convert to XLA); use variant graph or eager",
    variant="xla",
    device="cpu",
)
_ENV = "dlbench.distributed.environ"


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
            strategies=(
                Strategy(
                    "ddp",
                    "dlbench.frameworks.torch_dist",
                    launcher="multiprocess",
                    environment=f"{_ENV}:torch_rendezvous",
                ),
                Strategy(
                    "dp",
                    "dlbench.frameworks.torch_dist",
                    limits=(
                        Limit(
                            "torch DataParallel splits a batch over GPUs, and with no device ids it just "
                            "calls the module; this run's device is cpu (use ddp)",
                            device="cpu",
                        ),
                    ),
                ),
            ),
            profiler="dlbench.explain.profile_torch",
            layouts=("channels-first", "channels-last"),
            param_counter="dlbench.frameworks.counting:torch_count",
            conformance="dlbench.conformance.hooks:TORCH",
            best_known=(
                ("cpu", "variant", "compile"),  # inductor's fused C++ kernels
                ("cpu", "layout", "channels-last"),  # oneDNN's convolutions are NHWC-native
                ("cpu", "pipeline", "preloaded"),
                ("cuda", "variant", "compile"),
                ("cuda", "layout", "channels-last"),  # tensor-core convolutions want NHWC
                ("cuda", "precision", "bf16-mixed"),
                ("cuda", "pipeline", "preloaded"),
            ),
            precisions=_NN_PRECISIONS,
            pipelines=_NN_PIPELINES,
            networks=True,
            runtime_settings=("interop-fixed",),
        ),
        FrameworkInfo(
            "tensorflow",
            ("graph", "xla", "eager"),
            "graph",
            ("tensorflow", "keras"),
            ("tensorflow-cpu", "tensorflow", "keras"),
            "pip install tensorflow-cpu==2.21.0",
            "dlbench.frameworks.tensorflow:TensorFlowFramework",
            strategies=(
                Strategy("mirrored", "dlbench.frameworks.tensorflow_dist", limits=(_TF_XLA_CPU,)),
                Strategy(
                    "multiworker",
                    "dlbench.frameworks.tensorflow_dist",
                    launcher="multiprocess",
                    environment=f"{_ENV}:tf_config",
                    port_per_rank=True,
                    limits=(_TF_XLA_CPU,),
                ),
            ),
            profiler="dlbench.explain.profile_tensorflow",
            layouts=("channels-last",),
            refused_layouts=(
                (
                    "channels-first",
                    "Keras convolutions here take channels-last (NHWC) input (TensorFlow's CPU kernels "
                    "have no NCHW convolution); use layout native or channels-last",
                ),
            ),
            param_counter="dlbench.frameworks.counting:keras_count",
            conformance="dlbench.conformance.hooks:KERAS",
            best_known=(
                ("cpu", "variant", "xla"),  # XLA's fusion
                ("cpu", "pipeline", "preloaded"),
                ("cuda", "variant", "xla"),
                ("cuda", "precision", "bf16-mixed"),
                ("cuda", "pipeline", "preloaded"),
            ),
            precisions=_NN_PRECISIONS,
            pipelines=_NN_PIPELINES,
            networks=True,
            runtime_settings=("interop-fixed", "autotune-off"),
        ),
        FrameworkInfo(
            "jax",
            ("jit",),
            "jit",
            ("jax", "flax", "optax"),
            ("jax", "jaxlib", "flax", "optax"),
            "pip install jax==0.10.2 jaxlib==0.10.2 flax optax",
            "dlbench.frameworks.jax:JaxFramework",
            strategies=(
                Strategy(
                    "multiworker",
                    "dlbench.frameworks.jax_dist",
                    launcher="multiprocess",
                ),
                Strategy("sharded", "dlbench.frameworks.jax_dist", environment=f"{_ENV}:xla_host_devices"),
            ),
            profiler="dlbench.explain.profile_jax",
            layouts=("channels-last",),
            refused_layouts=(
                (
                    "channels-first",
                    "Flax's Conv takes NHWC input and XLA chooses the physical layout itself; "
                    "use layout native or channels-last",
                ),
            ),
            param_counter="dlbench.frameworks.counting:flax_count",
            conformance="dlbench.conformance.hooks:FLAX",
            best_known=(
                ("cpu", "pipeline", "preloaded"),
                ("cuda", "precision", "bf16-mixed"),
                ("cuda", "pipeline", "preloaded"),
            ),
            precisions=_NN_PRECISIONS,
            pipelines=_NN_PIPELINES,
            networks=True,
        ),
        FrameworkInfo(
            "sklearn",
            ("default",),
            "default",
            ("sklearn",),
            ("scikit-learn",),
            "pip install scikit-learn",
            "dlbench.frameworks.sklearn:SklearnFramework",
            devices=("cpu",),
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
            devices=("cpu",),
        ),
    )
}
