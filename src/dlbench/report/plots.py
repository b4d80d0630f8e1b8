"""Figures of one stored run (matplotlib, Agg canvas), saved as PNG and SVG.

Each figure is made only when the run holds its data; the files are numbered
01, 02, ... in drawing order without gaps (file_stem), while Figure.name keeps the
figure's fixed key (FIGURE_NAMES). Statistics follow comparisons.samples (one
median per trial when a case has several trials, else the measured repeats);
warm-ups never enter a statistic (the per-run figures show them as grey dots). A
case whose trials failed, ran out of memory or timed out is drawn as a gap marked
with its status, never as a zero.

Rules every figure keeps (tests/test_figure_rules.py checks them): values are dots,
boxes or lines, never bars (a bar's length means nothing on a log axis); the
relative-time figure is a forest plot of ratios with their intervals; a constant
telemetry series is named, not drawn; axis numbers are plain; a legend lists only
what was drawn, with its marker; a case measured on a busy machine is marked BUSY;
a footer gives n, threads, batch size and the machine; a PNG is at least PAGE_PX
wide. Every Figure also carries the plotted numbers (`data`) so that tests and
other reports can check what was drawn.
"""

from __future__ import annotations

import json
import math
import statistics
import textwrap
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dlbench.analysis import quality
from dlbench.analysis.busy import BUSY_THRESHOLD
from dlbench.cases import case_label, stored_case
from dlbench.store.records import trial_record

# tab10, written out so that colours are fixed without importing matplotlib early.
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
WARM, GAP = "#bbbbbb", "#c00000"
GAP_ORDER = ("oom", "timeout", "diverged", "failed", "interrupted", "running", "pending")
FACTOR_FORMAT = {
    "batch_size": "b{}",
    "lr": "lr={:g}",
    "momentum": "momentum={:g}",
    "epochs": "{} ep",
    "steps": "{} steps",
    "threads": "{} thr",
    "input_shape": "in{}",
}
PLAIN_FACTORS = ("model", "dataset", "optimizer", "init", "device", "precision", "layout")


@dataclass(frozen=True)
class Figure:
    name: str
    title: str
    png: Path | None  # None: not written (make_figures' formats)
    svg: Path | None
    caption: str
    # What was plotted, per panel and series (None = a gap): for tests and other renderers.
    data: dict[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)
    footer: str = ""  # the line under the figure: n, threads, batch size, machine (and BUSY)

    @property
    def stem(self) -> str:
        """The name its files carry (01_..., numbered among the figures made), or its key when none was written."""
        written = self.png or self.svg
        return written.stem if written else self.name


# A figure is shown at its own size (figsize, in inches): text is at least 9 pt there and
# the PNGs have at least 150 pixels per inch, enough for print at that size.
MIN_FONT = 9
DPI = 150
# The HTML report's page is about 1,300 px wide: every PNG has at least that many pixels
# across (more dots per inch for a narrow figure), so that none is blown up and blurred.
PAGE_PX = 1300
# Narrower figures, scaled up to the page's width, had 20 pt text beside 9 pt in the next.
MIN_WIDTH = 8.0
BUSY_MARK = "BUSY"
# A panel whose values span more than this factor gets a log axis: on a linear one a
# 0.015 s case beside a 7 s one is a flat line at zero.
LOG_SPAN = 10.0
# Below this many values a box and whiskers summarize nothing a reader cannot see in
# the dots themselves (and quartiles of 3 values are interpolation): dots only.
MIN_BOX = 5
# A telemetry series whose values all lie within this fraction of their size is constant.
CONSTANT = 0.01


def _flat(values: Any) -> list[float]:
    """Numbers in a panel's data entry (a list, or a dict of lists per trial)."""
    if isinstance(values, dict):
        return [v for vs in values.values() for v in _flat(vs)]
    if isinstance(values, list | tuple):
        return [v for x in values for v in _flat(x)]
    return [values] if isinstance(values, int | float) else []


def log_if_wide(ax: Any, values: list[float]) -> bool:
    """Log y axis when the panel's positive values span more than LOG_SPAN; True if set."""
    positive = [v for v in values if v is not None and v > 0]
    if len(positive) >= 2 and max(positive) / min(positive) > LOG_SPAN:
        ax.set_yscale("log")
        return True
    return False


PHASE_WORDS = {"train": "training", "infer": "inference"}


def metric_words(metric: str) -> str:
    """A stored telemetry key in words with its unit: "cpu.process_util:mean" ->
    "process CPU (% of one core)". Figures never show an internal key."""
    fixed = {
        "cpu.process_util:mean": "process CPU (% of one core)",
        "cpu.system_util:mean": "system CPU (% of all cores)",
        "cpu.others_util:mean": "other processes' CPU (% of all cores)",
        "cpu.steal:mean": "steal (% of all cores)",
    }
    if metric in fixed:
        return fixed[metric]
    name, _, agg = metric.partition(":")
    if name.startswith("gpu") and name.endswith(".util"):
        return f"GPU {name[3:].split('.')[0]} utilization (%)"
    if name.startswith("gpu") and name.endswith(".temperature"):
        return f"GPU {name[3:].split('.')[0]} temperature, {agg or 'max'} (°C)"
    if name.startswith("temp."):
        return f"temperature {name[5:].replace('_', ' ')}, {agg or 'max'} (°C)"
    return name.replace("_", " ").replace(".", " ")


