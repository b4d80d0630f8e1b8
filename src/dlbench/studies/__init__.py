"""The seed papers' experiments as built-in, versioned studies.

Each study is a folder `studies/<name>/` holding study.toml (the paper's design as an
experiment, with smoke / quick / paper scales: dlbench.studies.spec), facts.toml (the
paper's reported numbers: dlbench.studies.facts) and paper.md (the paper's design in
words). Studies are named after the paper's first author.
"""

from __future__ import annotations

from importlib import resources

from dlbench.config import ConfigError
from dlbench.studies.facts import Facts
from dlbench.studies.facts import parse as parse_facts
from dlbench.studies.spec import SCALES, Study
from dlbench.studies.spec import parse as parse_study

NAMES = ("germino", "patel", "florencio", "sumanjali", "dai")

__all__ = ["NAMES", "SCALES", "Facts", "Study", "load", "load_facts", "paper_notes"]


def _text(name: str, file: str) -> str:
    if name not in NAMES:
        raise ConfigError(f"study {name!r}: unknown; studies: {', '.join(NAMES)}")
    return resources.files(__package__).joinpath(name, file).read_text(encoding="utf-8")


def load(name: str) -> Study:
    """The study `name`, checked."""
    return parse_study(_text(name, "study.toml"), f"studies/{name}/study.toml")


def load_facts(name: str) -> Facts:
    """The paper's reported numbers for study `name`, checked."""
    return parse_facts(_text(name, "facts.toml"), f"studies/{name}/facts.toml")


def paper_notes(name: str) -> str:
    """The paper's design in words (studies/<name>/paper.md)."""
    return _text(name, "paper.md")
