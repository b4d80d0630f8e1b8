"""Experiment files (TOML) -> a validated, frozen `Experiment`.

Validation is strict on purpose: a typo in a benchmark configuration silently
falls back to a default and produces a plausible but wrong result. Every unknown
key or value is an error that names the file, the key and what is allowed.
Numbers are range-checked here, at parse time, with finite upper bounds (the
MAX_* constants below): a value that is accepted is one a worker can run, that
fits SQLite's 64-bit integers, Python's timeouts and every framework's seed.

    [experiment]  name, description
    [matrix]      factors whose values are crossed (lists or scalars)
    [protocol]    scalar settings shared by every cell
    [synthetic]   shape and size of the synthetic dataset
    [[include]]   extra cells (a sub-matrix; missing factors take the matrix's values)
    [[exclude]]   cells to drop (every given factor must match)
"""

from __future__ import annotations

import math
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from importlib import resources
from pathlib import Path
from typing import Any

from dlbench.executor_settings import ExecutorSettings
from dlbench.frameworks.protocol import INITS, OPTIMIZERS
from dlbench.models.spec import short_repr as _show

# The protocol's declaration and bounds (dlbench.protocol_settings); the bounds are also
# reachable here, where the experiment file's other limits are.
from dlbench.protocol_settings import (  # noqa: F401
    DAY_S,
    MAX_BUDGET_MIN,
    MAX_EPOCHS,
    MAX_IDLE_BASELINE_S,
    MAX_LATENCY_BATCHES,
    MAX_LR,
    MAX_MEMORY,
    MAX_MLFLOW_NAME,
    MAX_MLFLOW_URI,
    MAX_PROFILE_CALLS,
    MAX_PROFILE_STEPS,
    MAX_REPEATS,
    MAX_SAMPLE_INTERVAL_S,
    MAX_SAMPLES,
    MAX_SEED,
    MAX_STEPS,
    MAX_TIMEOUT_S,
    MAX_TRIALS,
    MAX_TTA_BUDGET_S,
    MAX_WARMUP,
    MlflowSettings,
    declared,
    mlflow_settings,
)
from dlbench.protocol_settings import Protocol as Protocol
from dlbench.protocol_settings import TrialProtocol as TrialProtocol
from dlbench.protocol_settings import available_cores as available_cores
from dlbench.protocol_settings import within as _within

FACTORS = (
    "framework",
    "model",
    "dataset",
    "batch_size",
    "init",
    "optimizer",
    "lr",
    "input_shape",
    "precision",
    "layout",
    "pipeline",
    "strategy",
    "world_size",
    "runtime",
)
# float32 everywhere, or bfloat16 compute with float32 weights and loss
# (torch.autocast, Keras' "mixed_bfloat16" policy, JAX casting params and inputs).
PRECISIONS = ("float32", "tf32", "bf16-mixed")
# native: each framework's own (torch NCHW, Keras and Flax NHWC);
# channels-last / channels-first: that memory layout where the framework offers it.
LAYOUTS = ("native", "channels-last", "channels-first")
# Training data: preloaded device tensors (shuffle only), or CIFAR-style augmentation
# (pad-4 random crop, horizontal flip, per-channel normalization) in the framework's
# own ops (native: torch tensor ops, tf.data, jax.numpy) or the shared numpy pipeline.
PIPELINES = ("preloaded", "native", "numpy")
DEVICES = ("cpu", "cuda")

MAX_BATCH_SIZE = 2**20
MAX_INPUT_SHAPE = 2**14  # a 16384 x 16384 float32 image is 1 GiB per channel
# Cells left after exclusions (and added by inclusions) x trials: a plan builds each trial in
# ~40 us on this project's 2-core VM, so 100,000 plan in seconds; each trial is a process of
# seconds at least, so a run this size is days already.
MAX_TRIALS_PER_RUN = 100_000
# The matrix before exclusions: exclusions mark boxes in a boolean grid of this many cells
# (one byte each), so a 10^6-cell matrix narrowed by exclusions is counted in milliseconds
# before any cell is built; 10^7 bounds that grid at 10 MB.
MAX_MATRIX_CELLS = 10_000_000
# [[include]] and [[exclude]] tables, and the cells the exclusions name in all (each one a
# mark in the grid above; when every cell was checked against every rule, 10,000 cells x
# 200,000 rules ran for minutes).
MAX_RULES = 1_000
MAX_RULE_CHECKS = 10_000_000
MAX_SYNTHETIC_SIDE = MAX_INPUT_SHAPE
MAX_SYNTHETIC_CHANNELS = 4096
MAX_CLASSES = 2**20
MAX_NAME = 200
MAX_DESCRIPTION = 10_000
MAX_PATH = 4096  # PATH_MAX on Linux
MAX_FILE_BYTES = 16 * 2**20  # an experiment file is a few kilobytes of TOML


