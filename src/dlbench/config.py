"""Experiment files (TOML) -> a validated, frozen `Experiment`.

Validation is strict on purpose: a typo in a benchmark configuration silently
falls back to a default and produces a plausible but wrong result. Every unknown
key or value is an error that names the file, the key and what is allowed.

    [experiment]  name, description
    [matrix]      factors whose values are crossed (lists or scalars)
    [protocol]    scalar settings shared by every cell
    [synthetic]   shape and size of the synthetic dataset
    [[include]]   extra cells (a sub-matrix; missing factors take the matrix's values)
    [[exclude]]   cells to drop (every given factor must match)
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from importlib import resources
from pathlib import Path
from typing import Any

from dlbench.frameworks.protocol import INITS, OPTIMIZERS

FACTORS = ("framework", "model", "dataset", "batch_size", "init", "optimizer", "lr",
           "input_shape", "precision", "layout", "pipeline")
# float32 everywhere, or bfloat16 compute with float32 weights and loss
# (torch.autocast, Keras' "mixed_bfloat16" policy, JAX casting params and inputs).
PRECISIONS = ("float32", "bf16-mixed")
# native: each framework's own (torch NCHW, Keras and Flax NHWC);
# channels-last / channels-first: that memory layout where the framework offers it.
LAYOUTS = ("native", "channels-last", "channels-first")
# Training data: preloaded device tensors (shuffle only), or CIFAR-style augmentation
# (pad-4 random crop, horizontal flip, per-channel normalization) in the framework's
# own ops (native: torch tensor ops, tf.data, jax.numpy) or the shared numpy pipeline.
PIPELINES = ("preloaded", "native", "numpy")
DEVICES = ("cpu", "cuda")


class ConfigError(ValueError):
    """A configuration problem, with the file and key it concerns."""


@dataclass(frozen=True)
class Protocol:
    epochs: int | None = 1
    steps: int | None = None
    repeats: int = 5
    warmup: int = 1
    trials: int = 1
    threads: int = 0           # 0: one per physical core
    timeout: float = 1800.0    # seconds per trial (whole worker process)
    seed: int = 0
    momentum: float = 0.0
    device: str = "cpu"
    train_samples: int = 0     # 0: the whole split
    test_samples: int = 0
    latency_batches: int = 20  # batches timed one at a time per repeat
    # Inference is timed over whole passes filling at least this many seconds
    # (0: one pass); see phases.py for why a single short pass is not enough.
    infer_min_time: float = 0.1
    data_dir: str | None = None
    samplers: str = "all"      # telemetry: "all", "none" or a comma list (cpu, rapl, thermal, nvml, memory)
    sample_interval: float = 0.0  # seconds between polls; 0: each source's own default
    idle_baseline: float = 0.0    # seconds of idle power measured before the run; 0: none
    until_ci: float = 0.0      # adaptive: add blocks until every median's 95% CI is within ±this % (0: off)
    max_repeats: int = 20      # adaptive: at most this many blocks (trials per case)
    budget: float = 0.0        # adaptive: stop adding blocks after this many minutes (0: no limit)
    # adaptive: the phase.metric medians whose CI must narrow (comma list). The
    # headline metric by default: a sub-millisecond inference median on a shared
    # CPU can need 20+ blocks for ±5% while the train-time verdict is long settled.
    until_ci_metrics: str = "train.time"
    # Cap on each worker's memory ("2GiB", "1500MB"; "+512MiB": above the footprint
    # after import and data load; "0" or "": none), so that out-of-memory cells are
    # exercised on a CPU machine too (see parse_memory_limit).
    memory_limit: str = ""
    # Time to accuracy (DAWNBench): train epoch by epoch until this test accuracy
    # (a fraction; 0: off), at most `epochs` epochs and `tta_budget` seconds of training.
    target_accuracy: float = 0.0
    tta_budget: float = 0.0


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
    source: str = "<defaults>"   # file the experiment came from
    text: str = ""               # the file's text, verbatim (stored with the run)


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
}

_TOP_KEYS = ("experiment", "matrix", "protocol", "synthetic", "include", "exclude", "models")


def _allowed(names) -> str:
    return ", ".join(str(n) for n in names)


def _check_keys(where: str, table: dict[str, Any], allowed: tuple[str, ...]) -> None:
    for key in table:
        if key not in allowed:
            raise ConfigError(f"{where}: unknown key {key!r}; allowed keys: {_allowed(allowed)}")


def _as_tuple(value: Any) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, list | tuple) else (value,)


def _model_names() -> tuple[str, ...]:
    from dlbench.models import MODEL_NAMES

    return MODEL_NAMES


def _dataset_names() -> tuple[str, ...]:
    from dlbench.datasets import DATASET_NAMES

    return DATASET_NAMES


# Factors whose values must be one of a fixed set: factor -> its allowed values.
# Functions, so that the model and dataset packages are imported only when a
# config actually names those factors, not when this module is imported.
_CHOICES: dict[str, Callable[[], tuple[Any, ...]]] = {
    "model": _model_names,
    "dataset": _dataset_names,
    "init": lambda: INITS,
    "optimizer": lambda: OPTIMIZERS,
    "precision": lambda: PRECISIONS,
    "layout": lambda: LAYOUTS,
    "pipeline": lambda: PIPELINES,
}


def _check_factor(where: str, factor: str, values: tuple[Any, ...]) -> tuple[Any, ...]:
    """Validate one factor's values; returns them normalized."""
    from dlbench.frameworks import registry

    if not values:
        raise ConfigError(f"{where}: {factor} is empty; give at least one value")
    frameworks = registry() if factor == "framework" else {}
    choices = _CHOICES[factor]() if factor in _CHOICES else None
    out = []
    for v in values:
        key = f"{where}: {factor} = {v!r}"
        if factor == "framework":
            if not isinstance(v, str):
                raise ConfigError(f"{key}: expected a string such as 'torch' or 'torch:compile'")
            name, _, variant = v.partition(":")
            if name not in frameworks:
                raise ConfigError(f"{key}: unknown framework; allowed: {_allowed(frameworks)}")
            if variant and variant not in frameworks[name].variants:
                raise ConfigError(f"{key}: unknown variant of {name}; allowed: "
                                  f"{_allowed(frameworks[name].variants)}")
        elif choices is not None and v not in choices:
            raise ConfigError(f"{key}: unknown {factor}; allowed: {_allowed(choices)}")
        elif factor == "batch_size" and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
            raise ConfigError(f"{key}: batch_size must be a positive integer")
        elif factor == "lr":
            if not isinstance(v, int | float) or isinstance(v, bool) or v <= 0:
                raise ConfigError(f"{key}: lr must be a positive number")
            v = float(v)
        elif factor == "input_shape" and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
            raise ConfigError(f"{key}: input_shape must be a positive integer (the side of a square "
                              f"image or a sequence length; 0 = the dataset's own)")
        out.append(v)
    return tuple(dict.fromkeys(out))  # drop duplicates, keep order


