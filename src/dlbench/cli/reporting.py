"""report, runs, export and compare: read stored runs and print or write their reports."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from dlbench.analysis.criteria import ALPHA, BAND
from dlbench.cli import complete
from dlbench.cli.app import app
from dlbench.cli.common import (
    ALPHA_OPT,
    BAND_OPT,
    BUSY_VERDICTS_OPT,
    DB,
    DB_DEFAULT_HELP,
    EXIT_MISSING,
    FORMAT,
    check_criteria,
    check_output,
    console,
    db_text,
    default_db,
    err_console,
    fail,
    is_url,
    open_store,
    print_report,
    resolve_run,
    same_database,
    show_table,
    stored_run,
    write_output,
)


@app.command()
def report(
    run_ids: Annotated[
        list[int] | None,
        typer.Option(
            "--run",
            help="Run id (default: the latest); repeat it for runs of several machines.",
            autocompletion=complete.run_ids,
        ),
    ] = None,
    fmt: FORMAT = "console",
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write the report to this file (default: standard output).")
    ] = None,
    figures: Annotated[
        Path | None,
        typer.Option(
            "--figures",
            help="Also write every figure (PNG and SVG) into this directory; Markdown and LaTeX "
            "then show them, linked relative to --out's folder.",
        ),
    ] = None,
    latex_tables: Annotated[
        Path | None,
        typer.Option(
            "--latex-tables",
            help="With --format latex: also write every table as a bare tabular (booktabs) to this "
            "directory, one .tex file each, to \\input in a paper.",
        ),
    ] = None,
    details: Annotated[
        bool,
        typer.Option(
            "--details",
            help="Console: every table (per-metric statistics, "
            "telemetry, verdicts, skipped cells), not only the answer and the "
            "one-row-per-case summary.",
        ),
    ] = False,
    dbs: Annotated[
        list[Path] | None,
        typer.Option(
            "--db", help=f"SQLite results database; repeat it to set machines side by side. {DB_DEFAULT_HELP}"
        ),
    ] = None,
    band: BAND_OPT = BAND,
    alpha: ALPHA_OPT = ALPHA,
    busy_verdicts: BUSY_VERDICTS_OPT = False,
) -> None:
    """Report of a stored run, the answer first (who is faster, by how much, is it real), then summary
    tables (n, mean ± sd, median, Q1, Q3), latency, telemetry and verdicts; as console tables, Markdown,
    LaTeX, HTML, CSV or JSON (docs/json.md: only the document on standard output). Several --db (or --run)
    taken on different machines: first a section with one column group per machine (nothing pooled), then
    the first run's report."""
    from dlbench.report.formats import REGISTRY

    if fmt not in REGISTRY:
        fail(f"--format {fmt!r}: allowed: {', '.join(REGISTRY)}")
    if fmt == "console" and out is not None:
        fail("--out needs a written format (markdown, latex, html, csv or json); console output goes to the terminal")
    if latex_tables is not None and fmt != "latex":
        fail(f"--latex-tables writes LaTeX tables: it needs --format latex (got --format {fmt})")
    check_criteria(band, alpha)
    # The flags are checked first: a bad flag is named before any database is opened.
    paths = dbs or [default_db()]
    if out is not None:
        check_output(out, list(paths))
    picked = collect_runs(paths, list(run_ids or []), lambda store: [store.run(None)["id"]])
    preface = machines_preface(picked) if len(picked) > 1 else None
    run_id = picked[0][1]
    store = picked[0][0]
    row = stored_run(store, run_id)
    made: list[Any] = []
    # A document on standard output keeps stdout for itself: messages go to stderr.
    messages = err_console if fmt != "console" and out is None else console
    if figures is not None:
        from dlbench.report.plots import make_figures

        try:
            figures.mkdir(parents=True, exist_ok=True)
            made = make_figures(store, row["id"], figures)
        except OSError as exc:
            fail(f"cannot write figures to {figures}: {exc}")
        from dlbench.report.console import say

        say(messages, f"wrote {len(made)} figures (PNG and SVG) to {figures}: " + ", ".join(f.stem for f in made))
    if fmt == "console":
        console.print(f"command: {row['command']}", highlight=False, soft_wrap=True)  # one line, to copy
        print_report(store, row["id"], details, preface=preface, band=band, alpha=alpha, busy_verdicts=busy_verdicts)
        return
    from dlbench.report.formats import render

    base = (out.parent if out is not None else Path.cwd()) if made else None
    text = render(
        store, row["id"], fmt, made, base, preface=preface, band=band, alpha=alpha, busy_verdicts=busy_verdicts
    )
    if latex_tables is not None:
        from dlbench.report.latex import bare_tables
        from dlbench.report.model import build_report

        try:
            latex_tables.mkdir(parents=True, exist_ok=True)
            written = bare_tables(build_report(store, row["id"], band=band, alpha=alpha, busy_verdicts=busy_verdicts))
            for name, body in written:
                write_output(latex_tables / name, body, list(paths))
        except OSError as exc:
            fail(f"cannot write LaTeX tables to {latex_tables}: {exc}")
        messages.print(f"wrote {len(written)} bare LaTeX tables to {latex_tables}", highlight=False)
    if out is None:
        sys.stdout.write(text)  # not rich: its markup and wrapping would alter the document
        return
    write_output(out, text, list(paths))
    # soft_wrap: a path is never cut across lines (a script or a test reads it whole).
    console.print(f"wrote the {fmt} report of run {row['id']} to {out}", highlight=False, soft_wrap=True)