class ConfigError(ValueError):
    """A configuration problem, with the file and key it concerns."""


@dataclass(frozen=True)
class Synthetic:
    shape: tuple[int, int, int] = (28, 28, 1)
    classes: int = 10
    train_size: int = 6000
    test_size: int = 1000


@dataclass(frozen=True)
class Experiment:
    name: str = "experiment"
    description: str = ""
    matrix: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    protocol: Protocol = Protocol()
    synthetic: Synthetic = Synthetic()
    include: tuple[dict[str, tuple[Any, ...]], ...] = ()
    exclude: tuple[dict[str, tuple[Any, ...]], ...] = ()
    # [models.<name>] tables: options of a model (validated against its spec).
    model_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    source: str = "<defaults>"  # file the experiment came from
    text: str = ""  # the file's text, verbatim (stored with the run)
    # The user's own models and datasets named by reference: {"model:<name>": absolute
    # reference}. Given to each trial's worker; never read back from a database.
    sources: dict[str, str] = field(default_factory=dict)
    # [executor]: where the trials' workers run (dlbench.executors); not part of any case.
    executor: ExecutorSettings = ExecutorSettings()
    # [mlflow]: where the finished run is logged (dlbench.tracking); not part of any case.
    mlflow: MlflowSettings = MlflowSettings()


MATRIX_DEFAULTS: dict[str, tuple[Any, ...]] = {
    "framework": ("torch", "tensorflow", "jax"),
    "model": ("mlp",),
    "dataset": ("digits",),
    "batch_size": (32,),
    "init": ("glorot-uniform",),
    "optimizer": ("sgd",),
    "lr": (0.01,),
    # 0: the dataset's own input size; N: synthetic N x N images (or sequences of N steps).
    "input_shape": (0,),
    "precision": ("float32",),
    "layout": ("native",),
    "pipeline": ("preloaded",),
    # How training is spread (dlbench.distributed): one process on one device by default.
    "strategy": ("single",),
    "world_size": (1,),
    # Runtime settings dlbench imposes (dlbench.runtime_settings): none by default, so
    # that each framework runs as a plain script runs it.
    "runtime": ("defaults",),
}
# Data-parallel replicas in one trial: beyond this no machine dlbench targets has the
# cores or devices, and the launcher would start that many processes.
MAX_WORLD_SIZE = 1024

_TOP_KEYS = ("experiment", "matrix", "protocol", "synthetic", "include", "exclude", "models", "executor", "mlflow")


def _allowed(names: Any) -> str:
    return ", ".join(str(n) for n in names)


def _check_keys(where: str, table: dict[str, Any], allowed: tuple[str, ...]) -> None:
    for key in table:
        if key not in allowed:
            raise ConfigError(f"{where}: unknown key {_show(key)}; allowed keys: {_allowed(allowed)}")


def _as_tuple(value: Any) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, list | tuple) else (value,)


@dataclass
class _Refs:
    """Where relative paths in model and dataset values start (the experiment file's
    directory, else the working directory) and the sources resolved so far."""

    base: Path | None = None
    sources: dict[str, str] = field(default_factory=dict)

    def name_of(self, key: str, factor: str, value: Any) -> str:
        """A model or dataset value -> its name; a reference is loaded and recorded."""
        from dlbench import registry

        unknown = (
            f"{key}: unknown {factor}; allowed: {_allowed(registry.names(factor, self.sources))}, or your own "
            + ("(PATH.py:NAME or package.module:NAME)" if factor == "model" else "(a .npz file or an IDX directory)")
        )
        if not isinstance(value, str):
            raise ConfigError(unknown)
        try:
            name, ref = registry.resolve(factor, value, self.base)
        except registry.UnknownName:
            raise ConfigError(unknown) from None
        except registry.RegistryError as exc:
            raise ConfigError(f"{key}: {exc}") from None
        if ref is not None:
            earlier = self.sources.setdefault(f"{factor}:{name}", ref)
            if earlier != ref:
                raise ConfigError(f"{key}: a second {factor} called {name!r} (the first is {earlier}); rename one")
        return name


