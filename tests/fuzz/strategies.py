"""Hypothesis strategies for hostile experiment files: TOML documents built from
dicts that mix valid keys and values with unknown keys, wrong types, huge,
negative, nan and inf numbers, empty lists, nested tables and odd strings."""

from __future__ import annotations

import json
import math
import re
from dataclasses import fields
from typing import Any

from hypothesis import strategies as st

from dlbench import config, runtime_settings
from dlbench import registry as _registry
from dlbench.distributed import BATCH_SCOPES
from dlbench.frameworks.protocol import INITS, OPTIMIZERS
from dlbench.models import get_spec
from dlbench.models.spec import OptionRange
from dlbench.registry import strategies

# -- a small TOML writer (the standard library reads TOML but does not write it) --

_BARE = re.compile(r"[A-Za-z0-9_-]+")


def toml_key(key: str) -> str:
    return key if _BARE.fullmatch(key) else toml_string(key)


def toml_string(text: str) -> str:
    # JSON's escapes are TOML's, except DEL, which TOML wants escaped too.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(type(value))


def toml_document(doc: dict[str, Any]) -> str:
    """Root scalars first, then [tables] (a dict of dicts under "models" as [models.NAME]),
    then [[arrays of tables]]; anything else inline."""
    root, tables, arrays = [], [], []
    for key, value in doc.items():
        if isinstance(value, dict) and key == "models" and all(isinstance(v, dict) for v in value.values()):
            for name, options in value.items():
                tables.append(f"[models.{toml_key(name)}]")
                tables += [f"{toml_key(k)} = {toml_value(v)}" for k, v in options.items()]
        elif isinstance(value, dict):
            tables.append(f"[{toml_key(key)}]")
            tables += [f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()]
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for entry in value:
                arrays.append(f"[[{toml_key(key)}]]")
                arrays += [f"{toml_key(k)} = {toml_value(v)}" for k, v in entry.items()]
        else:
            root.append(f"{toml_key(key)} = {toml_value(value)}")
    return "\n".join(root + tables + arrays) + "\n"


# -- hostile values ----------------------------------------------------------

EDGE_INTS = [
    0,
    1,
    -1,
    2,
    7,
    2**20,
    2**20 + 1,
    2**31 - 1,
    2**31,
    2**32,
    2**53 + 1,
    2**63 - 1,
    2**63,
    2**64,
    10**20,
    -(10**20),
    -(2**63),
    10**300,
]
EDGE_FLOATS = [
    0.0,
    -0.0,
    0.5,
    1.0,
    0.999999,
    1e-300,
    5e-324,
    1e12,
    1e300,
    -1e300,
    1.7976931348623157e308,
    float("nan"),
    float("inf"),
    float("-inf"),
    100.0,
    100.00000001,
    604800.0,
    604800.5,
    3600.0,
    3600.1,
    60.0,
    0.01,
    0.0099,
]
ODD_STRINGS = [
    "",
    " ",
    "\x00",
    "\t",
    "\n",
    "\r\n",
    "\x7f",
    "\u202e",
    "\ufeff",
    "💥",
    "a" * 300,
    "torch",
    "nan",
    "inf",
    "1e12",
    "-1",
    "0",
    "none",
    "all",
    "cpu,cpu",
    ",",
    "train.time,",
    "latency_b0.time",
    "99999999999999999999TiB",
    "+0",
    "+",
    "2GiB",
    "-3",
    "0x10",
    "１２",
    "../../etc/passwd",
    "[x]",
    "'",
    '"',
    "\\",
    "${HOME}",
    "%s%n",
    "\u0085",
    "\u2028",
]


