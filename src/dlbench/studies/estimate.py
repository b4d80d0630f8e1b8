"""About how long a study's plan would take on this machine, from its committed smoke run.

Nothing here is measured for the plan itself: it is an estimate, and says its basis.
The measured part is the study's smoke run (docs/studies/data/<study>-smoke.db.xz, run
on the 2-core VM this project is built on): for each of its trials, the training time
per sample and per unit of model work, and the process's start-up (the trial's wall
time less what it timed). A planned case takes

    start-up of its network + (repeats + warm-up) x (train samples x epochs x train
    seconds per unit of work x the case's work per sample + test samples x the same
    per-sample cost / 3, for the inference passes)

The work per sample is a rough forward cost (multiply-accumulates, WORK below): the
networks' published figures (torchvision's model table) scaled by input area, and
counts by hand for the small networks and the sequence models. The seconds per unit
of work come from the smoke run's trial of the same framework and model where it has
one, else from the median over that framework's smoke trials (else over every
framework's: JAX never ran in a smoke run). A trial's start-up is its network's median
start-up in every committed study run (smoke and larger) where one ran it, else its
framework's in the smoke run: a graph framework traces and compiles the whole network
before the first timed step. Time to a target accuracy is taken at every
epoch (an upper bound: a repeat stops at the target). Numbers only: the CLI words it.
"""

from __future__ import annotations

import lzma
import math
import sqlite3
import statistics
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from dlbench.plan import Case, Plan

# Training samples of a dataset's training split when the case names no count.
TRAIN_SIZE = {"mnist": 60_000, "fashion-mnist": 60_000, "cifar10": 50_000, "digits": 1_437}
TEST_SIZE = {"mnist": 10_000, "fashion-mnist": 10_000, "cifar10": 10_000, "digits": 360}
SIDE = {"mnist": 28, "fashion-mnist": 28, "cifar10": 32, "digits": 8}
# Image networks: forward multiply-accumulates per sample (millions) at a reference side,
# scaled by (side / reference)^2. torchvision's model table (GFLOPS, which it counts as
# multiply-accumulates) for the zoo's ImageNet networks; by hand for the small ones.
IMAGE_WORK: dict[str, tuple[float, int]] = {
    "alexnet": (714.0, 224),
    "vgg16": (15_470.0, 224),
    "resnet18": (1_810.0, 224),
    "resnet50": (4_090.0, 224),
    "resnet152": (11_510.0, 224),
    "mobilenet_v2": (300.0, 224),
    "efficientnet_b0": (390.0, 224),
    "efficientnet_b4": (4_390.0, 380),
    "inception_v3": (5_710.0, 299),
    "mlp": (0.10, 28),  # 784 x 128 + 128 x 10
    "cnn": (12.0, 28),  # conv32 3x3 (0.2M) + conv64 3x3 (10.6M) + dense 9216 x 128 (1.2M)
    "lenet5": (0.42, 28),  # C1 0.12M + C3 0.24M + 400x120 + 120x84 + 84x10
}
WORK = "forward multiply-accumulates per sample (torchvision's table for the ImageNet networks, by hand for the rest)"
# Inference passes cost about a third of a training step per sample (forward only).
INFER_SHARE = 1 / 3
# Where the committed smoke databases are, in a source checkout.
DATA = Path(__file__).resolve().parents[3] / "docs" / "studies" / "data"


@dataclass(frozen=True)
class Estimate:
    seconds: float  # about this long, every trial in turn
    processes: int  # worker processes (trials)
    startup_s: float  # of which process start-up (imports, model build, data load)
    basis: str  # what it rests on, in words
    borrowed: tuple[str, ...]  # framework:model whose per-work time is another trial's


def _options(case: Case) -> dict[str, Any]:
    """The case's model options that are set (None: the model's default)."""
    return {k: v for k, v in case.model_options if v is not None}


def _side(case: Case) -> int:
    if case.input_shape:
        return case.input_shape
    if case.dataset == "synthetic" and case.synthetic:
        return int(case.synthetic[0])
    return SIDE.get(case.dataset, 28)


def _classes(case: Case) -> int:
    if case.dataset == "synthetic" and case.synthetic:
        return int(case.synthetic[-3])
    return 10


