"""The typer applications (dlbench and its `study` group) and the root options."""

from __future__ import annotations

from typing import Annotated

import typer

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="dlbench: fair, repeated, statistically tested benchmarks of PyTorch, TensorFlow and JAX.",
)


def _version(value: bool) -> None:
    if value:
        from dlbench.version import __version__

        print(f"dlbench {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """dlbench: fair, repeated, statistically tested benchmarks of PyTorch, TensorFlow and JAX."""


study_app = typer.Typer(
    help="The five seed papers' experiments as built-in studies: list, show, run, and report them beside the paper.",
    no_args_is_help=True,
)
app.add_typer(study_app, name="study")
