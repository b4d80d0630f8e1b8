"""What differs between two runs, in words: machine, packages, settings, and whether the
verdicts of `dlbench compare` can be laid at the door of those differences.

The numbers (which settings differ, the comparisons) come from
dlbench.analysis.comparisons; this module only says them.
"""

from __future__ import annotations

import json
from typing import Any

from dlbench.analysis.comparisons import RunDiff, SettingChange


def _values(texts: tuple[str, ...]) -> str:
    shown = [str(json.loads(t)) if t.startswith('"') else t for t in texts]
    return ", ".join(shown) if shown else "absent"


def setting_line(s: SettingChange) -> str:
    """ "threads: 2 → 1", "torch intra_op_threads: 2 → 1", "protocol repeats: 6 → 3"."""
    scope = "" if s.scope == "case" else f"{s.scope} "
    return f"{scope}{s.key}: {_values(s.a)} → {_values(s.b)}"


# What a run records about where it ran, compared field by field between two runs.
# Not compared: the working directory and the interpreter's path (a fresh clone or
# venv elsewhere runs the same code), nor the CPU flags (implied by the model).
ENVIRONMENT_FIELDS = (
    "hostname",
    "cpu_model",
    "physical_cores",
    "logical_cores",
    "memory_total_bytes",
    "cpu_governor",
    "os",
    "kernel",
    "python",
    # The interpreter the workers ran under: two virtual environments (two commits of the
    # code under test, as a CI gate measures them) differ here even where versions match.
    "python_executable",
    "gpus",
    "dlbench_version",
    "dlbench_git",
)


def environment_changes(env_a: dict[str, Any], env_b: dict[str, Any]) -> tuple[list[str], set[str]]:
    """What differs between two runs' recorded environments: lines "field: A → B", and
    the names of the packages whose versions differ."""
    lines = [f"{f}: {env_a.get(f)} → {env_b.get(f)}" for f in ENVIRONMENT_FIELDS if env_a.get(f) != env_b.get(f)]
    pa, pb = env_a.get("packages") or {}, env_b.get("packages") or {}
    packages = {p for p in set(pa) | set(pb) if pa.get(p) != pb.get(p)}
    lines += [f"{p}: {pa.get(p, 'absent')} → {pb.get(p, 'absent')}" for p in sorted(packages)]
    return lines, packages


def _moved(c: Any) -> bool:
    """A case that moved between the runs: decided faster or slower, or, for runs taken one
    after the other (which get no verdict: the drift between them is part of their
    difference), a ratio whose CI clears the band: the very drift this note is about."""
    if c.verdict in ("slower", "faster"):
        return True
    lo, hi = c.ratio_ci
    return c.why is not None and c.why.cause == "not interleaved" and (lo > 1 + c.band or hi < 1 - c.band)


def drift_notes(
    diffs: list[RunDiff], env_a: dict[str, Any], env_b: dict[str, Any], settings: list[SettingChange] | None = None
) -> list[str]:
    """Whether the verdicts can be laid at the door of what changed between the runs.

    Two runs are taken at different times: a shared machine's speed can change
    between them (other load, frequency, noisy neighbours; measured here: a
    dispatch-bound loop ran 1.75x slower for seconds at a time while a BLAS loop did
    not). Cases whose framework packages, machine and dlbench are the same in both
    runs act as controls: if they moved, a change of that size elsewhere may be the
    machine's, not the code's. A CI gate should still fail on it; this says why."""
    from dlbench.registry import frameworks as registry

    changes, packages = environment_changes(env_a, env_b)
    machine_or_harness = [c for c in changes if c.split(":")[0] in ENVIRONMENT_FIELDS]
    settings = settings or []
    changes += [setting_line(s) for s in settings]
    frameworks = registry()

    def unchanged(d: RunDiff) -> bool:
        info = frameworks.get(d.case["framework"])
        touched = set(info.distributions) & packages if info is not None else {"(unknown framework)"}
        retuned = [s for s in settings if s.scope in ("case", "protocol", d.case["framework"])]
        return not machine_or_harness and not touched and not retuned

    # Times only: the machine's speed, which these notes weigh, moves times, not a model's
    # test-set quality (`compare --quality` rows).
    moved = [
        d for d in diffs if d.declared is None and d.comparison is not None and _moved(d.comparison) and unchanged(d)
    ]
    notes = [
        ("recorded differences between A and B: " + "; ".join(changes))
        if changes
        else "nothing dlbench records differs between A and B (machine, packages, settings, dlbench)"
    ]
    if moved:
        ratios = sorted(d.comparison.ratio for d in moved if d.comparison is not None)
        span = f"×{ratios[0]:.3g}" + (f" to ×{ratios[-1]:.3g}" if len(ratios) > 1 else "")
        if all(d.comparison is not None and d.comparison.paired for d in moved):
            # Pairs ran back to back: a change of the machine's speed over time fell on both members.
            cause = (
                "A and B took turns block by block, so the machine's speed over time fell on both alike: what "
                "moved them ran with one run's trials only (code or settings dlbench does not record, or other "
                "load beside that run's blocks)"
            )
        elif all(d.comparison is not None and d.comparison.interleaved for d in moved):
            # Taken in turns, but not block for block (unpaired): the machine's state still fell on both runs.
            cause = (
                "A and B took turns, so the machine's speed over time fell on both runs' trials alike: what moved "
                "them ran with one run's trials only (code or settings dlbench does not record, or other load "
                "beside that run's blocks)"
            )
        else:
            cause = (
                "the machine's speed may have changed between the runs (other load, frequency, a noisy "
                "neighbour); add blocks to both runs in turn (`dlbench extend A B`), which pairs their blocks "
                "so that the machine's state falls on both alike, or take both in one quiet machine state"
            )
        if changes:
            notes.append(
                f"{len(moved)} comparison(s) of cases whose framework packages, settings, machine and dlbench "
                f"are the same in both runs moved ({span}), so differences of that size in the other cases are "
                f"not evidence about the change: {cause}."
            )
        else:
            notes.append(
                f"{len(moved)} comparison(s) moved ({span}) although nothing dlbench records differs, "
                f"so code outside what dlbench records changed, or the machine did: {cause}."
            )
    return notes
