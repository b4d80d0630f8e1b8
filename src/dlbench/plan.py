"""Experiment -> ordered trials (and the cells skipped, each with its reason).

A `Case` is the frozen identity of one experiment cell; its `key` is a hash of
its canonical JSON, so the same cell has the same key in every run and on every
machine (the idea of torch.utils.benchmark's TaskSpec). Trials are laid out in
blocks: each block runs every runnable case once, in a random order drawn from
the experiment's seed, so that drift on a noisy machine hits every framework
alike and block-wise pairs exist for paired tests.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import random
from dataclasses import asdict, dataclass, field
from typing import Any

from dlbench import registry, runtime_settings
from dlbench.config import FACTORS, Experiment, distinct, kept_grid


@dataclass(frozen=True)
class Case:
    framework: str
    variant: str
    model: str
    dataset: str
    batch_size: int
    init: str
    optimizer: str
    lr: float
    momentum: float
    epochs: int | None
    steps: int | None
    device: str
    threads: int
    precision: str = "float32"
    seed: int = 0
    train_samples: int = 0
    test_samples: int = 0
    # Only for dataset "synthetic": [*sample shape, classes, train_size, test_size].
    synthetic: tuple[int, ...] | None = None
    # The sweep's input size (square image side or sequence length); 0: the dataset's own.
    input_shape: int = 0
    layout: str = "native"
    pipeline: str = "preloaded"
    # The model's options as (name, value) pairs, sorted (hashable); a dict in as_dict().
    model_options: tuple[tuple[str, object], ...] = ()
    # How training is spread (dlbench.distributed). `threads` is per replica: a case
    # at world size N uses N x threads cores whatever its strategy, so that a
    # speed-up is measured against a single process that had the same threads each.
    strategy: str = "single"
    world_size: int = 1
    batch_scope: str = "global"  # is batch_size the global batch or each replica's?
    # The runtime settings dlbench imposed (dlbench.runtime_settings): "defaults" for
    # none, as a plain script runs the framework, or their names joined by "+".
    runtime: str = runtime_settings.DEFAULTS

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["model_options"] = dict(self.model_options)
        # Left out at their defaults, so that every case stored before distributed
        # training existed keeps its key (resume and comparisons across runs match on it).
        for name, default in DISTRIBUTION_DEFAULTS.items():
            if d[name] == default:
                del d[name]
        # A case stored before `runtime` existed ran with the legacy set and has no such
        # field: the same case now keeps that key (runtime_settings.complete reads it back).
        if d["runtime"] == runtime_settings.LEGACY:
            del d["runtime"]
        return d

    @property
    def distributed(self) -> bool:
        return self.strategy != "single"

    @property
    def global_batch(self) -> int:
        """The batch of one optimizer step over all replicas."""
        return self.batch_size * self.world_size if self.batch_scope == "per-replica" else self.batch_size

    @property
    def key(self) -> str:
        canonical = json.dumps(self.as_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]


DISTRIBUTION_DEFAULTS: dict[str, Any] = {"strategy": "single", "world_size": 1, "batch_scope": "global"}


@dataclass(frozen=True)
class Trial:
    case: Case
    block: int  # 0-based block (interleaving round)
    position: int  # order inside the block


@dataclass(frozen=True)
class Skipped:
    cell: dict[str, Any]
    reason: str


@dataclass
class Plan:
    experiment: Experiment
    trials: list[Trial] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    # Cells that pair a framework with another framework's strategy, or a one-device
    # strategy with several replicas: not cells of this experiment at all, so neither
    # run nor listed as skipped (a matrix of 3 frameworks x 6 strategies would
    # otherwise list two dozen of them).
    not_applicable: int = 0

    @property
    def cases(self) -> list[Case]:
        return list(dict.fromkeys(t.case for t in self.trials))


def physical_cores() -> int:
    """One thread per physical core, but never more than the cores this process may
    run on (its affinity, which workers inherit): a container or `taskset` can allow
    fewer cores than the machine has, and more threads than cores oversubscribe."""
    import psutil

    physical = psutil.cpu_count(logical=False) or os.cpu_count() or 1
    try:
        return max(1, min(physical, len(os.sched_getaffinity(0))))
    except (AttributeError, OSError):
        return physical


def _cell_key(cell: dict[str, Any]) -> Any:
    try:
        return tuple(cell[k] for k in FACTORS)
    except TypeError:  # pragma: no cover - factor values are scalars; a list would not hash
        return json.dumps(cell, sort_keys=True)


def _cells(exp: Experiment) -> list[dict[str, Any]]:
    """The matrix's cells less the excluded ones, then the included ones, each once, in
    the matrix's order. An exclusion marks a box (the product of its values' positions)
    in a boolean grid over the matrix, so its cost is the cells it names, not cells x
    rules; a cell is built only if it survives."""
    import numpy as np

    full = {k: distinct(exp.matrix[k]) for k in FACTORS}
    shape = tuple(len(full[k]) for k in FACTORS)
    survives = kept_grid(full, exp.exclude)
    cells: dict[Any, dict[str, Any]] = {}
    kept = np.unravel_index(np.flatnonzero(survives.ravel()), shape)
    columns = [[full[k][i] for i in positions.tolist()] for k, positions in zip(FACTORS, kept, strict=True)]
    for combo in zip(*columns, strict=True):
        cell = dict(zip(FACTORS, combo, strict=True))
        cells.setdefault(_cell_key(cell), cell)
    for inc in exp.include:
        values = [inc.get(k, exp.matrix[k]) for k in FACTORS]
        for combo in itertools.product(*values):
            cell = dict(zip(FACTORS, combo, strict=True))
            cells.setdefault(_cell_key(cell), cell)
    return list(cells.values())


def synthetic_sample(exp: Experiment, spec: Any, options: dict[str, Any], size: int) -> tuple[tuple[int, ...], int]:
    """(sample shape, classes) of the synthetic data for one cell: [synthetic] for
    image models, with H = W = size when the cell sets an input size; the model's
    own synthetic_data for sequence models, with the sequence length = size."""
    s = exp.synthetic
    if spec.input_kind == "image" or spec.synthetic_data is None:
        shape = (size, size, s.shape[2]) if size else tuple(s.shape)
        return shape, s.classes
    shape, classes = spec.synthetic_data(options)
    return ((size, *shape[1:]) if size else tuple(shape)), classes


# A task and the labels it can learn from ("classes" may serve as regression values:
# counts and ratings are integers).
TASK_TARGETS = {"classify": ("classes",), "regress": ("values", "classes"), "next-token": ("next-token",)}


def heads_reason(spec: Any, dataset: str, held: str, heads: dict[str, str]) -> str | None:
    """Why a model of several outputs cannot learn from this dataset's targets (or a model
    of one output from a dataset of several), or None: the heads by name, each's targets."""
    if spec.task != "multi-output":
        return (
            f"{spec.name} has one output; {dataset} holds one y per named output ({', '.join(heads)}): give it "
            "y_train, y_test, or declare outputs={name: task} in dlbench.Model"
        )
    if held != "heads":
        return (
            f"{spec.name} has outputs {', '.join(spec.heads)}; {dataset} holds one y: save y_train_<name> and "
            "y_test_<name> for each output"
        )
    if set(heads) != set(spec.heads):
        return f"{spec.name} has outputs {', '.join(spec.heads)}; {dataset}'s are {', '.join(heads)}"
    for head, task in spec.heads.items():
        if heads[head] not in TASK_TARGETS[task]:
            return (
                f"{spec.name}'s output {head} is a {task} head; {dataset}'s y_train_{head} holds float regression "
                "targets: give it integer class ids (N,)"
            )
    return None


