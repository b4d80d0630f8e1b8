"""The stored experiment is the one that ran: file and flags merged, and it reads back."""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlbench import config
from dlbench.config_toml import derived_name, resolved, to_toml, value
from dlbench.plan import expand

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.toml"))
RICH = """
[experiment]
name = "odd \\"name\\" ü"
description = "line one\\nline two"
[matrix]
framework = ["numpy", "sklearn"]
model = ["mlp", "knn"]
dataset = ["digits", "synthetic"]
batch_size = [16, 64]
lr = [1e-05, 0.3]
[protocol]
steps = 7
repeats = 3
memory_limit = "+512MiB"
[synthetic]
shape = [12, 10, 3]
classes = 4
[[include]]
framework = ["sklearn"]
model = ["knn"]
[[exclude]]
framework = ["numpy"]
dataset = ["synthetic"]
[models.lstm]
hidden = 33
"""


def _same(a: config.Experiment, b: config.Experiment) -> None:
    for field in ("name", "description", "matrix", "protocol", "synthetic", "include", "exclude", "model_options"):
        assert getattr(a, field) == getattr(b, field), field


@pytest.mark.parametrize(
    "exp",
    [config.default(), config.parse(RICH, "rich.toml"), *(config.load(p) for p in EXAMPLES)],
    ids=lambda e: e.source,
)
def test_the_written_experiment_parses_back_to_the_same_plan(exp):
    again = config.parse(to_toml(exp), "again.toml")
    _same(exp, again)
    assert [t.case.key for t in expand(again).trials] == [t.case.key for t in expand(exp).trials]


def test_flags_on_the_default_are_what_is_stored_and_name_the_run():
    exp = config.override(config.default(), {"model": ["mlp"], "framework": ["torch", "jax"]}, {"epochs": 2})
    run = resolved(exp, flags_given=True)
    assert run.name == derived_name(exp) == "mlp on digits: torch, jax"
    assert "epochs = 2" in run.text and 'model = ["mlp"]' in run.text
    assert "knn" not in run.text and "[[include]]" not in run.text  # --framework narrowed the knn cell away
    assert run.source == "<embedded default.toml> with command-line flags"
    assert resolved(config.default(), flags_given=False).name == "default"


def test_values_are_toml():
    assert [value(x) for x in (True, 3, 0.001, 1e-05, 2.0, 'a"b', [1, "x"], {"k": 1})] == [
        "true",
        "3",
        "0.001",
        "1e-05",
        "2.0",
        '"a\\"b"',
        '[1, "x"]',
        "{k = 1}",  # tomlkit's spacing of an inline table (the hand-written writer put spaces inside the braces)
    ]
    with pytest.raises(ValueError):
        value(float("nan"))


def test_a_run_reports_the_configuration_that_ran(tmp_path, tiny_run, cli):
    db = tmp_path / "r.db"
    tiny_run(db, epochs=2)
    md = cli("report", "--db", db, "--format", "markdown", code=None)
    configuration = md.split("```toml")[1].split("```")[0]
    assert "epochs = 2" in configuration and 'model = ["mlp"]' in configuration
    assert "knn" not in configuration and "epochs = 10" not in configuration
    runs = cli("runs", "--db", db, code=None)
    assert "mlp on digits: numpy" in runs


# Characters TOML must escape in a basic string (the C0 controls, DEL, the quote, the
# backslash) beside ones it must leave alone (tab, non-ASCII, astral). The hand-written
# writer quoted with json.dumps, which left DEL (\x7f) raw: tomllib rejects that.
AWKWARD = [
    "del \x7f here",
    "".join(chr(c) for c in range(32)) + "\x7f",
    'quote " and backslash \\ and both \\"',
    "ü ß € 日本 😀 \u2028 \u00a0 \ufeff",
    "tab\tand\r\nnewlines\b\f",
    "trailing backslash \\",
    "'single' '''triple''' \"\"\"",
    "",
]


@pytest.mark.parametrize("text", AWKWARD, ids=ascii)
def test_strings_with_control_characters_round_trip_through_tomllib(text):
    assert tomllib.loads(f"v = {value(text)}")["v"] == text
    assert tomllib.loads(f"v = {value([text, {text: text}])}")["v"] == [text, {text: text}]
    exp = dataclasses.replace(config.default(), name=text, description=text, model_options={"mlp": {text: text}})
    data = tomllib.loads(to_toml(exp))
    assert data["experiment"]["name"] == text
    assert data["experiment"].get("description", "") == text  # an empty description is not written
    assert data["models"]["mlp"] == {text: text}


# derandomize, no example database: the same examples every run, nothing written beside the tests
@settings(max_examples=500, deadline=None, derandomize=True, database=None)
@given(st.text())
def test_any_string_round_trips_through_tomllib(text):
    assert tomllib.loads(f"v = {value(text)}")["v"] == text
    assert tomllib.loads(f"v = {value({text: [text]})}")["v"] == {text: [text]}