# Strategies are built once: building them per draw costs more than drawing.
HOSTILE_SCALARS = st.one_of(
    st.sampled_from(EDGE_INTS),
    st.sampled_from(EDGE_FLOATS),
    st.sampled_from(ODD_STRINGS),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
)
HOSTILE = st.one_of(
    HOSTILE_SCALARS,
    HOSTILE_SCALARS,  # mostly scalars; now and then a list or an inline table
    st.lists(HOSTILE_SCALARS, max_size=4),
    st.dictionaries(
        st.sampled_from(["a", "name", "torch", "hidden", "x y", ""]),
        st.one_of(HOSTILE_SCALARS, st.lists(HOSTILE_SCALARS, max_size=2)),
        max_size=3,
    ),
)
UNKNOWN_KEYS = st.one_of(
    st.sampled_from(["repeat", "warm_up", "framwork", "Threads", "epochs ", "", "é", "a.b", "name", "__class__", "0"]),
    st.text(min_size=1, max_size=8),
)
# Hypothesis favours the smallest value of integers(0, 3): sampled_from keeps the 1-in-4 odds.
QUARTER = st.sampled_from([False, False, False, True])
EDGE_NUMBERS = st.one_of(
    st.sampled_from(EDGE_INTS),
    st.sampled_from(EDGE_FLOATS),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(),
)


# -- valid values, near their bounds -----------------------------------------


def _variants() -> list[str]:
    out = []
    for name, info in _registry.frameworks().items():
        out.append(name)
        out += [f"{name}:{v}" for v in info.variants]
    return out


FRAMEWORKS = _variants()
MODEL_NAMES = tuple(_registry.builtin("model"))
DATASET_NAMES = tuple(_registry.builtin("dataset"))

FACTOR_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "framework": st.sampled_from(FRAMEWORKS),
    "model": st.sampled_from(MODEL_NAMES),
    "dataset": st.sampled_from(DATASET_NAMES),
    "batch_size": st.one_of(st.integers(1, 512), st.sampled_from([1, config.MAX_BATCH_SIZE])),
    "init": st.sampled_from(INITS),
    "optimizer": st.sampled_from(OPTIMIZERS),
    "lr": st.one_of(st.floats(min_value=1e-9, max_value=config.MAX_LR), st.sampled_from([config.MAX_LR, 1, 5e-324])),
    "input_shape": st.one_of(st.sampled_from([0, 1, 8, 32, 64, config.MAX_INPUT_SHAPE]), st.integers(0, 600)),
    "precision": st.sampled_from(config.PRECISIONS),
    "layout": st.sampled_from(config.LAYOUTS),
    "pipeline": st.sampled_from(config.PIPELINES),
    "strategy": st.sampled_from(tuple(strategies())),
    "world_size": st.one_of(st.sampled_from([1, 2, config.MAX_WORLD_SIZE]), st.integers(1, 8)),
    "runtime": st.one_of(
        st.sampled_from(["defaults", "all"]),
        st.lists(st.sampled_from(runtime_settings.NAMES), min_size=1, max_size=3).map("+".join),
    ),
}


def _num(low, high, integer=True) -> st.SearchStrategy[Any]:
    edges = [low, high] if integer else [float(low), float(high)]
    inner = st.integers(low, high) if integer else st.floats(min_value=low, max_value=high)
    return st.one_of(st.sampled_from(edges), inner)


