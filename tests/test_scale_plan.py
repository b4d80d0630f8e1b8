"""`plan` at scale: the matrix's cells with exclusions marked as boxes are the cells the
per-cell, per-rule check gave; a cell's checks run once per distinct factor value, not
once per cell; the design check groups cases without a dict and JSON per trial."""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections import defaultdict
from typing import Any

import pytest

from dlbench import plan as planning
from dlbench.analysis.design import largest_set
from dlbench.config import FACTORS
from dlbench.service import runs


def _reference_cells(exp: Any) -> list[dict[str, Any]]:
    """Every matrix cell checked against every rule, as plan._cells did before."""

    def product(m: dict[str, Any]) -> list[dict[str, Any]]:
        full = {k: m.get(k, exp.matrix[k]) for k in FACTORS}
        return [dict(zip(FACTORS, combo)) for combo in itertools.product(*(full[k] for k in FACTORS))]

    cells = [c for c in product(exp.matrix) if not any(all(c[k] in v for k, v in r.items()) for r in exp.exclude)]
    for inc in exp.include:
        cells.extend(product(inc))
    return list({json.dumps(c, sort_keys=True): c for c in cells}.values())


@pytest.fixture(scope="module")
def base() -> Any:
    return runs.experiment(
        None,
        {"framework": ["torch", "jax", "numpy"], "model": ["mlp", "cnn"], "dataset": ["synthetic"],
         "batch_size": [8, 16, 32, 32], "lr": [0.1, 0.01]},
        {"trials": 2},
    )  # fmt: skip


RULES = [
    ((), ()),
    (({"framework": ("jax",), "batch_size": (8, 16)},), ()),
    (({"framework": ("jax",), "batch_size": (8, 16)}, {"model": ("cnn",), "batch_size": (32,)}), ()),
    (({"framework": ("nonexistent",)},), ({"framework": ("jax",), "batch_size": (8, 64)},)),
    (({"lr": (0.1,)}, {"lr": (0.01,), "model": ("mlp",)}), ({"framework": ("torch",), "lr": (0.1,)},)),
]


@pytest.mark.parametrize(("exclude", "include"), RULES)
def test_cells_are_the_per_rule_cells(base: Any, exclude: Any, include: Any) -> None:
    exp = dataclasses.replace(base, exclude=exclude, include=include)
    got = planning._cells(exp)
    assert got == _reference_cells(exp)
    if exclude == RULES[1][0]:  # 3 frameworks x 2 models x 3 batch sizes x 2 lr, less jax at 8 and 16
        assert len(got) == 36 - 8


def test_checks_run_once_per_framework(base: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A framework's modules are looked up on disk once per plan, not once per cell
    (10,000 cells spent a minute in importlib's find_spec)."""
    from dlbench.frameworks import FrameworkInfo

    calls: dict[str, int] = defaultdict(int)
    real = FrameworkInfo.unavailable_reason

    def counted(self: Any) -> str | None:
        calls[self.name] += 1
        return real(self)

    monkeypatch.setattr(FrameworkInfo, "unavailable_reason", counted)
    exp = dataclasses.replace(base, matrix={**base.matrix, "batch_size": tuple(range(1, 41))})
    p = planning.expand(exp)
    # numpy has no cnn: 5 of the 6 framework x model pairs, x 40 batch sizes x 2 lr x 2 trials
    assert len(p.trials) == 5 * 40 * 2 * 2
    assert len(p.skipped) == 40 * 2 and {s.reason for s in p.skipped} == {p.skipped[0].reason}
    assert dict(calls) == {"torch": 1, "jax": 1, "numpy": 1}


def test_largest_set_groups_as_the_case_dicts(base: Any) -> None:
    p = planning.expand(base)
    sets: dict[str, set[str]] = defaultdict(set)
    for trial in p.trials:
        case = trial.case.as_dict()
        rest = {k: v for k, v in case.items() if k not in ("framework", "variant")}
        sets[json.dumps(rest, sort_keys=True, default=str)].add(f"{case['framework']}:{case['variant']}")
    assert largest_set(p) == max(len(m) for m in sets.values()) == 3
    one = dataclasses.replace(base, matrix={**base.matrix, "framework": ("torch",)})
    assert largest_set(planning.expand(one)) == 1
