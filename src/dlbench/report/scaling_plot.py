"""The scaling figure: global training throughput against world size, ideal dashed.

One panel per setting; per framework:variant and strategy a line from the
single-process baseline (world size 1) to each world size it ran, and per
framework the ideal line (baseline x N) dashed in the same colour. The drawing
primitives (canvas, save, legend) are handed in by dlbench.report.plots, which
owns them, so that this module does not import it back.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

from dlbench.analysis.scaling import Scaling

NAME = "09_scaling"
TITLE = "Training throughput vs world size (global samples/s), ideal scaling dashed"


def draw(
    scalings: list[Scaling],
    canvas: Callable[[float, float], Any],
    legend: Callable[[Any, list[Any], list[str]], None],
    save: Callable[[Any, str, str, str, dict[str, Any]], Any],
    palette: tuple[str, ...],
) -> Any:
    """The figure (through `save`), or None when no case has a baseline and a value."""
    panels: dict[str, list[Scaling]] = defaultdict(list)
    for s in scalings:
        if s.baseline_throughput is not None and any(p.throughput is not None for p in s.points):
            panels[s.setting].append(s)
    if not panels:
        return None
    fig = canvas(6.0 * min(len(panels), 2), 3.6 * ((len(panels) + 1) // 2) + 0.8)
    axes = fig.subplots((len(panels) + 1) // 2, min(len(panels), 2), squeeze=False).ravel()
    for ax in axes[len(panels) :]:
        ax.set_visible(False)
    colors: dict[str, str] = {}
    data: dict[str, Any] = {}
    for ax, (setting, members) in zip(axes, panels.items()):
        panel = data[setting] = {}
        sizes: set[int] = {1}
        for s in members:
            base = s.baseline_throughput or 0.0
            by_strategy: dict[str, list[tuple[int, float]]] = defaultdict(list)
            for p in s.points:
                if p.throughput is not None:
                    by_strategy[p.strategy].append((p.world_size, p.throughput))
            color = colors.setdefault(s.framework, palette[len(colors) % len(palette)])
            largest = max([1, *(n for pts in by_strategy.values() for n, _ in pts)])
            sizes |= {n for pts in by_strategy.values() for n, _ in pts}
            ideal_x = sorted({1, largest})
            ax.plot(
                ideal_x,
                [base * n for n in ideal_x],
                linestyle="--",
                color=color,
                alpha=0.6,
                label=f"{s.framework} ideal (baseline x N)",
            )
            for m, (strategy, pts) in enumerate(sorted(by_strategy.items())):
                pts = sorted([(1, base), *((n, v) for n, v in pts if n != 1)])
                xs, ys = [n for n, _ in pts], [v for _, v in pts]
                ax.plot(xs, ys, marker="osD^v"[m % 5], color=color, label=f"{s.framework} {strategy}")
                panel[f"{s.framework} {strategy}"] = {"x": xs, "y": ys, "ideal": [base * n for n in xs]}
        ax.set_xticks(sorted(sizes))
        ax.set_xlabel("world size (replicas)")
        ax.set_ylabel("samples/s (global)")
        ax.set_title(setting, fontsize=9)
        ax.grid(alpha=0.3)
    lines = {label: handle for ax in fig.axes for handle, label in zip(*ax.get_legend_handles_labels())}
    legend(fig, list(lines.values()), list(lines))
    fig.suptitle(TITLE)
    caption = (
        "Median global throughput (samples/s summed over ranks) of each strategy at each world size; the point "
        "at world size 1 is the single-process baseline of the same run. Dashed: ideal linear scaling from that "
        "baseline. Every replica has the same threads, so N replicas use N times the baseline's cores."
    )
    return save(fig, NAME, TITLE, caption, data)
