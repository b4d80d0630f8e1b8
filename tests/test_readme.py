"""The README stays honest: its first screen holds the two commands (the test command as CI
runs it), a real answer block and the way to benchmark your own model; every link of the
README and docs/ leads to a file of this repository; nothing points outside it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
FIRST_SCREEN = 40  # lines: what a terminal or a repository page shows before scrolling
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
# What lives outside the repository and once was pointed at from its pages.
OUTSIDE = ("../shared", "shared/seeds", "DESIGN.md")


def _pages() -> list[Path]:
    return [README, ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _first_screen() -> str:
    return "\n".join(README.read_text(encoding="utf-8").splitlines()[:FIRST_SCREEN])


def _ci_test_command() -> str:
    lines = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    return lines[-1]


def test_the_first_screen_shows_both_commands_and_points_nowhere_outside():
    screen = _first_screen()
    blocks = re.findall(r"```bash\n(.*?)\n```", screen, re.S)
    assert "bash scripts/setup.sh && .venv/bin/dlbench run" in blocks, blocks
    assert _ci_test_command() in blocks, blocks
    assert "../" not in screen


def test_the_first_screen_shows_a_real_answer_and_how_to_benchmark_your_own_model():
    screen = _first_screen()
    text = re.findall(r"```text\n(.*?)\n```", screen, re.S)
    assert len(text) == 1, "one sample output on the first screen"
    answer = text[0].splitlines()
    # The answer block as `report` prints it: a subject, then per metric the best and the others.
    assert any("train time" in line for line in answer), answer
    assert any(re.search(r"\d(\.\d+)?× slower than", line) for line in answer), answer
    # Where and when it came from.
    before = screen[: screen.index("```text")]
    assert re.search(r"20\d\d-\d\d-\d\d", before) and "core" in before
    assert "--model" in screen and "docs/tutorial.md" in screen


def test_the_commands_table_has_one_short_row_per_command():
    text = README.read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith("| `dlbench ")]
    commands = {re.match(r"\| `dlbench (\w+)", row).group(1) for row in rows}  # type: ignore[union-attr]
    assert {"run", "plan", "report", "compare", "extend", "explain", "study", "env"} <= commands, commands
    long = [row for row in rows if len(row) > 200]
    assert not long, long
    assert "[docs/cli.md](docs/cli.md)" in text


def test_every_link_of_the_readme_and_docs_leads_to_a_file_inside_the_repository():
    broken, outside = [], []
    for page in _pages():
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue  # a web address or an anchor on the same page
            path = (page.parent / target.split("#", 1)[0]).resolve()
            where = f"{page.relative_to(ROOT)}: {target}"
            if not path.is_relative_to(ROOT):
                outside.append(where)
            elif not path.exists():
                broken.append(where)
    assert not outside, outside
    assert not broken, broken


def test_no_page_points_outside_the_repository():
    found = [
        f"{page.relative_to(ROOT)}:{n}: {line.strip()}"
        for page in _pages()
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if any(word in line for word in OUTSIDE)
    ]
    assert not found, found


def test_the_readme_links_each_reference_page_it_replaced():
    text = README.read_text(encoding="utf-8")
    for page in ("usage", "measurement", "install", "troubleshooting", "papers", "design", "tutorial", "cli"):
        assert f"(docs/{page}.md" in text, page
    assert len(text.splitlines()) < 200, "the README is an overview; reference goes into docs/"
