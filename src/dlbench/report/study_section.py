"""A study's report section, "The paper vs this run", as a Preface every format renders.

It leads with what the reader must know first (a substituted dataset, the scale),
then one line that counts where the paper's framework ratios and ours agree, then
tables: the paper's machines and this run's, every number of the paper beside ours
(one column per machine and setting, never pooled), the torch / TensorFlow ratios
side by side with our 95% CI and verdict, and the paper's claims checked. Words come
from the numbers: a ratio whose CI spans 1 is "undecided here", not agreement.
"""

from __future__ import annotations

from typing import Any

from dlbench.env import framework_software
from dlbench.report.render import Preface, TableData
from dlbench.report.words import check_words
from dlbench.studies.facts import Facts
from dlbench.studies.paper_vs_run import Comparison, Rule, Value, direction
from dlbench.studies.spec import Study

NAMES = {
    "torch": "PyTorch",
    "tensorflow": "TensorFlow",
    "jax": "JAX",
    "keras": "Keras",
    "both": "both",
    "none": "neither",
}


def _num(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:.1f}"
    return f"{value:.3g}"


def _where(where: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in where.items()) or "—"


def _ours(v: Value) -> str:
    if v.value is None:
        return f"— ({v.why})"
    return _num(v.value) + (f" (n={v.n})" if v.n else "")


def _columns(comparison: Comparison) -> list[tuple[str, str]]:
    return [(m.label, s) for m in comparison.machines for s in comparison.settings]


def _heading(machine: str, setting: str, comparison: Comparison) -> str:
    parts = []
    if len(comparison.machines) > 1:
        parts.append(machine)
    if len(comparison.settings) > 1 or not parts:
        parts.append(setting)
    return "ours: " + ", ".join(parts)


def _ratio_cell(ours: dict[str, Any], verdict: str) -> str:
    if "ratio" not in ours:
        return f"— ({ours.get('why', 'not measured here')})"
    text = f"{ours['ratio']:.2f}"
    if ours.get("ci"):
        within = " within-process" if ours.get("independent") is False else ""
        text += f" [{within.strip() + ' ' if within else ''}{ours['ci'][0]:.2f}, {ours['ci'][1]:.2f}]"
    return f"{text}: {verdict}"


def _opening(study: Study, facts: Facts, comparison: Comparison, scale: str) -> str:
    """The first line: the scale, what was substituted, and whether this is a reproduction.
    Only the paper's scale on the paper's kind of hardware reproduces; anything else
    re-runs the design."""
    devices = sorted({str(d) for m in comparison.machines if len(m.summary) for d in set(m.summary["device"])})
    paper_devices = {m.device for m in facts.machines}
    reproduces = scale == "paper" and bool(paper_devices & set(devices))
    verb = "Reproduces" if reproduces else "Re-runs the design of"
    where = f" on {', '.join(devices)}" if devices else ""
    kinds = ", ".join(sorted(paper_devices))
    substituted = f" {study.lead(scale)}" if study.lead(scale) else ""
    return (
        f'Scale {scale}{where}.{substituted} {verb} {facts.cite()}, "{facts.title}" (seed {facts.seed}; the '
        f"paper's machines: {kinds}): study {study.name} v{study.version}, {study.title}."
    )


def rule_of(size_factor: float, comparison: Comparison) -> Rule:
    """The agreement rule with the designs the comparison's runs ran, in words."""
    designs = tuple(dict.fromkeys(check_words(d, unit) for d, unit in comparison.designs))
    return Rule(size_factor, comparison.band, comparison.alpha, designs)