def collect_runs(paths: list[Path], ids: list[int], default) -> list[tuple[Any, int]]:
    """(store, run id) for each --db and --run: one database with several --run, several
    databases with one --run each (or none: `default(store)` picks), read-only."""
    from dlbench.store import StoreError

    if len(paths) > 1 and len(ids) > 1 and len(ids) != len(paths):
        fail(f"--run given {len(ids)} times for {len(paths)} --db: give one --run per --db, or none")
    picked: list[tuple[Any, int]] = []
    for i, path in enumerate(paths):
        store = open_store(path, readonly=True)
        wanted = ids if len(paths) == 1 else ([ids[i]] if ids else [])
        try:
            for rid in wanted or default(store):
                store.run(rid)
                picked.append((store, rid))
        except StoreError as exc:
            fail(str(exc) if len(paths) == 1 else f"{path}: {exc}")
    return picked


def machines_preface(picked: list[tuple[Any, int]]):
    from dlbench.report import machines
    from dlbench.results import Results

    runs = []
    for store, rid in picked:
        row = store.run(rid)
        runs.append(machines.MachineRun(rid, str(store.path), row.environment, Results.of_store(store).summary(rid)))
    preface = machines.build(runs)
    preface.lines.append(f"The report below is run {picked[0][1]}'s, of {picked[0][0].path} (the first machine).")
    return preface


# --format of the commands that print a table or a document for scripts (docs/json.md).
SCRIPT_FORMAT = Annotated[
    str,
    typer.Option(
        "--format",
        "-f",
        help="console (default: tables) or json (one JSON document on standard output and nothing else; "
        "its schema: docs/json.md).",
        autocompletion=complete.one_of(lambda: SCRIPT_FORMATS),
    ),
]
SCRIPT_FORMATS = ("console", "json")


def check_script_format(fmt: str) -> None:
    if fmt not in SCRIPT_FORMATS:
        fail(f"--format {fmt!r}: allowed: {', '.join(SCRIPT_FORMATS)}")


def write_json(document: dict[str, Any]) -> None:
    """A dlbench.report.json_out document, alone on standard output (not rich: no markup, no wrapping)."""
    from dlbench.report.json_out import dumps

    sys.stdout.write(dumps(document))
    sys.stdout.flush()


def compare_exit(diffs: list[Any], allow_missing: bool) -> None:
    """compare's exit status after a JSON document: 1 on a regression, 3 on a case without values
    on one side (unless allow_missing), else 0; the reason for 3 on standard error."""
    missing = [d for d in diffs if d.comparison is None]
    if any(d.regression for d in diffs):
        raise typer.Exit(1)
    if missing and not allow_missing:
        err_console.print(
            f"error: {len(missing)} of {len(diffs)} comparisons have no values on one side: nothing was compared "
            "there. Exit 3; pass --allow-missing to accept that.",
            highlight=False,
        )
        raise typer.Exit(EXIT_MISSING)
    raise typer.Exit(0)


