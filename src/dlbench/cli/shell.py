"""`dlbench completion SHELL`: the tab-completion script for bash, zsh or fish, printed."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from dlbench.cli.app import app


class Shell(StrEnum):
    bash = "bash"
    zsh = "zsh"
    fish = "fish"


# Where each shell loads a completion script from, for the help text (\b: printed as written).
_WHERE = """\b
Where each shell loads it from:
  bash: dlbench completion bash > ~/.local/share/bash-completion/completions/dlbench
  zsh:  dlbench completion zsh > ~/.zfunc/_dlbench  (and fpath+=~/.zfunc before compinit in ~/.zshrc)
  fish: dlbench completion fish > ~/.config/fish/completions/dlbench.fish"""


@app.command(epilog=_WHERE)
def completion(shell: Annotated[Shell, typer.Argument(metavar="SHELL", help="The shell to complete in.")]) -> None:
    """Print the shell's tab-completion script for dlbench (commands, options and their values: frameworks,
    models, datasets, formats, study names, and the run ids and baselines of the --db typed so far), to save
    where the shell loads it from; `dlbench --install-completion` does that for the shell it detects."""
    # typer's own scripts: they call dlbench back with _DLBENCH_COMPLETE set, so completions
    # always match the installed commands.
    from typer.completion import get_completion_script

    print(get_completion_script(prog_name="dlbench", complete_var="_DLBENCH_COMPLETE", shell=shell.value))
