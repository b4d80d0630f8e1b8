"""How a case is named in words: the one labelling function every module uses.

A case is the dict a plan cell becomes (framework, variant, model, dataset,
batch_size, ...; see dlbench.plan.Case.as_dict). The progress bar, the runner's
messages, the tables, the verdicts and the figures all call case_label, so one
case reads the same everywhere. Nothing here imports the rest of dlbench but
runtime_settings (and the store's decoder, for a case still given as stored text).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dlbench import runtime_settings


def stored_case(case: Mapping[str, Any] | str) -> dict[str, Any]:
    """A trial's stored case (TrialRecord.case) as a dict, with what an older dlbench left
    out filled in as it ran (runtime: the settings every worker had then). The case's
    stored text (a row's case_json, the old way) is still taken, decoded by the store."""
    if isinstance(case, str):
        from dlbench.store.records import decode

        case = decode(case, column="case_json", where="trial case") or {}
    return runtime_settings.complete(case)


def case_label(case: Mapping[str, Any], *, framework: bool = True, setting: bool = True) -> str:
    """ "torch:eager mlp digits b32 adam lr=0.001 10 ep": the framework and variant,
    then what the case measures. framework=False gives what the cases of one
    comparison set share (they differ only in framework); setting=False gives the
    framework and variant alone ("torch:eager")."""
    parts: list[str] = []
    if framework:
        parts.append(f"{case['framework']}:{case['variant']}")
        # A data-parallel strategy is part of how the framework runs, like its variant:
        # the cases of one world size compare across frameworks and strategies.
        if case.get("strategy", "single") != "single":
            parts.append(str(case["strategy"]))
        # So are the runtime settings dlbench imposed on it (none by default). A case
        # without the field is stored (or keyed) as an older dlbench ran it: runtime all.
        runtime = case.get("runtime", runtime_settings.LEGACY)
        if runtime != runtime_settings.DEFAULTS:
            parts.append(f"runtime={runtime}")
    if setting:
        parts += [str(case["model"]), str(case["dataset"]), f"b{case['batch_size']}"]
        if case.get("world_size", 1) > 1:
            scope = "/replica" if case.get("batch_scope") == "per-replica" else " global"
            parts[-1] += scope
            parts.append(f"x{case['world_size']} replicas")
        elif case.get("strategy", "single") != "single":
            # A strategy over one replica (its overhead alone) must not read like the
            # single process, nor like the strategy's usual world size.
            parts.append("x1 replica")
        if case.get("input_shape"):
            parts.append(f"in{case['input_shape']}")
        parts += [str(case[k]) for k in ("precision", "layout") if case.get(k) not in (None, "float32", "native")]
        if case.get("pipeline") not in (None, "preloaded"):
            parts.append(f"{case['pipeline']}-augment")
        if case.get("optimizer") not in (None, "none"):
            parts += [str(case["init"]), f"{case['optimizer']} lr={case['lr']:g}"]
            parts.append(f"{case['epochs']} ep" if case.get("epochs") else f"{case['steps']} steps")
    return " ".join(parts)