@app.command()
def runs(
    run_id: Annotated[
        int | None,
        typer.Option(
            "--run", help="List this run's trials and where each one ran instead.", autocompletion=complete.run_ids
        ),
    ] = None,
    fmt: SCRIPT_FORMAT = "console",
    db: DB = Path("dlbench.db"),
) -> None:
    """The runs stored in the database, and where their trials ran (--run ID: each trial)."""
    from dlbench.report import json_out
    from dlbench.report.tables import placements_table, runs_table
    from dlbench.store import StoreError

    check_script_format(fmt)
    store = open_store(db, readonly=True)
    if run_id is None:
        if fmt == "json":
            write_json(json_out.runs_document(store.runs()))
            return
        show_table(runs_table(store.runs()))
        return
    try:
        store.run(run_id)
    except StoreError as exc:
        fail(str(exc))
    if fmt == "json":
        write_json(json_out.trials_document(run_id, store.trials(run_id, retired=True)))
        return
    show_table(placements_table(store.trials(run_id, retired=True)))


@app.command()
def repack(db: DB = Path("dlbench.db")) -> None:
    """Rebuild the packed copy of the per-call latency times from the rows, and restore its triggers.

    The report reads latency percentiles from a packed copy of the rows and checks it against
    them first; where another tool changed the rows or the copy, it reads the rows and says
    so. This makes the copy whole again: the rows themselves are not touched."""
    if not is_url(db) and not Path(db).is_file():
        fail(f"--db {db}: no such database file; repack rebuilds the copy in an existing one")
    store = open_store(db)
    try:
        packs = store.repack()
    finally:
        store.close()
    console.print(
        f"{db_text(db)}: the latency copy rebuilt from the rows ({packs} pack(s)); its triggers are in place",
        highlight=False,
        soft_wrap=True,
    )


@app.command()
def export(
    out: Annotated[
        Path, typer.Argument(help="File to write (.csv, .json or .parquet); - for standard output (csv, json).")
    ],
    run_id: Annotated[
        int | None, typer.Option("--run", help="Run id (default: the latest).", autocompletion=complete.run_ids)
    ] = None,
    fmt: Annotated[
        str | None,
        typer.Option("--format", "-f", help="csv, json or parquet (default: from the file's suffix, else csv)."),
    ] = None,
    db: DB = Path("dlbench.db"),
) -> None:
    """Every measurement of a run, one row per value, every factor of its case as a column (docs/schema.md)."""

    formats = ("csv", "json", "parquet")  # dlbench.results.FORMATS, without importing pandas before it is needed
    suffix = out.suffix.lstrip(".").lower()
    fmt = fmt.lower() if fmt is not None else suffix if suffix in formats else "csv"
    if fmt not in formats:
        fail(f"--format {fmt!r}: allowed: {', '.join(formats)}")

    to_stdout = str(out) == "-"
    if to_stdout and fmt == "parquet":
        fail("export -: parquet is binary; write it to a file (export run.parquet), or give --format csv or json")
    # The destination is checked before the database is opened: a bad path fails
    # with one line and leaves no trace (not even a new, empty database file).
    if to_stdout:
        pass
    elif "\0" in str(out):
        fail(f"export {str(out)!r}: a file name cannot contain a NUL character")
    if out.is_dir():
        fail(f"export {out}: is a directory; give the CSV file to write, e.g. {out / 'run.csv'}")
    if not out.parent.is_dir():
        fail(f"export {out}: no directory {out.parent} to write into (create it first)")
    from dlbench import outputs

    try:
        if not to_stdout:
            outputs.check(out, [db])
    except outputs.OutputRefused as exc:
        fail(f"export {exc}")
    if run_id is not None and not 1 <= run_id < 2**63:
        fail(f"--run {run_id}: a run id is a positive integer (see dlbench runs)")
    if not db.is_file() and not is_url(db):  # exporting reads a database; it never creates an empty one
        fail(f"--db {db}: no such database file (give the --db that dlbench run wrote)")
    store = open_store(db, readonly=True)
    row = stored_run(store, run_id)
    from dlbench import results

    store.close()
    data = results.load(db)
    frame = data.measurements(row["id"])
    data.close()
    if to_stdout:  # the data alone on standard output; what was written, on standard error
        results.export(frame, sys.stdout, fmt)
        sys.stdout.flush()
        err_console.print(f"wrote {len(frame)} measurements of run {row['id']} to standard output ({fmt})")
        return
    try:
        # Written beside `out` and renamed into place: a full disk leaves the old file whole.
        outputs.write_with(out, lambda tmp: results.export(frame, tmp, fmt), [db])
    except outputs.OutputRefused as exc:
        fail(f"export {exc}")
    except OSError as exc:
        fail(f"export {out}: cannot write: {exc.strerror or exc} (the previous file, if any, is unchanged)")
    console.print(f"wrote {len(frame)} measurements of run {row['id']} to {out} ({fmt})", soft_wrap=True)