# Factors whose values must be one of a fixed set: factor -> its allowed values.
# Functions, so that the model and dataset packages are imported only when a
# config actually names those factors, not when this module is imported.
_CHOICES: dict[str, Callable[[], tuple[Any, ...]]] = {
    "init": lambda: INITS,
    "optimizer": lambda: OPTIMIZERS,
    "precision": lambda: PRECISIONS,
    "layout": lambda: LAYOUTS,
    "pipeline": lambda: PIPELINES,
    "strategy": lambda: tuple(_strategies()),
}


def _strategies() -> Mapping[str, Any]:
    from dlbench.registry import strategies

    return strategies()


def _check_factor(where: str, factor: str, values: tuple[Any, ...], refs: _Refs | None = None) -> tuple[Any, ...]:
    """Validate one factor's values; returns them normalized (a model or dataset named
    by reference becomes its name, the reference going into `refs.sources`)."""
    from dlbench.registry import frameworks as registry

    if not values:
        raise ConfigError(f"{where}: {factor} is empty; give at least one value")
    refs = refs if refs is not None else _Refs()
    frameworks = registry() if factor == "framework" else {}
    choices = _CHOICES[factor]() if factor in _CHOICES else None
    out = []
    for v in values:
        key = f"{where}: {factor} = {_show(v)}"
        if factor == "framework":
            if not isinstance(v, str):
                raise ConfigError(f"{key}: expected a string such as 'torch' or 'torch:compile'")
            name, _, variant = v.partition(":")
            if name not in frameworks:
                raise ConfigError(f"{key}: unknown framework; allowed: {_allowed(frameworks)}")
            if variant and variant not in frameworks[name].variants:
                raise ConfigError(f"{key}: unknown variant of {name}; allowed: {_allowed(frameworks[name].variants)}")
        elif factor in ("model", "dataset"):
            v = refs.name_of(key, factor, v)
        elif factor == "runtime":
            from dlbench import runtime_settings

            try:
                v = runtime_settings.canonical(v)
            except runtime_settings.RuntimeSettingError:
                raise ConfigError(f"{key}: unknown runtime; allowed: {runtime_settings.allowed()}") from None
        elif choices is not None and v not in choices:
            raise ConfigError(f"{key}: unknown {factor}; allowed: {_allowed(choices)}")
        elif factor == "batch_size" and not _within(v, 1, MAX_BATCH_SIZE, integer=True):
            raise ConfigError(f"{key}: batch_size must be a positive integer, at most {MAX_BATCH_SIZE} (2**20)")
        elif factor == "lr":
            if not _within(v, 0, MAX_LR, low_open=True):
                raise ConfigError(
                    f"{key}: lr must be a positive number, finite and at most {MAX_LR:g}: in (0, {MAX_LR:g}]"
                )
            v = float(v)
        elif factor == "world_size" and not _within(v, 1, MAX_WORLD_SIZE, integer=True):
            raise ConfigError(
                f"{key}: world_size must be a positive integer, at most {MAX_WORLD_SIZE} (data-parallel replicas)"
            )
        elif factor == "input_shape" and not _within(v, 0, MAX_INPUT_SHAPE, integer=True):
            raise ConfigError(
                f"{key}: input_shape must be a positive integer, at most {MAX_INPUT_SHAPE} (the "
                f"side of a square image or a sequence length; 0 = the dataset's own)"
            )
        out.append(v)
    return tuple(dict.fromkeys(out))  # drop duplicates, keep order


def _typed(where: str, key: str, value: Any, default: Any, annotation: str) -> Any:
    """Check a scalar setting against the type of its declared annotation."""
    allows_none = "None" in annotation
    if value is None and allows_none:
        return None
    if "int" in annotation and "float" not in annotation:
        if not isinstance(value, int) or isinstance(value, bool):
            raise ConfigError(f"{where}: {key} = {_show(value)}: expected an integer")
        return value
    if "float" in annotation:
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise ConfigError(f"{where}: {key} = {_show(value)}: expected a number")
        try:
            return float(value)
        except OverflowError:  # an int beyond any float: kept, and refused with its range below
            return value
    if "str" in annotation:
        if not isinstance(value, str):
            raise ConfigError(f"{where}: {key} = {_show(value)}: expected a string")
        return value
    return value


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _protocol(where: str, table: dict[str, Any], base: Protocol, flags: bool = False) -> Protocol:
    """`flags`: the settings come from command-line flags; each error names its flag too."""
    names = tuple(f.name for f in fields(Protocol))
    _check_keys(where, table, names)

    def at(name: str) -> str:
        return f"{where} ({_flag(name)})" if flags and name in table else where

    values = {}
    for f in fields(Protocol):
        if f.name in table:
            values[f.name] = _typed(at(f.name), f.name, table[f.name], getattr(base, f.name), str(f.type))
    proto = replace(base, **values)
    if "steps" in table and "epochs" not in table:
        proto = replace(proto, epochs=None)
    if "epochs" in table and "steps" not in table:
        proto = replace(proto, steps=None)
    return validate_protocol(where, proto, at)