def work(case: Case) -> float:
    """Rough forward multiply-accumulates of one sample of `case` (millions)."""
    opts = _options(case)
    if case.model == "knn":  # each test sample against every training sample, each feature
        return train_samples(case) * _side(case) ** 2 / 1e6
    if case.model in IMAGE_WORK:
        macs, ref = IMAGE_WORK[case.model]
        return macs * (_side(case) / ref) ** 2
    vocab = _classes(case)
    if case.model == "lstm":  # per token: each layer's gates, then the vocabulary head
        t = case.input_shape or 35
        e, h, layers = int(opts.get("embed", 650)), int(opts.get("hidden", 650)), int(opts.get("layers", 2))
        return t * (4 * h * (e + h) + (layers - 1) * 4 * h * 2 * h + h * vocab) / 1e6
    if case.model == "transformer":  # per token: attention and feed-forward of each layer
        small = opts.get("preset", "small") == "small"
        d = {"layers": 4, "hidden": 256, "ff": 1024, "max_len": 128}
        if not small:
            d = {"layers": 12, "hidden": 768, "ff": 3072, "max_len": 512}
        d.update({k: int(v) for k, v in opts.items() if k in d})
        t, h = case.input_shape or d["max_len"], d["hidden"]
        return t * (d["layers"] * (4 * h * h + 2 * h * d["ff"] + 2 * t * h) + h * vocab) / 1e6
    if case.model == "deepspeech2":  # bidirectional GRU layers over about 100 output frames
        h, layers = int(opts.get("hidden", 800)), int(opts.get("rnn_layers", 5))
        return 100 * layers * 2 * 3 * h * (2 * h + h) / 1e6
    return IMAGE_WORK["resnet18"][0] * (_side(case) / 224) ** 2  # an unknown network: ResNet-18-sized


def train_samples(case: Case) -> int:
    """Training samples one repeat passes over (per epoch, or all of its steps)."""
    if case.steps:
        return case.steps * case.batch_size
    if case.train_samples:
        return case.train_samples
    if case.dataset == "synthetic" and case.synthetic:
        return int(case.synthetic[-2])
    return TRAIN_SIZE.get(case.dataset, 60_000)


def test_samples(case: Case) -> int:
    if case.test_samples:
        return case.test_samples
    if case.dataset == "synthetic" and case.synthetic:
        return int(case.synthetic[-1])
    return TEST_SIZE.get(case.dataset, 10_000)


@dataclass(frozen=True)
class _Measured:
    per_sample: dict[tuple[str, str], tuple[float, float]]  # (framework, model) -> (train s per sample, its work)
    startup: dict[str, float]  # framework -> median start-up seconds