def _typed(where: str, key: str, value: Any, default: Any, annotation: str) -> Any:
    """Check a scalar setting against the type of its declared annotation."""
    allows_none = "None" in annotation
    if value is None and allows_none:
        return None
    if "int" in annotation and "float" not in annotation:
        if not isinstance(value, int) or isinstance(value, bool):
            raise ConfigError(f"{where}: {key} = {value!r}: expected an integer")
        return value
    if "float" in annotation:
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise ConfigError(f"{where}: {key} = {value!r}: expected a number")
        return float(value)
    if "str" in annotation:
        if not isinstance(value, str):
            raise ConfigError(f"{where}: {key} = {value!r}: expected a string")
        return value
    return value


def _protocol(where: str, table: dict[str, Any], base: Protocol) -> Protocol:
    names = tuple(f.name for f in fields(Protocol))
    _check_keys(where, table, names)
    values = {}
    for f in fields(Protocol):
        if f.name in table:
            values[f.name] = _typed(where, f.name, table[f.name], getattr(base, f.name), str(f.type))
    proto = replace(base, **values)
    if "steps" in table and "epochs" not in table:
        proto = replace(proto, epochs=None)
    if "epochs" in table and "steps" not in table:
        proto = replace(proto, steps=None)
    return validate_protocol(where, proto)


