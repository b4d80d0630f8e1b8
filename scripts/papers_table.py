"""The table that opens docs/papers.md: every claim of the five seed papers beside dlbench's
number and verdict, built as data from the stored study databases.

scripts/study_docs.py calls `build` with one database per study (its `databases()`: the
largest scale stored under docs/studies/data/) and splices `render` into docs/papers.md
between ``<!-- dlbench:generated papers-table begin -->`` and ``... end -->``; its
``--check`` compares the page with what this module renders, and tests/test_papers_table.py
checks rows against the databases. Nothing here parses a report: each row comes from the
comparison objects of dlbench.studies.paper_vs_run (`compare`, the same call `dlbench study
report` makes through dlbench.service.studies.paper_section), read from each database with
the library, at the report's default band and alpha.

A row is one of the paper's framework ratios (PyTorch / TensorFlow from two numbers the
paper printed, one row per ratio) or one of its stated claims (which framework is better,
without a number). Where a run has several settings (a study's matched design beside the
paper's cited code) or machines, a row's cells hold one line per setting, and the counts
under the table count one verdict per claim and setting.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The verdict's words are paper_vs_run's own (OUTCOMES); a verdict that starts with none of
# them stops the generator, so a change of wording there shows up here as an error, not a
# silently miscounted table.
NOT_EXAMINED = "not examined yet"
SHORT = 90  # characters of a claim's own words in its cell
NAMES = {"torch": "PyTorch", "tensorflow": "TensorFlow", "keras": "Keras", "jax": "JAX", "none": "neither"}


class TableError(Exception):
    """A database or a verdict is not laid out as this module expects."""


@dataclass(frozen=True)
class Cell:
    """One claim on one machine and setting: dlbench's number, the verdict, what explains it."""

    column: str  # "setting" or "machine, setting"; "" where the run has one column
    ours: str
    verdict: str  # one of paper_vs_run.OUTCOMES
    explains: str


@dataclass(frozen=True)
class Row:
    kind: str  # "ratio" (a PyTorch / TensorFlow ratio of two printed numbers) or "claim" (a stated one)
    claim: str
    paper: str
    cells: tuple[Cell, ...]
    ratio: float | None = None  # the paper's ratio (kind "ratio")
    ours_ratios: tuple[float | None, ...] = ()  # our ratio per cell (kind "ratio"), None where not measured


@dataclass
class Paper:
    study: str
    seed: str
    cite: str
    database: str  # relative to the repository root, as committed (.db.xz)
    scale: str
    run_id: int  # the study's latest run in the database
    runs: str  # "run 1", or "runs 1+2" for a measurement made in parts (service.studies.parts)
    machine: str
    devices: tuple[str, ...]
    size_factor: float
    rows: list[Row] = field(default_factory=list)

    def counts(self, outcomes: tuple[str, ...]) -> dict[str, int]:
        out = dict.fromkeys(outcomes, 0)
        for row in self.rows:
            for cell in row.cells:
                out[cell.verdict] += 1
        return out


def split_verdict(text: str, outcomes: tuple[str, ...]) -> tuple[str, list[str]]:
    """A verdict as paper_vs_run words it -> (its outcome, the notes after it): "undecided
    here (one process per framework: a ratio, no verdict) (judged on mlp only)" ->
    ("undecided here", ["one process per framework: a ratio, no verdict", "judged on mlp only"]);
    "not measured here: <why>" -> ("not measured here", ["<why>"])."""
    for outcome in sorted(outcomes, key=len, reverse=True):
        if text == outcome or text.startswith((outcome + " ", outcome + ":")):
            return outcome, _notes(text[len(outcome) :].lstrip(":").strip())
    raise TableError(f"verdict {text!r} starts with none of paper_vs_run.OUTCOMES {outcomes}")


def _notes(rest: str) -> list[str]:
    """'(a) (b (c))' -> ['a', 'b (c)']; '(a); b' -> ['a', 'b'] (a note the verdict adds after
    its groups, such as what this machine found instead); other text is one note."""
    if not rest:
        return []
    notes, depth, start = [], 0, 0
    for i, ch in enumerate(rest):
        if depth == 0 and ch == ";" and notes:
            return [*notes, rest[i + 1 :].strip()]
        if ch == "(":
            if depth == 0:
                start = i + 1
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                notes.append(rest[start:i].strip())
            elif depth < 0:
                return [rest]
        elif depth == 0 and not ch.isspace():
            return [rest]
    return notes if depth == 0 else [rest]