PROTOCOL_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "epochs": _num(1, config.MAX_EPOCHS),
    "steps": _num(1, config.MAX_STEPS),
    "repeats": _num(1, config.MAX_REPEATS),
    "warmup": _num(0, config.MAX_WARMUP),
    "trials": st.one_of(st.sampled_from([1, 2, 3]), _num(1, config.MAX_TRIALS)),
    "threads": st.integers(0, config.available_cores()),
    "timeout": st.one_of(st.sampled_from([config.MAX_TIMEOUT_S, 1e-9, 1]), _num(0.001, config.MAX_TIMEOUT_S, False)),
    "seed": _num(0, config.MAX_SEED),
    "momentum": st.one_of(st.just(0), st.floats(min_value=0, max_value=0.999999)),
    "device": st.sampled_from(config.DEVICES),
    "train_samples": _num(0, config.MAX_SAMPLES),
    "test_samples": _num(0, config.MAX_SAMPLES),
    "latency_batches": _num(0, config.MAX_LATENCY_BATCHES),
    "infer_min_time": _num(0, 60, False),
    "data_dir": st.sampled_from(["", "/tmp", "data", "~/datasets"]),
    "samplers": st.sampled_from(["all", "none", "cpu", "cpu,rapl", "memory,nvml,thermal"]),
    "sample_interval": st.one_of(st.just(0), _num(0.01, config.MAX_SAMPLE_INTERVAL_S, False)),
    "idle_baseline": _num(0, config.MAX_IDLE_BASELINE_S, False),
    "until_ci": st.one_of(st.just(0), st.floats(min_value=0.001, max_value=99.999)),
    "max_repeats": _num(1, config.MAX_TRIALS),
    "budget": _num(0, config.MAX_BUDGET_MIN, False),
    "until_ci_metrics": st.sampled_from(
        ["train.time", "train.time,infer.time", "latency_b1.time", "build.time, compile.time"]
    ),
    "memory_limit": st.sampled_from(
        ["", "0", "2GiB", "+512MiB", "1.5GB", "64MiB", str(config.MAX_MEMORY), "256TiB", "+1MiB"]
    ),
    "target_accuracy": _num(0, 1, False),
    "tta_budget": _num(0, config.MAX_TTA_BUDGET_S, False),
    "batch_scope": st.sampled_from(BATCH_SCOPES),
    "profile_steps": _num(0, config.MAX_PROFILE_STEPS),
    "profile_traces": st.sampled_from(["", "traces", "/tmp/dlbench-traces", "~/traces", "a b/c"]),
    "profile_calls": _num(1, config.MAX_PROFILE_CALLS),
}
PROTOCOL_KEYS = tuple(f.name for f in fields(config.Protocol))
assert set(PROTOCOL_VALUES) == set(PROTOCOL_KEYS)

SYNTHETIC_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "shape": st.tuples(st.integers(1, 64), st.integers(1, 64), st.integers(1, 4)).map(list),
    "classes": st.integers(2, 100),
    "train_size": _num(1, config.MAX_SAMPLES),
    "test_size": _num(1, config.MAX_SAMPLES),
}


def _option_value(rng: OptionRange) -> st.SearchStrategy[Any]:
    if rng.kind is int:
        return _num(int(rng.low), int(rng.high))
    low = math.nextafter(rng.low, math.inf) if rng.low_open else rng.low
    high = math.nextafter(rng.high, -math.inf) if rng.high_open else rng.high
    return st.floats(min_value=low, max_value=high)


def option_values(model: str) -> dict[str, st.SearchStrategy[Any]]:
    spec = get_spec(model)
    out = {}
    for key, default in spec.options.items():
        if key in spec.option_choices:
            out[key] = st.sampled_from(spec.option_choices[key])
            continue
        rng = spec.option_range(key)
        if isinstance(default, tuple):
            out[key] = st.lists(_option_value(rng), min_size=len(default), max_size=len(default))
        else:
            out[key] = _option_value(rng)
    return out


OPTION_VALUES = {m: option_values(m) for m in MODEL_NAMES}


# -- documents -----------------------------------------------------------------

_CACHE: dict[Any, st.SearchStrategy[Any]] = {}


def _cached(key: Any, make) -> st.SearchStrategy[Any]:
    if key not in _CACHE:
        _CACHE[key] = make()
    return _CACHE[key]


@st.composite
def table(
    draw, values: dict[str, st.SearchStrategy[Any]], mode: str, max_keys: int = 4, as_list: bool = False
) -> dict[str, Any]:
    """A table of some of `values`' keys: valid values (mode "valid"), hostile ones
    ("hostile"), or each either way ("mixed"), with an unknown key now and then."""
    keys = draw(
        _cached(
            ("keys", id(values), max_keys),
            lambda: (
                st.lists(st.sampled_from(sorted(values)), max_size=max_keys, unique=True) if values else st.just([])
            ),
        )
    )
    out: dict[str, Any] = {}
    for key in keys:
        hostile = mode == "hostile" or (mode == "mixed" and draw(QUARTER))
        if hostile:
            out[key] = draw(HOSTILE)
        elif as_list and draw(st.booleans()):
            out[key] = draw(_cached(("list", id(values), key), lambda: st.lists(values[key], min_size=1, max_size=2)))
        else:
            out[key] = draw(values[key])
    if mode in ("mixed", "hostile") and draw(QUARTER):
        out[draw(UNKNOWN_KEYS)] = draw(HOSTILE)
    return out


