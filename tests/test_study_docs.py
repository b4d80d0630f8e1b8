"""docs/studies/*.md and docs/papers.md cannot drift: their generated sections are what
scripts/study_docs.py writes from the databases stored in docs/studies/data/ (rendering
only, no training)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "study_docs.py"


def _script() -> ModuleType:
    # scripts/ is not a package: load the generator by path for its pure functions.
    spec = importlib.util.spec_from_file_location("study_docs", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("study_docs", module)  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_study_pages_are_what_the_generator_writes() -> None:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"], cwd=ROOT, capture_output=True, text=True, timeout=600, check=False
    )
    assert proc.returncode == 0, (
        "docs/studies or docs/papers.md differ from what `python scripts/study_docs.py` writes "
        f"(run it and commit the result):\n{proc.stdout[-20000:]}\n{proc.stderr[-5000:]}"
    )


def test_stored_databases_stay_small() -> None:
    # Committed to the repository: <study>-<scale>.db.xz, under 1 MiB each. A quick run of
    # 72-126 processes keeps every raw telemetry sample (its series: 2.5 of dai's 4.5 MB),
    # 0.5-0.7 MiB compressed; the cap keeps a paper-scale database (tens of MiB) out.
    docs = _script()
    stored = sorted((ROOT / "docs" / "studies" / "data").glob("*.db.xz"))
    names = {f"{s}-{scale}.db.xz" for s in docs.STUDY_NAMES for scale in docs.SCALES}
    assert stored and {p.name for p in stored} <= names, sorted(p.name for p in stored)
    assert all(p.stat().st_size < 1024 * 1024 for p in stored), {p.name: p.stat().st_size for p in stored}


def test_each_study_reads_its_largest_stored_scale(tmp_path: Path) -> None:
    """One choice for every study section (the study page, docs/papers.md's rows): paper >
    cpu > quick > smoke, whichever is stored. dai's explain report stays with the run it
    explains, run 2 of the smoke database."""
    docs = _script()
    assert docs.SCALES == ("paper", "cpu", "quick", "smoke")
    for name in docs.STUDY_NAMES:
        (tmp_path / f"{name}-smoke.db.xz").touch()
    (tmp_path / "germino-quick.db.xz").touch()
    (tmp_path / "dai-cpu.db.xz").touch()
    (tmp_path / "dai-quick.db.xz").touch()
    found = docs.databases(tmp_path)
    assert found["germino"] == f"{docs.DATA}/germino-quick.db"
    assert found["dai"] == f"{docs.DATA}/dai-cpu.db"
    assert found["patel"] == f"{docs.DATA}/patel-smoke.db"
    dai = {b.name: b.db for b in docs.blocks() if b.page == "studies/dai.md"}
    assert dai == {"study-report": docs.databases()["dai"], "explain-report": f"{docs.DATA}/dai-smoke.db"}
    (tmp_path / "patel-smoke.db.xz").unlink()
    with pytest.raises(docs.GenerationError, match="no patel-<scale>.db.xz"):
        docs.databases(tmp_path)


def test_splice_replaces_only_between_markers() -> None:
    docs = _script()
    page = "intro\n<!-- dlbench:generated x begin -->\nold\n<!-- dlbench:generated x end -->\nprose\n"
    out = docs.splice("p.md", page, {("p.md", "x"): "new\n"})
    assert out == "intro\n<!-- dlbench:generated x begin -->\n\nnew\n\n<!-- dlbench:generated x end -->\nprose\n"
    assert docs.splice("p.md", out, {("p.md", "x"): "new\n"}) == out  # idempotent


@pytest.mark.parametrize(
    ("page", "message"),
    [
        ("<!-- dlbench:generated y begin -->\n<!-- dlbench:generated y end -->\n", "no generated section named 'y'"),
        ("<!-- dlbench:generated x begin -->\n", "has no end marker"),
        ("text\n", "no markers for x"),
        (
            "<!-- dlbench:generated x begin -->\n<!-- dlbench:generated x end -->\n" * 2,
            "marked twice",
        ),
    ],
)
def test_splice_refuses_markers_it_cannot_place(page: str, message: str) -> None:
    docs = _script()
    with pytest.raises(docs.GenerationError, match=message):
        docs.splice("p.md", page, {("p.md", "x"): "new\n"})


def test_study_excerpt_keeps_the_paper_section_through_the_command() -> None:
    docs = _script()
    report = (
        "# dlbench run 1: study s v1 smoke\n\n## The paper vs this run\n\nlines\n\n## Answer\n\n- a\n\n"
        "Status **finished**.\n\nCommand:\n\n```sh\ndlbench study run s\n```\n\n"
        "Configuration (study s (smoke)):\n\n```toml\n[x]\n```\n\n## Summary\n"
    )
    assert docs.study_excerpt(report) == (
        "## The paper vs this run\n\nlines\n\n## Answer\n\n- a\n\n"
        "Status **finished**.\n\nCommand:\n\n```sh\ndlbench study run s\n```"
    )
    with pytest.raises(docs.GenerationError):
        docs.study_excerpt("# title\n\n## Summary\n")


def test_study_report_judges_every_verdict_at_the_band_and_alpha_it_is_given(tmp_path: Path) -> None:
    """`study report --band --alpha` sets the criteria of the paper's claims (the rule above
    them), the hypotheses and the run's own report alike: no default survives anywhere."""
    import lzma

    db = tmp_path / "g.db"
    db.write_bytes(lzma.decompress((ROOT / "docs" / "studies" / "data" / "germino-smoke.db.xz").read_bytes()))

    def report(*flags: str) -> str:
        proc = subprocess.run(
            [sys.executable, "-m", "dlbench", "study", "report", "germino", "--db", str(db), "--format", "markdown",
             *flags],
            cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-3000:]
        return proc.stdout

    default, strict = report(), report("--band", "0.05", "--alpha", "0.01")
    # The smoke databases ran one trial per case: the rule says "no verdict" just before its criteria.
    assert "verdict; alpha 0.05, band ±2%)" in default and "verdicts (band ±2%, alpha 0.05)" in default
    assert "verdict; alpha 0.01, band ±5%)" in strict and "verdicts (band ±5%, alpha 0.01)" in strict
    assert "alpha 0.05" not in strict and "±2%" not in strict
    # alpha 0.01 needs more processes per side for the exact test to reach it: the advice follows.
    assert "4 or more independent trials per side" in default and "5 or more independent trials per side" in strict
