"""Several machines side by side: one column group per machine, nothing pooled.

Runs taken on different machines (each its own database, or runs of one database)
are laid out as the papers do (seed 000's Table I: CPU, GPU, M1 columns): one row per
case, matched across machines on every factor but those a machine decides (threads,
which follow its cores), and for each machine the median, the IQR and n of its own
repeats, then the fastest framework of each comparison set on that machine. Each
machine's fingerprint heads the section (with each framework's distribution and
version: tensorflow-cpu 2.21.0, not "tensorflow"). Medians of two machines are never combined
into one statistic; they are only set side by side.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dlbench.env import framework_software, machine_label
from dlbench.report.render import Preface, TableData

# Factors a machine decides rather than the experiment: left out of the match.
MACHINE_FACTORS = ("threads",)
METRICS = (("train", "time", "training time (s)"), ("infer", "time", "inference time per pass (s)"))


@dataclass
class MachineRun:
    run_id: int
    source: str  # the database it came from
    fingerprint: dict[str, Any]
    summary: Any  # dlbench.results.Results.summary(run_id)


def _labels(machines: list[MachineRun]) -> list[str]:
    labels = []
    for m in machines:
        label = machine_label(m.fingerprint)
        if label in labels:
            label += f" ({m.source} run {m.run_id})"
        labels.append(label)
    return labels


def _match_columns(frame: Any) -> list[str]:
    from dlbench.results import FACTOR_COLUMNS, OPTION_PREFIX

    return [
        c for c in frame.columns if (c in FACTOR_COLUMNS and c not in MACHINE_FACTORS) or c.startswith(OPTION_PREFIX)
    ]


def _case_text(row: dict[str, Any], framework: bool = True) -> str:
    from dlbench.cases import case_label

    return case_label(row, framework=framework)


def _keys(data: Any, columns: list[str]) -> list[str]:
    """One text key per row from `columns` (missing values included, as text)."""
    return ["|".join(str(v) for v in row) for row in data[columns].itertuples(index=False)]


def build(machines: list[MachineRun]) -> Preface:
    """The side-by-side section for `machines` (two or more)."""
    import pandas as pd

    labels = _labels(machines)
    lines = [f"{len(machines)} machines, one column group each; no statistic combines two machines."]
    for label, m in zip(labels, machines):
        fp = m.fingerprint
        software = framework_software(fp)
        lines.append(
            f"{label}: run {m.run_id} of {m.source}; {fp.get('logical_cores', '?')} logical cores, "
            f"{(fp.get('memory_total_bytes') or 0) / 2**30:.0f} GiB, {fp.get('os', '?')}"
            + (f"; {software}" if software else "")
        )
    tables = []
    for phase, metric, words in METRICS:
        frames = []
        for label, m in zip(labels, machines):
            f = m.summary
            f = f[(f["phase"] == phase) & (f["metric"] == metric)].copy()
            if not len(f):
                continue
            f["machine"] = label
            frames.append(f)
        if not frames:
            continue
        data = pd.concat(frames, ignore_index=True)
        keys = _match_columns(data)
        data["_key"] = _keys(data, keys)
        t = TableData(
            f"{words}: median [Q1, Q3] (n) per machine",
            ["case", *labels],
            align=["left"] + ["right"] * len(labels),
        )
        for _, group in data.groupby("_key", sort=True):
            first = group.iloc[0]
            cells = []
            for label in labels:
                mine = group[group["machine"] == label]
                if not len(mine):
                    cells.append("—")
                    continue
                r = mine.iloc[0]
                cells.append(f"{r['median']:.4g} [{r['q1']:.4g}, {r['q3']:.4g}] ({int(r['n'])})")
            t.add_row(_case_text(first.to_dict()), *cells)
        t.caption = "— : the case did not run (or did not end ok) on that machine."
        tables.append(t)
        tables.append(_fastest(data, labels, keys, words))
    return Preface(title="Machines side by side", lines=lines, tables=tables)


def _fastest(data: Any, labels: list[str], keys: list[str], words: str) -> TableData:
    """Per comparison set (every factor but framework and variant) and machine: the framework
    with the lowest median, and how much slower the slowest is than it."""
    sets = [k for k in keys if k not in ("framework", "variant")]
    data = data.copy()
    data["_set"] = _keys(data, sets)
    t = TableData(f"{words}: fastest framework per machine", ["comparison set", *labels])
    for _, group in data.groupby("_set", sort=True):
        first = group.iloc[0].to_dict()
        name = _case_text(first, framework=False)
        cells = []
        for label in labels:
            mine = group[group["machine"] == label]
            if len(mine) < 2:
                cells.append("—" if not len(mine) else f"{mine.iloc[0]['framework']} only")
                continue
            best = mine.loc[mine["median"].idxmin()]
            worst = mine.loc[mine["median"].idxmax()]
            spread = worst["median"] / best["median"]
            cells.append(f"{best['framework']}:{best['variant']} ({spread:.2f}x faster than the slowest)")
        t.add_row(name, *cells)
    t.caption = "Medians of each machine's own repeats; see each run's report for the CI and verdict on that machine."
    return t