def validate_protocol(where: str, p: Protocol) -> Protocol:
    if (p.epochs is None) == (p.steps is None):
        raise ConfigError(f"{where}: set exactly one of epochs and steps")
    for name in ("epochs", "steps"):
        v = getattr(p, name)
        if v is not None and v < 1:
            raise ConfigError(f"{where}: {name} = {v}: must be >= 1")
    checks = [("repeats", p.repeats >= 1, ">= 1"), ("warmup", p.warmup >= 0, ">= 0"),
              ("trials", p.trials >= 1, ">= 1"), ("threads", p.threads >= 0, ">= 0 (0 = physical cores)"),
              ("timeout", p.timeout > 0, "> 0 seconds"), ("momentum", 0 <= p.momentum < 1, "in [0, 1)"),
              ("train_samples", p.train_samples >= 0, ">= 0 (0 = all)"),
              ("test_samples", p.test_samples >= 0, ">= 0 (0 = all)"),
              ("latency_batches", p.latency_batches >= 0, ">= 0"),
              ("infer_min_time", 0 <= p.infer_min_time <= 60, "in [0, 60] seconds (0 = one pass)"),
              ("sample_interval", p.sample_interval == 0 or p.sample_interval >= 0.01, "0 (source defaults) or >= 0.01 s"),
              ("idle_baseline", p.idle_baseline >= 0, ">= 0 seconds"),
              ("until_ci", 0 <= p.until_ci < 100, "a percentage in (0, 100), or 0 for a fixed design"),
              ("max_repeats", p.max_repeats >= 1, ">= 1"),
              ("budget", p.budget >= 0, ">= 0 minutes (0 = no limit)"),
              ("target_accuracy", 0 <= p.target_accuracy <= 1, "a fraction in (0, 1], or 0 for no target"),
              ("tta_budget", p.tta_budget >= 0, ">= 0 seconds (0 = only the epochs limit)")]
    for name, ok, rule in checks:
        if not ok:
            raise ConfigError(f"{where}: {name} = {getattr(p, name)!r}: must be {rule}")
    if p.target_accuracy and p.steps is not None:
        raise ConfigError(f"{where}: target_accuracy trains epoch by epoch: set epochs (the most epochs "
                          f"to try), not steps")
    from dlbench.samplers import parse_names

    try:
        parse_names(p.samplers)
    except ValueError as exc:
        raise ConfigError(f"{where}: samplers = {p.samplers!r}: {str(exc).removeprefix('--samplers: ')}") from None
    if p.device not in DEVICES:
        raise ConfigError(f"{where}: device = {p.device!r}: allowed: {_allowed(DEVICES)}")
    try:
        parse_memory_limit(p.memory_limit)
    except ValueError as exc:
        raise ConfigError(f"{where}: memory_limit = {p.memory_limit!r}: {exc}") from None
    try:
        parse_ci_metrics(p.until_ci_metrics)
    except ValueError as exc:
        raise ConfigError(f"{where}: until_ci_metrics = {p.until_ci_metrics!r}: {exc}") from None
    return p


MEMORY_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "kib": 2**10, "m": 10**6, "mb": 10**6, "mib": 2**20,
                "g": 10**9, "gb": 10**9, "gib": 2**30, "t": 10**12, "tb": 10**12, "tib": 2**40}


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
    """'2GiB' -> 2147483648; '' or '0' -> 0 (no limit). Decimal (MB, GB) and binary (MiB, GiB) units."""
    import re

    if text.strip() in ("", "0"):
        return 0
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    if not m or m.group(2).lower() not in MEMORY_UNITS:
        raise ValueError("expected a size such as 512MiB, 2GiB, 1.5GB or a byte count, or +SIZE for a cap "
                         "above the footprint after import and data load (0 or empty: no limit)")
    value = int(float(m.group(1)) * MEMORY_UNITS[m.group(2).lower()])
    if value < floor:
        raise ValueError(f"{value} bytes is below {floor // 2**20} MiB, too little for a Python process to start")
    return value


CI_METRICS = ("build.time", "compile.time", "train.time", "train.throughput", "infer.time",
              "infer.throughput", "latency_b1.time", "latency_b<B>.time")


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
    if (not isinstance(shape, list) or len(shape) != 3
            or not all(isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in shape)):
        raise ConfigError(f"{where}: shape = {shape!r}: expected [height, width, channels], positive integers")
    values = {"shape": tuple(shape)}
    for key in ("classes", "train_size", "test_size"):
        if key in table:
            v = table[key]
            if not isinstance(v, int) or isinstance(v, bool) or v < (2 if key == "classes" else 1):
                raise ConfigError(f"{where}: {key} = {v!r}: expected an integer >= {2 if key == 'classes' else 1}")
            values[key] = v
    return replace(s, **values)


