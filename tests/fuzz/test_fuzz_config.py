"""Fuzzed experiment files: config.parse and plan.expand never raise anything but
ConfigError (no traceback reaches a user), every refusal is one line naming the
file and the key or section, and every accepted experiment is one a worker can run
(see invariants.check_accepted). Derandomized: CI tries the same inputs every time."""

from __future__ import annotations

import string

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dlbench import config
from dlbench.config import ConfigError
from dlbench.store import Store

from .invariants import check_accepted, check_refusal, tally
from .strategies import experiment_docs, toml_document

SOURCE = "fuzz.toml"
FUZZ = settings(
    max_examples=1800,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SMALL = settings(FUZZ, max_examples=600)

# The words a refusal may name: sections, keys and the phrases of whole-file problems.
SECTION_WORDS = (
    "[matrix]",
    "[protocol]",
    "[synthetic]",
    "[experiment]",
    "[[include]]",
    "[[exclude]]",
    "[models",
    "[include]",
    "[exclude]",
    "unknown key",
    "not valid TOML",
    "must be a table",
    "matrix cells x",
)

STORE = Store(":memory:")


def _try(text: str, kind: str, store=None) -> None:
    try:
        exp = config.parse(text, SOURCE)
    except ConfigError as exc:
        tally(kind, accepted=False)
        check_refusal(exc, SOURCE, SECTION_WORDS)
        return
    check_accepted(exp, store)
    tally(kind, accepted=True)


@FUZZ
@given(experiment_docs())
def test_generated_experiment_files(doc):
    _try(toml_document(doc), "generated experiment file", STORE)


@SMALL
@given(experiment_docs(), st.data())
def test_mutated_experiment_files(doc, data):
    """A generated file with one edit: a character replaced, deleted or inserted, or a
    hostile token spliced in (near-valid TOML that a generator of values never writes)."""
    text = toml_document(doc)
    at = data.draw(st.integers(0, len(text)))
    edit = data.draw(st.sampled_from(["replace", "delete", "insert", "token"]))
    if edit == "replace":
        text = text[:at] + data.draw(st.characters()) + text[at + 1 :]
    elif edit == "delete":
        text = text[:at] + text[at + 1 :]
    elif edit == "insert":
        text = text[:at] + data.draw(st.text(string.printable, max_size=3)) + text[at:]
    else:
        token = data.draw(
            st.sampled_from(
                [
                    "nan",
                    "inf",
                    "-inf",
                    "1e999",
                    "99999999999999999999",
                    "-1",
                    "[]",
                    "{}",
                    "[[]]",
                    '""',
                    "true",
                    "0x7fffffffffffffff",
                    "1979-05-27",
                    "'''",
                    "\n[protocol]\n",
                    "\n[[include]]\n",
                    "[" * 50,
                ]
            )
        )
        text = text[:at] + token + text[at:]
    _try(text, "mutated experiment file")


@SMALL
@given(st.text(max_size=200))
@example("v = " + "[" * 5000)  # RecursionError inside tomllib
@example("[protocol]\nseed = " + "9" * 5000)  # beyond Python's int-from-string limit
@example("[protocol]\ntimeout = " + "9" * 400)  # an int no float can hold
@example("[matrix]\nmodel." + "a." * 2000 + "b = 1")  # a table nested 2000 deep, shown in the message
@example("[models.lstm]\nhidden." + "a." * 2000 + "b = 1")
def test_raw_text(text):
    _try(text, "raw text")


@SMALL
@given(st.binary(max_size=200))
@example(b"\xff\xfe[protocol]")
@example(b"\xef\xbb\xbf[protocol]\nrepeats = 2\n")  # a byte-order mark
@example(b"[matrix]\x00\nmodel = 'mlp'")
def test_raw_bytes_through_load(tmp_path_factory, data):
    path = tmp_path_factory.getbasetemp() / "fuzz.toml"
    path.write_bytes(data)
    try:
        exp = config.load(path)
    except ConfigError as exc:
        tally("raw bytes file", accepted=False)
        check_refusal(exc, str(path))
        return
    check_accepted(exp)
    tally("raw bytes file", accepted=True)
