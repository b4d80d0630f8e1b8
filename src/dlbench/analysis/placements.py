"""Where a run's trials ran, by kind of machine: a comparison must not pool different
hardware without saying so (a run on a cluster can land on several node types)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from dlbench.store.records import trial_record


def machine_kinds(trials: Iterable[Any], environment: Mapping[str, Any]) -> dict[str, list[int]]:
    """Machine label -> ids of the run's ok trials that ran there. A trial with no
    machine of its own in its placement ran where the run started (local executor,
    or stored before placements existed): the run's environment says which machine."""
    from dlbench.env import machine_label

    here = machine_label(dict(environment)) if environment else "the machine that started the run"
    kinds: dict[str, list[int]] = defaultdict(list)
    for t in trials:
        if t["status"] != "ok":
            continue
        machine = (trial_record(t).placement or {}).get("machine")
        kinds[machine_label(machine) if isinstance(machine, dict) else here].append(int(t["id"]))
    return dict(kinds)
