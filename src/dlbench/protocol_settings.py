"""The protocol's settings, declared once: name, type, default, bounds, help and layer.

Every other layer is derived from the two dataclasses below, never typed again:

- the experiment file's `[protocol]` table and its range checks (dlbench.config reads
  each field's `Declared.rule`);
- the command-line flags and their help (dlbench.cli.options builds one option per
  field, with `Declared.help`);
- the worker's spec (dlbench.trial.spec.ProtocolSpec subclasses `TrialProtocol`: every
  setting declared there travels to the worker, with the same default and bounds);
- the frameworks' training settings (frameworks.protocol.TrainSettings takes its
  defaults from `Protocol`).

The layer a setting serves is the class it is declared in: `TrialProtocol` holds what a
worker needs to measure one trial; `Protocol` adds what the plan copies into each case
(epochs, seed, threads, ...) and what the parent process does alone (idle baseline).
Adding a setting is one field here, with its help and its rule.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import MISSING, Field, dataclass, field, fields
from typing import Any, TypeVar

T = TypeVar("T")
REQUIRED: Any = MISSING  # Declared.legacy of a setting every stored trial spec holds

# Upper bounds of the numeric settings: every one is stated in the error message.
DAY_S = 86_400
MAX_TIMEOUT_S = 7 * DAY_S  # a trial (one worker process) running for more than a week is a hang
MAX_TTA_BUDGET_S = MAX_TIMEOUT_S  # training time to accuracy cannot outlast the longest timeout
MAX_PROFILE_STEPS = 1000  # a profile holds every op of every step in memory
MAX_PROFILE_CALLS = 20  # each builds a fresh model (and one more without the profiler)
MAX_IDLE_BASELINE_S = 3600  # idle power is a mean over seconds to minutes; an hour is plenty
MAX_SAMPLE_INTERVAL_S = 60  # a poll a minute is the coarsest that still samples a trial
MAX_BUDGET_MIN = 30 * 24 * 60  # an adaptive run's budget, in minutes: 30 days
MAX_EPOCHS = 100_000
MAX_STEPS = 100_000_000
MAX_REPEATS = 10_000  # measured repeats in one worker process
MAX_WARMUP = 1_000
MAX_TRIALS = 1_000  # fresh processes per case (interleaved blocks); also max_repeats
MAX_LATENCY_BATCHES = 100_000
MAX_SAMPLES = 2**31 - 1  # a sample index that fits every framework's int32
MAX_LR = 100.0
# Repeat r trains with seed + r (warm-ups counted), and numpy, torch, TensorFlow and
# JAX all take a seed below 2**31: the base seed leaves room for every repeat.
MAX_SEED = 2**31 - 1 - MAX_WARMUP - MAX_REPEATS
# A worker memory cap above 256 TiB is above any machine's memory, and beyond the
# RLIMIT range the cap is meant for.
MAX_MEMORY = 2**48


def available_cores() -> int:
    """The CPUs this process may run on (its affinity mask), which workers inherit."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def is_number(v: Any) -> bool:
    """A finite int or float (not a bool); ints of any size count (compared, never converted)."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return False
    return not isinstance(v, float) or math.isfinite(v)


def within(
    v: Any, low: float, high: float, *, low_open: bool = False, high_open: bool = False, integer: bool = False
) -> bool:
    """v is a finite number (an int if `integer`) in the interval; False for nan, inf, None, strings."""
    if not is_number(v) or (integer and not isinstance(v, int)):
        return False
    return bool((v > low if low_open else v >= low) and (v < high if high_open else v <= high))


@dataclass(frozen=True)
class Rule:
    """A numeric setting's range. `high` may be a function (the cores available here);
    `also` are values allowed outside the range (0 meaning "off" or "automatic");
    `text` is what the error says is allowed ({high} is replaced by the bound)."""

    low: float
    high: float | Callable[[], float]
    text: str
    integer: bool = False
    low_open: bool = False
    high_open: bool = False
    also: tuple[float, ...] = ()
    # The stored form of a worker setting may be checked without this machine's facts
    # (a run resumed on a smaller machine): a rule whose `high` is local is then skipped.
    local: bool = False

    def bound(self) -> float:
        return self.high() if callable(self.high) else self.high

    def allows(self, v: Any) -> bool:
        if is_number(v) and not isinstance(v, bool) and v in self.also:
            return True
        return within(v, self.low, self.bound(), low_open=self.low_open, high_open=self.high_open, integer=self.integer)

    def says(self) -> str:
        return self.text.format(high=self.bound())


@dataclass(frozen=True)
class Declared:
    """What the declaration says about one setting besides its name, type and default."""

    help: str
    rule: Rule | None = None
    # What a stored trial spec that lacks this setting ran with (it was added later);
    # None: its default; REQUIRED: every stored spec has it.
    legacy: Any = None
    # Offered as a command-line flag of run, plan and study run.
    flag: bool = True


def setting(default: T, help: str, rule: Rule | None = None, *, legacy: Any = None, flag: bool = True) -> T:
    """A declared setting: a dataclass field whose metadata holds its help and rule."""
    declared = Declared(help, rule, legacy, flag)
    return field(default=default, metadata={"declared": declared})


def declared(f: Field[Any]) -> Declared:
    out = f.metadata.get("declared")
    if not isinstance(out, Declared):
        raise TypeError(f"setting {f.name} is not declared with protocol_settings.setting()")
    return out


def _ints(low: int, high: float | Callable[[], float], text: str, **kw: Any) -> Rule:
    return Rule(low, high, text, integer=True, **kw)


@dataclass(frozen=True)
class TrialProtocol:
    """How one trial is measured: every setting here reaches the trial's worker."""

    repeats: int = setting(
        5, "Measured repeats per trial.", _ints(1, MAX_REPEATS, f">= 1 and <= {MAX_REPEATS}"), legacy=REQUIRED
    )
    warmup: int = setting(
        1,
        "Warm-up repeats per trial (stored, flagged).",
        _ints(0, MAX_WARMUP, f">= 0 and <= {MAX_WARMUP}"),
        legacy=REQUIRED,
    )
    trials: int = setting(
        1,
        "Trials (fresh processes) per case, in interleaved blocks.",
        _ints(1, MAX_TRIALS, f">= 1 and <= {MAX_TRIALS}"),
    )
    timeout: float = setting(
        1800.0,
        "Seconds per trial before the worker is killed.",
        Rule(0, MAX_TIMEOUT_S, f"a finite number of seconds in (0, {MAX_TIMEOUT_S}] (at most 7 days)", low_open=True),
    )
    latency_batches: int = setting(
        20,
        "Batches timed one at a time per repeat.",
        _ints(0, MAX_LATENCY_BATCHES, f">= 0 and <= {MAX_LATENCY_BATCHES}"),
    )
    # Inference is timed over whole passes filling at least this many seconds (0: one
    # pass); see trial/phases.py for why a single short pass is not enough. Trials stored before
    # this setting existed timed one pass.
    infer_min_time: float = setting(
        0.1,
        "Time inference over whole test-set passes filling at least this many seconds (default 0.1; 0 = one pass).",
        Rule(0, 60, "in [0, 60] seconds (0 = one pass)"),
        legacy=0.0,
    )
    data_dir: str | None = setting(None, "Directory searched first for dataset files.")
    samplers: str = setting("all", "Telemetry: all, none, or a comma list of cpu, rapl, thermal, nvml, memory.")
    sample_interval: float = setting(
        0.0,
        "Seconds between sampler polls (default: each source's own, e.g. 0.1 s NVML, 0.5 s psutil).",
        Rule(0.01, MAX_SAMPLE_INTERVAL_S, f"0 (source defaults) or in [0.01, {MAX_SAMPLE_INTERVAL_S}] s", also=(0,)),
    )
    until_ci: float = setting(
        0.0,
        "Adaptive: add interleaved blocks until every median's 95% CI is within ±PCT percent.",
        Rule(0, 100, "a percentage in (0, 100), or 0 for a fixed design", high_open=True),
    )
    max_repeats: int = setting(
        20,
        "Adaptive: at most this many blocks (trials per case).",
        _ints(1, MAX_TRIALS, f">= 1 and <= {MAX_TRIALS}"),
    )
    budget: float = setting(
        0.0,
        "Adaptive: stop adding blocks after this many minutes.",
        Rule(0, MAX_BUDGET_MIN, f"in [0, {MAX_BUDGET_MIN}] minutes (0 = no limit; at most 30 days)"),
    )
    # The headline metric by default: a sub-millisecond inference median on a shared
    # CPU can need 20+ blocks for ±5% while the train-time verdict is long settled.
    until_ci_metrics: str = setting(
        "train.time", "Adaptive: the phase.metric medians that must converge, comma list (default train.time)."
    )
    # So that out-of-memory cells are exercised on a CPU machine too (config.parse_memory_limit).
    memory_limit: str = setting(
        "",
        "Cap each worker's memory (e.g. 2GiB; RLIMIT_DATA; +512MiB: above the footprint after import and data "
        "load): cells that exceed it are stored as oom.",
    )
    # Time to accuracy (DAWNBench): train epoch by epoch until this test accuracy, at most
    # `epochs` epochs and `tta_budget` seconds of training.
    target_accuracy: float = setting(
        0.0,
        "Time to accuracy: train epoch by epoch until this test accuracy (fraction), at most --epochs epochs.",
        Rule(0, 1, "a fraction in (0, 1], or 0 for no target"),
    )
    tta_budget: float = setting(
        0.0,
        "Time to accuracy: stop after this many seconds of training.",
        Rule(
            0,
            MAX_TTA_BUDGET_S,
            f"in [0, {MAX_TTA_BUDGET_S}] seconds (0 = only the epochs limit; at most 7 days, the longest timeout)",
        ),
    )
    # Traces kept in Chrome/Perfetto format under `profile_traces` when it is set (dlbench.explain).
    profile_steps: int = setting(
        0,
        "After the timed repeats, profile this many training steps with the framework's own profiler "
        "(time per step by op category; 0 = off).",
        _ints(0, MAX_PROFILE_STEPS, f">= 0 and <= {MAX_PROFILE_STEPS} (0 = no profile)"),
    )
    profile_traces: str = setting("", "Keep the profiles' traces (Chrome/Perfetto .json.gz) in this folder.")
    profile_calls: int = setting(
        3,
        "Profiled calls per trial (and as many without the profiler, in turns; default 3).",
        _ints(1, MAX_PROFILE_CALLS, f">= 1 and <= {MAX_PROFILE_CALLS}"),
    )


