"""The experiment that ran, as TOML: the file and the command-line flags merged.

A run stores this text (runs.config_text), so every report and `dlbench runs`
shows what ran — `--epochs 2 --model mlp` on the embedded default reads
`epochs = 2` and `model = ["mlp"]`, not the default's `epochs = 10` — and
`dlbench run` on the text reproduces the same plan (config.parse round-trips it).
Written with tomlkit: the standard library reads TOML but does not write it, and
tomlkit (unlike tomli-w, which puts each element of an array on a line of its own
and writes no comments) keeps the layout a person reads in a report — the heading
comment, one line per setting, lists inline as `model = ["mlp"]`, a blank line
between tables — while quoting every string and key by TOML's rules (control
characters, DEL included, escaped), so that tomllib reads back exactly what was
written. What stays here is only which settings go into which table.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, fields, replace
from typing import Any

import tomlkit
from tomlkit.items import Item, Table

from dlbench.config import FACTORS, Experiment, Protocol
from dlbench.executor_settings import ExecutorSettings
from dlbench.protocol_settings import MlflowSettings

EMBEDDED = "<embedded default.toml>"
HEADING = "The experiment as it ran: the file and the command-line flags merged, every setting shown."


def _item(v: Any) -> Item:
    """One TOML value as a tomlkit item: lists (and tuples) as inline arrays, dicts as
    inline tables, so that a setting stays on one line as the file gave it."""
    if isinstance(v, float) and not math.isfinite(v):  # config refuses these; never write what cannot be read back
        raise ValueError(f"cannot write {v} as TOML")
    if isinstance(v, bool | int | float | str):
        return tomlkit.item(v)
    if isinstance(v, list | tuple):
        array = tomlkit.array()
        for x in v:
            array.append(_item(x))
        return array
    if isinstance(v, dict):
        table = tomlkit.inline_table()
        for k, x in v.items():
            table.append(k, _item(x))
        return table
    raise TypeError(f"cannot write {type(v).__name__} as TOML")


def value(v: Any) -> str:
    """One TOML value as text: `"a\\"b"`, `[1, "x"]`, `{ k = 1 }`."""
    return _item(v).as_string()


def _table(settings: Iterable[tuple[str, Any]]) -> Table:
    table = tomlkit.table()
    for k, v in settings:
        table.add(k, _item(v))
    return table


def _written(exp: Experiment, factor: str, values: Any) -> list[Any]:
    """A factor's values as the file reads them: a user's model or dataset by its
    reference (an absolute path), so that the stored text runs again as it ran."""
    if factor not in ("model", "dataset"):
        return list(values)
    return [exp.sources.get(f"{factor}:{v}", v) for v in values]


def to_toml(exp: Experiment) -> str:
    """Every setting of the experiment, defaults included, in the file format config.parse reads."""
    doc = tomlkit.document()
    doc.add(tomlkit.comment(HEADING))
    doc.add(tomlkit.nl())
    experiment = [("name", exp.name)] + ([("description", exp.description)] if exp.description else [])
    doc.add("experiment", _table(experiment))
    doc.add("matrix", _table((k, _written(exp, k, exp.matrix[k])) for k in FACTORS if k in exp.matrix))
    # None is "not set" (epochs when steps are given, data_dir): TOML has no null
    protocol = ((f.name, getattr(exp.protocol, f.name)) for f in fields(Protocol))
    doc.add("protocol", _table((k, v) for k, v in protocol if v is not None))
    doc.add("synthetic", _table(asdict(exp.synthetic).items()))
    for kind, cells in (("include", exp.include), ("exclude", exp.exclude)):
        if cells:
            tables = tomlkit.aot()
            for cell in cells:
                tables.append(_table((k, _written(exp, k, v)) for k, v in cell.items()))
            doc.add(kind, tables)
    if exp.model_options:
        models = tomlkit.table(is_super_table=True)  # [models.<name>] headers only, no bare [models]
        for model, options in exp.model_options.items():
            models.add(model, _table(options.items()))
        doc.add("models", models)
    executor = {k: v for k, v in asdict(exp.executor).items() if v != getattr(ExecutorSettings(), k)}
    if executor:
        doc.add("executor", _table(executor.items()))
    # [mlflow] as the file gave it (the --mlflow flag is not part of the experiment, like --db).
    mlflow = {k: v for k, v in asdict(exp.mlflow).items() if v != getattr(MlflowSettings(), k)}
    if mlflow:
        doc.add("mlflow", _table(mlflow.items()))
    return tomlkit.dumps(doc)


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
