"""What every command shares: the consoles, one-line failures, output files, opening a store,
the command line as typed."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from dlbench.analysis.criteria import ALPHA, BAND
from dlbench.cli import complete
from dlbench.terminal import SafeConsole, printable

# Logs and CI output are not terminals; rich would wrap them at 80 columns.
# markup=False: error texts, paths and TOML table names ("[protocol]") are printed verbatim.


OFF_TERMINAL_WIDTH = 100


def _width_off_terminal() -> int:
    """Off a terminal rich would assume 80 columns: COLUMNS when it is set (a pager,
    a CI log, `COLUMNS=100 dlbench run | tee`), else 100 (a log read in a browser or an
    editor side by side; rich itself reads COLUMNS only, never the width of a pipe)."""
    try:
        columns = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        return OFF_TERMINAL_WIDTH
    return columns if 40 <= columns <= 1000 else OFF_TERMINAL_WIDTH


# SafeConsole: text from a database (run names, commands, errors) prints as text, never as
# terminal control sequences (dlbench.terminal).
console = SafeConsole(markup=False) if sys.stdout.isatty() else SafeConsole(width=_width_off_terminal(), markup=False)
err_console = (
    SafeConsole(stderr=True, markup=False)
    if sys.stderr.isatty()
    else SafeConsole(stderr=True, width=_width_off_terminal(), markup=False)
)

# DLBENCH_DB: a team's shared database (or one file per project) named once in the
# environment instead of on every command; --db given on the command line still wins.
DB = Annotated[
    Path,
    typer.Option(
        "--db",
        envvar="DLBENCH_DB",
        show_envvar=True,
        help="Results database: an SQLite file, or a shared PostgreSQL database given as a URL, "
        "postgresql://USER@HOST[:PORT]/DATABASE (a password is best kept in ~/.pgpass or PGPASSWORD).",
    ),
]
# The help of a --db that may be repeated (report, study report), whose default is default_db():
# click would split such an option's variable at ':', which would cut a PostgreSQL URL in pieces.
DB_DEFAULT_HELP = "Default: $DLBENCH_DB, else dlbench.db."


def default_db() -> Path:
    """The database of a command given no --db: $DLBENCH_DB, else ./dlbench.db (as the DB option)."""
    return Path(os.environ.get("DLBENCH_DB") or "dlbench.db")


# A stored run's own model or data, named again by the user (extend, explain): a
# database can come from someone else, so the reference it records is never imported.
NamedModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        help="Your own model the stored cases use (PATH.py:NAME or package.module:NAME, comma list), named again: "
        "a database can come from someone else, so dlbench imports the code of a stored run only when you name it.",
    ),
]
NamedDatasetOpt = Annotated[
    str | None,
    typer.Option("--dataset", help="Your own dataset the stored cases use (.npz file or IDX directory), named again."),
]


# Exit statuses besides 0 (success), 1 (a trial failed / a regression) and 2 (bad input):
EXIT_MISSING = 3  # compare: a case has no values on one side (a gate must not pass on no data)
EXIT_BUSY = 4  # run --resume / extend: another live dlbench process is executing that run


def show_table(table: Any) -> None:
    """Print a report TableData on the console (rich draws it; the data does not draw itself)."""
    from dataclasses import replace

    from dlbench.report.console import rich_table, say

    # Fitted to the console's width (optional columns dropped, words kept whole where they fit):
    # unfitted, a compare table of 8 columns rendered past 100 columns and the log cut its
    # last column off. The notes under it wrap with a hanging indent, like every sentence.
    console.print(rich_table(replace(table, notes=[]), width=console.width))
    for note in table.notes:
        say(console, note)


def fail(message: str, code: int = 2) -> None:
    from rich.text import Text

    # soft_wrap: one error is one line, also off a terminal (a log, a CI job), where
    # the console is 100 columns wide and would break a long path into several.
    err_console.print(Text.assemble(("error: ", "bold red"), printable(message)), highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def check_output(out: Path, reading: list[Any]) -> None:
    """One line and exit 2 when `out` would overwrite results or cannot be a file (dlbench.outputs)."""
    from dlbench import outputs

    try:
        outputs.check(out, reading)
    except outputs.OutputRefused as exc:
        fail(f"--out {exc}")


def write_output(out: Path, text: str, reading: list[Any]) -> None:
    """`text` into `out`, whole or not at all; the previous file stays if writing fails."""
    from dlbench import outputs

    try:
        outputs.write_text(out, text, reading)
    except outputs.OutputRefused as exc:
        fail(f"--out {exc}")
    except OSError as exc:
        fail(f"cannot write {out}: {exc.strerror or exc} (the previous file, if any, is unchanged)")


_KINDS = {int: "integers, e.g. 32,64", float: "numbers, e.g. 0.01,0.1", str: "values"}


def split_values(value: str | None, cast=str, flag: str = "") -> list[Any] | None:
    """'a, b,,c' -> ['a', 'b', 'c'] (empty items dropped; no item at all is refused by the
    config's check of the factor); a value `cast` cannot read fails naming the flag."""
    if value is None:
        return None
    items = [v.strip() for v in value.split(",") if v.strip()]
    for v in items:
        try:
            cast(v)
        except ValueError:
            from dlbench.models.spec import short_repr

            fail(
                f"{flag or 'command line'} {short_repr(value)}: {short_repr(v)} is not "
                f"{'an integer' if cast is int else 'a number'}; expected comma-separated "
                f"{_KINDS.get(cast, 'values')}"
            )
    return [cast(v) for v in items]


def same_database(a: Any, b: Any) -> bool:
    """Two stores' paths name one database (a link or ./ included; URLs compared as text)."""
    from dlbench.outputs import same_file

    return same_file(a, b) if isinstance(a, Path) and isinstance(b, Path) else str(a) == str(b)


def open_store(db: Path, readonly: bool = False):
    """readonly: for the commands that only read; the file is never written into, and an older
    schema is upgraded in a copy in memory."""
    from dlbench.store import Store, StoreError

    if any(ord(ch) < 32 or ord(ch) == 127 for ch in str(db)):
        # A newline (from a DLBENCH_DB set by a script) would create a file of that name and
        # split every line that prints it.
        fail(f"--db {str(db)!r}: a database name holds no control characters (newline, tab, ...)")
    try:
        return Store(db, readonly=readonly)
    except StoreError as exc:
        fail(str(exc))


def db_text(db: Path) -> str:
    """--db as it may be printed: a PostgreSQL URL's password masked."""
    from dlbench.store import shown

    return shown(db)


def is_url(db: Path) -> bool:
    from dlbench.store import database_url

    return database_url(db) is not None


def executor_flags_text(settings: Any) -> str:
    """The flags that name `settings` again (empty for local), for a resume command."""
    from dataclasses import asdict

    from dlbench.executors import FLAGS, ExecutorSettings

    if settings is None or settings.name == "local":
        return ""
    default = asdict(ExecutorSettings())
    out = []
    for key, value in asdict(settings).items():
        if value == default[key] or value is None:
            continue
        for one in value if isinstance(value, tuple) else (value,):
            out.append(f" {FLAGS[key]} {shlex.quote(str(one if not isinstance(one, float) else f'{one:g}'))}")
    return "".join(out)


def parts_failed(store: Any, run_id: int) -> bool:
    from dlbench.report.model import Manifest, failed_parts, failed_samplers

    trials = store.trials(run_id)
    manifests = [Manifest(t["id"], t["block"], "", t["status"], t.manifest or {}, "") for t in trials]
    lines = failed_parts(manifests) + failed_samplers(trials)
    for line in lines:
        err_console.print(printable(line), highlight=False, soft_wrap=True)
    return bool(lines)


def exit_on_signal(exc: KeyboardInterrupt, message: str) -> NoReturn:
    """One line for Ctrl-C, SIGTERM or SIGHUP, and exit 128 + the signal's number."""
    from dlbench.service.execution import signal_of

    name, number = signal_of(exc) or ("interrupted", 2)
    err_console.print(f"{name}: {message}", highlight=False)
    raise typer.Exit(128 + number)


def named_sources(model: str | None, dataset: str | None) -> dict[str, str]:
    """The user's own models and datasets named by reference in --model / --dataset
    (plain names need no source), for the commands that execute stored runs."""
    from dlbench import registry

    sources: dict[str, str] = {}
    for kind, given in (("model", model), ("dataset", dataset)):
        for text in split_values(given) or []:
            if not registry.is_reference(kind, text):
                continue
            try:
                name, ref = registry.resolve(kind, text)
            except registry.RegistryError as exc:
                fail(f"--{kind} {text}: {exc}")
            if ref is not None:
                sources[f"{kind}:{name}"] = ref
    return sources


def execute(
    store, run_id: int, db: Path, sources: dict[str, str], executor: Any = None, traces: str = ""
) -> dict[str, int]:
    """Execute (or resume) a run with a progress bar. Ctrl-C, SIGTERM and SIGHUP stop
    the worker, mark the run interrupted and exit 128 + the signal's number with the
    command that resumes it; a run executed by another live process is refused."""
    from dlbench.executors import ExecutorError
    from dlbench.service import execution
    from dlbench.store import StoreError

    RunBusy, SourcesMissing = execution.errors()

    named = "".join(f" --{key.partition(':')[0]} {shlex.quote(ref)}" for key, ref in sorted(sources.items()))
    resume = f"dlbench run --resume {run_id} --db {shlex.quote(db_text(db))}{named}{executor_flags_text(executor)}"
    # Everything from here on is inside the handler: a Ctrl-C that lands in the progress
    # bar's import (tens of ms on a loaded machine) reached click, which exits 1 with
    # "Aborted!" instead of 130 with the resume command (seen once in the fault suite).
    try:
        execution.stop_on_signals()
        from dlbench.progress import RunProgress

        execution.check_sources(store, run_id, sources)
        with RunProgress(console, store, run_id) as progress:
            return execution.execute(
                store, run_id, sources, executor=executor, traces=traces, on_event=progress.on_event
            )
    except SourcesMissing as exc:
        fail(str(exc))
    except ExecutorError as exc:
        fail(f"{exc}; run {run_id} keeps what was stored. Resume with: {resume}")
    except KeyboardInterrupt as exc:
        exit_on_signal(exc, f"finished trials are stored. Resume with: {resume}")
    except RunBusy as exc:
        fail(str(exc), code=EXIT_BUSY)
    except StoreError as exc:
        fail(f"{exc}: {resume}", code=1)
    raise AssertionError("unreachable")


def invocation(ctx: typer.Context, **resolved: Any) -> str:
    """The invocation, rebuilt from the parsed parameters (sys.argv is not the
    command when dlbench is driven as a library or under a test runner): stored with
    the run, it must run again as typed. `resolved`: parameters whose typed value
    means something else later, given as what they meant now (explain's "the
    latest run" is, once stored, the explain run itself)."""
    # The command's whole path under the program (`study run`, not `run`); the root's
    # own name is whatever started the program (python -m, a test runner): dlbench.
    path: list[str] = []
    level: Any = ctx
    while getattr(level, "parent", None) is not None:
        path.insert(0, level.info_name or "")
        level = level.parent
    words = ["dlbench", *(path or [ctx.info_name or "run"])]
    declared = {p.name: p for p in getattr(getattr(ctx, "command", None), "params", ())}
    positional = len(words)
    for name, value in {**ctx.params, **resolved}.items():
        if value is None:
            continue
        param = declared.get(name)
        # typer brings its own copy of click: parameters are told apart by kind, not class.
        kind = getattr(param, "param_type_name", None)
        if kind == "argument" or (param is None and name == "file"):  # FILE of run, RUN of explain
            words.insert(positional, str(value))
            positional += 1
            continue
        # The flag as declared (--format for the parameter fmt), not the parameter's name.
        flag = next((o for o in param.opts if o.startswith("--")), None) if param is not None else None
        flag = flag or f"--{name.replace('_', '-')}"
        if isinstance(value, (list, tuple)):  # a repeatable option: the flag once per value, none if empty
            for item in value:
                words += [flag, str(item)]
        elif isinstance(value, bool) and getattr(param, "is_flag", False):
            # An on/off pair (--params/--no-params) names its off side; a plain flag is left out when off.
            off = next((o for o in getattr(param, "secondary_opts", ()) if o.startswith("--")), None)
            words += [flag] if value else [off] if off else []
        elif value != "":
            words += [flag, str(value)]
    return shlex.join(words)


# The run whose samplers line `dlbench run` printed before the run: the report printed at
# its end does not say it again (one process prints both). Taken once: a later command in
# the same process (a test, the API) prints its own.
_SAMPLERS_SAID: set[int] = set()


def print_samplers(rows, run_id: int | None = None) -> None:
    """What the telemetry measures here and what not, in one line (the table with reasons and
    remedies: `dlbench env`, or `dlbench report --details`)."""
    from dlbench.report.console import say
    from dlbench.report.tables import samplers_line

    rows = list(rows)
    run_ids: set[int] = {int(r.run_id) for r in rows if getattr(r, "run_id", None) is not None}
    _SAMPLERS_SAID.clear()
    _SAMPLERS_SAID.update(run_ids if run_id is None else {run_id})
    say(console, samplers_line(rows) + "; why, and what would enable the rest: dlbench env")


def print_skipped(rows) -> None:
    from dlbench.report.tables import skipped_table

    table = skipped_table(rows)
    if table is not None:
        show_table(table)


def design_note(plan: Any) -> None:
    """Say before anything runs when the design cannot reach a verdict, and the smallest that
    can, each in the words of the design it is (members, trials, paired or not, Holm family)."""
    from dlbench.analysis.design import check, needed
    from dlbench.report.words import check_words

    d = check(plan)
    if d is None or d.decidable:
        return
    advice = f"--trials {d.trials_needed} ({check_words(needed(d))}: p down to {needed(d).smallest_p:.3g})"
    if d.one_process:
        text = (
            f"note: this design gives ratios but no verdict: each case runs in one process, and repeats inside "
            f"one process share its state (a test on them compares two processes, not two codes). Smallest "
            f"design that decides: {advice}."
        )
    else:
        text = (
            f"warning: this design cannot reach a verdict: {check_words(d)}: the exact test cannot go below "
            f"p = {d.smallest_p:.3g} >= {d.alpha:g}, however large the difference. Smallest design that can: "
            f"{advice}."
        )
    console.print(
        text,
        highlight=False,
        soft_wrap=False,
    )


BAND_OPT = Annotated[
    float,
    typer.Option(
        "--band",
        help="Band of no meaningful difference, a fraction (0.02 = ±2%): the same for every verdict printed.",
    ),
]
ALPHA_OPT = Annotated[float, typer.Option("--alpha", help="Significance level, family-wise (Holm).")]
BUSY_VERDICTS_OPT = Annotated[
    bool,
    typer.Option(
        "--busy-verdicts",
        help="Give verdict words to time comparisons of cases measured on a busy machine (marked BUSY), which "
        "otherwise keep their ratio and CI but are not decided: their times hold the load as well as the code.",
    ),
]


def check_criteria(band: float, alpha: float) -> None:
    if not 0 < band < 1 or not 0 < alpha < 1:
        fail(f"--band {band} and --alpha {alpha} must lie strictly between 0 and 1 (e.g. --band 0.02 --alpha 0.05)")


def print_report(
    store,
    run_id: int,
    details: bool = False,
    preface: Any = None,
    band: float = BAND,
    alpha: float = ALPHA,
    busy_verdicts: bool = False,
) -> None:
    """The run's report on the console: the answer, one row per case, latency, failures;
    with details every table of the written formats; `preface` (a study's paper vs this
    run) first."""
    from dlbench.report.console import print_report
    from dlbench.report.model import build_report

    report = build_report(store, run_id, hypotheses=False, band=band, alpha=alpha, busy_verdicts=busy_verdicts)
    report.preface = preface
    if run_id in _SAMPLERS_SAID:
        _SAMPLERS_SAID.discard(run_id)
        if not details:
            report.samplers_line = ""  # said before the run, higher up the same log
    print_report(console, report, details)


def data_readings(plan: Any) -> None:
    """How each of the user's data files is read (its layout, declared or inferred): a
    (N, L, C) series and a (N, H, W) greyscale image look alike to a reader of arrays."""
    from dlbench import registry

    names = {t.case.dataset for t in plan.trials} | {s.cell["dataset"] for s in plan.skipped}
    for name in sorted(names):
        reading = registry.dataset(name, plan.experiment.sources).reading
        if reading:
            console.print(f"data: {reading}", soft_wrap=True, highlight=False)


def print_plan(p: Any) -> None:
    """The trials in order, the skipped cells with reasons, and a warning when the design cannot decide."""
    from dlbench.report.tables import plan_table

    show_table(plan_table(p))
    data_readings(p)
    print_skipped([(s.cell, s.reason) for s in p.skipped])
    design_note(p)


FORMAT = Annotated[
    str,
    typer.Option(
        "--format",
        "-f",
        help="console (default), markdown, latex, html (one "
        "self-contained file with figures), csv (the summary rows; "
        "`dlbench export` writes every raw value) or json (the answer, every comparison and every case "
        "as data for scripts; docs/json.md).",
        autocompletion=complete.one_of(complete.report_formats),
    ),
]


def resolve_run(ref: str, db: Path, readonly: bool = False):
    """'3' -> run 3 in --db; 'other.db' -> its latest run; 'other.db:3' -> run 3 there.
    readonly: opened read-only (compare); extend writes into the runs it resolves."""

    path, run_id = db, None
    if ref.isdigit():
        run_id = int(ref)
    else:
        name, _, rid = ref.rpartition(":") if ref.rpartition(":")[2].isdigit() else (ref, "", "")
        path, run_id = Path(name), (int(rid) if rid else None)
        if not path.exists():
            fail(f"{ref}: no such database file {path} (give a run id, FILE.db or FILE.db:RUN)")
    store = open_store(path, readonly=readonly)
    return store, stored_run(store, run_id)


def stored_run(store: Any, run_id: int | None) -> Any:
    """The run's record (None: the latest run), or one line and exit 2."""
    from dlbench.store import StoreError

    try:
        return store.run(run_id)
    except StoreError as exc:
        fail(str(exc))