@dataclass(frozen=True)
class Protocol(TrialProtocol):
    """Scalar settings shared by every cell: the trial's, plus what the plan copies into
    each case and what the parent process does before the trials."""

    epochs: int | None = setting(1, "Epochs per training repeat.", _ints(1, MAX_EPOCHS, f">= 1 and <= {MAX_EPOCHS}"))
    steps: int | None = setting(
        None,
        "Optimizer steps per training repeat (instead of epochs).",
        _ints(1, MAX_STEPS, f">= 1 and <= {MAX_STEPS}"),
    )
    threads: int = setting(
        0,
        "Threads for every framework (0 = one per physical core).",
        _ints(
            1,
            available_cores,
            "0 (one per physical core) or 1..{high}, the cores available here",
            also=(0,),
            local=True,
        ),
    )
    seed: int = setting(
        0,
        "Base seed (repeat r uses seed + r).",
        _ints(
            0,
            MAX_SEED,
            f"an integer in [0, {MAX_SEED}] (repeat r trains with seed + r, and every framework takes "
            "seeds below 2**31)",
        ),
    )
    momentum: float = setting(0.0, "SGD momentum.", Rule(0, 1, "in [0, 1)", high_open=True))
    device: str = setting("cpu", "cpu or cuda.")
    train_samples: int = setting(
        0,
        "Use only the first N training samples (0 = all).",
        _ints(0, MAX_SAMPLES, f">= 0 and <= {MAX_SAMPLES} (0 = all)"),
    )
    test_samples: int = setting(
        0,
        "Use only the first N test samples (0 = all).",
        _ints(0, MAX_SAMPLES, f">= 0 and <= {MAX_SAMPLES} (0 = all)"),
    )
    idle_baseline: float = setting(
        0.0,
        "Measure idle power for this many seconds before the run; energy is then also reported net of idle.",
        Rule(0, MAX_IDLE_BASELINE_S, f"in [0, {MAX_IDLE_BASELINE_S}] seconds (0 = none; at most an hour)"),
    )
    # Distributed cases: is batch_size the global batch (strong scaling: the same work per
    # step at every world size) or each replica's (weak scaling)? See dlbench.distributed.
    batch_scope: str = setting(
        "global",
        "Is --batch-size the global batch (strong scaling, the default) or each replica's (per-replica: weak)?",
    )


