"""Regenerate the measured sections of docs/studies/*.md and docs/papers.md from the stored databases.

Each study page keeps hand-written prose; what it shows of a measurement sits between
``<!-- dlbench:generated NAME begin -->`` and ``<!-- dlbench:generated NAME end -->`` and is
exactly what a dlbench command prints from a database committed under docs/studies/data/.
So a number on those pages cannot drift from the data behind it, and a change in the
report's wording reaches the pages by running this script once::

    .venv/bin/python scripts/study_docs.py           # rewrite the generated sections
    .venv/bin/python scripts/study_docs.py --check   # exit 1 with a diff where a page differs

tests/test_study_docs.py runs the check. It only renders reports from the stored
databases (no training): a few seconds a page.

Each study's database is the largest scale stored for it: the first of
``docs/studies/data/STUDY-SCALE.db.xz`` that exists, SCALE in SCALES order (paper, cpu,
quick, smoke); `databases()` is that choice, the one place every section reads it from.
Committing STUDY-quick.db.xz beside STUDY-smoke.db.xz switches the study's page and its
rows of docs/papers.md to it on the next run.

What is embedded of each command's output:

- ``study-report``: ``dlbench study report STUDY --db docs/studies/data/STUDY-SCALE.db
  --format markdown`` from its first section ("The paper vs this run") through the run's
  status line and stored command, stopping before the configuration; the report's
  ``#`` title line is left out (the page has its own).
- ``run-N-report`` (a study measured in parts, PART_RUNS): ``dlbench report --run N --db
  docs/studies/data/STUDY-SCALE.db --format markdown``, excerpted as the study report is:
  the report of a run that completes the study's measurement, whose claims the
  ``study-report`` section already checks.
- ``explain-report`` (dai only): ``dlbench explain --show 2 --db
  docs/studies/data/dai-smoke.db --format markdown --out docs/studies/dai_explain.md``
  without its title line; its bar charts land in docs/studies/dai_explain_figures/.
- ``papers-table`` (docs/papers.md): every claim of the five papers beside dlbench's
  number, 95% CI and verdict, built as data from each study's database with the library
  (dlbench.studies.paper_vs_run.compare, the comparison `dlbench study report` prints):
  scripts/papers_table.py.

The databases are stored xz-compressed (``docs/studies/data/*.db.xz``: SQLite pages
compress about 7x, dai's 2 MB of profile and telemetry rows to 0.3 MB); ``xz -dk FILE``
gives the database itself, to read with any dlbench command. They were produced on the
project's shared 2-core CPU VM, one at a time, from the repository root, then compressed
with ``xz -9e`` (each command is also stored in its database; the study pages print it)::

    dlbench study run germino --scale smoke --db docs/studies/data/germino-smoke.db
    dlbench study run florencio --scale smoke --db docs/studies/data/florencio-smoke.db
    dlbench study run sumanjali --scale smoke --db docs/studies/data/sumanjali-smoke.db
    dlbench study run patel --scale smoke --db docs/studies/data/patel-smoke.db
    dlbench study run dai --scale smoke --db docs/studies/data/dai-smoke.db
    dlbench explain 1 --db docs/studies/data/dai-smoke.db --only layout,variant=xla \\
        --blocks 6 --repeats 3 --warmup 1 --profile-steps 4 --profile-calls 2

The commands run on decompressed copies in a temporary directory laid out like the
repository, so that the committed files are never opened for writing (``explain --show``
opens its database writable) and every path a report prints is the same relative path
on every machine. SOURCE_DATE_EPOCH and a fixed ``svg.hashsalt`` make matplotlib's SVG
output byte-for-byte repeatable.
"""

from __future__ import annotations

import argparse
import difflib
import lzma
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
DATA = "docs/studies/data"
STUDY_NAMES = ("dai", "florencio", "germino", "patel", "sumanjali")
# Which stored database each study's sections read: the first of these scales stored as
# docs/studies/data/<study>-<scale>.db.xz, the largest first.
SCALES = ("paper", "cpu", "quick", "smoke")
PAPERS_PAGE = "papers.md"  # relative to docs/, like the study pages ("studies/<study>.md")