@app.command()
def compare(
    a: Annotated[
        str | None,
        typer.Argument(
            help="Baseline: a run id in --db, FILE.db (its latest run) or FILE.db:RUN; with --baseline, the candidate."
        ),
    ] = None,
    b: Annotated[str | None, typer.Argument(help="Candidate, in the same forms.")] = None,
    baseline: Annotated[
        str | None,
        typer.Option(
            "--baseline",
            help="A named baseline in --db as A (dlbench baseline save NAME --run ID); then give only the "
            "candidate run: dlbench compare --baseline NAME RUN.",
        ),
    ] = None,
    threshold: Annotated[
        float,
        typer.Option(
            "--band",
            "--threshold",
            help="The band of no meaningful difference (fraction, the same for every verdict dlbench prints): "
            "a significant slowdown beyond it is a regression.",
        ),
    ] = BAND,
    alpha: Annotated[float, typer.Option(help="Significance level (family-wise).")] = ALPHA,
    quantile: Annotated[
        float,
        typer.Option(
            help="Which quantile of the trial values to compare: 0.5 the median; a low one (0.1: needs 20 trials "
            "a run) the undisturbed speed on a machine whose speed comes and goes."
        ),
    ] = 0.5,
    allow_missing: Annotated[
        bool,
        typer.Option(
            "--allow-missing",
            help="Exit 0 even when a case has no values on one side (its trials all failed or "
            "timed out); by default that exits 3, so that a CI gate never passes on no data.",
        ),
    ] = False,
    with_quality: Annotated[
        bool,
        typer.Option(
            "--quality",
            help="Compare the trained models' test-set quality too (accuracy, test MSE, test MAE, perplexity: "
            "whichever the cases stored), each in its own direction: a significantly worse value beyond the band "
            "(lower accuracy, higher MSE) is a regression.",
        ),
    ] = False,
    busy_verdicts: Annotated[
        bool,
        typer.Option(
            "--busy-verdicts",
            help="Give verdicts (and regressions) for times measured on a busy machine too; by default such a "
            "case keeps its ratio and CI and reads 'undecided: busy machine'.",
        ),
    ] = False,
    fmt: SCRIPT_FORMAT = "console",
    db: DB = Path("dlbench.db"),
) -> None:
    """Run vs run: per case ratio B/A with CI and verdict (paired by block when the runs took turns, as
    `dlbench extend A B` runs them); times only unless --quality. Exit status: 1 on a significant regression;
    3 when a case has no values on one side (unless --allow-missing); 2 on bad input."""
    from dlbench.analysis.comparisons import run_vs_run, setting_changes
    from dlbench.analysis.stats import min_trials
    from dlbench.report.console import say
    from dlbench.report.drift import drift_notes
    from dlbench.report.json_out import compare_document
    from dlbench.report.verdict_tables import compare_table

    check_script_format(fmt)
    if not 0 < threshold < 1 or not 0 < alpha < 1:
        fail(f"--band {threshold} and --alpha {alpha} must lie strictly between 0 and 1")
    if not 0 < quantile < 1:
        fail(
            f"--quantile {quantile} must lie strictly between 0 and 1 (0.5: the median; 0.1: the 10th "
            "percentile); the minimum (0) has no bootstrap CI"
        )
    from dlbench.cli.baselines import compare_pair

    a, b = compare_pair(baseline, a, b, db)
    sa, ra = resolve_run(a, db, readonly=True)
    sb, rb = resolve_run(b, db, readonly=True)
    if ra["id"] == rb["id"] and same_database(sa.path, sb.path):
        fail(f"{a} and {b} are the same run ({sb.path}, run {rb['id']}): a run compared with itself says nothing")
    a_trials, b_trials = sa.trials(ra["id"]), sb.trials(rb["id"])
    diffs = run_vs_run(
        a_trials,
        sa.measurements(ra["id"], latency=False),
        b_trials,
        sb.measurements(rb["id"], latency=False),
        threshold=threshold,
        alpha=alpha,
        quantile=quantile,
        with_quality=with_quality,
        busy_verdicts=busy_verdicts,
    )
    if not diffs:
        fail(f"runs {a} and {b} share no case (same framework, model, data and settings)")
    if fmt == "json":
        changes = setting_changes(a_trials, b_trials)
        notes = drift_notes(diffs, ra.environment, rb.environment, changes)
        sides = ({"ref": ref, "db": str(st.path), "run": r["id"]} for ref, st, r in ((a, sa, ra), (b, sb, rb)))
        a_side, b_side = sides
        a_side["baseline"] = baseline  # the named baseline A was read from (compare --baseline NAME), or None
        write_json(compare_document(diffs, a_side, b_side, threshold, alpha, quantile, notes, allow_missing))
        compare_exit(diffs, allow_missing)
    show_table(compare_table(diffs, f"A ({a})", f"B ({b})", threshold, quantile, alpha))
    regressions = [d for d in diffs if d.regression]
    missing = [d for d in diffs if d.comparison is None]
    single = [
        d for d in diffs if d.comparison is not None and not (d.comparison.independent and d.comparison.interleaved)
    ]
    say(console, f"{len(diffs)} comparisons, {len(regressions)} regressions, {len(missing)} without values on one side")
    if single:
        say(
            console,
            f"no verdict for {len(single)} comparison(s): "
            + (
                "a case ran in one process on a side, and a test on one process's repeats compares two processes, "
                "not two codes"
                if any(d.comparison is not None and not d.comparison.independent for d in single)
                else "the runs were taken one after the other, so their difference holds the machine's drift "
                "between them"
            )
            + f". `dlbench extend {a} {b} --blocks N` runs both in turns, one process per block, and decides "
            f"with {min_trials(alpha)} or more blocks a run.",
        )
    from dlbench.analysis.busy import BUSY_THRESHOLD

    busy = [d for d in diffs if d.comparison is not None and d.comparison.busy]
    if busy:
        say(
            console,
            f"no verdict for {len(busy)} comparison(s): a side was measured on a busy machine (other processes "
            f"took {BUSY_THRESHOLD:.0f}% or more of the CPU while its trials ran), so its times hold that load as "
            "well as the code. "
            f"`dlbench run --resume ID --redo-busy` runs the busy blocks again on a quiet machine; "
            "--busy-verdicts decides anyway.",
        )
    env_a, env_b = (r.environment for r in (ra, rb))
    for note in drift_notes(diffs, env_a, env_b, setting_changes(a_trials, b_trials)):
        say(console, note)
    if regressions:
        raise typer.Exit(1)
    if missing and not allow_missing:
        err_console.print(
            f"error: {len(missing)} of {len(diffs)} comparisons have no values on one side (every "
            "trial of that case failed, timed out or was interrupted): nothing was compared there. "
            "Exit 3; pass --allow-missing to accept that.",
            highlight=False,
        )
        raise typer.Exit(EXIT_MISSING)