def shorten(text: str, width: int = SHORT) -> str:
    """The claim as the paper words it, cut at a word boundary to about `width` characters."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    cut = text[:width].rsplit(" ", 1)[0].rstrip(",;:.")
    return cut + " …"


def _num(value: float) -> str:
    return f"{value:.2f}"


def ratio_text(ours: dict[str, Any]) -> str:
    """Our ratio with its 95% CI as the study report prints it (within-process: one process
    per framework, a CI over its repeats and no verdict)."""
    text = _num(ours["ratio"])
    ci = ours.get("ci")
    if not ci:
        return text + " (medians only, no CI)"
    within = "within-process " if ours.get("independent") is False else ""
    return f"{text} [{within}{_num(ci[0])}, {_num(ci[1])}]"


def _explains(verdict: str, notes: list[str], examined: str) -> str:
    """What explains a difference: what the comparison examined (a stored explain run's
    finding, or the command that would examine it: paper_vs_run.examination), then the
    verdict's own notes; never an invented cause."""
    if verdict == "not measured here":
        return "—"  # the reason stands in the number's cell
    said = [examined] if examined else []
    if verdict == "differs" and not said:
        said = [NOT_EXAMINED]
    return "; ".join([*said, *notes]) or "—"


def _words(quantity: str) -> str:
    return quantity.replace("_", " ")


def _paper_pair(facts: Any, r: Any, aliases: dict[str, str]) -> str:
    """The two printed numbers behind a paper ratio: "51.29 s / 8.62 s = 5.95"."""
    found: dict[str, Any] = {}
    for f in facts.facts:
        if (
            f.ref == r.ref
            and f.model == r.model
            and f.quantity == r.quantity
            and f.statistic == r.statistic
            and dict(f.where) == r.where
            and facts.machine_label(f.machine) == r.paper_machine
        ):
            found[aliases.get(f.framework, f.framework)] = f
    if set(found) != {"torch", "tensorflow"}:
        return _num(r.paper_ratio)
    t, tf = found["torch"], found["tensorflow"]

    def one(f: Any) -> str:
        unit = "" if f.unit in ("", "not stated") else f.unit
        sep = "" if unit in ("", "%") else " "
        return f"{f.paper_number()}{sep}{unit}" + (" (read from a figure)" if f.approx else "")

    unstated = " (unit not stated)" if t.unit == "not stated" else ""
    return f"{one(t)} / {one(tf)}{unstated} = {_num(r.paper_ratio)}"


def _claim_ratios(pvr: Any, machine: Any, study: Any, claim: Any, setting: Any) -> list[tuple[str, dict[str, Any]]]:
    """Our ratio per model a claim is judged on, as paper_vs_run._claim_verdict computes it."""
    lower = pvr.MEASURED[claim.quantity][2]
    if claim.model == "all":
        models = sorted(str(m) for m in set(machine.summary["model"])) if len(machine.summary) else []
    else:
        models = [study.fact_models.get(claim.model, claim.model)]
    out = []
    for model in models:
        ratio = pvr.RatioRow(claim.ref, model, claim.quantity, "median", claim.where, "", 1.0, lower)
        out.append((model, pvr._ratio_ours(machine, study, ratio, setting)))
    return out