# dai's explain report: the database and run id that hold it (run 1 of dai-smoke.db is the
# study run it explains; the page's study report reads the largest scale, the explain
# report stays with the run it explains), the file name --out is given (its figures folder
# is named after it: <stem>_figures).
DAI_EXPLAIN_DB = f"{DATA}/dai-smoke.db"
DAI_EXPLAIN_RUN = 2
DAI_EXPLAIN_OUT = "docs/studies/dai_explain.md"
DAI_FIGURES = "docs/studies/dai_explain_figures"
# Runs that complete a study's measurement (dlbench.service.studies.parts: the same study and
# scale on the same machine, measuring other cases), by study: `study report` reads them with
# the latest one and prints the first run's report; the page shows each other run's report
# in its own section, run-N-report, from `dlbench report --run N --db DB --format markdown`.
PART_RUNS: dict[str, tuple[int, ...]] = {"patel": (2,)}


def databases(data: Path | None = None) -> dict[str, str]:
    """Each study's database, relative to the repository root and without its .xz: the
    largest scale stored for it (SCALES order). `data`: the folder to look in (DATA)."""
    folder = data if data is not None else ROOT / DATA
    out: dict[str, str] = {}
    for name in STUDY_NAMES:
        found = next((s for s in SCALES if (folder / f"{name}-{s}.db.xz").is_file()), None)
        if found is None:
            raise GenerationError(f"{DATA}: no {name}-<scale>.db.xz for any scale of {', '.join(SCALES)}")
        out[name] = f"{DATA}/{name}-{found}.db"
    return out


MARKER = re.compile(r"^<!-- dlbench:generated (?P<name>[a-z0-9-]+) (?P<edge>begin|end) -->$")


class GenerationError(Exception):
    """A command failed, or its output or a page is not laid out as this script expects."""


@dataclass(frozen=True)
class Block:
    """One generated section: the page it sits in, its marker name, the dlbench command
    (run from the temporary repository root) and how its output becomes the section."""

    page: str
    name: str
    db: str  # the database the command reads, relative to the repository root
    args: tuple[str, ...]
    excerpt: Callable[[str], str]
    out: str | None = None  # the command writes its report here instead of stdout

    @property
    def command(self) -> str:
        return "dlbench " + " ".join(a if re.fullmatch(r"[\w./=,:-]+", a) else repr(a) for a in self.args)


def _drop_title(text: str) -> list[str]:
    lines = text.splitlines()
    if not lines or not lines[0].startswith("# "):
        raise GenerationError(f"expected a '# ' title line first, got {lines[:1]!r}")
    return lines[1:]


def study_excerpt(text: str) -> str:
    """The study report from its first section through the stored command: the paper vs
    this run, the run's answer, its status line and the command that made it. The
    configuration and the per-case tables after it are left to `dlbench study report`."""
    lines = _drop_title(text)
    start = next((i for i, line in enumerate(lines) if line.startswith("## ")), None)
    end = next((i for i, line in enumerate(lines) if line.startswith(("Configuration (", "Settings shared by"))), None)
    if start is None or end is None or end < start:
        raise GenerationError("study report: no '## ' section before a 'Configuration (' line")
    return "\n".join(lines[start:end]).strip("\n")


def explain_excerpt(text: str) -> str:
    """The explain report without its title line (the page has its own headings)."""
    return "\n".join(_drop_title(text)).strip("\n")


