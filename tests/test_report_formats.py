"""`dlbench report --format console|markdown|latex|html|csv` on a real run and on a
stored three-framework comparison, including escaping of hostile user strings and
a headless-Chromium check that the HTML report renders offline."""

from __future__ import annotations

import csv
import io
import re
import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import pytest

from dlbench.report import html as html_report
from dlbench.report.model import build_report
from dlbench.store import Measurement, Store
from stored_cases import stored_case

HOSTILE = "<script>alert('x')</script> R&D_1%$#{~^}\\"
EVIL_VARIANT = "<b>v&_%$#</b>"


# -- fixtures --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def real_run(tmp_path_factory, cli):
    """numpy mlp and sklearn knn on digits, 2 trials each, under a hostile experiment name."""
    tmp = tmp_path_factory.mktemp("report")
    toml = tmp / "hostile.toml"
    name = HOSTILE.replace("\\", "\\\\")
    toml.write_text(
        f'[experiment]\nname = "{name}"\ndescription = "escaping test"\n\n'
        '[matrix]\nframework = ["numpy", "sklearn"]\nmodel = ["mlp", "knn"]\ndataset = ["digits"]\n'
        'batch_size = [32]\noptimizer = ["adam"]\nlr = [0.002]\n\n'
        "[protocol]\nepochs = 1\nrepeats = 2\nwarmup = 0\ntrials = 2\nlatency_batches = 2\n"
    )
    db = tmp / "real.db"
    cli("run", toml, "--db", db)
    return db


@pytest.fixture(scope="module")
def compared_run(tmp_path_factory):
    """A stored run of three frameworks on one model (8 blocks: enough for the exact
    Wilcoxon test to reach p < 0.05 after Holm over three pairs; clearly different train
    times), one hostile variant name and one failed trial with a hostile error text."""
    db = tmp_path_factory.mktemp("compared") / "c.db"
    store = Store(db)
    run_id = store.create_run(
        name="three-way",
        command="dlbench run three.toml",
        config_source="three.toml",
        config_text='[experiment]\nname = "three-way"\n',
        experiment={},
        environment={"hostname": "test", "packages": {"numpy": "2"}},
        version="0.1.0",
    )
    cases = {
        "fast": stored_case("torch", "eager"),
        "mid": stored_case("jax", "jit"),
        "slow": stored_case("numpy", EVIL_VARIANT),
    }
    base = {"fast": 1.0, "mid": 1.5, "slow": 3.0}
    for block in range(8):
        for pos, (key, case) in enumerate(cases.items()):
            tid = store.add_trial(run_id, case_key=key, block=block, position=pos, case=case, protocol={})
            store.set_manifest(tid, {"threads": {"intra_op": 2}, "variant": case["variant"]})
            rows = [
                Measurement(r, False, "train", "time", base[key] * (1 + 0.01 * block + 0.003 * r), "s")
                for r in range(3)
            ]
            rows += [
                Measurement(r, False, "infer", "time", base[key] / 100 * (1 + 0.02 * block), "s") for r in range(3)
            ]
            rows += [Measurement(r, False, "accuracy", "accuracy", 0.9, "fraction") for r in range(3)]
            store.add_measurements(tid, rows)
            store.finish_trial(tid, status="ok", error=None, returncode=0, wall_s=1.0, stderr="")
    tid = store.add_trial(
        run_id, case_key="broken", block=0, position=3, case=stored_case("tensorflow", "graph"), protocol={}
    )
    store.finish_trial(tid, status="failed", error=f"RuntimeError: {HOSTILE}", returncode=1, wall_s=0.5, stderr="")
    store.finish_run(run_id, "finished")
    store.close()
    return db


@pytest.fixture
def render(cli, tmp_path):
    """render(db, fmt): the report written in that format to a file under tmp_path, read back."""

    def written(db: Path, fmt: str) -> str:
        out = tmp_path / f"report.{fmt}"
        cli("report", "--format", fmt, "--out", out, "--db", db)
        return out.read_text(encoding="utf-8")

    return written


