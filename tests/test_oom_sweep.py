"""A real out-of-memory cell: torch under `--memory-limit +SIZE` stores the batch that
does not fit as `oom` (a gap in the report, the largest batch that fits named) while
the small batch runs, and the sweep goes on."""

from __future__ import annotations

import json

import pytest


def test_largest_batch_is_stored_as_oom_and_the_rest_runs(tmp_path, cli, stored):
    toml = tmp_path / "oom.toml"
    toml.write_text("""
[matrix]
framework = ["torch"]
model = ["cnn"]
dataset = ["synthetic"]
batch_size = [8, 512]
input_shape = [64]
[synthetic]
shape = [28, 28, 3]
train_size = 512
test_size = 16
[protocol]
epochs = 1
repeats = 1
warmup = 0
latency_batches = 0
samplers = "none"
memory_limit = "+256MiB"
""")
    db = tmp_path / "oom.db"
    cli("run", toml, "--db", db)
    trials = {json.loads(t["case_json"])["batch_size"]: t for t in stored(db)[1]}
    # b512 at 64x64x3: conv2's output alone is 512*64*60*60*4 B = 472 MB > 256 MiB.
    assert trials[512]["status"] == "oom", trials[512]["error"]
    assert "can't allocate memory" in trials[512]["error"]
    assert trials[8]["status"] == "ok", trials[8]["error"]
    manifest = json.loads(trials[8]["manifest_json"])
    assert manifest["memory_limit_relative"] == 256 * 2**20
    assert manifest["memory_limit"] == manifest["memory_baseline_vmdata"] + 256 * 2**20
    report = cli("report", "--db", db, "--format", "markdown")
    assert "largest that fits (b512 ran out of memory)" in report
    assert "| OOM |" in report


def test_torch_below_its_import_footprint_is_oom_at_once_not_a_timeout(tmp_path, tiny_run, stored):
    """Capped below what torch's import and the data hold, a torch worker used to spin in
    OpenBLAS's thread-pool setup (blas_thread_init retrying malloc) until its 1,800 s
    timeout. The footprint: about 220 MiB of data segment (VmData) with torch and digits
    loaded (it was over 300 MiB while loading digits imported scikit-learn, scipy and pandas)."""
    pytest.importorskip("torch")
    db = tmp_path / "r.db"
    tiny_run(db, framework="torch", repeats=1, memory_limit="150MiB", timeout=120)  # an oom cell is a result
    trial = stored(db, 1)[1][0]
    assert trial["status"] == "oom", trial["error"]
    assert "above the 150 MiB cap (--memory-limit)" in trial["error"] and trial["wall_s"] < 60