def blocks() -> list[Block]:
    dbs = databases()
    out = [
        Block(
            page=f"studies/{name}.md",
            name="study-report",
            db=dbs[name],
            args=("study", "report", name, "--db", dbs[name], "--format", "markdown"),
            excerpt=study_excerpt,
        )
        for name in STUDY_NAMES
    ]
    out += [
        Block(
            page=f"studies/{name}.md",
            name=f"run-{run_id}-report",
            db=dbs[name],
            args=("report", "--run", str(run_id), "--db", dbs[name], "--format", "markdown"),
            excerpt=study_excerpt,
        )
        for name, ids in PART_RUNS.items()
        for run_id in ids
    ]
    out.append(
        Block(
            page="studies/dai.md",
            name="explain-report",
            db=DAI_EXPLAIN_DB,
            args=(
                "explain",
                "--show",
                str(DAI_EXPLAIN_RUN),
                "--db",
                DAI_EXPLAIN_DB,
                "--format",
                "markdown",
                "--out",
                DAI_EXPLAIN_OUT,
            ),
            excerpt=explain_excerpt,
            out=DAI_EXPLAIN_OUT,
        )
    )
    return out


def _environment(tmp: Path) -> dict[str, str]:
    """The commands' environment: repeatable SVGs, no colour or terminal width in play."""
    rc_dir = tmp / "matplotlibrc.d"
    rc_dir.mkdir()
    # A fixed salt: matplotlib otherwise salts the SVG element ids with a random uuid.
    (rc_dir / "matplotlibrc").write_text("svg.hashsalt: dlbench-study-docs\n", encoding="utf-8")
    env = dict(os.environ)
    env.update(
        {
            "SOURCE_DATE_EPOCH": "0",  # the SVG's dc:date, otherwise the time of the run
            "MATPLOTLIBRC": str(rc_dir),
            "MPLBACKEND": "Agg",
            "NO_COLOR": "1",
            "COLUMNS": "120",
            "TZ": "UTC",
            "PYTHONHASHSEED": "0",
        }
    )
    return env


def _decompress(db: str, root: Path) -> Path:
    """The committed `db`.xz decompressed to the same relative path under `root`."""
    path = root / db
    path.parent.mkdir(parents=True, exist_ok=True)
    with lzma.open(ROOT / f"{db}.xz") as src, path.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    return path


def _papers_table(root: Path) -> str:
    """docs/papers.md's table (scripts/papers_table.py) from every study's database,
    decompressed under `root`."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    try:
        import papers_table
    finally:
        sys.path.pop(0)
    copies = {name: (f"{db}.xz", _decompress(db, root)) for name, db in databases().items()}
    try:
        body = papers_table.render(papers_table.build(copies))
    except papers_table.TableError as exc:
        raise GenerationError(str(exc)) from exc
    note = (
        "<!-- generated by scripts/study_docs.py (scripts/papers_table.py) from the databases in "
        f"{DATA}/; edit the prose outside these markers, not this section -->"
    )
    return f"{note}\n\n{body}"


def _run(block: Block, root: Path, env: dict[str, str]) -> str:
    """Run the block's command in `root`, a fresh directory laid out like the repository
    with the block's database decompressed into it, and return the section's text."""
    _decompress(block.db, root)
    proc = subprocess.run(
        [sys.executable, "-m", "dlbench", *block.args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise GenerationError(
            f"{block.command} exited {proc.returncode}:\n{proc.stderr.strip() or proc.stdout.strip()}"
        )
    text = (root / block.out).read_text(encoding="utf-8") if block.out else proc.stdout
    body = block.excerpt(text)
    note = (
        f"<!-- generated by scripts/study_docs.py from `{block.command}`; "
        "edit the prose outside these markers, not this section -->"
    )
    return f"{note}\n\n{body}\n"


def generate() -> tuple[dict[tuple[str, str], str], dict[str, bytes]]:
    """Every block's text by (page, name), and the figures by file name."""
    with tempfile.TemporaryDirectory(prefix="dlbench-study-docs-") as tmp_name:
        tmp = Path(tmp_name)
        env = _environment(tmp)
        todo = blocks()
        # One root per command, so that no two commands share a database file (explain
        # --show opens its database writable); two at a time, each being mostly its own
        # interpreter's imports.
        roots = [tmp / f"repo-{i}" for i in range(len(todo))]
        with ThreadPoolExecutor(max_workers=2) as pool:
            jobs = [pool.submit(_run, block, root, env) for block, root in zip(todo, roots, strict=True)]
            # The papers table reads its own copies in this process while the commands run.
            papers = _papers_table(tmp / "papers")
            texts = [job.result() for job in jobs]
        explain_root = next(r for b, r in zip(todo, roots, strict=True) if b.out == DAI_EXPLAIN_OUT)
        figure_dir = explain_root / DAI_FIGURES
        figures = {p.name: p.read_bytes() for p in sorted(figure_dir.glob("*")) if p.is_file()}
    generated = {(b.page, b.name): t for b, t in zip(todo, texts, strict=True)}
    generated[(PAPERS_PAGE, "papers-table")] = papers
    return generated, figures