def tiny_png(width: int = 3, height: int = 2) -> bytes:
    """A valid RGB PNG written by hand: signature, IHDR, IDAT (zlib), IEND."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\x00" + bytes([200, 40, 40]) * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


class _Collector(HTMLParser):
    """Tags, attributes and text of a document, with unbalanced tags recorded."""

    VOID = {"meta", "img", "br", "hr", "link", "input"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []
        self.stack: list[str] = []
        self.errors: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def _parse(html: str) -> _Collector:
    p = _Collector()
    p.feed(html)
    p.close()
    assert not p.errors and not p.stack, (p.errors, p.stack)
    return p


# -- console, markdown, csv -----------------------------------------------------------------
def test_console_leads_with_the_answer_and_details_keep_every_table(real_run, cli):
    short = cli("report", "--db", real_run)
    lines = short.splitlines()
    assert "Answer" in lines[:8], lines[:8]
    assert "summary: medians, fastest first" in short and "train time (s)" not in short
    assert "telemetry samplers" not in short and "telemetry: " in short, short  # one line, not the table
    details = cli("report", "--db", real_run, "--details")
    for title in (
        "train time, 1 epoch",  # each time in its own unit, and what one time covers
        "infer time, a pass over 352 test samples in batches of 32",
        "accuracy (%)",
        "inference latency per call (ms)",
        "telemetry samplers",
        "utilization, temperature and memory per phase",
    ):
        assert title in details
    assert "│ numpy" in details and HOSTILE in details  # the console prints text verbatim


def test_markdown_tables(real_run, render):
    md = render(real_run, "markdown")
    assert "**train time, 1 epoch**" in md and "**accuracy (%)**" in md
    header = "| framework | variant | model | n | mean ± sd | median | Q1 | Q3 | note |"
    assert header in md
    rule = md.splitlines()[md.splitlines().index(header) + 1]
    assert rule == "|---|---|---|---:|---:|---:|---:|---:|---|"
    rows = [line for line in md.splitlines() if line.startswith("| numpy | reference | mlp |")]
    assert len(rows) >= 4  # three summaries and the latency table
    assert all(line.count(" | ") + 2 == line.count("|") for line in rows)  # no stray pipes
    assert "&lt;script&gt;" in md and "<script>" not in md.split("```toml")[0]
    assert "R&amp;D\\_1%$\\#" in md


def test_csv_summary_rows_carry_full_precision(real_run, render):
    text = render(real_run, "csv")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert {r["metric"] for r in rows} == {"train time", "inference time", "accuracy"}
    assert {r["unit"] for r in rows} == {"s", "fraction"}
    assert {(r["framework"], r["model"]) for r in rows} == {("numpy", "mlp"), ("sklearn", "knn")}
    for r in rows:
        assert int(r["n"]) == 2  # one median per trial
        assert float(r["q1"]) <= float(r["median"]) <= float(r["q3"]) and float(r["mean"]) > 0
    acc = next(r for r in rows if r["metric"] == "accuracy" and r["framework"] == "sklearn")
    assert 0.85 < float(acc["median"]) <= 1
    # The exact value: the median of the trial medians of the stored measurements, read back bit for bit.
    with Store(real_run) as store:
        run_id = store.run()["id"]
        trials = {t["id"]: t for t in store.trials(run_id)}
        per_trial: dict[int, list[float]] = {}
        for m in store.measurements(run_id, latency=False):
            if (
                (m["phase"], m["metric"]) == ("train", "time")
                and not m["warmup"]
                and m["repeat"] is not None
                and trials[m["trial_id"]]["case_key"] == acc["case_key"]
            ):
                per_trial.setdefault(m["trial_id"], []).append(m["value"])
    import numpy as np

    expected = float(np.median([float(np.median(v)) for v in per_trial.values()]))
    train = next(r for r in rows if r["metric"] == "train time" and r["case_key"] == acc["case_key"])
    assert float(train["median"]) == expected and train["median"] == repr(expected)


def test_unknown_format_and_console_out_are_errors(real_run, tmp_path, cli):
    assert "allowed: console, markdown, latex, html, csv" in cli("report", "--format", "pdf", "--db", real_run, code=2)
    assert "--out needs a written format" in cli("report", "--out", tmp_path / "x.txt", "--db", real_run, code=2)


# -- latex ---------------------------------------------------------------------------
_LATEX_ESCAPED = (
    r"\textless{}script\textgreater{}alert('x')\textless{}/script\textgreater{} "
    r"R\&D\_1\%\$\#\{\textasciitilde{}\textasciicircum{}\}\textbackslash{}"
)


def _check_latex(tex: str) -> None:
    """What a LaTeX run would reject first: unbalanced environments or braces, and
    special characters that escaped nobody (counted outside table rows)."""
    envs = re.findall(r"\\(begin|end)\{([a-z*]+)\}", tex)
    stack: list[str] = []
    for kind, name in envs:
        if kind == "begin":
            stack.append(name)
        else:
            assert stack and stack.pop() == name, f"\\end{{{name}}} without its \\begin"
    assert not stack, stack
    unescaped = re.sub(r"\\[{}]", "", tex)
    depth = 0
    for ch in unescaped:
        depth += {"{": 1, "}": -1}.get(ch, 0)
        assert depth >= 0
    assert depth == 0
    # Inside a tabular every row has exactly columns-1 unescaped & and ends with \\.
    for body in re.findall(r"\\begin\{tabular\}\{([lr]+)\}(.*?)\\end\{tabular\}", tex, re.S):
        spec, rows = body
        for line in rows.strip().splitlines():
            if line in ("\\toprule", "\\midrule", "\\bottomrule"):
                continue
            assert len(re.findall(r"(?<!\\)&", line)) == len(spec) - 1, line
            assert line.endswith("\\\\"), line
    outside = re.sub(r"\\begin\{tabular\}.*?\\end\{tabular\}", "", tex, flags=re.S)
    assert not re.search(r"(?<!\\)[&%#_]", outside.replace("\\_", "")), "unescaped special character"


def test_latex_booktabs_and_escaping(real_run, render):
    tex = render(real_run, "latex")
    assert tex.startswith("\\documentclass") and "\\usepackage{booktabs}" in tex
    assert tex.count("\\begin{tabular}") >= 5
    assert (
        tex.count("\\toprule") == tex.count("\\midrule") == tex.count("\\bottomrule") == tex.count("\\begin{tabular}")
    )
    assert "\\caption{train time, 1 epoch}" in tex and "\\caption{accuracy (\\%)}" in tex
    assert _LATEX_ESCAPED in tex
    assert "<script>" not in tex and "±" not in tex and "—" not in tex
    _check_latex(tex)


def test_latex_of_a_comparison_has_hypotheses_and_escapes_case_values(compared_run, render):
    tex = render(compared_run, "latex")
    _check_latex(tex)
    assert r"\textless{}b\textgreater{}v\&\_\%\$\#\textless{}/b\textgreater{}" in tex
    assert tex.count("\\item[Hypothesis") == 6  # 3 pairs x (train, inference)
    assert "framework vs framework" in tex and "omnibus" in tex
    assert "RuntimeError: " + _LATEX_ESCAPED in tex  # the failed trial's error text


# -- html ----------------------------------------------------------------------------
def test_html_is_self_contained_and_escaped(real_run, render):
    html = render(real_run, "html")
    doc = _parse(html)
    tags = [t for t, _ in doc.tags]
    assert "script" not in tags and "link" not in tags  # no script, no external stylesheet
    assert not re.search(r"https?://", html)
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; R&amp;D_1%$#" in html
    captions = "".join(doc.text)
    for title in (
        "train time, 1 epoch",
        "accuracy (%)",
        "inference latency per call (ms): p50 / p90 / p99",
        "telemetry samplers",
        "environment fingerprint",
    ):
        assert title in captions
    assert tags.count("table") >= 7 and tags.count("details") >= 4  # config + one manifest per trial
    assert '"intra_op"' in html or "intra_op" in captions  # the fairness manifest is shown


TINY_SVG = (
    b'<?xml version="1.0" encoding="utf-8"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="40" '
    b'height="20" viewBox="0 0 40 20"><rect width="40" height="20" fill="#c82828"/>'
    b'<text x="2" y="14">a &lt;b&gt;</text></svg>\n'
)


def test_html_inlines_svg_figures_as_data_uris(real_run, tmp_path):
    """SVG is preferred when a figure has both (the report draws SVG only)."""
    svg, png = tmp_path / "fig.svg", tmp_path / "fig.png"
    svg.write_bytes(TINY_SVG)
    png.write_bytes(tiny_png())
    fig = SimpleNamespace(name="train_time", title="t", png=png, svg=svg, caption="")
    with Store(real_run) as store:
        html = html_report.render(build_report(store, store.run()["id"], hypotheses=False), [fig])
    imgs = [a for t, a in _parse(html).tags if t == "img"]
    assert len(imgs) == 1 and imgs[0]["src"].startswith("data:image/svg+xml;base64,")
    import base64

    assert base64.b64decode(imgs[0]["src"].split(",", 1)[1]) == TINY_SVG
    with pytest.raises(ValueError, match="'x': not an SVG"):
        html_report.inline_figures([SimpleNamespace(name="x", title="x", png=None, svg=tiny_png(), caption="")])


def test_html_inlines_figures_as_png_data_uris(real_run, tmp_path):
    png = tmp_path / "fig.png"
    png.write_bytes(tiny_png())
    fig = SimpleNamespace(
        name="train_time", title="train time <by> framework", png=png, svg=None, caption="boxes & whiskers"
    )
    with Store(real_run) as store:
        html = html_report.render(build_report(store, store.run()["id"], hypotheses=False), [fig])
    doc = _parse(html)
    imgs = [a for t, a in doc.tags if t == "img"]
    assert len(imgs) == 1 and imgs[0]["src"].startswith("data:image/png;base64,")
    import base64

    assert base64.b64decode(imgs[0]["src"].split(",", 1)[1]) == tiny_png()
    assert imgs[0]["alt"] == "train time <by> framework" and "train time &lt;by&gt; framework" in html
    with pytest.raises(ValueError, match="not a PNG"):
        html_report.inline_figures([SimpleNamespace(name="x", title="x", png=b"GIF89a", svg=None, caption="")])


def test_html_figures_from_plots(real_run, tmp_path, render):
    """The report's own figures (dlbench.report.plots, matplotlib), when plotting is installed."""
    try:
        from dlbench.report.plots import make_figures
    except ImportError as exc:
        pytest.skip(f"dlbench.report.plots cannot be imported: {exc}")
    with Store(real_run) as store:
        n = len(make_figures(store, store.run()["id"], tmp_path))
    html = render(real_run, "html")
    imgs = [a for t, a in _parse(html).tags if t == "img"]
    assert n > 0 and len(imgs) == n
    assert all(a["src"].startswith("data:image/svg+xml;base64,") for a in imgs)