def _protocol_rules(p: Protocol) -> list[tuple[str, bool, str]]:
    """(setting, valid?, what is allowed) for every setting the declaration bounds
    (dlbench.protocol_settings); nan and inf are never valid, None is "not set"."""
    out = []
    for f in fields(p):
        rule = declared(f).rule
        value = getattr(p, f.name)
        if rule is not None and not (value is None and f.name in ("epochs", "steps")):
            out.append((f.name, rule.allows(value), rule.says()))
    return out


def validate_protocol(where: str, p: Protocol, at: Callable[[str], str] | None = None) -> Protocol:
    """Every setting of `p` checked; `at(name)` says where a setting came from (default: `where`)."""
    at = at or (lambda name: where)
    if (p.epochs is None) == (p.steps is None):
        raise ConfigError(f"{where}: set exactly one of epochs and steps")
    for name, ok, rule in _protocol_rules(p):
        if not ok:
            raise ConfigError(f"{at(name)}: {name} = {_show(getattr(p, name))}: must be {rule}")
    if p.target_accuracy and p.steps is not None:
        raise ConfigError(
            f"{where}: target_accuracy trains epoch by epoch: set epochs (the most epochs to try), not steps"
        )
    for name in ("device", "samplers", "memory_limit", "until_ci_metrics", "batch_scope"):
        if not isinstance(getattr(p, name), str):
            raise ConfigError(f"{at(name)}: {name} = {_show(getattr(p, name))}: expected a string")
    if p.data_dir is not None and (not isinstance(p.data_dir, str) or "\0" in p.data_dir or len(p.data_dir) > MAX_PATH):
        raise ConfigError(
            f"{at('data_dir')}: data_dir = {_show(p.data_dir)}: expected a directory path (a string "
            f"without NUL characters, at most {MAX_PATH} characters)"
        )
    if p.profile_traces:
        traces = Path(os.path.expanduser(p.profile_traces)) if isinstance(p.profile_traces, str) else None
        if traces is None or "\0" in p.profile_traces or len(p.profile_traces) > MAX_PATH:
            raise ConfigError(
                f"{at('profile_traces')}: profile_traces = {_show(p.profile_traces)}: expected a folder path"
            )
        # Said now, not as a profile error inside each trial's manifest after a run that "passed".
        existing = next((q for q in (traces, *traces.parents) if q.exists()), None)
        if existing is not None and not existing.is_dir():
            raise ConfigError(
                f"{at('profile_traces')}: profile_traces = {_show(p.profile_traces)}: {existing} is not a folder "
                "(the traces go into a folder, made if missing)"
            )
        if existing is not None and not os.access(existing, os.W_OK | os.X_OK):
            raise ConfigError(
                f"{at('profile_traces')}: profile_traces = {_show(p.profile_traces)}: {existing} is not writable"
            )
    from dlbench.samplers import parse_names

    try:
        parse_names(p.samplers)
    except ValueError as exc:
        raise ConfigError(
            f"{at('samplers')}: samplers = {_show(p.samplers)}: {str(exc).removeprefix('--samplers: ')}"
        ) from None
    if p.device not in DEVICES:
        raise ConfigError(f"{at('device')}: device = {_show(p.device)}: allowed: {_allowed(DEVICES)}")
    from dlbench.distributed import BATCH_SCOPES

    if p.batch_scope not in BATCH_SCOPES:
        raise ConfigError(
            f"{at('batch_scope')}: batch_scope = {_show(p.batch_scope)}: allowed: {_allowed(BATCH_SCOPES)} "
            "(global: batch_size is the batch of all replicas together; per-replica: of each one)"
        )
    try:
        parse_memory_limit(p.memory_limit)
    except ValueError as exc:
        raise ConfigError(f"{at('memory_limit')}: memory_limit = {_show(p.memory_limit)}: {exc}") from None
    try:
        parse_ci_metrics(p.until_ci_metrics)
    except ValueError as exc:
        raise ConfigError(f"{at('until_ci_metrics')}: until_ci_metrics = {_show(p.until_ci_metrics)}: {exc}") from None
    return p


