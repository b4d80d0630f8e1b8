"""Headers that hold: "settings shared by every case" lists a setting only where it applied
in full to every case. A user's own torch module that holds an nn.Parameter keeps the
builder's init under --init glorot-uniform (dlbench's scheme reaches every standard layer
with weights: dlbench.frameworks.torch_init); the report says so on that case's row and in
the answer, not in the header."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlbench import cli
from dlbench.cli import app
from dlbench.report.coverage import partial_settings
from dlbench.report.tables import common_settings

pytest.importorskip("torch", reason="PyTorch is not installed")
runner = CliRunner()

# Each 8x8 digit's rows as a sequence of 8 steps with 8 features: a Conv1d over them, then a classifier.
ROWCONV = """
import dlbench


def build_torch(shape, classes, channels=8):
    import torch
    import torch.nn as nn

    height, width, depth = shape

    class RowConv(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv1d(depth * width, channels, 3, padding=1)
            self.gain = nn.Parameter(torch.ones(channels * height))  # a layer of the user's own
            self.head = nn.Linear(channels * height, classes)

        def forward(self, x):  # (N, C, H, W) -> (N, C*W, H): the rows are the sequence
            seq = x.permute(0, 1, 3, 2).reshape(x.shape[0], depth * width, height)
            return self.head(self.conv(seq).relu().flatten(1) * self.gain)

    return RowConv()


MODEL = dlbench.Model("rowconv", {"torch": build_torch}, options={"channels": 8})
"""
KEPT_PARAMETERS = 8 * 8  # the gain: one per feature of the head's input, left as the builder set it
ROW_NOTE = f"init=glorot-uniform (partly: {KEPT_PARAMETERS} parameters kept the builder's init)"


def _invoke(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def rowconv_db(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("rowconv")
    (folder / "rowconv.py").write_text(ROWCONV)
    db = folder / "r.db"
    _invoke(
        "run", "--framework", "torch", "--model", f"{folder / 'rowconv.py'}:MODEL", "--dataset", "digits",
        "--init", "glorot-uniform", "--epochs", "1", "--trials", "1", "--repeats", "2", "--warmup", "0",
        "--samplers", "none", "--latency-batches", "0", "--db", str(db),
    )  # fmt: skip
    return db


def test_the_manifest_counts_the_parameters_the_init_scheme_did_not_reach(rowconv_db: Path):
    with sqlite3.connect(rowconv_db) as con:
        ((manifest_json,),) = con.execute("SELECT manifest_json FROM trials").fetchall()
    manifest = json.loads(manifest_json)
    assert manifest["init_kept_parameters"] == KEPT_PARAMETERS
    assert manifest["init_note"] == (
        "glorot-uniform on Conv1d, Linear; kept the builder's init: '(root)' (RowConv, 64 parameters)"
    )


def test_console_and_markdown_name_a_partial_init_on_the_row_and_in_the_answer(
    rowconv_db: Path, tmp_path: Path, monkeypatch
):
    monkeypatch.setattr(cli.console, "width", 400)  # whole lines: no cell or sentence wraps
    console = _invoke("report", "--db", str(rowconv_db))
    (shared,) = [line for line in console.splitlines() if line.startswith("settings shared by every case:")]
    assert "dataset=digits" in shared and "optimizer=adam" in shared and "precision=float32" in shared
    assert "init=" not in shared  # it used to say init=glorot-uniform
    # The summary's row (the table of compile, memory and loss below it names the case too).
    row = next(line for line in console.splitlines() if line.startswith("│ torch:eager │ rowconv"))
    assert ROW_NOTE in row
    assert "init did not apply in full to every case: torch:eager rowconv digits b32 glorot-uniform" in console
    out = tmp_path / "r.md"
    _invoke("report", "--db", str(rowconv_db), "--format", "markdown", "--out", str(out))
    markdown = out.read_text()
    (shared_md,) = [line for line in markdown.splitlines() if line.startswith("Settings shared by every case:")]
    assert "dataset=digits" in shared_md and "init=" not in shared_md
    summary = [line for line in markdown.splitlines() if line.startswith("| torch") and ROW_NOTE in line]
    assert summary, "the summary row names the partial init"
    answer = markdown[markdown.index("## Answer") : markdown.index("Command:")]
    assert "init did not apply in full to every case" in answer and f"partly: {KEPT_PARAMETERS} parameters" in answer


def test_a_setting_that_applied_in_full_stays_in_the_shared_line():
    def trial(key: str, manifest: dict | None) -> dict:
        return {"case_key": key, "manifest_json": json.dumps(manifest) if manifest is not None else None}

    cases = [{"framework": "torch", "init": "glorot-uniform"}, {"framework": "jax", "init": "glorot-uniform"}]
    assert "init=glorot-uniform" in common_settings(cases)
    # A store written before init_kept_parameters: the note's words still count; a builder
    # that takes no init keywords is "not applied".
    torch_words = "glorot-uniform on Conv2d/...; 2848 parameters in other layers keep the builder's own init"
    jax_words = "builder's own (jax builder takes no kernel_init/bias_init; the init scheme was not applied)"
    partial = partial_settings(
        [
            trial("a", {"init_note": torch_words}),
            trial("b", {"init_note": jax_words}),
            trial("c", {"precision": "float32"}),
            trial("d", None),
        ]
    )
    assert partial == {
        "a": {"init": "partly: 2,848 parameters kept the builder's init"},
        "b": {"init": "not applied: the jax builder takes no kernel_init/bias_init"},
    }
    assert "init=" not in common_settings(cases, leave_out={"init"})