def test_every_format_opens_with_the_answer(compared_run, render):
    """The answer comes before any table, figure or environment: first in the HTML body
    (after the title and one line of metadata), first section of Markdown and LaTeX."""
    html = render(compared_run, "html")
    order = [html.index(f'id="{anchor}"') for anchor in ("answer", "figures", "hypotheses", "how", "environment")]
    assert order == sorted(order), order
    assert "× slower than" in html.split('id="figures"')[0]
    md = render(compared_run, "markdown")
    assert md.split("\n## ")[1].startswith("Answer")  # the first section
    assert md.index("## Answer") < md.index("Command:") and "× slower than" in md
    tex = render(compared_run, "latex")
    assert tex.index("\\subsection*{Answer}") < tex.index("Command:") and "$\\times$ slower than" in tex


def test_html_hypotheses_in_seed_002_form(compared_run, render):
    html = render(compared_run, "html")
    doc = _parse(html)
    # The inline SVG figures are well-formed XML that carries the hostile variant name
    # as text (escaped in the markup: no element of its own).
    import base64
    import xml.etree.ElementTree as ET

    svgs = [
        ET.fromstring(base64.b64decode(a["src"].split(",", 1)[1]))
        for t, a in doc.tags
        if t == "img" and a["src"].startswith("data:image/svg+xml;base64,")
    ]
    assert svgs
    texts = ["".join(e.itertext()) for svg in svgs for e in svg.iter("{http://www.w3.org/2000/svg}text")]
    assert any(EVIL_VARIANT in t for t in texts)
    assert not any(e.tag.endswith("}b") or e.tag == "b" for svg in svgs for e in svg.iter())
    text = "".join(doc.text)
    assert text.count("Hypothesis ") >= 6
    assert "H0" in text and "H1" in text and "Decision" in text
    assert "Decision" in text and "(Holm; raw" in text
    assert "&lt;b&gt;v&amp;_%$#&lt;/b&gt;" in html and "<b>v&" not in html
    assert "RuntimeError: &lt;script&gt;" in html
    with Store(compared_run) as store:
        rows = build_report(store, 1).hypotheses
    assert len(rows) == 6 and {r["name"] for r in rows} == {"train time", "inference time"}
    assert all(r["paired"] and r["n_a"] == 8 and r["p_adjusted"] is not None for r in rows)
    # Every block has torch < jax < numpy: with 8 pairs the smallest exact p is 2/256,
    # times 3 (Holm) still below 0.05, so every H0 is rejected and the verdicts agree.
    for r in rows:
        assert r["decision"].startswith("reject H0 at alpha=0.05"), r["decision"]
        assert r["p_adjusted"] >= r["p_value"]
    train = {(r["a"], r["b"]): r for r in rows if r["name"] == "train time"}
    assert train[("torch:eager", f"numpy:{EVIL_VARIANT}")]["verdict"] == "faster"
    assert train[("torch:eager", "jax:jit")]["verdict"] == "faster"
    assert train[("jax:jit", f"numpy:{EVIL_VARIANT}")]["verdict"] == "faster"