def task_reason(spec: Any, dataset: str, sources: Any) -> str | None:
    """Why the model's task cannot learn from this dataset's labels, or None."""
    if dataset == "synthetic" and spec.task == "multi-output":
        return f"{spec.name} has outputs {', '.join(spec.heads)}; synthetic data has one: give it a .npz of yours"
    if dataset == "synthetic" or (spec.task not in TASK_TARGETS and spec.task != "multi-output"):
        return None
    data = registry.dataset(dataset, sources)
    held = data.targets
    if spec.task == "multi-output" or held == "heads":
        return heads_reason(spec, dataset, held, dict(data.head_targets))
    if held in TASK_TARGETS[spec.task]:
        return None
    said = {
        "classes": "class ids (N,)",
        "values": "float regression targets",
        "next-token": "next-token ids (N, T)",
    }[held]
    want = {
        "classify": "integer class ids (N,) in y",
        "regress": "float targets (N,) or (N, K) in y",
        "next-token": "y (N, T): the next token of each position of x",
    }[spec.task]
    return f"{spec.name} is a {spec.task} model; {dataset}'s y holds {said}: give it {want}"


# Memory layouts a framework cannot be asked for (None: allowed): what its
# FrameworkInfo declares (layouts, refused_layouts).
def layout_reason(framework: str, layout: str, input_kind: str) -> str | None:
    if layout == "native":
        return None
    if input_kind != "image":
        return f"layout {layout} concerns image tensors; this model takes {input_kind}"
    info = registry.framework(framework)
    refusal = info.layout_refusal(layout)
    if refusal is not None:
        return f"{framework}: {refusal}"
    if not info.layouts:
        return f"{framework} has no layout setting"
    if layout not in info.layouts:
        return f"{framework} has no layout {layout}; it has native, {', '.join(info.layouts)}"
    return None