def _cells(where: str, entries: Any, kind: str) -> tuple[dict[str, tuple[Any, ...]], ...]:
    if not isinstance(entries, list):
        raise ConfigError(f"{where}: [[{kind}]] must be an array of tables")
    out = []
    for i, entry in enumerate(entries):
        at = f"{where} [[{kind}]] #{i + 1}"
        if not isinstance(entry, dict) or not entry:
            raise ConfigError(f"{at}: expected a non-empty table of factors")
        _check_keys(at, entry, FACTORS)
        out.append({k: _check_factor(at, k, _as_tuple(v)) for k, v in entry.items()})
    return tuple(out)


def parse(text: str, source: str = "<string>") -> Experiment:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from None
    _check_keys(source, data, _TOP_KEYS)
    for key in ("experiment", "matrix", "protocol", "synthetic", "models"):
        if key in data and not isinstance(data[key], dict):
            raise ConfigError(f"{source}: [{key}] must be a table")
    exp = data.get("experiment", {})
    _check_keys(f"{source} [experiment]", exp, ("name", "description"))
    matrix_table = data.get("matrix", {})
    _check_keys(f"{source} [matrix]", matrix_table, FACTORS)
    matrix = dict(MATRIX_DEFAULTS)
    for k, v in matrix_table.items():
        matrix[k] = _check_factor(f"{source} [matrix]", k, _as_tuple(v))
    return Experiment(
        name=str(exp.get("name", Path(source).stem)),
        description=str(exp.get("description", "")),
        matrix=matrix,
        protocol=_protocol(f"{source} [protocol]", data.get("protocol", {}), Protocol()),
        synthetic=_synthetic(f"{source} [synthetic]", data.get("synthetic", {})),
        include=_cells(source, data.get("include", []), "include"),
        exclude=_cells(source, data.get("exclude", []), "exclude"),
        model_options=_model_options(f"{source} [models]", data.get("models", {})),
        source=source,
        text=text,
    )


def _model_options(where: str, table: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """[models.<name>] tables -> {name: options}, each checked against the model's spec."""
    from dlbench.models import MODEL_NAMES, get_spec

    out = {}
    for name, options in table.items():
        at = f"{where[:-1]}.{name}]"
        if name not in MODEL_NAMES:
            raise ConfigError(f"{at}: unknown model {name!r}; allowed: {_allowed(MODEL_NAMES)}")
        if not isinstance(options, dict):
            raise ConfigError(f"{at}: expected a table of options")
        try:
            get_spec(name).resolve_options(options)
        except ValueError as exc:
            raise ConfigError(f"{at}: {exc}") from None
        out[name] = dict(options)
    return out


def parse_option_flags(flags: list[str], where: str = "--option") -> dict[str, dict[str, Any]]:
    """['lstm.hidden=650', 'transformer.preset=bert_base'] -> {model: {option: value}};
    values are read as TOML values (numbers, true/false), else kept as strings."""
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
    return _model_options(f"{where} [models]", table)


def load(path: str | Path) -> Experiment:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such experiment file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    return parse(text, str(path))


def default() -> Experiment:
    """The embedded default suite that `dlbench run` runs with no arguments."""
    text = resources.files("dlbench").joinpath("default.toml").read_text(encoding="utf-8")
    return parse(text, "<embedded default.toml>")


def override(exp: Experiment, matrix: dict[str, list[Any]], protocol: dict[str, Any],
             where: str = "command line", model_options: dict[str, dict[str, Any]] | None = None) -> Experiment:
    """Apply command-line flags: matrix factors replace the file's lists; protocol
    settings replace single values. Validated like the file."""
    new_matrix = dict(exp.matrix)
    for k, v in matrix.items():
        new_matrix[k] = _check_factor(where, k, tuple(v))
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
        proto = _protocol(where, proto_table, exp.protocol)
    options = {k: dict(v) for k, v in exp.model_options.items()}
    for name, given in (model_options or {}).items():
        options.setdefault(name, {}).update(given)
    return replace(exp, matrix=new_matrix, protocol=proto, include=tuple(include), model_options=options)