def _legend(fig: Any, handles: list[Any], labels: list[str]) -> None:
    """One legend under the panels, in as many columns as fit the figure's width, so
    that no entry is cut at the figure's edges."""
    width_in = fig.get_figwidth()
    entry_in = max((len(label) for label in labels), default=1) * MIN_FONT * 0.55 / 72 + 0.6
    ncols = max(1, min(len(labels), int(width_in // entry_in)))
    # Placed by _save, under the panels and above the footer: the constrained layout stacks an
    # "outside" legend over a supxlabel (and an upper one over the suptitle).
    fig.legend(handles, labels, loc="lower center", ncols=ncols, fontsize=MIN_FONT)


def _fmt(name: str, value: Any) -> str:
    if name in PLAIN_FACTORS:
        return str(value)
    try:
        return FACTOR_FORMAT.get(name, name + "={}").format(value)
    except (TypeError, ValueError):  # e.g. lr=None where a number format is expected
        return f"{name}={value}"


def _wrap(text: str, width: int = 22) -> str:
    return "\n".join(textwrap.wrap(text, width, break_on_hyphens=False)) or text


def _varying(cases: list[dict], skip: set[str]) -> list[str]:
    names = sorted({k for c in cases for k in c} - skip)
    return [k for k in names if len({json.dumps(c.get(k), sort_keys=True) for c in cases}) > 1]


class _Run:
    """The rows of one run, indexed the ways the figures need them."""

    def __init__(self, trials: list, rows: list) -> None:
        from dlbench.analysis import comparisons

        self._samples = comparisons.samples
        self.trials = trials
        self.rows = rows
        self.cases = {t["case_key"]: stored_case(trial_record(t).case) for t in self.trials}
        self.trials_of: dict[str, list] = defaultdict(list)
        for t in self.trials:  # already in execution order (block, position)
            self.trials_of[t["case_key"]].append(t)
        self.points: dict[tuple[int, str, str], list] = defaultdict(list)
        for m in self.rows:
            self.points[(m["trial_id"], m["phase"], m["metric"])].append(m)
        several_devices = len({c.get("device") for c in self.cases.values()}) > 1
        by_model: dict[str, list[dict]] = defaultdict(list)
        for c in self.cases.values():
            by_model[c["model"]].append(c)
        self.ident, self.group, self.sub, self.row, self.fwv = {}, {}, {}, {}, {}
        for key, c in self.cases.items():
            peers = by_model[c["model"]]
            self.fwv[key] = case_label(c, setting=False)
            self.ident[key] = self.fwv[key] + (f"@{c.get('device')}" if several_devices else "")
            inner = _varying(peers, {"framework", "variant", "device", "batch_size", "model"})
            self.group[key] = " ".join([c["model"], *(_fmt(k, c.get(k)) for k in inner)])
            self.sub[key] = _fmt("batch_size", c["batch_size"]) if "batch_size" in _varying(peers, set()) else ""
            # Heat-map rows: the dataset goes to the columns, the device stays in the row.
            inner = _varying(peers, {"framework", "variant", "batch_size", "model", "dataset"})
            self.row[key] = " ".join([c["model"], *(_fmt(k, c.get(k)) for k in inner)])
        self.order = sorted(self.cases, key=lambda k: (self.group[k], self.cases[k]["batch_size"], self.ident[k]))
        idents = sorted(set(self.ident.values()))
        self.color = {i: PALETTE[n % len(PALETTE)] for n, i in enumerate(idents)}
        from dlbench.analysis.busy import busy_cases

        # Cases measured while other processes took a large share of the CPU
        # (analysis.busy): every figure that shows one says so beside its label.
        self.busy = busy_cases(self.rows)
        self.machine: str | None = None  # the run's machine in words (make_figures sets it from the store)

    def label(self, key: str) -> str:
        return " ".join(x for x in (self.ident[key], self.group[key], self.sub[key], self.busy_mark(key)) if x)

    def short(self, key: str) -> str:
        """The label inside a panel already titled with the case's group."""
        return " ".join(x for x in (self.ident[key], self.sub[key], self.busy_mark(key)) if x)

    def busy_mark(self, *keys: str) -> str:
        return BUSY_MARK if any(k in self.busy for k in keys) else ""

    def footer(self, keys: list[str] | None = None) -> str:
        """n, threads, batch size and machine of the cases a figure shows, in one line, so
        that a figure cut out of the report still says what it measured."""
        keys = list(self.cases) if keys is None else keys
        trials = [t for k in keys for t in self.trials_of[k]]
        processes = sorted({sum(t["status"] == "ok" for t in self.trials_of[k]) for k in keys})
        # Measured (not warm-up) training repeats of each finished trial, as stored: an adaptive
        # protocol (--until-ci) may have taken more than it asked for at first.
        repeats = sorted(
            {
                n
                for t in trials
                if t["status"] == "ok"
                and (n := sum(not m["warmup"] for m in self.points.get((t["id"], "train", "time"), [])))
            }
        )
        threads = sorted({str(self.cases[k].get("threads")) for k in keys})
        batches = sorted({int(self.cases[k]["batch_size"]) for k in keys})
        parts = [
            f"n = {_span(processes)} finished process{'es' if processes[-1:] != [1] else ''} per case"
            + (f", {_span(repeats)} measured repeat{'s' if repeats[-1:] != [1] else ''} each" if repeats else ""),
            f"threads {', '.join(threads)}",
            f"batch {', '.join(map(str, batches))}",
            f"machine: {self.machine or self._machine_of(trials)}",
        ]
        if self.busy_mark(*keys):
            parts.append(f"{BUSY_MARK}: other processes took \u2265{BUSY_THRESHOLD:g}% of the CPU while it ran")
        return " · ".join(parts)

    @staticmethod
    def _machine_of(trials: list) -> str:
        """Without the run's environment: what the trials' manifests say of the device."""
        for t in trials:
            manifest = trial_record(t).manifest or {}
            if manifest.get("device"):
                cores = manifest.get("cpu_affinity")
                return str(manifest["device"]) + (f", {len(cores)} cores" if isinstance(cores, list) else "")
        return "not recorded"

    def gap(self, key: str) -> str:
        """Why a case has no value: the worst status among its trials."""
        statuses = {t["status"] for t in self.trials_of[key]}
        for s in GAP_ORDER:
            if s in statuses:
                return "OOM" if s == "oom" else s
        return "no value"

    def sample(self, phase: str, metric: str, rows: list | None = None) -> dict[str, Any]:
        return self._samples(self.trials, self.rows if rows is None else rows, phase, metric)

    def medians(self, phase: str, metric: str, rows: list | None = None) -> dict[str, float]:
        return {
            k: statistics.median(s.values.values()) for k, s in self.sample(phase, metric, rows).items() if s.values
        }

    def grouped(self, keys: list[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = defaultdict(list)
        for k in self.order:
            if k in keys:
                out[self.group[k]].append(k)
        return dict(out)


def _span(values: list[int]) -> str:
    """[5] -> "5"; [3, 4, 5] -> "3-5"."""
    if not values:
        return "0"
    return str(values[0]) if values[0] == values[-1] else f"{values[0]}-{values[-1]}"


def machine_words(environment: Mapping[str, Any] | None) -> str | None:
    """A run's machine in a few words: "vm: AMD EPYC, 2 logical cores, 25 GB" (+ GPUs)."""
    if not environment:
        return None
    parts = [str(environment.get("cpu_model") or "CPU")]
    if environment.get("logical_cores"):
        parts.append(f"{environment['logical_cores']} logical cores")
    if environment.get("memory_total_bytes"):
        parts.append(f"{environment['memory_total_bytes'] / 1e9:.0f} GB")
    gpus = environment.get("gpus")
    if isinstance(gpus, list) and gpus:
        names = sorted({str(g.get("name", g)) if isinstance(g, dict) else str(g) for g in gpus})
        parts.append(f"{len(gpus)} GPU ({', '.join(names)})")
    host = environment.get("hostname")
    return (f"{host}: " if host else "") + ", ".join(parts)


def _canvas(width: float, height: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as MplFigure

    fig = MplFigure(figsize=(min(max(width, MIN_WIDTH), 30.0), min(height, 40.0)), layout="constrained")
    FigureCanvasAgg(fig)  # Agg for this figure only; global matplotlib state is left alone
    return fig


def _grid(fig: Any, n: int, ncols: int) -> list:
    ncols = max(1, min(ncols, n))
    axes = fig.subplots(math.ceil(n / ncols), ncols, squeeze=False).ravel()
    for ax in axes[n:]:
        ax.set_visible(False)
    return list(axes[:n])


def _mark_gap(ax: Any, x: float, text: str, level: int = 0, color: str = GAP) -> None:
    """A red cross on the axis at x with the status above it: a value that does not exist."""
    tr = ax.get_xaxis_transform()  # x in data, y in axes fraction
    ax.plot([x], [0.02], marker="x", color=color, markersize=9, markeredgewidth=2, transform=tr, clip_on=False)
    ax.text(
        x, 0.06 + 0.1 * level, text, transform=tr, rotation=90, ha="center", va="bottom", fontsize=MIN_FONT, color=color
    )


def _plain(ax: Any) -> None:
    """Axis numbers as plain numbers: no offset ("1e-11+1e2") or scientific notation on a
    linear axis, and 0.5, 1, 2, 5 rather than 10^-1 on a log one. A formatter set on
    purpose (the ratio axis' "2×") is kept."""
    from matplotlib.ticker import FuncFormatter, LogFormatter, LogLocator, NullFormatter, ScalarFormatter

    for axis, scale in ((ax.xaxis, ax.get_xscale()), (ax.yaxis, ax.get_yscale())):
        formatter = axis.get_major_formatter()
        if scale == "linear" and isinstance(formatter, ScalarFormatter):
            formatter.set_useOffset(False)
            formatter.set_scientific(False)
        elif scale == "log" and isinstance(formatter, LogFormatter):
            lo, hi = sorted(axis.get_view_interval())
            # Within a decade every step, within two 1-2-5, wider the decades alone: a few labels each.
            wide = hi / max(lo, 1e-300)
            subs = tuple(range(1, 10)) if wide < 10 else (1.0, 2.0, 5.0) if wide < 100 else (1.0,)
            axis.set_major_locator(LogLocator(subs=subs))
            axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
            axis.set_minor_formatter(NullFormatter())


def _decorate(ax: Any, title: str, ylabel: str, grid: str = "y") -> None:
    ax.set_title(title, fontsize=9)
    ax.set_ylabel(ylabel, fontsize=MIN_FONT)
    ax.grid(axis=grid, alpha=0.3)


def _boxes(ax: Any, positions: list[float], samples: list[list[float]], colors: list[str], *, dots: bool) -> None:
    """Box plots at positions with one boxplot and one scatter call per axes (a call per
    box made the two box figures a fifth of an HTML report's drawing time)."""
    if not positions:
        return
    boxed = [i for i, values in enumerate(samples) if len(values) >= MIN_BOX]
    if boxed:
        boxes = ax.boxplot(
            [samples[i] for i in boxed],
            positions=[positions[i] for i in boxed],
            widths=0.6,
            patch_artist=True,
            showfliers=not dots,
        )
        for box, median, i in zip(boxes["boxes"], boxes["medians"], boxed):
            box.set(facecolor=colors[i], alpha=0.55)
            median.set(color="black")
    # Each value itself, spread evenly across its slot: always for a sample too small for a
    # box (in its colour, with a bar at the median), and over the box when asked for.
    xs, ys, cs = [], [], []
    for i, (x, values) in enumerate(zip(positions, samples)):
        if not dots and i in boxed:
            continue
        n = len(values)
        xs += [x] if n == 1 else [x - 0.18 + 0.36 * j / (n - 1) for j in range(n)]
        ys += values
        cs += ["black" if i in boxed else colors[i]] * n
        if i not in boxed:
            ax.hlines(
                sorted(values)[n // 2] if n % 2 else sum(sorted(values)[n // 2 - 1 : n // 2 + 1]) / 2,
                x - 0.25,
                x + 0.25,
                color="black",
                linewidth=1.5,
                zorder=4,
            )
    if xs:
        ax.scatter(xs, ys, s=16, c=cs, edgecolors="black", linewidths=0.5, zorder=3)


def _ticks(ax: Any, positions: list[float], labels: list[str]) -> None:
    ax.set_xticks(positions)
    rotate = len(labels) > 3 or max((len(s) for s in labels), default=0) > 14
    ax.set_xticklabels(
        [_wrap(s) for s in labels], rotation=35 if rotate else 0, ha="right" if rotate else "center", fontsize=MIN_FONT
    )


def _box_figure(
    run: _Run, phase: str, metric: str, scale: float, unit: str, what: str, name: str, out: Target
) -> Figure | None:
    sample = run.sample(phase, metric)
    if not sample:
        return None
    groups = run.grouped(run.order)
    ncols = min(3, len(groups))
    panel_width = max(3.0, 0.8 * max(len(g) for g in groups.values()) + 1.2)
    fig = _canvas(min(panel_width * ncols, 18.0), 3.8 * math.ceil(len(groups) / ncols) + 0.6)
    data: dict[str, Any] = {}
    for ax, (title, gkeys) in zip(_grid(fig, len(groups), ncols), groups.items()):
        panel = data[title] = {}
        drawn: tuple[list, list, list] = ([], [], [])  # positions, samples, colours
        for i, k in enumerate(gkeys, start=1):
            values = [v * scale for v in sample[k].values.values()] if k in sample else []
            panel[run.label(k)] = values
            if not values:
                _mark_gap(ax, i, run.gap(k))
                continue
            for part, item in zip(drawn, (i, values, run.color[run.ident[k]])):
                part.append(item)
        _boxes(ax, *drawn, dots=True)
        logged = log_if_wide(ax, [v for values in drawn[1] for v in values])
        _ticks(ax, list(range(1, len(gkeys) + 1)), [run.short(k) for k in gkeys])
        ax.set_xlim(0.4, len(gkeys) + 0.6)
        _decorate(ax, title + (" (log scale)" if logged else ""), f"{what} ({unit})")
    independent = {s.independent for s in sample.values()}
    how = " or ".join(
        sorted(
            (
                "one median per trial (independent processes)"
                if i
                else "the measured repeats of one trial (within-process, correlated)"
            )
            for i in independent
        )
    )
    per = f" per {p}" if (p := per_what(run, phase)) else ""
    title = f"{what.capitalize()} per case ({unit}{per})"
    fig.suptitle(title)
    caption = (
        f"{what.capitalize()} in {unit}{per}; each box and its dots are the sample used for statistics: {how}. "
        "Warm-up repeats are excluded. A red × marks a case without values (its status: OOM, failed, ...)."
    )
    return _save(fig, out, name, title, caption, data)


def per_what(run: _Run, phase: str) -> str:
    """What one stored time covers, where every case agrees: "3 epochs" (train), "pass over
    360 test samples" (infer: samples per pass, read off the stored throughput × time);
    "" where cases differ (their labels tell)."""
    if phase == "train":
        steps = {c.get("steps") for c in run.cases.values()} - {None, 0}
        epochs = {c.get("epochs") for c in run.cases.values()} - {None, 0}
        if len(steps) == 1:
            n = int(next(iter(steps)) or 0)
            return f"{n} step{'s' if n != 1 else ''}"
        if len(epochs) == 1 and not steps:
            n = int(next(iter(epochs)) or 0)
            return f"{n} epoch{'s' if n != 1 else ''}"
        return ""
    if phase != "infer":
        return ""
    samples = set()
    for (trial, row_phase, metric), rows in run.points.items():
        if row_phase != "infer" or metric != "time":
            continue
        rates = {m["repeat"]: m["value"] for m in run.points.get((trial, "infer", "throughput"), []) if m["value"]}
        samples |= {round(m["value"] * rates[m["repeat"]]) for m in rows if m["value"] and m["repeat"] in rates}
    return f"pass over {samples.pop():,} test samples" if len(samples) == 1 else ""


def _draw_case_runs(
    ax: Any,
    run: _Run,
    key: str,
    phase: str,
    metric: str,
    x: float,
    scale: float,
    warm_at: list[tuple[float, float]],
) -> tuple[float, dict[str, list]]:
    """Every row of one case from x on, trial after trial; returns the next free x and what was drawn."""
    color = run.color[run.ident[key]]
    drawn: dict[str, list] = {"measured": [], "warmup": [], "partial": [], "gaps": []}
    # Coordinates are collected and drawn with one call per kind: one artist per
    # point made a report of 100,000 values take 20 s to draw.
    points: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in ("measured", "warmup", "partial")}
    separators: list[float] = []  # where a new trial (process) begins
    for n, t in enumerate(run.trials_of[key]):
        if n:
            separators.append(x - 0.8)
        rows = sorted(
            run.points.get((t["id"], phase, metric), []),
            key=lambda m: (m["repeat"] if m["repeat"] is not None else -1, m["seq"] or 0),
        )
        for m in rows:
            if m["value"] is None:
                _mark_gap(ax, x, "no value")
                drawn["gaps"].append("no value")
            else:
                kind = "warmup" if m["warmup"] else "measured" if t["status"] == "ok" else "partial"
                v = m["value"] * scale
                drawn[kind].append(v)
                if kind == "warmup":
                    warm_at.append((x, v))
                points[kind][0].append(x)
                points[kind][1].append(v)
            x += 1
        if t["status"] != "ok":
            status = "OOM" if t["status"] == "oom" else t["status"]
            _mark_gap(ax, x, f"block {t['block']}: {status}")
            drawn["gaps"].append(status)
            x += 1
        x += 0.6
    if separators:
        ax.vlines(separators, 0, 1, transform=ax.get_xaxis_transform(), color="#999999", linestyle=":", linewidth=0.6)
    for kind, (xs, vs) in points.items():
        if not xs:
            continue
        # Dots, never bars: a bar's length means nothing on the log axis these panels get
        # when values span more than LOG_SPAN.
        face = {"measured": color, "warmup": WARM, "partial": "none"}[kind]
        ax.scatter(xs, vs, s=18, facecolors=face, zorder=3, edgecolors="#666666" if kind == "warmup" else color)
    return x, drawn


def _stop_at_100(ax: Any, values: list[float]) -> None:
    """A share in % that no value passes ends its axis at 100: matplotlib's margin ran a
    k-NN accuracy of 100% up to a tick of 102%. The dots on the line are drawn whole."""
    bottom, top = ax.get_ylim()
    if top > 100 and values and max(values) <= 100:
        ax.set_ylim(bottom, 100)
        for drawn in ax.collections:
            drawn.set_clip_on(False)


def _clip_warmups(ax: Any, panel: dict[str, dict[str, list]], warm_at: list[tuple[float, float]], unit: str) -> None:
    """Warm-ups (first-call compilation) can dwarf the steady state: cut them at the top
    of the axis and write their value, so that the measured repeats stay readable."""
    kept = [v for series in panel.values() for v in series["measured"] + series["partial"]]
    if not kept or not warm_at or max(v for _, v in warm_at) <= 3 * max(kept):
        return
    top = 1.25 * max(kept) if max(kept) > 0 else 1.0
    ax.set_ylim(top=top)
    for x, v in warm_at:
        if v > top:
            ax.text(
                x,
                top,
                f"{v:.3g} {unit}",
                rotation=90,
                ha="center",
                va="top",
                fontsize=MIN_FONT,
                color="#333333",
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.5},
            )


def _dot(label: str, face: str, edge: str, marker: str = "o") -> Any:
    """A legend entry drawn as the marker the panels use."""
    from matplotlib.lines import Line2D

    return Line2D([], [], linestyle="none", marker=marker, markersize=6, markerfacecolor=face, markeredgecolor=edge,
                  markeredgewidth=2 if marker == "x" else 1, label=label)  # fmt: skip


def _per_run_figure(
    run: _Run,
    panels: list[tuple[str, str, str, list[str]]],
    scale: float,
    unit: str,
    what: str,
    name: str,
    title: str,
    out: Target,
    axes: Mapping[str, tuple[float, str, str]] | None = None,
) -> Figure | None:
    """Every repeat in execution order (block, then repeat) per case, as dots.
    `axes`: metric -> (scale, unit, what) of panels whose metric is not the figure's own
    (one figure shows every quality metric: accuracy in %, test MSE a plain number)."""
    if not panels:
        return None
    slots = max(sum(len(run.trials_of[k]) * 6 for k in keys) for *_, keys in panels)
    panel_width = min(max(6.0, 0.12 * slots + 2.0), 18.0)
    ncols = 2 if len(panels) > 1 and panel_width <= 8.0 else 1
    fig = _canvas(panel_width * ncols, 3.4 * math.ceil(len(panels) / ncols) + 1.0)
    data: dict[str, Any] = {}
    for ax, (ptitle, phase, metric, keys) in zip(_grid(fig, len(panels), ncols), panels):
        panel = data[ptitle] = {}
        p_scale, p_unit, p_what = (axes or {}).get(metric, (scale, unit, what))
        x = 0.0
        centers: list[float] = []
        warm_at: list[tuple[float, float]] = []
        for n, k in enumerate(keys):
            if n:
                ax.axvline(x - 0.8, color="#555555", linewidth=0.8)  # a new case
            start = x
            x, panel[run.label(k)] = _draw_case_runs(ax, run, k, phase, metric, x, p_scale, warm_at)
            centers.append((start + x - 1.6) / 2)
            x += 1.0
        _ticks(ax, centers, [run.short(k) for k in keys])
        ax.set_xlim(-1, max(x - 1.6, 1))
        _clip_warmups(ax, panel, warm_at, p_unit)
        logged = log_if_wide(ax, [v for values in panel.values() for v in _flat(values)])
        if p_unit == "%" and not logged:
            _stop_at_100(ax, [v for values in panel.values() for v in _flat(values)])
        _decorate(ax, ptitle + (" (log scale)" if logged else ""), f"{p_what} ({p_unit})" if p_unit else p_what)
    # The legend lists what was drawn, each with its marker: the frameworks shown, and
    # warm-ups, unfinished trials and gaps only where some are there.
    series = [s for p in data.values() for s in p.values()]
    shown = sorted({run.ident[k] for *_, keys in panels for k in keys})
    handles = [_dot(i, run.color[i], run.color[i]) for i in shown]
    if any(s["warmup"] for s in series):
        handles.append(_dot("warm-up (not in statistics)", WARM, "#666666"))
    if any(s["partial"] for s in series):
        handles.append(_dot("value of a trial that did not finish", "none", "#666666"))
    if any(s["gaps"] for s in series):
        handles.append(_dot("trial without values (status written)", GAP, GAP, "x"))
    _legend(fig, handles, [str(h.get_label()) for h in handles])
    fig.suptitle(title)
    shown_what = f"{what.capitalize()} ({unit})" if unit else what.capitalize()
    caption = (
        f"{shown_what} of every repeat in execution order (block, then repeat), one group "
        "per case; dotted lines separate trials (fresh processes). Grey dots: warm-up (not in statistics); "
        "hollow dots: values of a trial that did not finish; red ×: a trial without values, "
        "with its status."
    )
    return _save(fig, out, name, title, caption, data, [k for *_, keys in panels for k in keys])


NO_VERDICT = "no verdict (within-process interval)"
VERDICT_COLORS = {
    "slower": "#d62728",
    "faster": "#1f77b4",
    "no meaningful difference": "#2ca02c",
    "undecided": "#7f7f7f",
    NO_VERDICT: "#9467bd",
}


def _relative_figure(run: _Run, baseline: str | None, out: Target) -> Figure | None:
    """A forest plot: per comparison (set, metric, framework pair) the ratio of medians with
    its interval on a log axis, a line at 1× and the band of no meaningful difference shaded,
    each dot coloured by its verdict; the baseline is the denominator wherever it takes part."""
    from dlbench.analysis import comparisons
    from dlbench.analysis.criteria import ALPHA, BAND

    labels = sorted(set(run.fwv.values()))
    if not labels:
        return None
    base: str | None
    if baseline is None:
        base = labels[0]
    else:
        base = baseline if baseline in labels else next((lab for lab in labels if lab.split(":")[0] == baseline), None)
        if base is None:
            raise ValueError(f"baseline {baseline!r} is not in this run; frameworks here: {', '.join(labels)}")
    verdicts, _ = comparisons.within_run(run.trials, run.rows, BAND, ALPHA)
    by_set: dict[str, dict[str, str]] = defaultdict(dict)  # set label -> framework:variant -> case key
    for k, c in run.cases.items():
        by_set[comparisons.set_label(c)][run.fwv[k]] = k
    rows: dict[str, list[dict[str, Any]]] = defaultdict(list)  # metric -> rows, top to bottom
    from dlbench.analysis.stats import reverse

    for v in verdicts:
        comp, a, b = v.comparison, v.a, v.b
        if a == base:  # the baseline below the line: a ratio above 1 reads "slower than the baseline"
            comp, a, b = reverse(comp), b, a
        ratio, (lo, hi), verdict = comp.ratio, comp.ratio_ci, comp.verdict
        if not (comp.independent and comp.interleaved):
            # Repeats inside one process per side (or runs one after the other): a ratio and
            # its interval, never a verdict word (analysis.stats.compare_two).
            verdict = NO_VERDICT
        keys = [by_set[v.set_label][a], by_set[v.set_label][b]]
        rows[v.metric].append(
            {"set": v.set_label, "a": a, "b": b, "ratio": ratio, "ci": (lo, hi), "verdict": verdict, "keys": keys,
             "label": _forest_label(run, a, b, keys), "method": comp.ci_method}
        )  # fmt: skip
    # A comparison with the baseline that has no ratio: one side has no values (OOM, failed, ...).
    for phase, metric in (("train", "train time"), ("infer", "inference time")):
        medians = run.medians(phase, "time")
        if not medians:
            continue
        for members in by_set.values():
            for other, k in sorted(members.items()):
                b_key = members.get(base)
                if other == base or b_key is None or (k in medians and b_key in medians):
                    continue
                text = run.gap(k) if k not in medians else f"{base} {run.gap(b_key)}"
                rows[metric].append(
                    {"set": comparisons.set_label(run.cases[k]), "a": other, "b": base, "ratio": None, "ci": None,
                     "verdict": None, "gap": text, "keys": [k, b_key],
                     "label": _forest_label(run, other, base, [k, b_key])}
                )  # fmt: skip
    if not rows:
        return None
    metrics = list(rows)
    heights = [len(rows[m]) for m in metrics]
    fig = _canvas(10.0, 0.42 * sum(heights) + 1.1 * len(metrics) + 1.6)
    axes = fig.subplots(len(metrics), 1, squeeze=False, sharex=True, height_ratios=[h + 1 for h in heights]).ravel()
    every = [x for m in metrics for r in rows[m] if r["ci"] for x in (*r["ci"], r["ratio"]) if math.isfinite(x)]
    lo_x = min([1 / (1 + BAND), *(x for x in every if x > 0)]) / 1.25
    hi_x = max([1 + BAND, *every]) * 1.25
    data: dict[str, Any] = {}
    for ax, metric in zip(axes, metrics):
        drawn = rows[metric]
        data[metric] = [{k: v for k, v in r.items() if k not in ("keys", "label", "method")} for r in drawn]
        ys = list(range(len(drawn)))[::-1]  # the first row on top
        ax.axvspan(1 / (1 + BAND), 1 + BAND, color="#e4e4e4", zorder=0)
        ax.axvline(1.0, color="black", linewidth=0.8, zorder=1)
        right = []
        for y, r in zip(ys, drawn):
            if r["ratio"] is None:
                _mark_gap_row(ax, y, r["gap"])
                right.append(r["gap"])
                continue
            color = VERDICT_COLORS.get(r["verdict"], "#7f7f7f")
            lo, hi = r["ci"]
            ax.plot([r["ratio"]], [y], marker="o", color=color, markersize=7, linestyle="none", zorder=3)
            if math.isfinite(lo) and math.isfinite(hi):
                ax.plot([lo, hi], [y, y], color=color, linewidth=2, solid_capstyle="butt", zorder=2)
                right.append(f"{r['ratio']:.3g}× [{lo:.3g}, {hi:.3g}] {r['verdict']}")
            else:  # too few values on a side for an interval (one process each)
                right.append(f"{r['ratio']:.3g}×, no interval (too few values) {r['verdict']}")
        ax.set_xscale("log")
        ax.set_xlim(lo_x, hi_x)
        ax.set_ylim(-0.7, len(drawn) - 0.3)
        ax.set_yticks(ys, [r["label"] for r in drawn], fontsize=MIN_FONT)
        numbers = ax.secondary_yaxis("right")
        numbers.set_yticks(ys, right, fontsize=MIN_FONT)
        numbers.tick_params(length=0)
        ax.set_title(f"{metric}: ratio of medians (× {base} where it takes part)", fontsize=9)
        ax.grid(axis="x", alpha=0.3, which="both")
    axes[-1].set_xlabel("time ratio (log scale; 1× = the same time, right of it = slower)", fontsize=MIN_FONT)
    ticks = _ratio_ticks(lo_x, hi_x)
    for ax in axes:
        ax.set_xticks(ticks, [f"{t:g}×" for t in ticks], fontsize=MIN_FONT)
        ax.minorticks_off()
    verdicts_drawn = sorted({r["verdict"] for m in metrics for r in rows[m] if r["verdict"]})
    level = f"{1 - ALPHA:.0%} interval"
    handles = [
        _interval(
            f"no verdict (within-process {level})" if v == NO_VERDICT else f"{v} ({level})",
            VERDICT_COLORS.get(v, "#7f7f7f"),
        )
        for v in verdicts_drawn
    ]
    from matplotlib.patches import Patch

    handles.append(Patch(facecolor="#e4e4e4", label=f"±{BAND:.0%}: no meaningful difference"))
    if any(r["ratio"] is None for m in metrics for r in rows[m]):
        handles.append(_dot("no ratio: a side without values", GAP, GAP, "x"))
    _legend(fig, handles, [str(h.get_label()) for h in handles])
    title = f"Time relative to {base}: ratio of medians with its {1 - ALPHA:.0%} interval (>1× = slower)"
    fig.suptitle(title)
    methods = sorted({r["method"] for m in metrics for r in rows[m] if r.get("method")})
    caption = (
        f"One row per comparison: the ratio of median times (A / B, the baseline {base} as B where it takes "
        f"part) with its {1 - ALPHA:.0%} confidence interval ({'; '.join(methods) or 'none'}), on a log axis. "
        f"The shaded band is ±{BAND:.0%}, where a difference counts as none; the colour is the verdict at "
        f"α = {ALPHA:g} (Holm within each comparison set). A red × is a comparison without a ratio: the side "
        "without values and its status."
    )
    shown = sorted({k for m in metrics for r in rows[m] for k in r["keys"]})
    return _save(fig, out, "04_relative_time", title, caption, data, shown)


def _forest_label(run: _Run, a: str, b: str, keys: list[str]) -> str:
    """ "torch:eager / jax:jit  mlp b64 BUSY": the pair, then what sets this comparison apart."""
    where = " ".join(x for x in (run.group[keys[0]], run.sub[keys[0]]) if x)
    several = len({run.group[k] + run.sub[k] for k in run.cases}) > 1
    return " ".join(x for x in (f"{a} / {b}", where if several else "", run.busy_mark(*keys)) if x)


def _mark_gap_row(ax: Any, y: float, text: str) -> None:
    ax.plot([1.0], [y], marker="x", color=GAP, markersize=9, markeredgewidth=2, linestyle="none", zorder=3)
    ax.annotate(text, (1.0, y), xytext=(8, 0), textcoords="offset points", va="center", fontsize=MIN_FONT, color=GAP)


def _interval(label: str, color: str) -> Any:
    """A legend entry drawn as the forest plot's rows are: a dot on its interval."""
    from matplotlib.lines import Line2D

    return Line2D([], [], color=color, linewidth=2, marker="o", markersize=6, label=label)


def _ratio_ticks(lo: float, hi: float) -> list[float]:
    """Ratios to label inside [lo, hi], always with 1, about evenly spaced on the log axis:
    1.1-1.25-1.5 steps on a narrow axis, 1.5-2-3-5 on a middling one, 3-10-30 on a wide one
    (an axis of 0.03-600x labelled 0.05, 0.2, 1, 5, 20: steps of 4 and 5 mixed)."""
    above: tuple[float, ...]
    below: tuple[float, ...]
    if hi <= 2.5 and lo >= 0.4:
        above = (1.05, 1.1, 1.25, 1.5, 2.0)
        below = (0.95, 0.9, 0.8, 0.67, 0.5)
    elif hi <= 12 and lo >= 1 / 12:
        above = (1.5, 2.0, 3.0, 5.0, 10.0)
        below = (0.67, 0.5, 0.33, 0.2, 0.1)
    else:
        above = (3.0, 10.0, 30.0, 100.0, 300.0, 1000.0, 3000.0, 10000.0)
        below = (0.3, 0.1, 0.03, 0.01, 0.003, 0.001, 0.0003, 0.0001)
    return sorted({1.0} | {t for t in above if t <= hi} | {t for t in below if t >= lo})


def _batch_figure(run: _Run, out: Target) -> Figure | None:
    groups = {
        g: ks for g, ks in run.grouped(list(run.cases)).items() if len({run.cases[k]["batch_size"] for k in ks}) >= 2
    }
    if not groups:
        return None
    per_sample = [
        {**dict(m), "metric": "time_per_sample", "value": 1.0 / m["value"]}
        for m in run.rows
        if m["phase"] == "train" and m["metric"] == "throughput" and m["value"]
    ]
    metrics = (
        ("train time per sample", "ms/sample", run.medians("train", "time_per_sample", per_sample), 1e3),
        ("inference throughput", "samples/s", run.medians("infer", "throughput"), 1.0),
    )
    fig = _canvas(11, 3.4 * len(groups) + 0.8)
    axes = iter(_grid(fig, 2 * len(groups), 2))
    data: dict[str, Any] = {}
    for gname, keys in groups.items():
        batches = sorted({run.cases[k]["batch_size"] for k in keys})
        for what, unit, medians, scale in metrics:
            ax = next(axes)
            panel = data[f"{gname} | {what}"] = {}
            for n, ident in enumerate(sorted({run.ident[k] for k in keys})):
                at = {run.cases[k]["batch_size"]: k for k in keys if run.ident[k] == ident}
                ys = [medians[at[b]] * scale if at.get(b) in medians else math.nan for b in batches]
                ax.plot(batches, ys, marker="o", color=run.color[ident], label=ident)
                gaps = {b: run.gap(at[b]) for b in batches if b in at and at[b] not in medians}
                for b, status in gaps.items():
                    _mark_gap(ax, b, status, level=n, color=run.color[ident])
                # A point measured on a busy machine gets a black ring (and the legend says so).
                busy = [(b, y) for b, y in zip(batches, ys) if at.get(b) in run.busy and not math.isnan(y)]
                if busy:
                    ax.scatter(*zip(*busy), s=110, facecolors="none", edgecolors="black", linewidths=1.2, zorder=4)
                panel[ident] = {
                    "x": batches, "y": [None if math.isnan(y) else y for y in ys], "gaps": gaps,
                    "busy": [b for b, _ in busy],
                }  # fmt: skip
            ax.set_xscale("log", base=2)
            ax.set_xticks(batches)
            ax.set_xticklabels([str(b) for b in batches])
            ax.minorticks_off()
            ax.set_xlabel("batch size (samples)")
            _decorate(ax, f"{gname}: {what}", f"{what} ({unit})", grid="both")
    # One legend for all panels (the same lines in each): a legend per panel placed by
    # loc="best" was a sixth of this figure's drawing time.
    lines = {label: handle for ax in fig.axes for handle, label in zip(*ax.get_legend_handles_labels())}
    if any(line["busy"] for panel in data.values() for line in panel.values()):
        lines[f"{BUSY_MARK}: measured on a busy machine"] = _dot("", "none", "black")
    _legend(fig, list(lines.values()), list(lines))
    title = "Train time per sample (ms/sample) and inference throughput (samples/s) vs batch size"
    fig.suptitle(title)
    caption = (
        "Median over the statistical sample (one median per trial, or the measured repeats) at each batch "
        "size, one line per framework:variant. A break in a line with a cross at the axis is a batch size "
        "whose trials gave no value (status written next to it, e.g. OOM)."
    )
    return _save(fig, out, "05_batch_size", title, caption, data)


TELEMETRY_UNITS = {"%": "%", "C": "°C", "°C": "°C"}


def _is_telemetry(metric: str) -> bool:
    return (
        metric in ("cpu.process_util:mean", "cpu.system_util:mean", "cpu.others_util:mean")
        or (metric.startswith("gpu") and metric.endswith(".util:mean"))
        or (metric.startswith("temp") and metric.endswith(":max"))
        or (metric.startswith("gpu") and metric.endswith(".temperature:max"))
    )


def _telemetry_figure(run: _Run, out: Target) -> Figure | None:
    values: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    units: dict[str, str] = {}
    for m in run.rows:
        if (
            m["phase"] in ("train", "infer")
            and _is_telemetry(m["metric"])
            and not m["warmup"]
            and m["status"] == "ok"
            and m["value"] is not None
        ):
            values[(m["metric"], m["phase"])][m["case_key"]].append(m["value"])
            units[m["metric"]] = TELEMETRY_UNITS.get(m["unit"], m["unit"])
    if not values:
        return None
    # A series that never changes (system CPU at 100% in every repeat) is a flat line at a
    # number: it is said in the caption, not drawn as a panel.
    constant: dict[tuple[str, str], float] = {}
    for (metric, phase), per_case in values.items():
        flat = [v for vs in per_case.values() for v in vs]
        if max(flat) - min(flat) <= CONSTANT * max(abs(max(flat)), abs(min(flat)), 1.0):
            constant[(metric, phase)] = statistics.median(flat)
    for key in constant:
        del values[key]
    if not values:
        return None
    metrics = sorted({m for m, _ in values}, key=lambda m: (not m.startswith("cpu"), m))
    phases = [p for p in ("train", "infer") if any(p == q for _, q in values)]
    keys = run.order
    fig = _canvas(max(5.0, 0.45 * len(keys) + 1.5) * len(phases), 3.3 * len(metrics) + 1.2)
    axes = iter(_grid(fig, len(metrics) * len(phases), len(phases)))
    data: dict[str, Any] = {}
    for metric in metrics:
        for phase in phases:
            ax = next(axes)
            if (metric, phase) not in values:  # constant (said in the caption) or not measured in this phase
                ax.set_visible(False)
                continue
            per_case = values[(metric, phase)]
            panel = data[f"{metric} | {phase}"] = {}
            drawn: tuple[list, list, list] = ([], [], [])  # positions, samples, colours
            for i, k in enumerate(keys, start=1):
                vs = panel[run.label(k)] = per_case.get(k, [])
                if not vs:
                    _mark_gap(ax, i, run.gap(k) if run.gap(k) != "no value" else "not measured")
                    continue
                for part, item in zip(drawn, (i, vs, run.color[run.ident[k]])):
                    part.append(item)
            _boxes(ax, *drawn, dots=False)
            # The model in each label only where the run has several (one group: it says nothing).
            named = run.label if len(set(run.group.values())) > 1 else run.short
            _ticks(ax, list(range(1, len(keys) + 1)), [named(k) for k in keys])
            ax.set_xlim(0.4, len(keys) + 0.6)
            _decorate(ax, f"{metric_words(metric)}, {PHASE_WORDS.get(phase, phase)}", metric_words(metric))
    has_temp = any("temp" in m for m in metrics)
    title = "Utilization (%) and temperature (°C) per phase" if has_temp else "Utilization (%) per phase"
    shown_title = title
    if constant:
        shown_title += "\nnot drawn, the same in every repeat: " + "; ".join(
            f"{metric_words(m)}, {PHASE_WORDS.get(p, p)} {v:.3g}" for (m, p), v in sorted(constant.items())
        )
    fig.suptitle(shown_title)
    caption = (
        "Distribution over every measured repeat of the ok trials (warm-ups excluded) of the per-repeat "
        "mean utilization and maximum temperature, for the train and inference phases. A cross marks a case "
        "with no reading."
    )
    if constant:
        said = "; ".join(
            f"{metric_words(m)}, {PHASE_WORDS.get(p, p)}: {v:.3g}" for (m, p), v in sorted(constant.items())
        )
        caption += f" Not drawn, the same in every repeat: {said}."
        # Not a panel: the panels are the other keys, each a dict of cases.
        data["constant"] = {f"{m} | {p}": v for (m, p), v in constant.items()}
    return _save(fig, out, "08_telemetry", title, caption, data)


def _learning_figure(run: _Run, out: Target) -> Figure | None:
    """Per-epoch training loss (train.loss, one value per epoch: seq = epoch index) per case,
    one panel per comparison group: every measured repeat a thin line, their median bold."""
    curves: dict[str, dict[tuple[int, int], dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    units: set[str] = set()
    for m in run.rows:
        if (
            m["phase"] == "train"
            and m["metric"] == "loss"
            and m["seq"] is not None
            and not m["warmup"]
            and m["status"] == "ok"
            and m["value"] is not None
        ):
            curves[m["case_key"]][(m["trial_id"], m["repeat"] or 0)][int(m["seq"])] = float(m["value"])
            units.add(m["unit"])
    if not curves:
        return None
    groups = run.grouped(list(curves))
    ncols = min(2, len(groups))
    fig = _canvas(10.0 if ncols == 1 else 12.0, 3.8 * math.ceil(len(groups) / ncols) + 1.2)
    data: dict[str, Any] = {}
    unit = ", ".join(sorted(u for u in units if u)) or "as stored"
    epochs_seen: set[int] = set()
    spread: list[str] = []  # the panels' curves that differ beyond their spread (dlbench.analysis.curves)
    unknown_spread = False
    for ax, (gname, keys) in zip(_grid(fig, len(groups), ncols), groups.items()):
        panel = data[gname] = {}
        every: list[float] = []
        if len(keys) >= 2:
            found, few = _curve_gaps(run, curves, keys)
            spread += [f"{gname}: {g.words()}" for g in found]
            unknown_spread |= few
        for k in keys:
            color = run.color[run.ident[k]]
            repeats = list(curves[k].values())
            epochs = sorted({e for r in repeats for e in r})
            epochs_seen.update(epochs)
            for r in repeats:
                xs = sorted(r)
                ax.plot([e + 1 for e in xs], [r[e] for e in xs], color=color, alpha=0.3, linewidth=0.8)
            median = [statistics.median(r[e] for r in repeats if e in r) for e in epochs]
            ax.plot([e + 1 for e in epochs], median, color=color, linewidth=2, marker="o", markersize=4,
                    label=run.ident[k])  # fmt: skip
            panel[run.short(k)] = {"epochs": [e + 1 for e in epochs], "median": median, "repeats": len(repeats)}
            every += [v for r in repeats for v in r.values()]
        logged = log_if_wide(ax, every)
        ax.set_xlabel("epoch", fontsize=MIN_FONT)
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        busy = sorted({" ".join(filter(None, (run.ident[k], run.sub[k]))) for k in keys if k in run.busy})
        where = gname + (" (log scale)" if logged else "") + (f"; {BUSY_MARK}: {', '.join(busy)}" if busy else "")
        _decorate(ax, where, f"training loss ({unit})", grid="both")
    # One entry per framework:variant (the same colour in every panel), then the thin line.
    lines = {label: h for ax in fig.axes for h, label in zip(*ax.get_legend_handles_labels())}
    from matplotlib.lines import Line2D

    lines["one measured repeat"] = Line2D([], [], color="#777777", alpha=0.5, linewidth=0.8)
    _legend(fig, list(lines.values()), list(lines))
    title = f"Training loss per epoch ({unit}): median of the measured repeats, each repeat a thin line"
    fig.suptitle(title)
    caption = (
        "Mean training loss of each epoch (as the framework reports it while training), per case: every "
        "measured repeat of the finished trials as a thin line, their median per epoch bold with dots. "
        "Warm-up repeats are left out. "
    )
    if spread:
        caption += "Curves that differ beyond their spread (no repeat of one overlaps the other's): " + "; ".join(
            spread
        )
        caption += (
            ". `dlbench check MODEL` trains each framework from the same weights on the same batches and names "
            "a training difference that is the code's (loss reduction, optimizer epsilon, weight decay, a layer's "
            "training mode) rather than the framework's."
        )
    elif unknown_spread:
        caption += "Some case has fewer than two measured repeats: whether the curves differ beyond it is not known."
    else:
        caption += "Every panel's curves end within their spread: their repeats' last losses overlap."
    return _save(fig, out, "10_learning_curves", title, caption, data, sorted(curves))


def _curve_gaps(
    run: _Run, curves: Mapping[str, Mapping[tuple[int, int], dict[int, float]]], keys: list[str]
) -> tuple[list[Any], bool]:
    """The pairs of a panel's cases whose repeats' losses at the last epoch they all reached
    do not overlap (dlbench.analysis.curves), and whether some case had too few repeats."""
    from dlbench.analysis.curves import gaps

    last = min(max(e for r in curves[k].values() for e in r) for k in keys)
    finals = {run.short(k): [r[last] for r in curves[k].values() if last in r] for k in keys}
    return gaps(finals, last + 1), any(len(v) < 2 for v in finals.values())


def _cases_with(run: _Run, phase: str, metric: str) -> list[str]:
    """Cases with any row of (phase, metric), plus those with a trial that did not finish
    (drawn as gaps), provided the run measured that metric at all."""
    if not any(m["phase"] == phase and m["metric"] == metric for m in run.rows):
        return []
    return [
        k
        for k in run.cases
        if any(run.points.get((t["id"], phase, metric)) or t["status"] != "ok" for t in run.trials_of[k])
    ]


@dataclass(frozen=True)
class Target:
    """Where figures go and in which file formats."""

    dir: Path
    formats: tuple[str, ...] = ("png", "svg")
    run: Any = None  # the _Run drawn, for the footer


def _bottom(fig: Any, footer: str) -> None:
    """The footer line at the bottom edge, the legend above it, the panels above both: the
    constrained layout is given the rectangle left over (it places neither of the two)."""
    renderer = fig.canvas.get_renderer()
    height = fig.bbox.height
    pad = MIN_FONT / 72 * fig.dpi * 0.4
    used = pad
    if footer:
        text = "\n".join(textwrap.wrap(footer, int(fig.get_figwidth() * 14)))
        shown = fig.text(0.5, pad / height, text, ha="center", va="bottom", fontsize=MIN_FONT, color="#333333")
        used += shown.get_window_extent(renderer).height + pad
    for legend in fig.legends:
        legend.set_bbox_to_anchor((0.5, used / height), transform=fig.transFigure)
        used += legend.get_window_extent(renderer).height + pad
    if used > pad and fig.get_layout_engine() is not None:
        fig.get_layout_engine().set(rect=(0.0, used / height, 1.0, 1.0 - used / height))


def _save(
    fig: Any, out: Target, name: str, title: str, caption: str, data: dict, shown: list[str] | None = None
) -> Figure:
    """Write the figure with its footer (n, threads, batch, machine of the cases `shown`,
    default every case) at a resolution that fills the HTML page's width."""
    png, svg = out.dir / f"{name}.png", out.dir / f"{name}.svg"
    formats = out.formats
    footer = out.run.footer(shown) if out.run is not None else ""
    _bottom(fig, footer)
    for ax in fig.axes:
        _plain(ax)
    dpi = max(DPI, math.ceil(PAGE_PX / fig.get_figwidth()))
    from dlbench import outputs

    # Through dlbench.outputs: never over a database, and whole or not at all.
    if "png" in formats:
        # zlib level 1: a quarter of the encoding time for ~20% larger files.
        outputs.write_with(png, lambda tmp: fig.savefig(tmp, format="png", dpi=dpi, pil_kwargs={"compress_level": 1}))
    if "svg" in formats:
        svg_data = _svg_bytes(fig)

        def write_svg(tmp: Path) -> None:
            tmp.write_bytes(svg_data)

        outputs.write_with(svg, write_svg)
    return Figure(
        name, title, png if "png" in formats else None, svg if "svg" in formats else None, caption, data, footer
    )


def _svg_bytes(fig: Any) -> bytes:
    """The figure as SVG that the same run always gives byte for byte: no timestamp, and
    the clip paths numbered in order. matplotlib names a clip path by a hash of its
    rectangle's floats, and a layout computed again in a process that drew before could
    move one by a last bit: one id in a figure of six panels differed between two drawings."""
    import io
    import re

    buffer = io.BytesIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None})
    names: dict[bytes, bytes] = {}

    def stable(match: re.Match[bytes]) -> bytes:
        return match[1] + names.setdefault(match[2], b"clip%d" % (len(names) + 1))

    return re.sub(rb'(id="|url\(#)(p[0-9a-f]{10})(?=[")])', stable, buffer.getvalue())


def index_rows(trials: list, rows: list) -> _Run:
    """A run's trials and measurements indexed for drawing (make_figures(indexed=...))."""
    return _Run(trials, rows)


# Every figure by its fixed key, in the order figures are drawn, numbered and listed (the
# learning curves beside the quality); a function draws it or returns None when the run has
# nothing to plot for it. The file gets its place among the figures made (file_stem).
FIGURE_NAMES = (
    "01_box_train_time",
    "02_box_infer_time",
    "03_runs_train_time",
    "04_relative_time",
    "05_batch_size",
    "06_accuracy_runs",
    "10_learning_curves",
    "07_energy_runs",
    "08_telemetry",
    "09_scaling",
)


def file_stem(name: str, number: int) -> str:
    """A figure's file name without suffix: its place among the figures made (01, 02, ...,
    without gaps, whichever figures a run has data for), then its name without the number."""
    slug = name.split("_", 1)[1] if name[:2].isdigit() and "_" in name else name
    return f"{number:02d}_{slug}"


def _drawers(run: _Run, out: Target, baseline: str | None) -> dict[str, Any]:
    def per(phase: str) -> str:
        return f" per {p}" if (p := per_what(run, phase)) else ""

    def runs_panels(phase: str, metric: str) -> list:
        return [(g, phase, metric, ks) for g, ks in run.grouped(_cases_with(run, phase, metric)).items()]

    def energy() -> Figure | None:
        sources = sorted({m["metric"] for m in run.rows if m["metric"].startswith("energy:") and m["phase"] == "train"})
        panels = [
            (f"{g} — {src.split(':', 1)[1]}", "train", src, ks)
            for src in sources
            for g, ks in run.grouped(_cases_with(run, "train", src)).items()
        ]
        return _per_run_figure(
            run, panels, 1.0, "J", "train energy", "07_energy_runs", "Energy of every training repeat (J)", out
        )

    def quality_figure() -> Figure | None:
        # Every quality metric the run stored (analysis.quality), one panel per comparison group
        # and metric, each on its own axis; a run of accuracy alone draws what it always drew.
        # The heads' metrics of a model of several outputs ("mse/price") are found in the rows.
        stored = {(m["phase"], m["metric"]) for m in run.rows}
        found = [q for q in quality.present(stored) if _cases_with(run, q.phase, q.metric)]
        if not found:
            return None
        if len(found) == 1 and found[0].shown:
            (q,) = found
            return _per_run_figure(
                run,
                runs_panels(q.phase, q.metric),
                q.scale,
                q.shown,
                q.label,
                "06_accuracy_runs",
                f"Test {q.label} of every repeat ({q.shown})",
                out,
            )
        panels = [
            (f"{g} — {q.label}", phase, metric, ks)
            for q in found
            for g, phase, metric, ks in runs_panels(q.phase, q.metric)
        ]
        title = "Test-set quality of every repeat (" + ", ".join(q.title for q in found) + ")"
        return _per_run_figure(
            run,
            panels,
            1.0,
            "",
            "test-set quality",
            "06_accuracy_runs",
            title,
            out,
            {q.metric: (q.scale, q.shown, q.label) for q in found},
        )

    return {
        "01_box_train_time": lambda: _box_figure(
            run, "train", "time", 1.0, "s", "train time", "01_box_train_time", out
        ),
        "02_box_infer_time": lambda: _box_figure(
            run, "infer", "time", 1e3, "ms", "inference time", "02_box_infer_time", out
        ),
        "03_runs_train_time": lambda: _per_run_figure(
            run,
            runs_panels("train", "time"),
            1.0,
            "s",
            "train time",
            "03_runs_train_time",
            f"Train time of every repeat (s{per('train')})",
            out,
        ),
        "04_relative_time": lambda: _relative_figure(run, baseline, out),
        "05_batch_size": lambda: _batch_figure(run, out),
        "06_accuracy_runs": quality_figure,
        "07_energy_runs": energy,
        "08_telemetry": lambda: _telemetry_figure(run, out),
        "09_scaling": lambda: _scaling_figure(run, out),
        "10_learning_curves": lambda: _learning_figure(run, out),
    }


def _scaling_figure(run: _Run, out: Target) -> Figure | None:
    from dlbench.analysis.scaling import scaling
    from dlbench.report import scaling_plot

    found = scaling(run.trials, run.rows)
    if not found:
        return None

    def save(fig: Any, name: str, title: str, caption: str, data: dict) -> Figure:
        return _save(fig, out, name, title, caption, data)

    return scaling_plot.draw(found, _canvas, _legend, save, PALETTE)


def make_figures(
    store: Any,
    run_id: int,
    out_dir: Path,
    *,
    baseline: str | None = None,
    formats: tuple[str, ...] = ("png", "svg"),
    only: tuple[str, ...] | None = None,
    trials: list | None = None,
    rows: list | None = None,
    indexed: Any = None,
) -> list[Figure]:
    """Draw every figure the run has data for into out_dir; return those made, in FIGURE_NAMES,
    their files numbered 01, 02, ... without gaps.

    `only` restricts the figures drawn (names from FIGURE_NAMES); `formats` the files
    written; `trials`/`rows` are the run's trials and measurements when the caller has
    them loaded already (then `store` is not read); `indexed`: index_rows(trials, rows), for
    a caller that draws figures one at a time and would otherwise index the rows each time."""
    import matplotlib

    unknown = set(only or ()) - set(FIGURE_NAMES)
    if unknown:
        raise ValueError(f"unknown figures {sorted(unknown)}; known: {', '.join(FIGURE_NAMES)}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    run = indexed or _Run(
        store.trials(run_id) if trials is None else trials, store.measurements(run_id) if rows is None else rows
    )
    if store is not None and run.machine is None:
        run.machine = machine_words(store.run(run_id).environment)
    drawers = _drawers(run, Target(out_dir, tuple(formats), run), baseline)
    made: list[Figure | None] = []
    style = {"font.size": 9, "svg.hashsalt": "dlbench", "svg.fonttype": "none"}
    with matplotlib.rc_context(style):
        for name in FIGURE_NAMES:
            if only is None or name in only:
                made.append(drawers[name]())
    return _numbered([f for f in made if f is not None])


def _numbered(figures: list[Figure]) -> list[Figure]:
    """Files renamed 01, 02, 03, ... in drawing order, with no gap where a figure had no data.
    Each target name carries a different figure's slug, so no rename overwrites another's file."""
    out = []
    for number, f in enumerate(figures, start=1):
        stem = file_stem(f.name, number)
        paths = []
        for path in (f.png, f.svg):
            if path is not None and path.stem != stem:
                path = path.replace(path.with_name(stem + path.suffix))
            paths.append(path)
        out.append(replace(f, png=paths[0], svg=paths[1]))
    return out
