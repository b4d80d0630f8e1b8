"""The typer applications (dlbench and its `study` group), the root options, and the one
declaration of dlbench's exit statuses (the root help's epilog and docs/cli.md render it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import typer

from dlbench.cli.common import EXIT_BUSY, EXIT_MISSING


@dataclass(frozen=True)
class ExitStatus:
    code: str  # a number, or a rule (128+N)
    meaning: str


# Every exit status a dlbench command ends with. The numbers are the ones the commands raise:
# 1 where a command found a failure (cli/running.py, reporting.py, inventory.py, explaining.py,
# cli/__init__.main), 2 from fail() and from click's own usage errors, EXIT_MISSING and
# EXIT_BUSY from common.py, 128 + the signal's number from common.exit_on_signal.
EXIT_STATUSES: tuple[ExitStatus, ...] = (
    ExitStatus(
        "0",
        "success; for compare: no case is a significant regression (undecided cases included); for gate: no "
        "regression decided (undecided comparisons pass unless --undecided fail)",
    ),
    ExitStatus(
        "1",
        "a failure found: a trial failed or timed out (run, extend, explain, study run), a significant "
        "regression (compare, gate; gate --undecided fail: an undecided comparison too), not the same network "
        "(check), a database error mid-command, an MLflow server "
        "that could not take the run (mlflow-log; run --mlflow only warns: the run is stored and exits as it ran)",
    ),
    ExitStatus("2", "bad input: a flag, key, value or file that is not allowed, told in one `error:` line"),
    ExitStatus(
        str(EXIT_MISSING),
        "missing data: compare or gate found a case with no values on one side (every trial of it failed or timed "
        "out); compare --allow-missing accepts that",
    ),
    ExitStatus(str(EXIT_BUSY), "busy: another live dlbench process is executing that run (run --resume, extend, gate)"),
    ExitStatus(
        "128+N",
        "stopped by signal N: 130 Ctrl-C (SIGINT), 143 SIGTERM, 129 SIGHUP; finished trials are stored and the "
        "message gives the command that resumes the run",
    ),
)


def exit_statuses_text() -> str:
    """The table as plain text for --help. Click rewraps epilog paragraphs; a paragraph that
    starts with a \\b line is printed as written."""
    import textwrap

    width = max(len(s.code) for s in EXIT_STATUSES)
    indent = " " * (width + 4)
    rows = "\n".join(
        textwrap.fill(
            s.meaning, 78, break_on_hyphens=False, initial_indent=f"  {s.code.ljust(width)}  ", subsequent_indent=indent
        )
        for s in EXIT_STATUSES
    )
    return f"\b\nExit statuses:\n{rows}"


def exit_statuses_markdown() -> str:
    """The table as Markdown for docs/cli.md."""
    rows = "\n".join("| " + s.code + " | " + s.meaning.replace("|", "\\|") + " |" for s in EXIT_STATUSES)
    return f"| status | meaning |\n| --- | --- |\n{rows}\n"


app = typer.Typer(
    # typer's --install-completion / --show-completion (the shell detected); `dlbench completion
    # SHELL` prints the script for a named shell.
    add_completion=True,
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="dlbench: fair, repeated, statistically tested benchmarks of PyTorch, TensorFlow and JAX.",
    epilog=exit_statuses_text()
    + "\n\nDLBENCH_DB sets the default --db of every command; DLBENCH_DATA where datasets are found.",
)


def _version(value: bool) -> None:
    if value:
        from dlbench.version import describe

        print(describe().text())
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_version,
            is_eager=True,
            help="Print the version and the commit it was built from (and whether files were modified), and exit.",
        ),
    ] = False,
) -> None:
    """dlbench: fair, repeated, statistically tested benchmarks of PyTorch, TensorFlow and JAX."""


study_app = typer.Typer(
    help="The five seed papers' experiments as built-in studies: list, show, run, and report them beside the paper.",
    no_args_is_help=True,
)
app.add_typer(study_app, name="study")
