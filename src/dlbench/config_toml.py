"""The experiment that ran, as TOML: the file and the command-line flags merged.

A run stores this text (runs.config_text), so every report and `dlbench runs`
shows what ran — `--epochs 2 --model mlp` on the embedded default reads
`epochs = 2` and `model = ["mlp"]`, not the default's `epochs = 10` — and
`dlbench run` on the text reproduces the same plan (config.parse round-trips it).
Written by hand: the values are strings, numbers, booleans, lists and one level of
tables, and the standard library reads TOML but does not write it.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, fields, replace
from typing import Any

from dlbench.config import FACTORS, Experiment, Protocol
from dlbench.executor_settings import ExecutorSettings
from dlbench.protocol_settings import MlflowSettings

EMBEDDED = "<embedded default.toml>"


def value(v: Any) -> str:
    """One TOML value: strings JSON-quoted (a subset of TOML's basic strings), lists inline."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):  # config refuses these; never write what cannot be read back
            raise ValueError(f"cannot write {v} as TOML")
        text = repr(v)
        return text if any(c in text for c in ".eE") else text + ".0"
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list | tuple):
        return "[" + ", ".join(value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{key(k)} = {value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"cannot write {type(v).__name__} as TOML")


def key(k: str) -> str:
    return k if k.replace("_", "").replace("-", "").isalnum() and k.isascii() else json.dumps(k)


def _written(exp: Experiment, factor: str, values: Any) -> list[Any]:
    """A factor's values as the file reads them: a user's model or dataset by its
    reference (an absolute path), so that the stored text runs again as it ran."""
    if factor not in ("model", "dataset"):
        return list(values)
    return [exp.sources.get(f"{factor}:{v}", v) for v in values]


def to_toml(exp: Experiment) -> str:
    """Every setting of the experiment, defaults included, in the file format config.parse reads."""
    lines = [
        "# The experiment as it ran: the file and the command-line flags merged, every setting shown.",
        "",
        "[experiment]",
        f"name = {value(exp.name)}",
    ]
    if exp.description:
        lines.append(f"description = {value(exp.description)}")
    lines += ["", "[matrix]", *(f"{k} = {value(_written(exp, k, exp.matrix[k]))}" for k in FACTORS if k in exp.matrix)]
    lines += ["", "[protocol]"]
    for f in fields(Protocol):
        v = getattr(exp.protocol, f.name)
        if v is not None:  # None is "not set" (epochs when steps are given, data_dir): TOML has no null
            lines.append(f"{f.name} = {value(v)}")
    lines += ["", "[synthetic]", *(f"{k} = {value(v)}" for k, v in asdict(exp.synthetic).items())]
    for kind, cells in (("include", exp.include), ("exclude", exp.exclude)):
        for cell in cells:
            lines += ["", f"[[{kind}]]", *(f"{k} = {value(_written(exp, k, v))}" for k, v in cell.items())]
    for model, options in exp.model_options.items():
        lines += ["", f"[models.{key(model)}]", *(f"{key(k)} = {value(v)}" for k, v in options.items())]
    executor = {k: v for k, v in asdict(exp.executor).items() if v != getattr(ExecutorSettings(), k)}
    if executor:
        lines += [
            "",
            "[executor]",
            *(f"{k} = {value(list(v) if isinstance(v, tuple) else v)}" for k, v in executor.items()),
        ]
    # [mlflow] as the file gave it (the --mlflow flag is not part of the experiment, like --db).
    mlflow = {k: v for k, v in asdict(exp.mlflow).items() if v != getattr(MlflowSettings(), k)}
    if mlflow:
        lines += ["", "[mlflow]", *(f"{k} = {value(v)}" for k, v in mlflow.items())]
    return "\n".join(lines) + "\n"


def derived_name(exp: Experiment) -> str:
    """A short name from what runs: "mlp, cnn on digits: torch, jax"."""

    def joined(factor: str) -> str:
        values = list(
            dict.fromkeys([*exp.matrix.get(factor, ()), *(v for c in exp.include for v in c.get(factor, ()))])
        )
        return ", ".join(str(v) for v in values)

    return f"{joined('model')} on {joined('dataset')}: {joined('framework')}"


def resolved(exp: Experiment, flags_given: bool) -> Experiment:
    """The experiment with its stored text replaced by what will run. A run of the
    embedded default changed by flags is named after what it runs ("default" would
    say it ran the default suite)."""
    if flags_given and exp.source == EMBEDDED:
        exp = replace(
            exp,
            name=derived_name(exp),
            description="the embedded default suite, changed by command-line flags (see the command)",
        )
    source = exp.source + (" with command-line flags" if flags_given else "")
    return replace(exp, text=to_toml(exp), source=source)
