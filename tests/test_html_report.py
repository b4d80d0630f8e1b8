"""The HTML report's answer box (green, or amber with the warnings the answer carries)
and its figures (at the content column's width), on the rendered HTML of stored runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dlbench.report import html as html_report
from dlbench.report.answer import Answer, AnswerItem
from dlbench.report.html import answer_state
from dlbench.report.model import build_report
from dlbench.store import Measurement, Store
from stored_cases import stored_case

BUSY_SHARE = 30.0  # % of all cores other processes took: above the 15% threshold


def _store_run(db: Path, busy: str | None = None, blocks: int = 8) -> Path:
    """A stored run of torch and jax on one model, 8 blocks by default (enough for the paired
    test to decide; 1: one process per case), jax clearly 1.5x slower; `busy`: the case whose
    trials read BUSY_SHARE."""
    store = Store(db)
    run_id = store.create_run(
        name="two-way",
        command="dlbench run two.toml",
        config_source="two.toml",
        config_text='[experiment]\nname = "two-way"\n',
        experiment={},
        environment={"hostname": "test", "packages": {"numpy": "2"}},
        version="0.1.0",
    )
    cases = {"fast": stored_case("torch", "eager"), "slow": stored_case("jax", "jit")}
    base = {"fast": 1.0, "slow": 1.5}
    for block in range(blocks):
        for pos, (key, case) in enumerate(cases.items()):
            tid = store.add_trial(run_id, case_key=key, block=block, position=pos, case=case, protocol={})
            store.set_manifest(tid, {"threads": {"intra_op": 2}, "variant": case["variant"]})
            rows = [
                Measurement(r, False, "train", "time", base[key] * (1 + 0.01 * block + 0.003 * r), "s")
                for r in range(3)
            ]
            rows += [Measurement(r, False, "accuracy", "accuracy", 0.9, "fraction") for r in range(3)]
            share = BUSY_SHARE if key == busy else 4.0
            rows += [Measurement(r, False, "train", "cpu.others_util:mean", share, "%") for r in range(3)]
            store.add_measurements(tid, rows)
            store.finish_trial(tid, status="ok", error=None, returncode=0, wall_s=1.0, stderr="")
    store.finish_run(run_id, "finished")
    store.close()
    return db


@pytest.fixture(scope="module")
def pages(tmp_path_factory, cli) -> dict[str, str]:
    """The HTML report of a clean decided run, of the same run with one busy case, and of
    the run taken in one block (one process per case: a ratio, no verdict)."""
    tmp = tmp_path_factory.mktemp("html")
    dbs = {
        "clean": _store_run(tmp / "clean.db"),
        "busy": _store_run(tmp / "busy.db", busy="slow"),
        "one_process": _store_run(tmp / "one.db", blocks=1),
    }
    # The answer's pages rendered from the stored runs without figures (drawing them is most of
    # a report's time); the one-process run's page through `dlbench report`, figures included.
    out = {}
    for name, db in dbs.items():
        if name == "one_process":
            html = tmp / f"{name}.html"
            cli("report", "--format", "html", "--out", html, "--db", db)
            out[name] = html.read_text(encoding="utf-8")
        else:
            with Store(db) as store:
                out[name] = html_report.render(build_report(store, store.run()["id"], hypotheses=False))
    return out


def _answer_section(page: str) -> str:
    match = re.search(r'<section class="answer[^"]*"[^>]*>.*?</section>', page, re.S)
    assert match, "no answer section"
    return match.group(0)


def _state(page: str) -> str:
    match = re.search(r'<section class="answer answer-(\w+)" id="answer" data-state="(\w+)">', page)
    assert match, "the answer section carries no state"
    assert match.group(1) == match.group(2)
    return match.group(1)


def test_a_decided_run_on_a_quiet_machine_has_a_green_answer_box(pages):
    section = _answer_section(pages["clean"])
    assert _state(pages["clean"]) == "ok"
    assert "answer-warnings" not in section and "Warning:" not in section
    assert "torch:eager is fastest" in section
    assert re.search(r"jax:jit 1\.5\d?× slower than torch:eager .*: slower</li>", section), section


def test_a_busy_case_turns_the_answer_box_amber_with_the_warning_in_its_head(pages):
    page = pages["busy"]
    section = _answer_section(page)
    assert _state(page) == "warning"
    warnings = re.findall(r'<p class="warning"><strong>Warning:</strong> (.*?)</p>', section, re.S)
    assert len(warnings) == 1, warnings
    assert "busy machine" in warnings[0] and f"{BUSY_SHARE:.0f}%" in warnings[0]
    assert "1 warning</span>" in section
    # The warning comes before the first answer line, and the busy case's line is marked. A
    # time measured on a busy machine is not decided: no "fastest", the ratio and why.
    assert section.index("Warning:") < section.index("no framework is decided fastest here")
    assert re.search(r'<li class="warned">jax:jit [^<]*not decided: the machine was busy[^<]*\[BUSY\]</li>', section)
    assert re.search(
        r"<div><span class=\"metric\">train time[^<]*</span> no framework is decided fastest here \(lowest median: "
        r"torch:eager",
        section,
    )
    # The CSS gives the state its amber colour.
    assert re.search(r"\.answer\.answer-warning \{[^}]*#bf8700", page)


def test_a_run_of_one_process_per_case_warns_that_there_is_no_verdict(pages):
    section = _answer_section(pages["one_process"])
    assert _state(pages["one_process"]) == "warning"
    warnings = re.findall(r'<p class="warning"><strong>Warning:</strong> (.*?)</p>', section, re.S)
    assert any("no verdict" in w and "one process" in w for w in warnings), warnings
    # Each comparison line (train time, accuracy) is marked.
    assert section.count('<li class="warned">') == section.count("<li") == 2


def test_undecided_lines_are_counted_and_notes_that_warn_are_split_from_those_that_do_not():
    answer = Answer(
        items=[
            AnswerItem("mlp", "train time", "no framework is decided fastest here", ("b 1.01× slower: undecided",)),
            AnswerItem("mlp", "inference time", "a is fastest: median 2 ms", ("b 3× slower: slower",)),
        ],
        notes=["ratio of medians, 95% bootstrap CI"],
    )
    answer.warn("MIXED HARDWARE: the ok trials ran on 2 kinds of machine", first=True)
    state = answer_state(answer)
    assert state.state == "warning"
    assert state.warnings[0].startswith("MIXED HARDWARE")
    assert state.warnings[1].startswith("1 of 2 comparison(s) undecided")
    assert state.notes == ("ratio of medians, 95% bootstrap CI",)
    assert state.warned_lines == {"b 1.01× slower: undecided"}
    assert answer_state(Answer(empty="nothing to compare")).warnings == ("nothing to compare",)
    assert answer_state(Answer(items=answer.items[1:], notes=answer.notes[1:])).state == "ok"
    # A note is a warning because it was added as one (Answer.warn), whatever its words.
    assert answer_state(Answer(notes=["on a busy machine, one process"])).warnings == ()


def test_figures_are_shown_at_the_width_of_the_content_column(pages):
    page = pages["one_process"]
    figures = re.findall(r"<figure[^>]*>\s*<img ([^>]*)>", page)
    assert figures, "the report shows no figure"
    # No width or height attribute pins an image to its file's pixel size.
    assert all(not re.search(r"\b(width|height)=", attrs) for attrs in figures), figures
    rule = re.search(r"figure img \{([^}]*)\}", page)
    assert rule, "no CSS rule for the figures"
    css = dict(part.strip().split(":", 1) for part in rule.group(1).split(";") if part.strip())
    assert css["width"].strip() == "100%" and css["max-width"].strip() == "100%", css
    assert css["height"].strip() == "auto"
    # The figure itself is not narrowed: no max-width on figure, and the column is the page's.
    figure_rule = re.search(r"\n\s*figure \{([^}]*)\}", page)
    assert figure_rule and "width" not in figure_rule.group(1)
    assert re.search(r"body \{[^}]*max-width: 1400px", page)