def build_paper(
    name: str, database: str, db_file: Path, band: float | None = None, alpha: float | None = None
) -> Paper:
    """One study's rows from `db_file` (a decompressed copy of `database`): its latest study run."""
    from dlbench import studies
    from dlbench.analysis.criteria import ALPHA, BAND
    from dlbench.env import machine_label
    from dlbench.service import studies as studies_service
    from dlbench.store import Store
    from dlbench.studies import paper_vs_run as pvr

    band = BAND if band is None else band
    alpha = ALPHA if alpha is None else alpha
    study, facts = studies.load(name), studies.load_facts(name)
    store = Store(db_file, readonly=True)
    runs = studies_service.runs_of(store, study)
    if not runs:
        raise TableError(f"{database}: no run of study {name}")
    run_id = max(int(r["id"]) for r in runs)
    parts = studies_service.parts(store, study, run_id)  # with the earlier runs it completes
    comparison = studies_service.comparison(study, facts, [(store, rid) for rid in parts], band, alpha)
    machine = comparison.machines[0]
    summary = machine.summary
    devices = tuple(sorted(str(d) for d in set(summary["device"]))) if len(summary) else ()
    paper = Paper(
        study=name,
        seed=facts.seed,
        cite=facts.cite(),
        database=database,
        scale=str(store.run(run_id)["name"]).rsplit(" ", 1)[-1],
        run_id=run_id,
        runs=machine.runs,
        machine=machine_label(machine.fingerprint),
        devices=devices,
        size_factor=study.size_factor,
    )
    columns = [(m.label, s) for m in comparison.machines for s in comparison.settings]
    many_machines = len(comparison.machines) > 1

    def heading(m: str, s: str) -> str:
        if len(columns) == 1:
            return ""
        return f"{m}, {s}" if many_machines else s

    settings = {s.name: s for s in study.settings}
    outcomes = tuple(pvr.OUTCOMES)

    for r in comparison.ratios:
        cells, ours_ratios = [], []
        for m, s in columns:
            ours = r.ours[(m, s)]
            verdict, notes = split_verdict(r.verdicts[(m, s)], outcomes)
            if verdict == "not measured here":
                why = "; ".join(notes) or ours.get("why") or "not measured here"
                number = f"— ({why})"
            else:
                number = ratio_text(ours)
            ours_ratios.append(ours.get("ratio") if verdict != "not measured here" else None)
            cells.append(Cell(heading(m, s), number, verdict, _explains(verdict, notes, r.explains[(m, s)])))
        better = NAMES[pvr.direction(r.paper_ratio, r.lower_is_better, comparison.band)]
        where = "".join(f", {k} {v}" for k, v in r.where.items())
        paper.rows.append(
            Row(
                kind="ratio",
                claim=(
                    f"{r.ref}, {r.paper_machine}: {r.model} {_words(r.quantity)} ({r.statistic}{where}), "
                    f"PyTorch / TensorFlow; {better} better"
                ),
                paper=_paper_pair(facts, r, pvr.ALIASES),
                cells=tuple(cells),
                ratio=r.paper_ratio,
                ours_ratios=tuple(ours_ratios),
            )
        )

    machines = {m.label: m for m in comparison.machines}
    for c in comparison.claims:
        cells = []
        for m, s in columns:
            verdict, notes = split_verdict(c.ours[(m, s)], outcomes)
            setting = settings.get(s) or pvr.Setting(s, {})
            if verdict == "not measured here":
                why = notes
                if not why and c.claim.quantity in pvr.MEASURED:
                    why = [o.get("why", "") for _, o in _claim_ratios(pvr, machines[m], study, c.claim, setting)]
                    why = [w for w in why if w][:1]
                number = f"— ({'; '.join(why) or 'not measured here'})"
            else:
                found = [
                    (model, o) for model, o in _claim_ratios(pvr, machines[m], study, c.claim, setting) if "ratio" in o
                ]
                if c.claim.model == "all" or len(found) > 1:
                    number = "; ".join(f"{model} {ratio_text(o)}" for model, o in found)
                else:
                    number = ratio_text(found[0][1])
            cells.append(Cell(heading(m, s), number, verdict, _explains(verdict, notes, c.explains[(m, s)])))
        claim = c.claim
        scope = "all models" if claim.model == "all" else claim.model
        on = "" if claim.machine == "all" else f", {facts.machine_label(claim.machine)}"
        trend = f", trend over {_words(claim.trend)}" if claim.trend else ""
        what = (
            f"no difference in {_words(claim.quantity)}"
            if claim.better == "none"
            else f"{NAMES.get(claim.better, claim.better)} better on {_words(claim.quantity)}"
        )
        paper.rows.append(
            Row(
                kind="claim",
                claim=f'{claim.ref}: {what} ({scope}{on}{trend}): "{shorten(claim.text)}"',
                paper="— (stated without a number)",
                cells=tuple(cells),
            )
        )
    return paper