def trial_settings() -> tuple[Field[Any], ...]:
    """The settings that reach the worker."""
    return fields(TrialProtocol)


def protocol_settings() -> tuple[Field[Any], ...]:
    """Every setting of an experiment's [protocol] table."""
    return fields(Protocol)


def default_of(f: Field[Any]) -> Any:
    return None if f.default is MISSING else f.default


# -- [mlflow]: where a finished run is logged (dlbench.tracking) -----------------------------
# Declared here like the protocol, once: the experiment file's [mlflow] keys, their checks
# (dlbench.config) and their help (docs/mlflow.md) read these fields. Not part of any case
# and never sent to a worker: the parent process logs the stored run after it finished.
MAX_MLFLOW_URI = 4096  # a URL or a path
MAX_MLFLOW_NAME = 250  # MLflow's own limit on a run name; experiment names are held to it too


@dataclass(frozen=True)
class MlflowSettings:
    """The experiment file's [mlflow] table; `dlbench run --mlflow URI` gives `uri` over it."""

    uri: str = setting(
        "",
        "MLflow tracking URI (e.g. http://127.0.0.1:5000) to log the finished run to: one parent run, one nested "
        "run per case (docs/mlflow.md). Empty: no logging. Needs the mlflow extra: pip install 'dlbench[mlflow]'.",
    )
    experiment: str = setting("dlbench", "The MLflow experiment the runs are logged under (created if missing).")
    run_name: str = setting("", "The parent MLflow run's name (default: 'dlbench run ID: NAME').")


def mlflow_settings() -> tuple[Field[Any], ...]:
    """Every key of an experiment's [mlflow] table."""
    return fields(MlflowSettings)