@cache
def _read(db: Path) -> _Measured:
    """Per-sample train times and start-ups of the smoke run in `db` (.db or .db.xz)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = db
        if db.suffix == ".xz":
            path = Path(tmp) / db.stem
            path.write_bytes(lzma.decompress(db.read_bytes()))
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            run = con.execute("SELECT min(id) FROM runs WHERE name LIKE 'study % smoke'").fetchone()[0]
            # The trials' cases decoded by the store (its records), not parsed here.
            from dlbench.store.core import Store

            store = Store(path, readonly=True)
            try:
                rows = [(t.id, t.case, t.wall_s) for t in store.trials(run, statuses=("ok",))]
            finally:
                store.close()
            timed: dict[int, dict[str, float]] = defaultdict(lambda: defaultdict(float))
            for trial, phase, metric, value in con.execute(
                "SELECT m.trial_id, m.phase, m.metric, m.value FROM measurements m JOIN trials t ON t.id = m.trial_id "
                "WHERE t.run_id = ? AND m.phase IN ('train', 'infer') AND m.metric IN ('time', 'steps') "
                "AND m.value IS NOT NULL",
                (run,),
            ):
                timed[trial][f"{phase}.{metric}"] += value
                timed[trial][f"{phase}.{metric}.n"] += 1
        finally:
            con.close()
    per_sample: dict[tuple[str, str], tuple[float, float]] = {}
    startup: dict[str, list[float]] = defaultdict(list)
    for trial, d, wall in rows:
        case = Case(**{k: v for k, v in d.items() if k in Case.__dataclass_fields__ and k != "model_options"})
        case = _with_options(case, d.get("model_options") or {})
        t = timed[trial]
        n = t.get("train.time.n", 0)
        if n and case.model != "knn" and t.get("train.time", 0) > 0:
            steps = t["train.steps"] / t["train.steps.n"] if t.get("train.steps.n") else 0
            samples = steps * case.batch_size if steps else train_samples(case) * (case.epochs or 1)
            per_sample[(case.framework, case.model)] = (t["train.time"] / n / samples, work(case))
        elif case.model == "knn" and t.get("infer.time.n"):
            seconds = t["infer.time"] / t["infer.time.n"] / test_samples(case) / INFER_SHARE
            per_sample[(case.framework, case.model)] = (seconds, work(case))
        if wall:
            startup[case.framework].append(max(0.0, wall - t.get("train.time", 0.0) - t.get("infer.time", 0.0)))
    return _Measured(per_sample, {k: statistics.median(v) for k, v in startup.items()})


@cache
def _startups(db: Path) -> dict[tuple[str, str], list[float]]:
    """(framework, model) -> the start-up of each ok trial of every study run in `db`
    (.db.xz): its wall time less what it timed (imports, data, the model's build, and a
    graph framework's tracing and compilation, which grow with the network)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / db.stem
        path.write_bytes(lzma.decompress(db.read_bytes()))
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            timed: dict[int, float] = defaultdict(float)
            for trial, value in con.execute(
                "SELECT m.trial_id, m.value FROM measurements m JOIN trials t ON t.id = m.trial_id "
                "JOIN runs r ON r.id = t.run_id WHERE r.name LIKE 'study %' AND m.phase IN ('train', 'infer') "
                "AND m.metric = 'time' AND m.value IS NOT NULL"
            ):
                timed[trial] += value
            runs = [r for (r,) in con.execute("SELECT id FROM runs WHERE name LIKE 'study %'")]
        finally:
            con.close()
        from dlbench.store.core import Store

        out: dict[tuple[str, str], list[float]] = defaultdict(list)
        store = Store(path, readonly=True)
        try:
            for run in runs:
                for t in store.trials(run, statuses=("ok",)):
                    if t.wall_s:
                        out[(t.framework, t.model)].append(max(0.0, t.wall_s - timed.get(t.id, 0.0)))
        finally:
            store.close()
    return dict(out)


def model_startups() -> dict[tuple[str, str], float]:
    """(framework, model) -> its median start-up over every study run committed under
    docs/studies/data (smoke and larger): measured on the project's 2-core VM. Empty
    outside a source checkout or when a database cannot be read."""
    pooled: dict[tuple[str, str], list[float]] = defaultdict(list)
    for db in sorted(DATA.glob("*.db.xz")) if DATA.is_dir() else []:
        try:
            found = _startups(db)
        except (OSError, sqlite3.Error, lzma.LZMAError, EOFError):
            return {}  # as pooled_smoke: an estimate never ends the run it describes
        for key, values in found.items():
            pooled[key] += values
    return {key: statistics.median(v) for key, v in pooled.items()}


def _with_options(case: Case, options: dict[str, Any]) -> Case:
    from dataclasses import replace

    synthetic = tuple(case.synthetic) if case.synthetic else None
    return replace(case, model_options=tuple(sorted(options.items())), synthetic=synthetic)


def smoke_db(study: str) -> Path | None:
    """The study's committed smoke database, where this is a source checkout."""
    path = DATA / f"{study}-smoke.db.xz"
    return path if path.is_file() else None


@dataclass(frozen=True)
class _Rates:
    """A per-sample cost model: overhead + work x rate (seconds), from the smoke runs."""

    rate: dict[str, float]  # framework -> seconds per unit of work where compute-bound
    overhead: dict[tuple[str, str], float]  # (framework, model) -> per-sample overhead beyond that


def _rates(own: _Measured) -> _Rates:
    """Each framework's compute-bound rate: the least seconds per unit of work over every
    committed smoke run's trials of that framework (the networks large enough to be
    compute-bound); each measured case's per-sample overhead is what its time leaves."""
    pooled: dict[str, list[float]] = defaultdict(list)
    dbs = sorted(DATA.glob("*-smoke.db.xz")) if DATA.is_dir() else []
    for measured in [own, *(_read(db) for db in dbs)]:
        for (fw, model), (seconds, w) in measured.per_sample.items():
            if model != "knn":
                pooled[fw].append(seconds / w)
    rate = {fw: min(v) for fw, v in pooled.items()}
    overhead = {key: max(0.0, seconds - w * rate.get(key[0], 0.0)) for key, (seconds, w) in own.per_sample.items()}
    return _Rates(rate, overhead)


def estimate(plan: Plan, db: Path) -> Estimate:
    """About how long `plan` would run here, from the smoke run stored in `db` (and the
    compute-bound rate of every committed smoke run)."""
    measured = _read(db)
    model = _Model(measured)
    p = plan.experiment.protocol
    borrowed: set[str] = set()
    total = start_total = 0.0
    for trial in plan.trials:
        case = trial.case
        if case.model != "knn" and (case.framework, case.model) not in measured.per_sample:
            borrowed.add(f"{case.framework}:{case.model}")
        start, one = model.trial(case)
        total += start + (p.repeats + p.warmup) * one
        start_total += start
    basis = (
        f"from the smoke run's per-sample training times ({db.name}): each case's per-sample overhead plus its "
        f"work ({WORK}) at its framework's compute-bound rate in the committed smoke runs, times samples x "
        "epochs x (repeats + warm-up), plus each trial's start-up (its network's median in the committed study "
        "runs where one measured it, else its framework's)"
    )
    return Estimate(total, len(plan.trials), start_total, basis, tuple(sorted(borrowed)))


class _Model:
    """The cost model above, fitted to measured smoke runs: one trial's start-up and one
    pass (training and inference) of a case."""

    def __init__(self, measured: _Measured) -> None:
        self.measured = measured
        self.rates = _rates(measured)
        self.every_rate = statistics.median(self.rates.rate.values()) if self.rates.rate else 0.0
        self.overheads: dict[str, list[float]] = defaultdict(list)
        for (fw, model), o in self.rates.overhead.items():
            if model != "knn":
                self.overheads[fw].append(o)
        self.startups = list(measured.startup.values())
        # A network's own start-up where some committed run measured it: TensorFlow took
        # 2.3 min to start a resnet152 trial here against 10-20 s for the small networks.
        self.model_startups = model_startups()

    def trial(self, case: Case) -> tuple[float, float]:
        """(start-up seconds, seconds of one measured or warm-up pass) of a trial of `case`."""
        w = work(case)
        if case.model == "knn":  # fitting stores the data; the work is the inference
            seconds, w_smoke = self.measured.per_sample.get((case.framework, case.model), (0.0, 1.0))
            one = test_samples(case) * INFER_SHARE * seconds * w / w_smoke
        else:
            pool = self.overheads.get(case.framework) or [o for os in self.overheads.values() for o in os]
            o = self.rates.overhead.get((case.framework, case.model), statistics.median(pool) if pool else 0.0)
            per = o + w * self.rates.rate.get(case.framework, self.every_rate)
            one = train_samples(case) * ((case.epochs or 1) if not case.steps else 1) * per
            one += test_samples(case) * per * INFER_SHARE
        median_start = statistics.median(self.startups) if self.startups else 0.0
        own = self.model_startups.get((case.framework, case.model))
        return (own if own is not None else self.measured.startup.get(case.framework, median_start)), one


def words(seconds: float) -> str:
    """About how long, in the largest unit that fits (e.g. "about 3.2 days")."""
    if not math.isfinite(seconds):
        return "unknown"
    for unit, size in (("days", 86_400), ("hours", 3_600), ("minutes", 60)):
        if seconds >= size:
            return f"about {seconds / size:.1f} {unit}"
    return f"about {seconds:.0f} s"


def pooled_smoke() -> _Measured | None:
    """Every committed smoke run's per-sample times and start-ups, pooled (None outside a
    source checkout, or when they cannot be read): the reference a case this machine never
    ran is estimated from."""
    dbs = sorted(DATA.glob("*-smoke.db.xz")) if DATA.is_dir() else []
    if not dbs:
        return None
    per_sample: dict[tuple[str, str], tuple[float, float]] = {}
    startup: dict[str, list[float]] = defaultdict(list)
    for db in dbs:
        try:
            measured = _read(db)
        except (OSError, sqlite3.Error, lzma.LZMAError, EOFError):
            # An estimate is a courtesy: a full disk or a file-size limit (the temporary copy
            # of a decompressed smoke run is ~1 MB), or a damaged file, leaves it unknown
            # rather than ending the run it was meant to describe.
            return None
        per_sample.update(measured.per_sample)
        for fw, s in measured.startup.items():
            startup[fw].append(s)
    return _Measured(per_sample, {k: statistics.median(v) for k, v in startup.items()})


@dataclass(frozen=True)
class RunEstimate:
    seconds: float  # about this long, every trial in turn
    processes: int
    here: int  # trials estimated from earlier trials of their case in this database
    basis: str  # what the rest rests on, in words


def estimate_run(plan: Plan, earlier: dict[tuple[str, int, int], list[float]]) -> RunEstimate | None:
    """About how long `plan` runs: a trial whose case (with its repeats and warm-up) ran
    before in the run's database (`earlier`: (case key, repeats, warmup) -> wall seconds of
    its finished trials) takes their median, measured on this machine; any other trial,
    the smoke runs' cost model (estimate() above, pooled over every committed smoke run).
    None when some trial has neither."""
    p = plan.experiment.protocol
    model: _Model | None = None
    total, here = 0.0, 0
    for trial in plan.trials:
        walls = earlier.get((trial.case.key, p.repeats, p.warmup))
        if walls:
            total += statistics.median(walls)
            here += 1
            continue
        if model is None:
            reference = pooled_smoke()
            if reference is None:
                return None
            model = _Model(reference)
        start, one = model.trial(trial.case)
        total += start + (p.repeats + p.warmup) * one
    n = len(plan.trials)
    if here == n:
        basis = "the median wall time of earlier trials of the same cases in this database"
    else:
        basis = (
            f"{here} of {n} trials from earlier trials of their case in this database, the rest from " if here else ""
        )
        basis += "the project's smoke runs on a 2-core VM, scaled by each case's work: rough"
    return RunEstimate(total, n, here, basis)