# Precisions a case cannot run in (None: allowed). What runs must be what is recorded:
# a framework or device without the math mode refuses it rather than run float32.
def precision_reason(framework: str, precision: str, device: str, classical: bool) -> str | None:
    if precision == "float32":
        return None
    have = registry.framework(framework).precisions
    if classical or not set(have) - {"float32"}:
        return f"precision {precision}: {framework} has no mixed-precision or TF32 mode here; use float32 (the default)"
    if precision not in have:
        return f"precision {precision}: {framework} has {', '.join(have)} here"
    if precision == "tf32" and not device.startswith("cuda"):
        return (
            "precision tf32 is the TensorFloat-32 math mode of NVIDIA GPUs (Ampere and later); on "
            f"{device} float32 is what would run: use float32"
        )
    return None


def pipeline_reason(framework: str, pipeline: str, input_kind: str, shape: tuple[int, ...]) -> str | None:
    if pipeline == "preloaded":
        return None
    have = registry.framework(framework).pipelines
    if not set(have) - {"preloaded"}:
        return f"{framework} has no augmentation pipeline (pipeline {pipeline})"
    if pipeline not in have:
        return f"{framework} has no pipeline {pipeline} (it has {', '.join(have)})"
    if input_kind != "image":
        return f"pipeline {pipeline} augments images (crop, flip); this model takes {input_kind}"
    if min(shape[:2]) <= 8:
        return f"pipeline {pipeline}: a pad-4 crop of a {shape[0]}x{shape[1]} image would be mostly padding"
    return None


def device_reason(framework: str, device: str) -> str | None:
    """A device the framework does not declare (FrameworkInfo.devices)."""
    have = registry.framework(framework).devices
    if device in have:
        return None
    if tuple(have) == ("cpu",):
        return f"{framework} runs on the CPU only; device {device!r} is not supported"
    return f"{framework} has no device {device!r} (it runs on {', '.join(have)})"


def strategy_applies(framework: str, strategy: str, world_size: int) -> bool:
    """False for a cell that is no experiment: another framework's strategy, or
    `single` with more than one replica."""
    from dlbench.registry import has_strategy

    return has_strategy(framework, strategy) and not (strategy == "single" and world_size > 1)


def strategy_reason(
    framework: str,
    strategy: str,
    world_size: int,
    classical: bool,
    device: str,
    global_batch: int,
    variant: str = "",
) -> str | None:
    """Why this framework cannot run this strategy at this world size (None: it can)."""
    from dlbench.registry import has_strategy, strategies

    known = strategies()
    if not has_strategy(framework, strategy):
        have = [s for s in known if has_strategy(framework, s)]
        owners = " and ".join(known[strategy][0])
        return f"strategy {strategy} is {owners}'s; {framework} has {', '.join(have)}"
    declared = registry.framework(framework).strategy(strategy)
    if declared is None:  # single
        if world_size > 1:
            return f"strategy single is one process on one device; world size {world_size} needs a data-parallel one"
        return None
    if classical:
        return f"strategy {strategy} trains a network data-parallel; this model is a classical one"
    for limit in declared.limits:
        if limit.applies(variant, device):
            return f"strategy {strategy}: {limit.reason}"
    if global_batch % world_size:
        return f"global batch {global_batch} does not split evenly over {world_size} replicas"
    return None


def oversubscription_reason(world_size: int, threads: int, cores: int) -> str | None:
    """Replicas x threads per replica above the cores a trial may use: an OpenMP pool
    that waits at each barrier for a descheduled thread runs tens of times slower
    (docs/design.md, "A busy core collapses an OpenMP pool"), so such a case is refused."""
    if world_size * threads > cores:
        return (
            f"oversubscribed: {world_size} replicas x {threads} threads = {world_size * threads} > {cores} cores "
            f"this run may use; set --threads {max(1, cores // world_size)} or a smaller world size"
        )
    return None