def build(study: Study, facts: Facts, comparison: Comparison, scale: str, changes: tuple[str, ...]) -> Preface:
    """The section for `comparison` (dlbench.studies.paper_vs_run.compare) of a run at `scale`."""
    columns = _columns(comparison)
    rule = rule_of(study.size_factor, comparison)
    lines = [_opening(study, facts, comparison, scale)]
    if scale != "paper":
        lines.append(f"Scale {scale} changes the paper's design: " + "; ".join(changes) + ".")
    lines.append(rule.words())
    verdicts = [r.verdicts[c] for r in comparison.ratios for c in columns]
    counted = [v for v in verdicts if not v.startswith("not measured")]
    if counted:
        agree = sum(v.startswith("agrees") for v in counted)
        differ = sum(v.startswith("differs") for v in counted)
        sized = sum(v == "agrees in direction and size" for v in counted)
        lines.append(
            f"Framework ratios (PyTorch / TensorFlow) that the paper reports and this run measured: "
            f"{len(counted)}; agree in direction in {agree} (in size too in {sized}), differ in {differ}, "
            f"undecided here in {len(counted) - agree - differ}."
        )
    elif facts.facts:
        lines.append("None of the paper's PyTorch / TensorFlow pairs could be compared with this run (reasons below).")
    else:
        lines.append(
            "The paper as available to dlbench prints no numbers (see the facts file): only its claims are checked."
        )
    claims = [v for row in comparison.claims for v in row.ours.values()]
    agreed = sum(v.startswith("agrees") for v in claims)
    differed = sum(v.startswith("differs") for v in claims)
    if claims:
        unmeasured = sum(v.startswith("not measured") for v in claims)
        lines.append(
            f"The paper's claims checked against this run: {agreed} agree in direction, {differed} differ, "
            f"{len(claims) - agreed - differed - unmeasured} undecided here, {unmeasured} not measured here."
        )
    lines += list(study.reading)
    lines.append(
        "A 2-core CPU cannot match a paper's absolute times; the ratio between frameworks, and its direction, "
        "is what can agree or not."
    )

    tables = [_machines(facts, comparison)]
    every = [_facts_table(facts, comparison, columns)] if comparison.facts else []
    if comparison.ratios:
        tables.append(_ratio_table(comparison, columns))
    decisions = _decisions(comparison, columns)
    if decisions is not None:
        tables.append(decisions)
    if comparison.claims:
        tables.append(_claims_table(comparison, columns, rule))
    examined = _examined(comparison, columns)
    if examined is not None:
        tables.append(examined)
    if study.choices or study.cannot:
        t = TableData("Where the paper leaves a choice open, and what cannot be reproduced", ["", "what"])
        for c in study.choices:
            t.add_row("choice", c)
        for c in study.cannot:
            t.add_row("cannot", c)
        tables.append(t)
    if every:
        lines.append(
            f"Every one of the paper's {len(comparison.facts)} numbers beside ours: the table "
            "'Every number the paper reports' (written formats, and the console with --details)."
        )
    return Preface(
        title=f"The paper vs this run ({facts.cite()}, seed {facts.seed})",
        lines=lines,
        tables=tables + every,
        console_tables=len(tables),
    )


def _machines(facts: Facts, comparison: Comparison) -> TableData:
    t = TableData("Machines: the paper's and this run's", ["", "machine", "hardware", "software"])
    for m in facts.machines:
        t.add_row("paper", m.label, m.hardware, m.software)
    for mine in comparison.machines:
        fp = mine.fingerprint
        software = framework_software(fp, ("torch", "tensorflow", "jax"))
        t.add_row(mine.runs, mine.label, f"{fp.get('logical_cores', '?')} logical cores", software)
    return t


def _facts_table(facts: Facts, comparison: Comparison, columns: list[tuple[str, str]]) -> TableData:
    t = TableData(
        "Every number the paper reports, beside this run's",
        [
            "ref",
            "paper machine",
            "framework",
            "model",
            "quantity",
            "where",
            "paper",
            *(_heading(m, s, comparison) for m, s in columns),
        ],
        align=["left"] * 6 + ["right"] * (1 + len(columns)),
    )
    for row in comparison.facts:
        f = row.fact
        paper = f"{f.paper_number()} {f.unit}" + (" (read from the figure)" if f.approx else "")
        t.add_row(
            f.ref,
            facts.machine_label(f.machine),
            NAMES.get(f.framework, f.framework),
            f.model,
            f"{f.quantity} ({f.statistic})",
            _where(f.where),
            paper,
            *(_ours(row.ours[c]) for c in columns),
        )
    t.caption = (
        "ours: the same statistic over this run's measured repeats, in the paper's unit; "
        "'value' and 'best' facts are set beside our median and minimum."
    )
    return t


