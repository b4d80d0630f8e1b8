"""docs/papers.md opens with one table of the five papers' claims beside dlbench's numbers,
generated from the stored study databases (scripts/papers_table.py, spliced by
scripts/study_docs.py; test_study_docs runs its --check, so a stale table fails there).
Here: the table's rows and counts are those of the stored runs, claim by claim."""

from __future__ import annotations

import importlib.util
import lzma
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "scripts"
PAGE = ROOT / "docs" / "papers.md"


def _load(name: str) -> ModuleType:
    # scripts/ is not a package: load by path (dataclasses look their module up by name).
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def germino(tmp_path_factory: pytest.TempPathFactory):
    """germino's rows from its stored database, and an open read-only store of that database."""
    from dlbench.store import Store

    database = _load("study_docs").databases()["germino"]
    copy = tmp_path_factory.mktemp("papers") / "germino.db"
    copy.write_bytes(lzma.decompress((ROOT / f"{database}.xz").read_bytes()))
    paper = _load("papers_table").build_paper("germino", f"{database}.xz", copy)
    return paper, Store(copy, readonly=True)


def test_the_page_opens_with_the_generated_table() -> None:
    lines = PAGE.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("# ")
    begin = lines.index("<!-- dlbench:generated papers-table begin -->")
    end = lines.index("<!-- dlbench:generated papers-table end -->")
    assert begin < end
    assert not any(line.startswith("## ") for line in lines[:begin]), "the table comes before any section"
    table = lines[begin:end]
    header = "| paper | claim | paper's number | dlbench's number (95% CI) | verdict | what explains a difference |"
    assert header in table
    for study in ("germino", "patel", "florencio", "sumanjali", "dai"):
        assert any(line.startswith("| 0") and f"[{study}](studies/{study}.md)" in line for line in table), study


def test_verdict_counts_are_those_of_paper_vs_run_compare(germino) -> None:
    """Counted apart from the script: the run as a Machine, compare, every ratio's and claim's verdict."""
    from dlbench import studies
    from dlbench.env import machine_label
    from dlbench.results import Results
    from dlbench.studies import paper_vs_run as pvr

    paper, store = germino
    study, facts = studies.load("germino"), studies.load_facts("germino")
    results = Results.of_store(store)
    run = paper.run_id
    fingerprint = store.run(run).environment
    machine = pvr.Machine(
        machine_label(fingerprint),
        run,
        results.summary(run),
        lambda a, b, metric: results.compare(a, b, metric=metric, run=run),
        fingerprint,
        results.measurements(run),
    )
    comparison = pvr.compare(study, facts, [machine])
    columns = [(machine.label, s) for s in comparison.settings]
    verdicts = [pvr.agreement(r.paper_ratio, r.ours[c], r.lower_is_better, study.size_factor, machine.band)
                for r in comparison.ratios for c in columns]  # fmt: skip
    verdicts += [row.ours[c] for row in comparison.claims for c in columns]
    by_length = sorted(pvr.OUTCOMES, key=len, reverse=True)
    expected = dict.fromkeys(pvr.OUTCOMES, 0)
    for v in verdicts:
        expected[next(o for o in by_length if v.startswith(o))] += 1
    assert paper.counts(tuple(pvr.OUTCOMES)) == expected
    assert len(paper.rows) == len(comparison.ratios) + len(comparison.claims)
    assert sum(expected.values()) == sum(len(r.cells) for r in paper.rows)


def test_a_ratio_row_is_the_stored_runs_ratio_and_the_papers_two_numbers(germino) -> None:
    from dlbench.results import Results

    paper, store = germino
    frame = Results.of_store(store).compare("torch", "tensorflow", metric="train.time", run=paper.run_id)
    stored = frame[(frame["model"] == "mlp") & (frame["init"] == "glorot-uniform")].iloc[0]
    (row,) = [r for r in paper.rows if r.claim.startswith("Table I, CPU: mlp train time (mean)")]
    assert row.kind == "ratio"
    # Table I: PyTorch 51.29 s, TensorFlow 8.62 s on the paper's CPU.
    assert row.paper == "51.29 s / 8.62 s = 5.95"
    assert row.ratio == pytest.approx(51.29 / 8.62)
    (cell,) = row.cells
    assert row.ours_ratios == (pytest.approx(float(stored["ratio_a_over_b"])),)
    assert cell.ours.startswith(f"{float(stored['ratio_a_over_b']):.2f} [")
    assert f"{float(stored['ci_low']):.2f}, {float(stored['ci_high']):.2f}]" in cell.ours
    if stored["verdict"] == "undecided":
        assert cell.verdict == "undecided here"
    # The same ratio from the paper's GPU is not judged by a CPU run: "—" with the reason.
    (gpu,) = [r for r in paper.rows if r.claim.startswith("Table I, GPU: mlp train time (mean)")]
    assert gpu.cells[0].verdict == "not measured here" and gpu.cells[0].ours.startswith("— (")
    assert gpu.ours_ratios == (None,)


