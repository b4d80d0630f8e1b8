"""A real out-of-memory cell: torch under `--memory-limit +SIZE` stores the batch that
does not fit as `oom` (a gap in the report, the largest batch that fits named) while
the small batch runs, and the sweep goes on."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from dlbench.cli import app
from dlbench.store import Store

runner = CliRunner()


def test_largest_batch_is_stored_as_oom_and_the_rest_runs(tmp_path):
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
    result = runner.invoke(app, ["run", str(toml), "--db", str(db)])
    assert result.exit_code == 0, result.output
    with Store(db) as store:
        trials = {json.loads(t["case_json"])["batch_size"]: t for t in store.trials(store.run()["id"])}
        # b512 at 64x64x3: conv2's output alone is 512*64*60*60*4 B = 472 MB > 256 MiB.
        assert trials[512]["status"] == "oom", trials[512]["error"]
        assert "can't allocate memory" in trials[512]["error"]
        assert trials[8]["status"] == "ok", trials[8]["error"]
        manifest = json.loads(trials[8]["manifest_json"])
        assert manifest["memory_limit_relative"] == 256 * 2**20
        assert manifest["memory_limit"] == manifest["memory_baseline_vmdata"] + 256 * 2**20
    report = runner.invoke(app, ["report", "--db", str(db), "--format", "markdown"])
    assert report.exit_code == 0, report.output
    assert "largest that fits (b512 ran out of memory)" in report.output
    assert "| OOM |" in report.output


def test_torch_below_its_import_footprint_is_oom_at_once_not_a_timeout(tmp_path):
    """Capped at 300 MiB, a torch worker used to spin in OpenBLAS's thread-pool setup
    (blas_thread_init retrying malloc) until its 1,800 s timeout."""
    import pytest

    pytest.importorskip("torch")
    from typer.testing import CliRunner

    from dlbench.cli import app
    from dlbench.store import Store

    result = CliRunner().invoke(
        app,
        [
            "run",
            "--trials",
            "1",
            "--framework",
            "torch",
            "--model",
            "mlp",
            "--dataset",
            "digits",
            "--epochs",
            "1",
            "--repeats",
            "1",
            "--warmup",
            "0",
            "--samplers",
            "none",
            "--memory-limit",
            "300MiB",
            "--timeout",
            "120",
            "--db",
            str(tmp_path / "r.db"),
        ],
    )
    assert result.exit_code == 0, result.output  # an oom cell is a result
    with Store(tmp_path / "r.db") as store:
        trial = store.trials(1)[0]
    assert trial["status"] == "oom", trial["error"]
    assert "above the 300 MiB cap (--memory-limit)" in trial["error"] and trial["wall_s"] < 60