def _ratio_table(comparison: Comparison, columns: list[tuple[str, str]]) -> TableData:
    t = TableData(
        "PyTorch / TensorFlow: the paper's ratio and ours",
        ["ref", "model", "quantity", "where", "paper", *(_heading(m, s, comparison) for m, s in columns)],
        align=["left"] * 4 + ["right"] * (1 + len(columns)),
    )
    for r in comparison.ratios:
        better = NAMES[direction(r.paper_ratio, r.lower_is_better, comparison.band)]
        t.add_row(
            r.ref,
            r.model,
            f"{r.quantity} ({r.statistic})",
            _where(r.where),
            f"{r.paper_ratio:.2f} ({r.paper_machine}; {better} better)",
            *(_ratio_cell(r.ours[c], r.verdicts[c]) for c in columns),
        )
    t.caption = (
        "ratio < 1: PyTorch smaller (faster for times). Ours: the ratio of medians; for times and accuracy "
        "with the 95% CI and verdict of the run's own engine (within-process CI and no verdict where a "
        "framework ran in one process); other quantities: medians only, never agreement."
    )
    return t


def _claims_table(comparison: Comparison, columns: list[tuple[str, str]], rule: Rule) -> TableData:
    t = TableData(
        "The paper's claims, checked",
        ["ref", "claim", "better (paper)", *(_heading(m, s, comparison) for m, s in columns)],
        notes=[rule.words()],
    )
    for row in comparison.claims:
        c = row.claim
        t.add_row(c.ref, c.text, NAMES.get(c.better, c.better), *(row.ours[col] for col in columns))
    return t


def _examined(comparison: Comparison, columns: list[tuple[str, str]]) -> TableData | None:
    """Every difference from the paper, and every undecided ratio far from the paper's, with
    what explains it: a stored `dlbench explain` run's finding, or what was not examined
    and the command that would examine it (paper_vs_run.examination)."""
    t = TableData("What explains each difference", ["ref", "what", "column", "verdict", "what explains it"])
    for r in comparison.ratios:
        for c in columns:
            if r.explains.get(c):
                what = f"{r.model} {r.quantity.replace('_', ' ')} ({r.statistic}), ratio {r.paper_ratio:.2f}"
                t.add_row(r.ref, what, _heading(*c, comparison), r.verdicts[c], r.explains[c])
    for row in comparison.claims:
        for c in columns:
            if row.explains.get(c):
                t.add_row(row.claim.ref, row.claim.text, _heading(*c, comparison), row.ours[c], row.explains[c])
    if not t.rows:
        return None
    t.caption = (
        "A verdict that differs from the paper, or an undecided ratio more than 10% from the paper's, is owed "
        "an explanation: `dlbench explain` reruns the slower case with each recorded setting toggled, in "
        "interleaved blocks, and profiles both; its runs are stored in the study's database."
    )
    return t


def _decision(p: float | None, alpha: float) -> str:
    if p is None:
        return "—"
    return "H0 rejected" if p < alpha else "H0 not rejected"


def _decisions(comparison: Comparison, columns: list[tuple[str, str]]) -> TableData | None:
    """The paper's paired tests laid out as its hypotheses: H0 (no difference between the
    frameworks) rejected or not at the report's alpha (5% unless --alpha), the paper's p beside ours."""
    rows = [r for r in comparison.facts if r.fact.quantity == "p_value" and r.fact.framework == "both"]
    if not rows:
        return None
    t = TableData(
        f"Hypotheses: H0 = no difference between PyTorch and TensorFlow (paired Wilcoxon, alpha {comparison.alpha:g})",
        [
            "variable",
            "phase",
            "paper p",
            "paper",
            *(f"{_heading(m, s, comparison)}: p" for m, s in columns),
            *(_heading(m, s, comparison) for m, s in columns),
        ],
        align=["left", "left", "right", "left"] + ["right"] * len(columns) + ["left"] * len(columns),
    )
    for row in rows:
        f = row.fact
        ours = [row.ours[c] for c in columns]
        t.add_row(
            f.where.get("variable", "?"),
            f.where.get("phase", "?"),
            f.paper_number(),
            _decision(f.value, comparison.alpha),
            *(f"{v.value:.3g} (n={v.n})" if v.value is not None else f"— ({v.why})" for v in ours),
            *(_decision(v.value, comparison.alpha) for v in ours),
        )
    t.caption = (
        "H1: the medians differ. Ours: the exact paired Wilcoxon test over trial medians paired by block (one "
        "value per process; never repeats paired by index). The paper's normality tests (Kolmogorov-Smirnov) are "
        "in the table of every number, ours beside them by Lilliefors' test (KS with the mean and sd estimated)."
    )
    return t
