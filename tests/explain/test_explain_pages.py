"""The explain report's written pages: HTML from its template, escaped, self-contained,
the bars inlined; Markdown with the bars beside it; neither touches the caller's
matplotlib settings. Hand-made sections: what is checked is the rendering, not the
numbers (those are test_explain_cli's)."""

from __future__ import annotations

import base64
import re
from dataclasses import replace

import matplotlib
import pytest
from tests.explain.test_ablation_plan import BASE

from dlbench.explain import ablation
from dlbench.explain.categories import CATEGORIES
from dlbench.report import explain
from dlbench.report.render import Preface, TableData

HOSTILE = '<script>alert("x")</script> & "quotes"'


def _section(title: str = "torch vs tensorflow on lenet5", bars: bool = True) -> explain.Section:
    table = TableData(
        f"cases {HOSTILE}",
        ["case", "ms/step"],
        [["torch", "1.50"], ["tensorflow", "2.70"]],
        caption="median of 6 repeats",
        notes=["a note"],
        align=["left", "right"],
    )
    shares = {c: 0.0 for c in CATEGORIES}
    values = [("torch", {**shares, "convolution": 1.0, "overhead": 0.5}), ("tensorflow", {**shares, "matmul": 2.7})]
    return explain.Section(
        Preface(title, ["B is 1.80x slower than A", f"line with {HOSTILE}"], [table]), values if bars else []
    )


def test_html_is_one_escaped_self_contained_page_with_the_bars_inlined():
    page = explain.html([_section(), _section("no profile", bars=False)], f"why {HOSTILE}")
    assert page.startswith("<!DOCTYPE html>")
    assert "<script" not in page  # every user string escaped, no script of its own
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; &#34;quotes&#34;" in page
    assert not re.search(r"(src|href)=\"https?:", page)  # loads nothing from the network
    uris = re.findall(r'src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(uris) == 1  # the section without a profile has no bars
    svg = base64.b64decode(uris[0]).decode()
    assert "<svg" in svg and "convolution" in svg  # text as text: the legend is searchable
    assert page.count("<table>") == 2 and '<td class="num">2.70</td>' in page
    assert page.index("B is 1.80x slower") < page.index("<table>")  # the answer first
    assert "median of 6 repeats" in page and "a note" in page


def test_html_of_nothing_says_so():
    assert "Nothing to explain." in explain.html([], "empty")


def test_markdown_links_the_bars_it_drew(tmp_path):
    text = explain.markdown([_section()], "why", figures=tmp_path / "fig", base=tmp_path)
    assert text.startswith("# why")
    assert "![torch vs tensorflow on lenet5](fig/explain_1.svg)" in text
    assert (tmp_path / "fig" / "explain_1.svg").read_text().count("<svg") == 1


@pytest.mark.parametrize("fonttype", ["path", "none"])
def test_drawing_the_bars_leaves_the_callers_matplotlib_settings_alone(tmp_path, fonttype):
    with matplotlib.rc_context({"svg.fonttype": fonttype}):
        explain.draw_bars(_section(), tmp_path / "b.svg")
        assert matplotlib.rcParams["svg.fonttype"] == fonttype


def _gap(pair: ablation.Pair) -> ablation.Gap:
    return ablation.Gap(pair, 0.002, 0.003, 1.5, (1.4, 1.6), None, 6)


def test_settings_that_could_not_run_are_named_with_why_not_hidden_behind_nothing_differs():
    b = replace(BASE, threads=1)
    none_ran = ablation.pair_for(BASE, b, cores=2, only=("precision=tf32",))
    lines = explain.ablation_lines(_gap(none_ran))
    assert lines[0] == "No setting toggled: none of the candidate settings could run here."
    assert "Not tried: precision float32 -> tf32: precision tf32 is the TensorFloat-32 math mode" in lines[1]
    nothing = ablation.Pair(BASE, b, ())
    assert explain.ablation_lines(_gap(nothing))[0].startswith("No setting toggled: A and B agree")
