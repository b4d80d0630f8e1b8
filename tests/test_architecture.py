"""The package's import graph, read from the source (AST), not from a running import.

Imports run one way: cli -> runner / report -> analysis -> store. These tests walk
every module of src/dlbench and fail on a cycle, on an import from a module that
report/ depends on back into report/, and on the runner or the worker reaching
report/ at all. `from package import name` counts as importing the submodule when
`name` is one, else the package itself.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"


def _modules() -> dict[str, Path]:
    out = {}
    for path in (SRC / "dlbench").rglob("*.py"):
        parts = path.relative_to(SRC).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    origin = ".".join(base + ([node.module] if node.module else []))
                else:
                    origin = node.module or ""
                for alias in node.names:
                    sub = f"{origin}.{alias.name}"
                    targets.append(sub if sub in modules else origin)
            elif isinstance(node, ast.Import):
                targets += [alias.name for alias in node.names]
            found |= {t for t in targets if t in modules and t != name}
        graph[name] = found
    return graph


def _reach(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for nxt in graph[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def test_the_walker_sees_known_edges():
    graph = import_graph()
    assert "dlbench.analysis.stats" in graph["dlbench.analysis.comparisons"]
    assert "dlbench.report.render" in graph["dlbench.report.console"]
    assert "dlbench.datasets.fetch" in graph["dlbench.datasets.mnist"]  # from dlbench.datasets import fetch


def test_no_import_cycle():
    graph = import_graph()
    cycles = sorted(name for name in graph if name in _reach(graph, name))
    assert not cycles, f"modules on an import cycle: {cycles}"


def test_nothing_report_depends_on_imports_report():
    graph = import_graph()
    report = {m for m in graph if m == "dlbench.report" or m.startswith("dlbench.report.")}
    below = set().union(*(_reach(graph, m) for m in report)) - report
    back = sorted((m, sorted(graph[m] & report)) for m in below if graph[m] & report)
    assert not back, f"modules below report/ that import report/: {back}"


@pytest.mark.parametrize(
    "module",
    [
        "dlbench.runner",
        "dlbench.trial.worker",
        "dlbench.trial.launch",
        "dlbench.progress",
        "dlbench.analysis.comparisons",
        "dlbench.analysis.stats",
        "dlbench.analysis.summary",
        "dlbench.analysis.sweeps",
        "dlbench.store",
    ],
)
def test_runner_worker_and_analysis_never_reach_report_or_cli(module):
    reached = _reach(import_graph(), module)
    bad = sorted(m for m in reached if m.startswith(("dlbench.report", "dlbench.cli")))
    assert not bad, f"{module} reaches {bad}"


def test_analysis_imports_nothing_above_it():
    graph = import_graph()
    above = ("dlbench.report", "dlbench.cli", "dlbench.runner", "dlbench.trial", "dlbench.worker", "dlbench.progress")
    bad = sorted(
        (m, sorted(t for t in graph[m] if t.startswith(above)))
        for m in graph
        if m.startswith("dlbench.analysis") and any(t.startswith(above) for t in graph[m])
    )
    assert not bad, bad


def test_only_the_command_line_and_the_api_import_the_service_layer():
    """docs/architecture.md: service/ is what a command does; nothing below it reaches up to it."""
    graph = import_graph()
    service = {m for m in graph if m == "dlbench.service" or m.startswith("dlbench.service.")}
    assert {"dlbench.service.runs", "dlbench.service.explain"} <= service
    callers = {m for m in graph if graph[m] & service} - service
    assert callers and all(m == "dlbench.api" or m.startswith("dlbench.cli") for m in callers), sorted(callers)
    below = set().union(*(_reach(graph, m) for m in service)) - service
    assert not [m for m in below if m.startswith("dlbench.cli") or m == "dlbench.api"], sorted(below)


# What runs trials: the command line reaches it only through service/ (service.execution,
# service.runs, service.gate), one road for the command line and the API.
# The trial's modules by their names in dlbench.trial, and by the old names kept as aliases.
EXECUTION = (
    "dlbench.runner",
    "dlbench.trial",
    "dlbench.trial.spec",
    "dlbench.trial.launch",
    "dlbench.trial.worker",
    "dlbench.trial.phases",
    "dlbench.trial.output_check",
    "dlbench.trial.profiling",
    "dlbench.trialspec",
    "dlbench.worker",
    "dlbench.workerproc",
    "dlbench.phases",
    "dlbench.output_check",
)


def test_the_command_line_imports_no_runner_or_trial_module():
    graph = import_graph()
    cli = {m for m in graph if m == "dlbench.cli" or m.startswith("dlbench.cli.")}
    direct = sorted((m, sorted(graph[m] & set(EXECUTION))) for m in cli if graph[m] & set(EXECUTION))
    assert not direct, f"cli modules importing the runner or a trial module directly: {direct}"


def test_the_architecture_document_names_files_that_exist():
    """Every src/ or tests/ path docs/architecture.md names is there (a moved file is a stale document)."""
    import re

    root = SRC.parent
    text = (root / "docs" / "architecture.md").read_text()
    named = set(re.findall(r"`((?:src/dlbench|tests)/[\w/<>.*-]+)`", text))
    assert len(named) >= 10
    for path in sorted(named):
        if "<" in path:
            continue  # a placeholder: models/<name>/
        matches = list(root.glob(path)) if "*" in path else [root / path]
        assert matches and all(m.exists() for m in matches), path
    for module in re.findall(r"`([a-z_]+(?:/[a-z_]+)*\.py)", text):
        if module.startswith(("src/", "tests/")):
            continue
        assert (SRC / "dlbench" / module).exists() or list((SRC / "dlbench").rglob(module)), module


def test_no_two_top_level_parts_import_each_other():
    """Read as rooms (each top-level module or package of dlbench one room), the imports
    still run one way: a package that imports another is never imported back by it, not
    even through a third (frameworks/ <-> distributed/ once did, through registry)."""
    graph = import_graph()

    def room(module: str) -> str:
        parts = module.split(".")
        if parts[1:2] == ["trial"] and len(parts) > 2:
            # trial/ gathers what were top-level modules (trialspec, workerproc, worker, phases,
            # output_check): each stays a room of its own. The worker runs the multiprocess
            # launcher, which starts each rank's worker from its spec: trial.worker ->
            # launchers -> trial.spec, one way.
            return ".".join(parts[1:3])
        return parts[1] if len(parts) > 1 else module

    rooms: dict[str, set[str]] = {}
    for module, targets in graph.items():
        if module in ALIASES:
            continue  # an old name kept for one version, imported by nothing (explain.profiling -> trial)
        rooms.setdefault(room(module), set()).update(room(t) for t in targets if room(t) != room(module))
    looped = sorted(r for r in rooms if r in _reach(rooms, r))
    assert not looped, f"top-level parts on an import loop: {looped}"


# The trial's modules before they moved into dlbench.trial (one folder for the life of a
# trial): each old name is an alias of the new module, kept for one version for plugins and
# stored commands, and imported by nothing inside dlbench.
ALIASES = {
    "dlbench.trialspec": "dlbench.trial.spec",
    "dlbench.workerproc": "dlbench.trial.launch",
    "dlbench.worker": "dlbench.trial.worker",
    "dlbench.phases": "dlbench.trial.phases",
    "dlbench.output_check": "dlbench.trial.output_check",
    "dlbench.explain.profiling": "dlbench.trial.profiling",
}


def test_no_module_imports_the_trials_old_paths():
    graph = import_graph()
    assert set(ALIASES) <= set(graph) and set(ALIASES.values()) <= set(graph)
    bad = sorted((m, sorted(graph[m] & set(ALIASES))) for m in graph if m not in ALIASES and graph[m] & set(ALIASES))
    assert not bad, f"modules importing an old path of a trial module (import dlbench.trial.*): {bad}"
    for old, new in ALIASES.items():
        assert graph[old] == {new}, f"{old} is an alias of {new} and imports nothing else: {graph[old]}"


def test_the_trial_package_imports_nothing_at_import_time():
    tree = ast.parse((SRC / "dlbench" / "trial" / "__init__.py").read_text())
    assert ast.get_docstring(tree)
    assert all(isinstance(node, ast.Expr) for node in tree.body), "dlbench/trial/__init__.py holds only its docstring"


@pytest.mark.parametrize(("old", "new"), sorted(ALIASES.items()))
def test_an_old_path_is_the_same_module_object_as_the_new_one(old, new):
    import importlib
    import sys

    module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert sys.modules[old] is sys.modules[new]
    parent, _, leaf = old.rpartition(".")
    assert getattr(importlib.import_module(parent), leaf) is module  # `from dlbench import worker` too


def test_python_m_dlbench_worker_runs_the_trials_worker():
    """`python -m dlbench.worker`, as a stored command starts it, behaves as
    `python -m dlbench.trial.worker`: given no spec on stdin, both send "started", then the
    same error event, and exit 1."""
    import json
    import os
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=str(SRC))
    seen = []
    for module in ("dlbench.worker", "dlbench.trial.worker"):
        done = subprocess.run(
            [sys.executable, "-P", "-m", module], input="", capture_output=True, text=True, env=env, timeout=120
        )
        events = [json.loads(line) for line in done.stdout.splitlines()]
        assert done.returncode == 1, (module, done.stderr[-2000:])
        assert [e["event"] for e in events] == ["started", "error"], (module, events)
        assert "RuntimeWarning" not in done.stderr, done.stderr[-2000:]
        seen.append((done.returncode, events[1]["type"], events[1]["message"]))
    assert seen[0] == seen[1] and seen[0][1] == "SpecError", seen