def expand(exp: Experiment) -> Plan:
    """The trials an experiment asks for, in execution order, and the skipped cells."""
    p = exp.protocol
    cores = physical_cores()
    # Threads per replica: one per core for a run on one process; in a run with world
    # sizes up to N, cores // N for every case, single baselines included, so that a
    # speed-up compares equal threads per process (torchrun would set 1 by default).
    largest_world = max((max(v.get("world_size", exp.matrix["world_size"])) for v in exp.include), default=1)
    largest_world = max(largest_world, *exp.matrix["world_size"])
    threads = p.threads or max(1, cores // largest_world)
    plan = Plan(exp)
    frameworks = registry.frameworks()
    runnable: list[Case] = []
    # What a cell's checks read depends on a few of its factors (the model, the dataset,
    # the framework): each is worked out once per distinct value, not once per cell. A
    # framework's unavailable_reason looks its modules up on disk (importlib find_spec):
    # per cell, 10,000 cells took a minute.
    memo: dict[tuple[Any, ...], Any] = {}

    def once(key: tuple[Any, ...], make: Any) -> Any:
        try:
            hash(key)
        except TypeError:  # a model of several named inputs has a dict of shapes
            key = (json.dumps(key, sort_keys=True, default=repr),)
        if key not in memo:
            memo[key] = make()
        return memo[key]

    def model_of(model: str) -> tuple[Any, dict[str, Any]]:
        spec = registry.model(model, exp.sources)
        return spec, spec.resolve_options(exp.model_options.get(model))

    def input_of(model: str, dataset: str, size: int) -> tuple[Any, Any, str | None]:
        spec, options = once(("model", model), lambda: model_of(model))
        if dataset == "synthetic":
            shape, classes = synthetic_sample(exp, spec, options, size)
            return shape, (*shape, classes, exp.synthetic.train_size, exp.synthetic.test_size), None
        fixed, _ = registry.dataset(dataset, exp.sources).shape(None)
        if size:
            side = "x".join(map(str, fixed))
            return (
                fixed,
                None,
                f"input_shape {size} applies to the synthetic dataset; {dataset} has a fixed {side} input",
            )
        return fixed, None, None

    def other_reason(name: str, model: str, dataset: str, shape: Any, cell: dict[str, Any], world: int) -> str | None:
        spec, _ = once(("model", model), lambda: model_of(model))
        info = frameworks[name]
        classical = spec.kind == "classical"
        return (
            oversubscription_reason(world, threads, cores)
            or once(("unavailable", name), info.unavailable_reason)
            or device_reason(name, p.device)
            or spec.unsupported_reason(name, shape, info.models)
            or task_reason(spec, dataset, exp.sources)
            or layout_reason(name, cell["layout"], spec.input_kind)
            or pipeline_reason(name, cell["pipeline"], spec.input_kind, shape)
            or precision_reason(name, cell["precision"], p.device, classical)
            or runtime_settings.reason(name, cell["runtime"])
        )

    for cell in _cells(exp):
        name, _, variant = cell["framework"].partition(":")
        if not once(
            ("applies", name, cell["strategy"], cell["world_size"]),
            lambda: strategy_applies(name, cell["strategy"], cell["world_size"]),
        ):
            plan.not_applicable += 1
            continue
        info = frameworks[name]
        spec, options = once(("model", cell["model"]), lambda: model_of(cell["model"]))
        size = cell["input_shape"]
        shape, synthetic, reason = once(
            ("input", cell["model"], cell["dataset"], size), lambda: input_of(cell["model"], cell["dataset"], size)
        )
        classical = spec.kind == "classical"
        world = cell["world_size"]
        global_batch = cell["batch_size"] * (world if p.batch_scope == "per-replica" else 1)
        reason = (
            reason
            or once(
                ("strategy", name, cell["strategy"], world, classical, global_batch, variant),
                lambda: strategy_reason(name, cell["strategy"], world, classical, p.device, global_batch, variant),
            )
            or once(
                ("other", name, cell["model"], cell["dataset"], shape, cell["layout"], cell["pipeline"],
                 cell["precision"], cell["runtime"], world),
                lambda: other_reason(name, cell["model"], cell["dataset"], shape, cell, world),
            )
        )  # fmt: skip
        if reason is not None:
            plan.skipped.append(Skipped(cell, reason))
            continue
        runnable.append(
            Case(
                framework=name,
                variant=variant or info.default_variant,
                model=cell["model"],
                dataset=cell["dataset"],
                batch_size=cell["batch_size"],
                # Settings that a classical model ignores are normalized so that they
                # neither multiply identical trials nor pretend to have been applied.
                init="none" if classical else cell["init"],
                optimizer="none" if classical else cell["optimizer"],
                lr=0.0 if classical else cell["lr"],
                momentum=0.0 if classical else p.momentum,
                epochs=None if classical else p.epochs,
                steps=None if classical else p.steps,
                device=p.device,
                threads=threads,
                seed=p.seed,
                train_samples=p.train_samples,
                test_samples=p.test_samples,
                synthetic=synthetic,
                precision=cell["precision"],
                input_shape=size,
                layout=cell["layout"],
                pipeline=cell["pipeline"],
                model_options=tuple(sorted(options.items())) if not classical else (),
                strategy=cell["strategy"],
                world_size=world,
                # Recorded only where it changes anything (more than one replica).
                batch_scope=p.batch_scope if world > 1 else "global",
                runtime=cell["runtime"],
            )
        )
    runnable = list(dict.fromkeys(runnable))
    rng = random.Random(p.seed)
    for block in range(p.trials):
        order = runnable[:]
        rng.shuffle(order)
        plan.trials.extend(Trial(case, block, i) for i, case in enumerate(order))
    return plan