def build(databases: dict[str, tuple[str, Path]]) -> list[Paper]:
    """Every study's rows, in seed order: study -> (committed database path, decompressed copy)."""
    papers = [build_paper(name, committed, copy) for name, (committed, copy) in databases.items()]
    return sorted(papers, key=lambda p: (p.seed, p.study))


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _lines(row: Row, attribute: str) -> str:
    parts = [
        (f"{c.column}: " if c.column else "") + getattr(c, attribute)
        for c in row.cells
    ]  # fmt: skip
    return "<br>".join(_cell(p) for p in parts)


def _rule_words(papers: list[Paper]) -> str:
    from dlbench.analysis.criteria import ALPHA, BAND
    from dlbench.studies.paper_vs_run import Rule

    factors = sorted({p.size_factor for p in papers})
    words = Rule(factors[0], BAND, ALPHA).words()
    if len(factors) > 1:
        words += " Size factors per study: " + ", ".join(f"{p.study} {p.size_factor:g}" for p in papers) + "."
    return words


def render(papers: list[Paper]) -> str:
    """The generated section: a lead saying where the numbers come from, the table, the counts."""
    from dlbench.studies.paper_vs_run import OUTCOMES

    outcomes = tuple(OUTCOMES)

    def machine(p: Paper) -> str:
        return p.machine + (f" ({', '.join(p.devices)})" if p.devices else "")

    one_machine = len({machine(p) for p in papers}) == 1
    sources = "; ".join(
        f"{p.study}: `{p.database}` ({p.scale} scale, {p.runs}" + ("" if one_machine else f", on {machine(p)}") + ")"
        for p in papers
    )
    if one_machine and papers:
        sources += f"; every run on {machine(papers[0])}"
    lead = (
        "Every claim of the five seed papers beside what dlbench measured, generated by "
        "`scripts/study_docs.py` from the study databases committed in `docs/studies/data/` (the largest "
        f"scale stored for each study): {sources}. A row is one of a paper's PyTorch / TensorFlow ratios "
        "(two numbers the paper printed) or one of its stated claims (which framework is better, no number); "
        "dlbench's number is the PyTorch / TensorFlow ratio of medians on the same quantity, with its 95% CI "
        "(within-process where each framework ran in one process: a ratio, no verdict); a claim over several "
        "models gives one ratio per model. "
        + _rule_words(papers)
        + " What explains a difference: for a verdict that differs, or an undecided ratio more than 10% from "
        "the paper's, the finding of the `dlbench explain` run stored with the study (the share of the gap each "
        "toggled setting closes, and where the step time goes), or 'not examined yet' with the command that "
        "would examine it, or why explain cannot (it attributes training time only); a paper's GPU or M1 number "
        "on this CPU run is "
        "'not measured here', with the reason in dlbench's column."
    )
    out = [lead, ""]
    out.append("| paper | claim | paper's number | dlbench's number (95% CI) | verdict | what explains a difference |")
    out.append("| --- | --- | ---: | ---: | --- | --- |")
    for p in papers:
        link = f"{p.seed} [{p.study}](studies/{p.study}.md)"
        if not p.rows:
            out.append(f"| {link} | — (the facts file holds no number or claim of the paper) | — | — | — | — |")
        for row in p.rows:
            out.append(
                f"| {link} | {_cell(row.claim)} | {_cell(row.paper)} | {_lines(row, 'ours')} | "
                f"{_lines(row, 'verdict')} | {_lines(row, 'explains')} |"
            )
    out += ["", "Verdicts per paper (one per claim and setting):", ""]
    out.append("| paper | " + " | ".join(outcomes) + " | all |")
    out.append("| --- |" + " ---: |" * (len(outcomes) + 1))
    totals = dict.fromkeys(outcomes, 0)
    for p in papers:
        counts = p.counts(outcomes)
        for k, v in counts.items():
            totals[k] += v
        out.append(
            f"| {p.seed} [{p.study}](studies/{p.study}.md) | "
            + " | ".join(str(counts[o]) for o in outcomes)
            + f" | {sum(counts.values())} |"
        )
    out.append("| all | " + " | ".join(str(totals[o]) for o in outcomes) + f" | {sum(totals.values())} |")
    return "\n".join(out) + "\n"