MEMORY_UNITS = {
    "": 1,
    "b": 1,
    "k": 10**3,
    "kb": 10**3,
    "kib": 2**10,
    "m": 10**6,
    "mb": 10**6,
    "mib": 2**20,
    "g": 10**9,
    "gb": 10**9,
    "gib": 2**30,
    "t": 10**12,
    "tb": 10**12,
    "tib": 2**40,
}


def parse_memory_limit(text: str) -> tuple[int, bool]:
    """--memory-limit: (bytes, relative). '2GiB' caps the worker's whole data segment;
    '+512MiB' caps what it may add after the framework is imported and the data
    loaded (each framework's own footprint differs by a factor of 3 on this
    machine, so an absolute cap would measure import size as much as the model)."""
    text = text.strip()
    if text.startswith("+"):
        return parse_memory(text[1:], floor=2**20), True
    return parse_memory(text), False


def parse_memory(text: str, floor: int = 64 * 2**20) -> int:
    """'2GiB' -> 2147483648; '' or '0' -> 0 (no limit). Decimal (MB, GB) and binary (MiB, GiB) units.
    At most MAX_MEMORY (2**48 bytes)."""
    import re
    from fractions import Fraction

    if text.strip() in ("", "0"):
        return 0
    m = re.fullmatch(r"\s*(\d{1,30}(?:\.\d{1,30})?)\s*([a-zA-Z]*)\s*", text, flags=re.ASCII)
    if not m or m.group(2).lower() not in MEMORY_UNITS:
        raise ValueError(
            "expected a size such as 512MiB, 2GiB, 1.5GB or a byte count, or +SIZE for a cap "
            "above the footprint after import and data load (0 or empty: no limit)"
        )
    unit = MEMORY_UNITS[m.group(2).lower()]
    if Fraction(m.group(1)) * unit > MAX_MEMORY:  # exact: a float would turn 1e400 into inf
        raise ValueError(
            f"above {MAX_MEMORY} bytes (256 TiB, 2**48): more than any machine's memory, "
            "beyond the range a resource limit is meant for"
        )
    value = int(float(m.group(1)) * unit)
    if value < floor:
        raise ValueError(f"{value} bytes is below {floor // 2**20} MiB, too little for a Python process to start")
    return value


CI_METRICS = (
    "build.time",
    "compile.time",
    "train.time",
    "train.throughput",
    "infer.time",
    "infer.throughput",
    "latency_b1.time",
    "latency_b<B>.time",
)


def parse_ci_metrics(text: str) -> tuple[tuple[str, str], ...]:
    """'train.time,infer.time' -> (("train", "time"), ("infer", "time")), validated."""
    import re

    out = []
    for item in (part.strip() for part in text.split(",")):
        if item in CI_METRICS or re.fullmatch(r"latency_b\d+\.time", item):
            phase, metric = item.split(".")
            out.append((phase, metric))
        else:
            raise ValueError(f"{item!r} is not a timed phase.metric (allowed: {', '.join(CI_METRICS)})")
    if not out:
        raise ValueError(f"empty (allowed: {', '.join(CI_METRICS)})")
    return tuple(out)


def _synthetic(where: str, table: dict[str, Any]) -> Synthetic:
    _check_keys(where, table, tuple(f.name for f in fields(Synthetic)))
    s = Synthetic()
    shape = table.get("shape", list(s.shape))
    if (
        not isinstance(shape, list)
        or len(shape) != 3
        or not all(_within(d, 1, MAX_SYNTHETIC_SIDE, integer=True) for d in shape[:2])
        or not _within(shape[2], 1, MAX_SYNTHETIC_CHANNELS, integer=True)
    ):
        raise ConfigError(
            f"{where}: shape = {_show(shape)}: expected [height, width, channels], positive integers "
            f"(height and width at most {MAX_SYNTHETIC_SIDE}, channels at most "
            f"{MAX_SYNTHETIC_CHANNELS})"
        )
    values: dict[str, Any] = {"shape": tuple(shape)}
    limits = {"classes": (2, MAX_CLASSES), "train_size": (1, MAX_SAMPLES), "test_size": (1, MAX_SAMPLES)}
    for key, (least, most) in limits.items():
        if key in table:
            v = table[key]
            if not _within(v, least, most, integer=True):
                raise ConfigError(f"{where}: {key} = {_show(v)}: expected an integer >= {least} and <= {most}")
            values[key] = v
    return replace(s, **values)