def splice(page: str, text: str, generated: dict[tuple[str, str], str]) -> str:
    """The page with each marked section replaced by its generated text. Every marker pair
    must be known, and every block of this page must have its markers."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    inside: str | None = None
    seen: list[str] = []
    for number, line in enumerate(lines, 1):
        m = MARKER.match(line.rstrip("\n"))
        if m is None:
            if inside is None:
                out.append(line)
            continue
        name, edge = m["name"], m["edge"]
        if edge == "begin":
            if inside is not None:
                raise GenerationError(f"{page}:{number}: '{name} begin' inside '{inside}'")
            if (page, name) not in generated:
                raise GenerationError(f"{page}:{number}: no generated section named {name!r} for this page")
            if name in seen:
                raise GenerationError(f"{page}:{number}: section {name!r} marked twice")
            inside = name
            seen.append(name)
            out += [line, "\n", generated[(page, name)], "\n"]
        else:
            if inside != name:
                raise GenerationError(f"{page}:{number}: '{name} end' without its begin")
            inside = None
            out.append(line)
    if inside is not None:
        raise GenerationError(f"{page}: section {inside!r} has no end marker")
    missing = sorted(n for p, n in generated if p == page and n not in seen)
    if missing:
        raise GenerationError(f"{page}: no markers for {', '.join(missing)}")
    return "".join(out)


def _diff(name: str, old: str, new: str) -> str:
    return "".join(
        difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"{name} (now)", f"{name} (generated)")
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 and print a diff where a page or figure differs"
    )
    args = parser.parse_args(argv)
    try:
        generated, figures = generate()
        pages = {page: (DOCS / page).read_text(encoding="utf-8") for page, _ in generated}
        new_pages = {page: splice(page, text, generated) for page, text in pages.items()}
    except GenerationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    figure_dir = ROOT / DAI_FIGURES
    old_figures = {p.name: p.read_bytes() for p in sorted(figure_dir.glob("*")) if p.is_file()}
    changed = [page for page in sorted(pages) if pages[page] != new_pages[page]]
    changed_figures = sorted(n for n in set(figures) | set(old_figures) if figures.get(n) != old_figures.get(n))

    if args.check:
        for page in changed:
            sys.stdout.write(_diff(f"docs/{page}", pages[page], new_pages[page]))
        for name in changed_figures:
            state = "missing" if name not in old_figures else "stale" if name not in figures else "differs"
            print(f"{DAI_FIGURES}/{name}: {state}")
        if changed or changed_figures:
            print(
                f"{len(changed)} page(s) and {len(changed_figures)} figure(s) differ from what "
                "`python scripts/study_docs.py` writes: run it and commit the result",
                file=sys.stderr,
            )
            return 1
        return 0

    for page in changed:
        (DOCS / page).write_text(new_pages[page], encoding="utf-8")
        print(f"wrote docs/{page}")
    figure_dir.mkdir(parents=True, exist_ok=True)
    for name in changed_figures:
        path = figure_dir / name
        if name in figures:
            path.write_bytes(figures[name])
            print(f"wrote {DAI_FIGURES}/{name}")
        else:
            path.unlink()  # a figure of an earlier explain run that this one does not draw
            print(f"removed {DAI_FIGURES}/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
