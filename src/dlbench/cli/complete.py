"""Tab completion of option values: what a flag accepts, read from the declarations its
help and its checks read (the registry's names, config's levels, the report formats'
registry, the stored runs of the database named so far), never a second list.

Each function here is a typer `autocompletion` callback: called only while a shell
completes (typer sets _DLBENCH_COMPLETE), with the word typed so far. A comma-list flag
(--framework torch,j<Tab>) completes its last item and keeps the ones before it. A
callback that fails offers nothing: completion never prints an error into the shell.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

import typer


def _matching(values: Iterable[str], incomplete: str) -> list[str]:
    return [v for v in values if v.startswith(incomplete)]


def comma_list(values: Callable[[], Iterable[str]]) -> Callable[[str], list[str]]:
    """A callback completing the last item of a comma-separated list from `values()`."""

    def complete(incomplete: str) -> list[str]:
        done, _, last = incomplete.rpartition(",")
        head = f"{done}," if done else ""
        try:
            taken = set(done.split(",")) if done else set()
            return [head + v for v in _matching(values(), last) if v not in taken]
        except Exception:  # noqa: BLE001 - a completion never fails into the shell
            return []

    return complete


def one_of(values: Callable[[], Iterable[str]]) -> Callable[[str], list[str]]:
    """A callback completing one value from `values()`."""

    def complete(incomplete: str) -> list[str]:
        try:
            return _matching(values(), incomplete)
        except Exception:  # noqa: BLE001 - a completion never fails into the shell
            return []

    return complete


def frameworks() -> list[str]:
    from dlbench import registry

    return registry.names("framework")


def models() -> list[str]:
    from dlbench import registry

    return registry.names("model")


def datasets() -> list[str]:
    from dlbench import registry

    return registry.names("dataset")


def factor_levels(factor: str) -> Callable[[], Iterable[str]] | None:
    """The levels a matrix factor's flag accepts, where they are a fixed list (None: numbers,
    sizes or free text, which are not completed)."""
    from dlbench import config
    from dlbench.frameworks.protocol import INITS, OPTIMIZERS

    fixed: dict[str, Callable[[], Iterable[str]]] = {
        "framework": frameworks,
        "model": models,
        "dataset": datasets,
        "init": lambda: INITS,
        "optimizer": lambda: OPTIMIZERS,
        "precision": lambda: config.PRECISIONS,
        "layout": lambda: config.LAYOUTS,
        "pipeline": lambda: config.PIPELINES,
        "strategy": _strategies,
    }
    return fixed.get(factor)


def _strategies() -> list[str]:
    from dlbench import registry

    return list(registry.strategies())


def report_formats() -> list[str]:
    """`report` / `study report` formats: report.formats.REGISTRY's names."""
    from dlbench.report.formats import REGISTRY

    return list(REGISTRY)


def executors() -> list[str]:
    from dlbench.executor_settings import EXECUTORS

    return list(EXECUTORS)


def studies() -> list[str]:
    from dlbench import studies as known

    return list(known.NAMES)


def _db(ctx: typer.Context | None) -> Path:
    """The database the command line names so far: --db, else $DLBENCH_DB, else dlbench.db."""
    params = (ctx.params or {}) if ctx is not None else {}
    given = params.get("db") or params.get("dbs")  # report and study report take --db repeated
    if isinstance(given, (list, tuple)):
        given = given[0] if given else None
    return Path(given or os.environ.get("DLBENCH_DB") or "dlbench.db")


def _stored(ctx: typer.Context | None, read: Callable[[object], list[tuple[str, str]]]) -> list[tuple[str, str]]:
    """read(store) on the database named so far, read-only; nothing when the file is missing,
    a URL, or not a results database (a completion never fails into the shell)."""
    from dlbench.store import Store

    path = _db(ctx)
    if "://" in str(path) or not path.is_file():
        return []
    try:
        with Store(path, readonly=True) as store:
            return read(store)
    except Exception:  # noqa: BLE001 - a completion never fails into the shell
        return []


# typer passes a callback its arguments by their annotations: the context, the word typed so far.
def run_ids(ctx: typer.Context, incomplete: str) -> list[tuple[str, str]]:
    """The runs stored in the database named so far, newest first, each with its name."""
    rows = _stored(ctx, lambda store: [(str(r["id"]), str(r["name"])) for r in store.runs()])  # type: ignore[attr-defined]
    return sorted((r for r in rows if r[0].startswith(incomplete)), key=lambda r: -int(r[0]))


def baselines(ctx: typer.Context, incomplete: str) -> list[str]:
    """The baseline names saved in the database named so far."""
    names = _stored(ctx, lambda store: [(b.name, "") for b in store.baselines()])  # type: ignore[attr-defined]
    return _matching((n for n, _ in names), incomplete)
