"""Shell completion: `dlbench completion SHELL` prints a working script for bash, zsh and fish.

bash is driven for real: the printed script is sourced and its completion function called the
way bash calls it on <Tab>. zsh and fish are not installed here, so their scripts are checked
to call dlbench with the variables that typer's completion reads, and dlbench is called with
exactly those variables, as the shell would."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

# The console script of the environment the tests run in (.venv/bin/dlbench).
DLBENCH = Path(sys.executable).with_name("dlbench")


def _run(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    # dlbench on PATH: the scripts call it by name, as the user's shell would.
    path = f"{DLBENCH.parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return subprocess.run(
        args, capture_output=True, text=True, timeout=60, check=False, env={**os.environ, "PATH": path, **env}
    )


def _script(shell: str) -> str:
    proc = _run([str(DLBENCH), "completion", shell])
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_bash_completes_commands_and_options_through_the_printed_script(tmp_path: Path) -> None:
    script = tmp_path / "dlbench.bash"
    script.write_text(_script("bash"))
    # What bash does on <Tab>: COMP_WORDS / COMP_CWORD set, the registered function called.
    tab = 'COMP_WORDS=({words}); COMP_CWORD={cword}; _dlbench_completion dlbench; echo "words: ${{COMPREPLY[*]}}"'
    driver = "\n".join(
        [
            f"source {script}",
            "complete -p dlbench",
            tab.format(words="dlbench repo", cword=1),
            tab.format(words="dlbench report --fo", cword=2),
            tab.format(words="dlbench completion ''", cword=2),
        ]
    )
    proc = _run(["bash", "--norc", "--noprofile", "-c", driver])
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "complete -o default -F _dlbench_completion dlbench"
    assert lines[1:] == ["words: report", "words: --format", "words: bash zsh fish"]


@pytest.mark.parametrize(
    ("shell", "hook", "env"),
    [
        ("zsh", "#compdef dlbench", {"_DLBENCH_COMPLETE": "complete_zsh", "_TYPER_COMPLETE_ARGS": "dlbench repo"}),
        (
            "fish",
            "complete --command dlbench",
            {
                "_DLBENCH_COMPLETE": "complete_fish",
                "_TYPER_COMPLETE_FISH_ACTION": "get-args",
                "_TYPER_COMPLETE_ARGS": "dlbench repo",
            },
        ),
    ],
)
def test_zsh_and_fish_scripts_call_dlbench_for_completions(shell: str, hook: str, env: dict[str, str]) -> None:
    script = _script(shell)
    assert script.startswith(hook)
    for key, value in env.items():
        if key != "_TYPER_COMPLETE_ARGS":  # the script fills that in from the command line being typed
            assert f"{key}={value}" in script
    proc = _run([str(DLBENCH)], **env)
    assert proc.returncode == 0, proc.stderr
    # zsh: an _arguments spec, "name":"help" per candidate; fish: one "name<TAB>help" line each.
    if shell == "zsh":
        candidates = re.findall(r'"([^"]+)":"', proc.stdout)
    else:
        candidates = [line.split("\t")[0] for line in proc.stdout.splitlines()]
    assert candidates == ["report"], proc.stdout


def test_unknown_shell_is_refused_naming_the_choices(cli) -> None:
    result = cli.result("completion", "powershell")
    assert result.exit_code == 2
    assert "'powershell' is not one of 'bash', 'zsh', 'fish'" in result.output


def test_bash_completes_option_values_from_their_declarations(tmp_path: Path) -> None:
    """Values, not only options: a comma list's last item, a format, a study name, the run
    ids and baseline names stored in the --db named so far."""
    from dlbench.store import Store

    db = tmp_path / "r.db"
    with Store(db) as store:
        for name in ("first", "second"):
            store.create_run(
                name=name,
                command="test",
                config_source="test",
                config_text="",
                experiment={},
                environment={},
                version="0",
            )
        store.save_baseline("main", 2, saved_by=None, command=None, note=None)
    script = tmp_path / "dlbench.bash"
    script.write_text(_script("bash"))
    tab = 'COMP_WORDS=({words}); COMP_CWORD={cword}; _dlbench_completion dlbench; echo "words: ${{COMPREPLY[*]}}"'
    typed = [
        ("dlbench run --framework to", 3),
        ("dlbench run --framework torch,j", 3),
        ("dlbench plan --optimizer ''", 3),
        ("dlbench report --format ma", 3),
        ("dlbench runs --format ''", 3),
        ("dlbench study run pa", 3),
        (f"dlbench report --db {db} --run ''", 5),
        (f"dlbench baseline show --db {db} ''", 5),
        ("dlbench run --executor r", 3),
    ]
    driver = "\n".join([f"source {script}", *(tab.format(words=w, cword=c) for w, c in typed)])
    proc = _run(["bash", "--norc", "--noprofile", "-c", driver])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "words: torch",
        "words: torch,jax",
        "words: sgd adam",
        "words: markdown",
        "words: console json",
        "words: patel",
        "words: 2 1",
        "words: main",
        "words: ray",
    ], proc.stdout