EXPERIMENT_VALUES = {
    "name": st.one_of(st.sampled_from(["fuzz", "a b", "x" * 200]), st.text(min_size=1, max_size=20)),
    "description": st.text(max_size=40),
}
# valid: every value in range; one-off: valid but for one number at an edge (huge,
# negative, nan, inf: the values a type check lets through); mixed: each value valid
# or hostile; hostile: every value hostile (wrong types, odd strings, nesting).
MODES = st.sampled_from(["valid", "valid", "one-off", "one-off", "mixed", "hostile"])
SOME_MODELS = st.lists(st.sampled_from(MODEL_NAMES), max_size=2, unique=True)


@st.composite
def experiment_docs(draw) -> dict[str, Any]:
    mode = draw(MODES)
    doc: dict[str, Any] = {}
    valid_mode = mode in ("valid", "one-off")
    # Small matrices: few frameworks and models, so that expanding an accepted one is quick.
    matrix = draw(table(FACTOR_VALUES, mode, max_keys=5, as_list=True))
    doc["matrix"] = matrix
    if draw(st.booleans()):
        protocol = draw(table(PROTOCOL_VALUES, mode, max_keys=6))
        if "epochs" in protocol and "steps" in protocol and valid_mode:
            del protocol[draw(st.sampled_from(["epochs", "steps"]))]
        if protocol.get("target_accuracy") and "steps" in protocol and valid_mode:
            del protocol["steps"]
        if valid_mode and isinstance(protocol.get("trials"), int) and protocol["trials"] > 3:
            protocol["trials"] = draw(st.integers(1, 3))  # keep accepted plans small; the bound has its own test
        doc["protocol"] = protocol
    if draw(st.integers(0, 3)) == 0:
        doc["synthetic"] = draw(table(SYNTHETIC_VALUES, mode))
    if draw(st.integers(0, 2)) == 0:
        names = draw(SOME_MODELS)
        doc["models"] = {name: draw(table(OPTION_VALUES[name], mode, max_keys=3)) for name in names}
    if draw(st.integers(0, 4)) == 0:
        doc["experiment"] = draw(table(EXPERIMENT_VALUES, mode))
    for kind in ("include", "exclude"):
        if draw(st.integers(0, 5)) == 0:
            cells = draw(st.lists(table(FACTOR_VALUES, mode, max_keys=2, as_list=True), max_size=2))
            doc[kind] = [c or {"model": "mlp"} for c in cells] if valid_mode else cells
    if mode == "one-off":
        _one_off(draw, doc)
    if not valid_mode and draw(st.integers(0, 6)) == 0:
        doc[draw(st.sampled_from(["matrix", "protocol", "models", "include", "experimnt", "synthetic"]))] = draw(
            HOSTILE
        )
    return doc


NUMERIC_KEYS = {
    "matrix": ("batch_size", "lr", "input_shape"),
    "protocol": tuple(
        k for k, f in ((f.name, f) for f in fields(config.Protocol)) if "int" in str(f.type) or "float" in str(f.type)
    ),
    "synthetic": ("classes", "train_size", "test_size"),
}


def _one_off(draw, doc: dict[str, Any]) -> None:
    """Replace (or add) one numeric setting with an edge number: the input a type check
    passes and only a range check refuses."""
    section = draw(st.sampled_from(sorted(NUMERIC_KEYS) + ["models"]))
    number = draw(EDGE_NUMBERS)
    if section == "models":
        model = draw(st.sampled_from([m for m in MODEL_NAMES if get_spec(m).options]))
        spec = get_spec(model)
        key = draw(st.sampled_from(sorted(k for k in spec.options if k not in spec.option_choices)))
        default = spec.options[key]
        doc.setdefault("models", {}).setdefault(model, {})[key] = (
            [*default[:-1], number] if isinstance(default, tuple) else number
        )
        return
    key = draw(st.sampled_from(NUMERIC_KEYS[section]))
    table = doc.setdefault(section, {})
    table[key] = [number] if section == "matrix" else number