def _cells(where: str, entries: Any, kind: str, refs: _Refs) -> tuple[dict[str, tuple[Any, ...]], ...]:
    if not isinstance(entries, list):
        raise ConfigError(f"{where}: [[{kind}]] must be an array of tables")
    if len(entries) > MAX_RULES:
        raise ConfigError(
            f"{where}: {len(entries)} [[{kind}]] tables: at most {MAX_RULES}; widen a rule's lists instead"
        )
    out = []
    for i, entry in enumerate(entries):
        at = f"{where} [[{kind}]] #{i + 1}"
        if not isinstance(entry, dict) or not entry:
            raise ConfigError(f"{at}: expected a non-empty table of factors")
        _check_keys(at, entry, FACTORS)
        out.append({k: _check_factor(at, k, _as_tuple(v), refs) for k, v in entry.items()})
    return tuple(out)


def _loads(text: str, source: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{source}: not valid TOML here: arrays or inline tables nested too deeply") from None
    except ValueError as exc:  # an integer literal longer than Python converts (4300 digits)
        raise ConfigError(f"{source}: not valid TOML here: {str(exc).split(':')[0]}") from None


def _text(where: str, key: str, value: Any, *, limit: int, free: bool) -> str:
    """A name (`free` False: printable characters only, as str.isprintable) or a description
    (`free`: any text but control characters other than line breaks and tabs), bounded."""
    import unicodedata

    if not isinstance(value, str):
        raise ConfigError(f"{where}: {key} = {_show(value)}: expected a string")
    if free:
        ok = not any(unicodedata.category(c) == "Cc" and c not in "\n\r\t" for c in value)
        rule = "text without control characters (line breaks and tabs are fine)"
    else:
        ok = value.isprintable() and bool(value.strip())
        rule = "a non-empty string of printable characters"
    if not ok or len(value) > limit:
        raise ConfigError(f"{where}: {key} = {_show(value)}: must be {rule}, at most {limit} characters long")
    return value


def _check_size(where: str, matrix: dict[str, tuple[Any, ...]], include: Any, trials: int, exclude: Any = ()) -> None:
    """Refuse a matrix of more than MAX_MATRIX_CELLS cells, more than MAX_RULE_CHECKS cells
    named by the exclusions in all, or a run of more than MAX_TRIALS_PER_RUN trials (the
    cells left after exclusions, plus the inclusions', x trials); counted before expanding."""
    full = {k: distinct(matrix[k]) for k in FACTORS}
    cells = math.prod(len(full[k]) for k in FACTORS)
    if cells > MAX_MATRIX_CELLS:
        raise ConfigError(
            f"{where}: {cells} matrix cells before exclusions: at most {MAX_MATRIX_CELLS}; narrow the matrix"
        )
    marks = sum(math.prod(len(b) for b in _box(full, rule)) for rule in exclude)
    if marks > MAX_RULE_CHECKS:
        raise ConfigError(
            f"{where}: {len(exclude)} [[exclude]] tables name {marks} matrix cells in all: at most "
            f"{MAX_RULE_CHECKS}; merge exclusions (each factor takes a list) or narrow the matrix"
        )
    kept = int(kept_grid(full, exclude).sum()) if exclude else cells
    kept += sum(math.prod(len(inc.get(k, matrix[k])) for k in FACTORS) for inc in include)
    if kept * trials > MAX_TRIALS_PER_RUN:
        narrowed = f" (of {cells}, after exclusions)" if kept != cells else ""
        raise ConfigError(
            f"{where}: {kept} matrix cells{narrowed} x {trials} trials = {kept * trials} trials: at most "
            f"{MAX_TRIALS_PER_RUN} in one run; narrow the matrix or lower trials"
        )


def distinct(values: Any) -> list[Any]:
    """The values in order, each once (a repeated value would repeat its cells)."""
    out: list[Any] = []
    for v in values:
        if v not in out:
            out.append(v)
    return out


def _box(full: dict[str, list[Any]], rule: Mapping[str, Any]) -> list[list[int]]:
    """The positions, per factor, of the values an exclusion names (every value where it names none)."""
    return [
        [i for i, v in enumerate(full[k]) if v in rule[k]] if k in rule else list(range(len(full[k]))) for k in FACTORS
    ]


def kept_grid(full: dict[str, list[Any]], exclude: Any) -> Any:
    """A boolean grid over the matrix (factors in FACTORS order, values as in `full`), True
    where a cell survives the exclusions. Each exclusion marks a box (the product of its
    values' positions), so its cost is the cells it names, not cells x rules."""
    import numpy as np

    dropped = np.zeros(tuple(len(full[k]) for k in FACTORS), dtype=bool)
    for rule in exclude:
        box = _box(full, rule)
        if all(box):
            dropped[np.ix_(*(np.array(b, dtype=np.intp) for b in box))] = True
    return ~dropped


def parse(text: str, source: str = "<string>", base: Path | None = None) -> Experiment:
    """An experiment from TOML text. Models and datasets named by path are relative to
    `base` (the file's directory; None: the working directory)."""
    return from_dict(_loads(text, source), source, base, text)


def from_dict(data: Any, source: str = "<dict>", base: Path | None = None, text: str = "") -> Experiment:
    """An experiment from the TOML file's structure as Python data (the Python API's
    dict form), validated exactly like a file."""
    refs = _Refs(base)
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: an experiment is a table (dict) of [experiment], [matrix], [protocol], ...")
    _check_keys(source, data, _TOP_KEYS)
    for key in ("experiment", "matrix", "protocol", "synthetic", "models", "executor", "mlflow"):
        if key in data and not isinstance(data[key], dict):
            raise ConfigError(f"{source}: [{key}] must be a table")
    exp = data.get("experiment", {})
    _check_keys(f"{source} [experiment]", exp, ("name", "description"))
    matrix_table = data.get("matrix", {})
    _check_keys(f"{source} [matrix]", matrix_table, FACTORS)
    matrix = dict(MATRIX_DEFAULTS)
    for k, v in matrix_table.items():
        matrix[k] = _check_factor(f"{source} [matrix]", k, _as_tuple(v), refs)
    name = exp["name"] if "name" in exp else Path(source).stem
    if "name" in exp:
        _text(f"{source} [experiment]", "name", name, limit=MAX_NAME, free=False)
    protocol = _protocol(f"{source} [protocol]", data.get("protocol", {}), Protocol())
    include = _cells(source, data.get("include", []), "include", refs)
    exclude = _cells(source, data.get("exclude", []), "exclude", refs)
    _check_size(f"{source} [matrix]", matrix, include, protocol.trials, exclude)
    return Experiment(
        name=name,
        description=_text(
            f"{source} [experiment]", "description", exp.get("description", ""), limit=MAX_DESCRIPTION, free=True
        ),
        matrix=matrix,
        protocol=protocol,
        synthetic=_synthetic(f"{source} [synthetic]", data.get("synthetic", {})),
        include=include,
        exclude=exclude,
        model_options=_model_options(f"{source} [models]", data.get("models", {}), refs.sources),
        source=source,
        text=text,
        sources=refs.sources,
        executor=_executor(source, data.get("executor", {})),
        mlflow=parse_mlflow(f"{source} [mlflow]", data.get("mlflow", {})),
    )


def _executor(source: str, table: dict[str, Any]) -> ExecutorSettings:
    from dlbench.executor_settings import ExecutorError, parse_settings

    try:
        return parse_settings(source, table)
    except ExecutorError as exc:
        raise ConfigError(str(exc)) from None


def parse_mlflow(where: str, table: dict[str, Any], base: MlflowSettings | None = None) -> MlflowSettings:
    """The [mlflow] table (or the --mlflow flag's {"uri": ...} with `where` naming the flag) over
    `base`, each key as declared in dlbench.protocol_settings.MlflowSettings."""
    names = tuple(f.name for f in mlflow_settings())
    _check_keys(where, table, names)
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key == "uri":
            # Empty: no logging. Otherwise a URL or path MLflow resolves itself (http(s)://, file:, a folder).
            if not isinstance(value, str) or len(value) > MAX_MLFLOW_URI or (value and not value.isprintable()):
                raise ConfigError(
                    f"{where}: uri = {_show(value)}: expected a tracking URI (e.g. http://127.0.0.1:5000) of printable "
                    f'characters, at most {MAX_MLFLOW_URI} long, or "" for no logging'
                )
            values[key] = value.strip()
        elif key == "run_name" and value == "":
            values[key] = value
        else:
            values[key] = _text(where, key, value, limit=MAX_MLFLOW_NAME, free=False)
    return replace(base or MlflowSettings(), **values)


def _model_options(where: str, table: dict[str, Any], sources: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """[models.<name>] tables -> {name: options}, each checked against the model's spec
    (types and ranges, and the rules across options) and normalized (lists -> tuples).
    A user's model is named by its name once the matrix has named its file."""
    from dlbench import registry

    out = {}
    known = registry.names("model", sources)
    for name, options in table.items():
        at = f"{where[:-1]}.{name}]"
        if name not in known:
            raise ConfigError(f"{at}: unknown model {_show(name)}; allowed: {_allowed(known)}")
        if not isinstance(options, dict):
            raise ConfigError(f"{at}: expected a table of options")
        try:
            resolved = registry.model(name, sources).resolve_options(options)
        except ValueError as exc:
            raise ConfigError(f"{at}: {exc}") from None
        out[name] = {k: resolved[k] for k in options}
    return out


def parse_option_flags(
    flags: list[str], where: str = "--option", sources: Mapping[str, str] | None = None
) -> dict[str, dict[str, Any]]:
    """['lstm.hidden=650', 'transformer.preset=bert_base'] -> {model: {option: value}};
    values are read as TOML values (numbers, true/false), else kept as strings. Checked
    against the models' specs when `sources` is given (override checks them otherwise,
    once the command line's own models are known)."""
    table: dict[str, dict[str, Any]] = {}
    for flag in flags:
        name, dot, rest = flag.partition(".")
        option, eq, raw = rest.partition("=")
        if not dot or not eq or not name or not option:
            raise ConfigError(f"{where} {flag!r}: expected MODEL.OPTION=VALUE, e.g. lstm.hidden=650")
        try:
            value = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw
        table.setdefault(name, {})[option] = value
    return table if sources is None else _model_options(f"{where} [models]", table, sources)


def load(path: str | Path) -> Experiment:
    path = Path(path)
    shown = str(path) if str(path).isprintable() else repr(str(path))
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(f"{shown}: no such experiment file") from None
    except IsADirectoryError:
        raise ConfigError(f"{shown}: is a directory; give an experiment file (TOML)") from None
    except PermissionError:
        raise ConfigError(f"{shown}: cannot read the experiment file: permission denied") from None
    except OSError as exc:
        raise ConfigError(f"{shown}: cannot read the experiment file: {exc.strerror or exc}") from None
    except ValueError as exc:  # a NUL character in the path
        raise ConfigError(f"{shown}: not a usable file name: {exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise ConfigError(f"{shown}: larger than {MAX_FILE_BYTES // 2**20} MiB; an experiment file is TOML text")
    try:
        text = data.decode("utf-8-sig")  # a byte-order mark some editors write is not part of the TOML
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{shown}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            "an experiment file is TOML, which is UTF-8"
        ) from None
    return parse(text, shown, base=path.resolve().parent)


def default() -> Experiment:
    """The embedded default suite that `dlbench run` runs with no arguments."""
    text = resources.files("dlbench").joinpath("default.toml").read_text(encoding="utf-8")
    return parse(text, "<embedded default.toml>")


def override(
    exp: Experiment,
    matrix: dict[str, list[Any]],
    protocol: dict[str, Any],
    where: str = "command line",
    model_options: dict[str, dict[str, Any]] | None = None,
) -> Experiment:
    """Apply command-line flags: matrix factors replace the file's lists; protocol
    settings replace single values. Validated like the file."""
    new_matrix = dict(exp.matrix)
    refs = _Refs(None, dict(exp.sources))
    for k, v in matrix.items():
        new_matrix[k] = _check_factor(f"{where} ({_flag(k)})", k, tuple(v), refs)
    # A factor given on the command line also narrows the file's [[include]] cells:
    # `--framework torch` must not still run an included sklearn cell.
    include = []
    for inc in exp.include:
        narrowed = {k: tuple(x for x in vals if k not in matrix or x in new_matrix[k]) for k, vals in inc.items()}
        if all(narrowed.values()):
            include.append(narrowed)
    proto_table = {k: v for k, v in protocol.items() if v is not None}
    proto = exp.protocol
    if proto_table:
        if "epochs" in proto_table and "steps" in proto_table:
            raise ConfigError(f"{where}: give --epochs or --steps, not both")
        proto = _protocol(where, proto_table, exp.protocol, flags=True)
    if model_options:  # the flags alone first: an error names --option, not the merge
        _model_options("--option [models]", model_options, refs.sources)
    options = {k: dict(v) for k, v in exp.model_options.items()}
    for name, given in (model_options or {}).items():
        options.setdefault(name, {}).update(given)
    if model_options:  # the file's options and the flags' together must fit (transformer hidden / heads)
        options = _model_options(f"{where} (--option) [models]", options, refs.sources)
    _check_size(where, new_matrix, include, proto.trials, exp.exclude)
    return replace(
        exp,
        matrix=new_matrix,
        protocol=proto,
        include=tuple(include),
        model_options=options,
        sources=refs.sources,
    )
