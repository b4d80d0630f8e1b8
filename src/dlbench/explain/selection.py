"""Which stored cases `dlbench explain` compares: selectors, and the default pairs.

A selector names one case of a run: `torch` or `torch:compile` (framework and
variant), or `key=value` pairs over the case's recorded settings
(`threads=1`, `framework=tensorflow,variant=xla`), or a case key's first
characters; `a|b` matches either value. `--where` narrows both sides alike
(`model=resnet18`, `framework=torch|tensorflow`). Without
selectors, every comparison set of the run (cases equal but for framework and
variant) gives one pair per slower case: its fastest case against each other.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import fields
from typing import Any

import numpy as np

from dlbench.explain.ablation import AblationError
from dlbench.plan import Case

FIELDS = tuple(f.name for f in fields(Case))


def _conditions(text: str, what: str) -> dict[str, str]:
    out = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        key, eq, value = part.partition("=")
        if not eq:
            raise AblationError(f"{what} {text!r}: expected key=value pairs, got {part!r}")
        if key not in FIELDS:
            raise AblationError(f"{what} {text!r}: unknown setting {key!r}; settings: {', '.join(FIELDS)}")
        out[key] = value
    return out


def _matches(case: Case, conditions: dict[str, str]) -> bool:
    return all(str(getattr(case, k)) in v.split("|") for k, v in conditions.items())


def narrowed(cases: dict[str, Case], where: str) -> dict[str, Case]:
    """The cases `where` keeps (all of them for an empty `where`)."""
    conditions = _conditions(where, "--where")
    return {key: case for key, case in cases.items() if _matches(case, conditions)}


def select(cases: Iterable[Case], selector: str, where: str = "", what: str = "--case") -> Case:
    """The one case `selector` (and `where`) names; AblationError naming the candidates otherwise."""
    pool = [c for c in cases if _matches(c, _conditions(where, "--where"))]
    if "=" in selector:
        found = [c for c in pool if _matches(c, _conditions(selector, what))]
    else:
        name, _, variant = selector.partition(":")
        found = [c for c in pool if c.framework == name and (not variant or c.variant == variant)]
        if not found:
            found = [c for c in pool if c.key.startswith(selector)]
    if len(found) == 1:
        return found[0]
    if not found:
        raise AblationError(
            f"{what} {selector!r}{' with --where ' + where if where else ''}: no case of the run matches"
        )
    differ = sorted(k for k in FIELDS if len({str(getattr(c, k)) for c in found}) > 1)
    raise AblationError(
        f"{what} {selector!r} matches {len(found)} cases; tell them apart with --where on {', '.join(differ)}"
    )


def default_pairs(cases: dict[str, Case], medians: dict[str, float]) -> list[tuple[Case, Case]]:
    """(fastest, other) for every other case of every comparison set, by median step time."""
    groups: dict[str, list[Case]] = {}
    for key, case in cases.items():
        if key not in medians or case.distributed:
            continue
        rest = {k: v for k, v in case.as_dict().items() if k not in ("framework", "variant")}
        groups.setdefault(repr(sorted(rest.items(), key=lambda kv: kv[0])), []).append(case)
    pairs = []
    for members in groups.values():
        if len(members) < 2:
            continue
        members.sort(key=lambda c: medians[c.key])
        pairs += [(members[0], other) for other in members[1:]]
    return pairs


def medians(times: dict[str, dict[Any, float]]) -> dict[str, float]:
    return {key: float(np.median(list(v.values()))) for key, v in times.items() if v}
