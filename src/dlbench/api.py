"""The Python API: `dlbench.run(...)` and `dlbench.load(...)`, re-exported from `dlbench`.

    import dlbench
    run_id = dlbench.run("study.toml")                         # an experiment file
    run_id = dlbench.run({"matrix": {"model": ["mlp"]}})       # the file's structure as a dict
    run_id = dlbench.run(model=["mymodel.py:MODEL"], framework=["torch", "jax"], epochs=2)
    results = dlbench.load("dlbench.db")                       # pandas DataFrames

`run` does what `dlbench run` does, without the console: the same validation
(one-line ConfigError), the same plan, one worker process per trial, every value
stored as it arrives. Keyword arguments are matrix factors (a value or a list)
and protocol settings, applied over the experiment like the command's flags.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dlbench.config import Experiment
    from dlbench.models.spec import ModelSpec
    from dlbench.results import Results


class RunError(RuntimeError):
    """A run that could not start (nothing runnable, a dataset not found); one line."""


def _reference(spec: ModelSpec) -> str:
    """A model object given to run(): the reference the worker imports it by. A spec that
    dlbench loaded knows it; one imported from a file is found as an attribute of that
    module. Never the calling script itself (`__main__`): the worker would execute the
    script again, and the script calls run() again."""
    import sys

    if not spec.builtin and ("/" in spec.origin or ":" in spec.origin):
        return spec.origin
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if name == "__main__" or not path or not path.endswith(".py"):
            continue
        for attr, value in list(vars(module).items()):
            if value is spec and not attr.startswith("_"):
                if "site-packages" in path or "dist-packages" in path:
                    return f"{name}:{attr}"  # an installed package: imported by its name
                return f"{Path(path).resolve()}:{attr}"  # a file beside the script: by its path
    raise ValueError(
        f"model {spec.name}: define it in a module file of its own and import it (the worker imports the "
        "model from that file; the script that calls dlbench.run would run again)"
    )


def _as_values(key: str, value: Any) -> list[Any]:
    from dlbench.models.spec import ModelSpec

    values = list(value) if isinstance(value, list | tuple) else [value]
    if key == "model":
        values = [_reference(v) if isinstance(v, ModelSpec) else v for v in values]
    return values


def experiment(spec: str | Path | Mapping[str, Any] | None = None, **settings: Any) -> Experiment:
    """The experiment `run` would run: a file, a dict, or the embedded default, with
    `settings` (matrix factors, protocol settings, options={model: {option: value}})."""
    from dlbench import config
    from dlbench.service import runs

    options = settings.pop("options", None) or {}
    matrix = {k: _as_values(k, v) for k, v in settings.items() if k in config.FACTORS}
    protocol = {k: v for k, v in settings.items() if k not in config.FACTORS}
    unknown = sorted(set(protocol) - {f for f in config.Protocol.__dataclass_fields__})
    if unknown:
        raise config.ConfigError(
            f"dlbench.run: unknown setting {unknown[0]!r}; allowed: matrix factors {', '.join(config.FACTORS)}, "
            "protocol settings (epochs, repeats, trials, ...) and options"
        )
    return runs.experiment(spec, matrix, protocol, options, where="dlbench.run")


def run(
    spec: str | Path | Mapping[str, Any] | None = None,
    *,
    db: str | Path = "dlbench.db",
    **settings: Any,
) -> int:
    """Run an experiment and return its run id (results in `db`).

    spec: an experiment file, a dict with the file's structure, or None for the
    embedded default; settings: matrix factors (framework="torch" or a list,
    model=[...] including "path/to/file.py:NAME" or a dlbench.Model object),
    protocol settings (epochs=2, repeats=5, trials=3, idle_baseline=5, ...),
    options={model: {...}}. The same service as `dlbench run` does the work
    (dlbench.service.runs), idle baseline included.
    """
    import os
    import sys

    from dlbench.service import ServiceError, runs

    if os.environ.get("DLBENCH_WORKER"):
        raise RunError(
            "dlbench.run was called inside a trial's worker process: a model file must not start runs when "
            "it is imported (put the call under `if __name__ == '__main__':`)"
        )
    exp = experiment(spec, **settings)
    command = " ".join([Path(sys.argv[0]).name or "python", "(dlbench.run)"])
    try:
        return runs.run(exp, db, command)
    except ServiceError as exc:
        raise RunError(str(exc)) from None


def load(path: str | Path) -> Results:
    """A stored database as pandas DataFrames (see dlbench.results)."""
    from dlbench import results

    return results.load(path)
