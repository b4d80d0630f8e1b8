"""Data-parallel scaling in words and tables (numbers from dlbench.analysis.scaling).

One table per run with a distributed case: every framework:variant and strategy
at each world size, its global throughput, speed-up and scaling efficiency
against the single process of the same run (with 95% CIs), each rank's step time
and the communication share where the profiler measured one. And the lines of
the answer block that name the best strategy per framework.
"""

from __future__ import annotations

import math

from dlbench.analysis.scaling import Scaling, ScalingPoint
from dlbench.report.answer import AnswerItem
from dlbench.report.render import TableData


def _ci(low: float, high: float, fmt: str) -> str:
    return f" [{low:{fmt}}, {high:{fmt}}]" if math.isfinite(low) and math.isfinite(high) else ""


def _ratio(p: ScalingPoint) -> str:
    return "—" if p.speedup is None else f"{p.speedup:.2f}×{_ci(*p.speedup_ci, '.2f')}"


def _efficiency(p: ScalingPoint) -> str:
    if p.efficiency is None:
        return "—"
    low, high = p.efficiency_ci
    ci = f" [{low * 100:.0f}, {high * 100:.0f}]" if math.isfinite(low) and math.isfinite(high) else ""
    return f"{p.efficiency * 100:.0f}%{ci}"


def _ranks(p: ScalingPoint) -> str:
    return ", ".join(f"r{r} {t * 1e3:.3g}" for r, t in sorted(p.rank_step_time.items())) or "—"


def scaling_table(scalings: list[Scaling]) -> TableData | None:
    if not scalings:
        return None
    t = TableData(
        "Data-parallel scaling: speed-up and efficiency against one process of the same run",
        [
            "framework",
            "strategy",
            "replicas",
            "setting",
            "batch",
            "throughput (samples/s)",
            "speed-up [95% CI]",
            "efficiency [95% CI]",
            "step time per rank (ms)",
            "comm share",
        ],
        align=["left", "left", "right", "left", "left", "right", "right", "right", "left", "right"],
        nowrap=frozenset({"speed-up [95% CI]", "efficiency [95% CI]"}),
        optional=("setting", "step time per rank (ms)", "comm share"),
        caption=(
            "Throughput is global (samples/s summed over ranks; median over the statistical sample). Speed-up = "
            "throughput(N) / throughput(single process, 1 replica); efficiency = speed-up / N. 'global' batch: "
            "strong scaling (the same global batch at every N); '/replica': weak scaling. Every case has the same "
            "threads per replica, so N replicas use N times the cores of the baseline: on a machine with fewer "
            "cores than that, the ceiling is the machine, not the strategy."
        ),
    )
    for s in scalings:
        base = "—" if s.baseline_throughput is None else f"{s.baseline_throughput:.4g}"
        t.add_row(s.framework, "single", "1", s.setting, "", base, "1.00× (baseline)", "100%", "", "")
        for p in s.points:
            batch = "per replica" if p.batch_scope == "per-replica" else "global"
            through = "—" if p.throughput is None else f"{p.throughput:.4g}"
            if p.status != "ok" and p.throughput is None:
                through = p.status
            share = "—" if p.comm_share is None else f"{p.comm_share * 100:.0f}%"
            t.add_row(
                s.framework,
                p.strategy,
                str(p.world_size),
                s.setting,
                batch,
                through,
                _ratio(p),
                _efficiency(p),
                _ranks(p),
                share,
            )
        if s.note:
            t.notes.append(f"{s.framework} {s.setting}: {s.note}")
    return t


def scaling_answer(scalings: list[Scaling]) -> list[AnswerItem]:
    """Per framework and setting: the best strategy at the largest world size, then
    the others, each with its speed-up and efficiency and their CIs."""
    items = []
    for s in scalings:
        best = s.best()
        if best is None:
            continue
        ci_known = math.isfinite(best.speedup_ci[0])
        if best.speedup is None:
            verdict = f"{best.strategy} x{best.world_size} is fastest: {best.throughput:.4g} samples/s ({s.note})"
        else:
            real = ""
            if ci_known and best.speedup_ci[1] < 1:
                real = ": slower than one process"
            elif ci_known and best.speedup_ci[0] > 1:
                real = ": faster than one process"
            elif ci_known:
                real = ": not distinguishable from one process"
            verdict = (
                f"{best.strategy} x{best.world_size} is best: {_ratio(best)} the single process's throughput, "
                f"scaling efficiency {_efficiency(best)}{real}"
            )
        others = tuple(
            f"{p.strategy} x{p.world_size}: {_ratio(p)}, efficiency {_efficiency(p)}"
            for p in s.points
            if p is not best and (p.speedup is not None or p.throughput is not None)
        )
        items.append(AnswerItem(f"{s.framework} data-parallel, {s.setting}", "training throughput", verdict, others))
    return items