# -- the browser -----------------------------------------------------------------------
PROBE = """<script>
addEventListener("load", () => {
  const imgs = [...document.images];
  const p = document.createElement("div");
  p.id = "probe";
  p.dataset.images = imgs.length;
  p.dataset.broken = imgs.filter(i => !i.complete || i.naturalWidth === 0).length;
  p.dataset.tables = document.querySelectorAll("table").length;
  p.dataset.rows = document.querySelectorAll("tbody tr").length;
  document.body.appendChild(p);
});
</script>"""


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def _browse(browser: str, page: Path, profile: Path, *extra: str) -> subprocess.CompletedProcess:
    cmd = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=5000",
        *extra,
        page.as_uri(),
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def test_html_renders_in_headless_chromium(real_run, tmp_path):
    browser = _chromium()
    if browser is None:
        print("SKIP reason: chromium is not installed (apt-get install chromium)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    png = tmp_path / "fig.png"
    png.write_bytes(tiny_png(40, 20))
    fig = SimpleNamespace(name="probe", title="probe figure", png=png, svg=None, caption="a red box")
    svg = tmp_path / "fig.svg"
    svg.write_bytes(TINY_SVG)
    vector = SimpleNamespace(name="probe_svg", title="probe SVG figure", png=None, svg=svg, caption="an SVG box")
    with Store(real_run) as store:
        html = html_report.render(build_report(store, store.run()["id"]), [fig, vector])
    page = tmp_path / "report.html"
    page.write_text(html, encoding="utf-8")
    shot = tmp_path / "report.png"
    result = _browse(browser, page, tmp_path / "profile1", f"--screenshot={shot}", "--window-size=1280,4000")
    assert shot.exists() and shot.stat().st_size > 10_000, result.stderr[-2000:]
    assert "Uncaught" not in result.stderr
    # The same page plus a test-only probe that counts images the browser could not decode.
    probed = tmp_path / "probed.html"
    probed.write_text(html.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    result = _browse(browser, probed, tmp_path / "profile2", "--dump-dom")
    assert "Uncaught" not in result.stderr, result.stderr[-2000:]
    m = re.search(
        r'<div id="probe" data-images="(\d+)" data-broken="(\d+)" data-tables="(\d+)" data-rows="(\d+)"', result.stdout
    )
    assert m, result.stdout[-2000:] + result.stderr[-2000:]
    images, broken, tables, rows = map(int, m.groups())
    assert images == 2 and broken == 0  # the PNG and the SVG decoded
    assert tables >= 7 and rows >= 20


def test_markdown_and_latex_show_the_figures_they_wrote(real_run, tmp_path, cli):
    out_dir = tmp_path / "paper"
    out_dir.mkdir()
    md_file, tex_file, figs = out_dir / "r.md", out_dir / "r.tex", out_dir / "figs"
    for fmt, target in (("markdown", md_file), ("latex", tex_file)):
        cli("report", "--db", real_run, "--format", fmt, "--out", target, "--figures", figs)
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md_file.read_text())
    included = re.findall(r"\\includegraphics\[[^\]]*\]\{([^}]+)\}", tex_file.read_text())
    assert links and links == included  # the same figures, in the same order
    assert all((out_dir / link).is_file() and link.startswith("figs/") for link in links)
    assert "\\usepackage{graphicx}" in tex_file.read_text()


def test_latex_tables_are_bare_tabulars_to_input(real_run, tmp_path, cli):
    tables = tmp_path / "tables"
    cli("report", "--db", real_run, "--format", "latex", "--out", tmp_path / "r.tex", "--latex-tables", tables)
    files = sorted(tables.glob("*.tex"))
    assert len(files) >= 4
    for f in files:
        text = f.read_text()
        assert "\\documentclass" not in text and "\\begin{table}" not in text
        assert text.count("\\begin{tabular}") == 1 and text.rstrip().endswith("\\end{tabular}")
    wrong = cli("report", "--db", real_run, "--format", "markdown", "--latex-tables", tables, code=2)
    assert "--latex-tables" in wrong and "--format latex" in wrong


def test_figures_line_wraps_with_a_hanging_indent(real_run, tmp_path, cli):
    """The list of figures written is one sentence: wrapped at the console's width, each
    continuation indented under its start, no figure name split across lines."""
    out = cli("report", "--db", real_run, "--figures", tmp_path / "a-long-folder-name-for-figures" / "figs")
    lines = out.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("wrote "))
    sentence = [lines[first]]
    for line in lines[first + 1 :]:
        if not line.startswith("    "):
            break
        sentence.append(line)
    made = sorted(p.stem for p in (tmp_path / "a-long-folder-name-for-figures" / "figs").glob("*.png"))
    # A line runs past the width only when it is one word (a path longer than the console).
    assert len(sentence) > 1 and all(len(line) <= 100 or len(line.split()) == 1 for line in sentence)
    assert sorted(" ".join(sentence).split(": ", 1)[1].replace(",", " ").split()) == made
