"""gate: parse the flags, call dlbench.service.gate, print each look and the decision."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from dlbench.cli import complete
from dlbench.cli.app import app
from dlbench.cli.common import (
    DB,
    NamedDatasetOpt,
    NamedModelOpt,
    console,
    err_console,
    fail,
)
from dlbench.cli.reporting import SCRIPT_FORMAT, check_script_format, write_json
from dlbench.service.gate import ALPHA, BAND, MAX_BLOCKS, MAX_MINUTES, METRICS, ratio_text

DECISION_WORDS = {
    "slower": "REGRESSION: slower beyond the band",
    "within": "no regression (within the band)",
    "continue": "undecided",
    "missing": "no values on one side",
}
UNDECIDED = ("pass", "fail")


@app.command()
def gate(
    baseline: Annotated[
        str,
        typer.Argument(
            help="Baseline run A: a run id in --db, FILE.db or FILE.db:RUN.", autocompletion=complete.run_ids
        ),
    ],
    candidate: Annotated[
        str, typer.Argument(help="Candidate run B, in the same forms.", autocompletion=complete.run_ids)
    ],
    max_blocks: Annotated[
        int,
        typer.Option(help="The most blocks each run adds before the gate stops undecided (the design's budget)."),
    ] = MAX_BLOCKS,
    max_minutes: Annotated[
        float,
        typer.Option(help="The most minutes the turns take; the round under way finishes first."),
    ] = MAX_MINUTES,
    band: Annotated[
        float,
        typer.Option(help="A slowdown within 1 + band is no regression (fraction)."),
    ] = BAND,
    alpha: Annotated[
        float,
        typer.Option(help="The chance that identical code fails the gate, over every look and comparison."),
    ] = ALPHA,
    metric: Annotated[
        str,
        typer.Option(
            help=f"Timed phases to gate, comma-separated: {', '.join(METRICS)} (those the runs measured).",
            autocompletion=complete.comma_list(lambda: METRICS),
        ),
    ] = ",".join(METRICS),
    undecided: Annotated[
        str,
        typer.Option(
            help="What a comparison the budget left undecided does to the exit status: pass or fail.",
            autocompletion=complete.one_of(lambda: UNDECIDED),
        ),
    ] = "pass",
    python: Annotated[
        list[str] | None,
        typer.Option(
            "--python",
            help="An interpreter you trust to run a run's workers (repeatable), as for dlbench extend.",
        ),
    ] = None,
    model: NamedModelOpt = None,
    dataset: NamedDatasetOpt = None,
    fmt: SCRIPT_FORMAT = "console",
    db: DB = Path("dlbench.db"),
) -> None:
    """The regression gate: A and B take turns, one block each at a time, and after every round a
    sequential test looks at each case's times; it stops at the first regression, when every time
    is decided within the band, or at the budget. Its false-positive rate over all looks is at most
    alpha (docs/ci.md states its power). Exit status: 1 on a regression (or an undecided comparison
    with --undecided fail); 3 when a case has no values on one side; 2 on bad input; 4 when
    another dlbench is executing a run."""
    from dlbench.cli.running import extend_targets, taking_turns
    from dlbench.service import ServiceError
    from dlbench.service import gate as gating

    check_script_format(fmt)
    # With --format json the document alone goes to standard output; each look to standard error.
    out = err_console if fmt == "json" else console
    if undecided not in UNDECIDED:
        fail(f"--undecided {undecided!r}: allowed: {', '.join(UNDECIDED)}")
    settings = gating.GateSettings(
        max_blocks, max_minutes, band, alpha, tuple(m.strip() for m in metric.split(",") if m.strip())
    )
    try:
        settings.check()
    except ServiceError as exc:
        fail(str(exc))
    a, b = extend_targets([baseline, candidate], python, model, dataset, db)
    try:
        design = gating.design(a, b, settings)
    except ServiceError as exc:
        fail(str(exc))
    out.print(
        f"gate: B ({candidate}, run {b.run_id}) against A ({baseline}, run {a.run_id}), in turns, up to "
        f"{max_blocks} blocks a run or {max_minutes:g} min; band {band:g}, alpha {alpha:g}",
        highlight=False,
        soft_wrap=True,
    )
    out.print(gating.level_words(design), highlight=False, soft_wrap=True)

    def on_look(result: Any) -> None:
        parts = [f"{g.metric} {ratio_text(g)} ({_short(g)})" for g in result.compared if g.look is not None]
        out.print(f"round {result.rounds}: " + "; ".join(parts), highlight=False, soft_wrap=True)

    with taking_turns([a, b], "finished trials are stored; dlbench gate A B goes on from them"):
        result = gating.run_gate(a, b, settings, on_look=on_look)
    status = gating.exit_status(result, undecided_fails=undecided == "fail")
    if fmt == "json":
        from dlbench.report.json_out import gate_document

        a_side = {"ref": baseline, "db": str(a.store.path), "run": a.run_id, "baseline": None}
        b_side = {"ref": candidate, "db": str(b.store.path), "run": b.run_id}
        write_json(gate_document(result, a_side, b_side, settings, undecided, status))
        raise typer.Exit(status)
    _print_result(result, baseline, candidate)
    raise typer.Exit(status)


def _short(g: Any) -> str:
    if g.look.decision == "slower":
        return f"slower, p {g.look.p_slower:.2g}"
    if g.look.decision == "within":
        return f"within, p {g.look.p_within:.2g}"
    return f"p slower {g.look.p_slower:.2g}, within {g.look.p_within:.2g}"


def _print_result(result: Any, baseline: str, candidate: str) -> None:
    from dlbench.cases import case_label

    console.print(
        f"stopped after {result.rounds} block{'s' if result.rounds != 1 else ''} a run "
        f"({result.minutes:.1f} min): {result.stopped}",
        highlight=False,
        soft_wrap=True,
    )
    for g in result.compared:
        pairs = "no pairs" if g.look is None else f"{g.look.pairs} pairs"
        busy = f", {g.busy_pairs} busy pairs left out" if g.busy_pairs else ""
        console.print(
            f"  {case_label(g.case)} {g.metric}: B/A {ratio_text(g)} ({pairs}{busy}): {DECISION_WORDS[g.decision]}",
            highlight=False,
            soft_wrap=True,
        )
    if result.missing and not result.regression:
        err_console.print(
            f"error: {len(result.missing)} of {len(result.compared)} comparisons have no values on one side (every "
            "trial of that case failed or timed out there): nothing was compared, and the gate does not pass on no "
            "data. Exit 3.",
            highlight=False,
            soft_wrap=True,
        )
    if result.regression:
        console.print(f"the gate fails: {candidate} is slower than {baseline} beyond the band", highlight=False)
    elif result.undecided:
        console.print(
            f"{len(result.undecided)} comparison(s) undecided at the budget: not a measured regression "
            "(more blocks, or a less noisy machine, would decide them)",
            highlight=False,
            soft_wrap=True,
        )
