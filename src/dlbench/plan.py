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

from dlbench.config import FACTORS, Experiment
from dlbench.frameworks import registry


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
    # Only for dataset "synthetic": [H, W, C, classes, train_size, test_size].
    synthetic: tuple[int, ...] | None = None

    def as_dict(self) -> dict:
        return asdict(self)

    @property
    def key(self) -> str:
        canonical = json.dumps(self.as_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]

    @property
    def label(self) -> str:
        fw = f"{self.framework}:{self.variant}"
        return f"{fw} {self.model} {self.dataset} b{self.batch_size} {self.init} {self.optimizer} lr={self.lr:g}"


@dataclass(frozen=True)
class Trial:
    case: Case
    block: int      # 0-based block (interleaving round)
    position: int   # order inside the block


@dataclass(frozen=True)
class Skipped:
    cell: dict
    reason: str


@dataclass
class Plan:
    experiment: Experiment
    trials: list[Trial] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    @property
    def cases(self) -> list[Case]:
        return list(dict.fromkeys(t.case for t in self.trials))


def physical_cores() -> int:
    import psutil

    return psutil.cpu_count(logical=False) or os.cpu_count() or 1


def _cells(exp: Experiment) -> list[dict]:
    def product(m: dict) -> list[dict]:
        full = {k: m.get(k, exp.matrix[k]) for k in FACTORS}
        return [dict(zip(FACTORS, combo)) for combo in itertools.product(*(full[k] for k in FACTORS))]

    def matches(cell: dict, rule: dict) -> bool:
        return all(cell[k] in values for k, values in rule.items())

    cells = [c for c in product(exp.matrix) if not any(matches(c, r) for r in exp.exclude)]
    for inc in exp.include:
        cells.extend(product(inc))
    unique = {json.dumps(c, sort_keys=True): c for c in cells}
    return list(unique.values())


def expand(exp: Experiment) -> Plan:
    """The trials an experiment asks for, in execution order, and the skipped cells."""
    from dlbench.datasets import SyntheticOptions, dataset_shape
    from dlbench.models import get_spec

    p = exp.protocol
    threads = p.threads or physical_cores()
    plan = Plan(exp)
    frameworks = registry()
    runnable: list[Case] = []
    for cell in _cells(exp):
        name, _, variant = cell["framework"].partition(":")
        info = frameworks[name]
        spec = get_spec(cell["model"])
        synthetic_opts = None
        synthetic = None
        if cell["dataset"] == "synthetic":
            s = exp.synthetic
            synthetic_opts = SyntheticOptions(s.shape, s.classes, s.train_size, s.test_size)
            synthetic = (*s.shape, s.classes, s.train_size, s.test_size)
        shape, _ = dataset_shape(cell["dataset"], synthetic_opts)
        reason = info.unavailable_reason() or spec.unsupported_reason(name, shape, info.models)
        if reason is not None:
            plan.skipped.append(Skipped(cell, reason))
            continue
        classical = spec.kind == "classical"
        runnable.append(Case(
            framework=name, variant=variant or info.default_variant, model=cell["model"],
            dataset=cell["dataset"], batch_size=cell["batch_size"],
            # Settings that a classical model ignores are normalized so that they
            # neither multiply identical trials nor pretend to have been applied.
            init="none" if classical else cell["init"],
            optimizer="none" if classical else cell["optimizer"],
            lr=0.0 if classical else cell["lr"], momentum=0.0 if classical else p.momentum,
            epochs=None if classical else p.epochs, steps=None if classical else p.steps,
            device=p.device, threads=threads, seed=p.seed,
            train_samples=p.train_samples, test_samples=p.test_samples, synthetic=synthetic,
        ))
    runnable = list(dict.fromkeys(runnable))
    rng = random.Random(p.seed)
    for block in range(p.trials):
        order = runnable[:]
        rng.shuffle(order)
        plan.trials.extend(Trial(case, block, i) for i, case in enumerate(order))
    return plan