def test_claim_rows_keep_the_comparisons_reason_and_invent_none(germino) -> None:
    papers_table = _load("papers_table")
    paper, _ = germino
    claims = [r for r in paper.rows if r.kind == "claim"]
    assert claims and all(r.paper == "— (stated without a number)" for r in claims)
    for row in claims:
        for cell in row.cells:
            if cell.verdict == "differs":
                assert cell.explains.startswith(("explain run ", papers_table.NOT_EXAMINED, "not attributed: "))
            if cell.verdict == "not measured here":
                assert cell.ours.startswith("— (") and cell.explains == "—"


def test_every_difference_names_its_explain_run_or_the_command_that_would_examine_it(germino) -> None:
    """A time verdict that differs from the paper names a `dlbench explain` run of this study
    run stored in the committed database; an undecided ratio far from the paper's names one
    or gives the exact command; a difference explain cannot attribute (accuracy) says so."""
    paper, store = germino
    owed = [
        (row, cell)
        for row in paper.rows
        for cell in row.cells
        if cell.verdict == "differs"
        or (
            cell.verdict == "undecided here"
            and row.kind == "ratio"
            and row.ratio
            and abs(row.ours_ratios[0] / row.ratio - 1) > 0.10
        )  # fmt: skip
    ]
    assert owed
    examined = 0
    for row, cell in owed:
        timed = "train time" in row.claim
        if not timed:
            assert cell.explains.startswith("not attributed: dlbench explain attributes training step time")
        elif cell.explains.startswith("explain run "):
            run_id = int(cell.explains.split("explain run ", 1)[1].split(":", 1)[0])
            assert store.explain(run_id)["from_run"] == paper.run_id
            examined += 1
        else:
            assert cell.verdict == "undecided here", (row.claim, cell.explains)  # every time that differs is examined
            assert cell.explains.startswith(
                f"not examined yet: dlbench explain {paper.run_id} --case torch --vs tensorflow --where model="
            )
    assert examined  # germino's simple NN: run 2 of its database


def test_split_verdict_takes_the_outcome_and_its_notes() -> None:
    from dlbench.studies.paper_vs_run import OUTCOMES

    split = _load("papers_table").split_verdict
    outcomes = tuple(OUTCOMES)
    assert split("agrees in direction and size", outcomes) == ("agrees in direction and size", [])
    assert split("agrees in direction (judged on mlp only)", outcomes) == (
        "agrees in direction",
        ["judged on mlp only"],
    )
    undecided = "undecided here (one process per framework: a ratio, no verdict) (judged on a (b) only)"
    assert split(undecided, outcomes) == (
        "undecided here",
        ["one process per framework: a ratio, no verdict", "judged on a (b) only"],
    )
    assert split("not measured here: the paper's claim is for its GPU (cuda)", outcomes) == (
        "not measured here",
        ["the paper's claim is for its GPU (cuda)"],
    )
    # What this machine found instead follows the groups after "; ": one note, no doubled parentheses.
    elsewhere = (
        "not measured here (the paper's ratio is from its GPU machine (cuda); this run: cpu); on this run's "
        "machine instead (another machine than the paper's, not counted as agreement): PyTorch better, decided"
    )
    assert split(elsewhere, outcomes) == (
        "not measured here",
        [
            "the paper's ratio is from its GPU machine (cuda); this run: cpu",
            "on this run's machine instead (another machine than the paper's, not counted as agreement): "
            "PyTorch better, decided",
        ],
    )
    with pytest.raises(_load("papers_table").TableError):
        split("agreed", outcomes)
