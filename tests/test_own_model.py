"""Your own model and data: the registry, a model by path and by installed entry point in
all three frameworks, `dlbench check` on it and on a deliberately different network,
resumes that refuse to import code a database names, and bad user input in one line."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from dlbench import config, registry
from dlbench.cli import app

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "dsconv"
DLBENCH = [sys.executable, "-m", "dlbench"]
QUICK = [
    "--trials",
    "1",
    "--epochs",
    "1",
    "--repeats",
    "2",
    "--warmup",
    "0",
    "--samplers",
    "none",
    "--train-samples",
    "256",
]


def _cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*DLBENCH, *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=900)


def _one_line_error(result: subprocess.CompletedProcess[str] | object) -> str:
    err = result.stderr if isinstance(result, subprocess.CompletedProcess) else result.output  # type: ignore[attr-defined]
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert lines, "no error message"
    assert "Traceback" not in err, err
    return lines[-1]


def _rows(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(db) as con:
        return con.execute(sql).fetchall()


@pytest.fixture()
def example(tmp_path: Path) -> Path:
    """A copy of the example model's folder, as a user's project directory would hold it."""
    dest = tmp_path / "project"
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def test_unknown_names_list_what_is_allowed():
    with pytest.raises(registry.UnknownName) as err:
        registry.resolve("model", "resnet9000")
    message = str(err.value)
    assert "'resnet9000'" in message and "mlp" in message and "PATH.py:NAME" in message
    with pytest.raises(config.ConfigError, match="dataset = 'imagenet': unknown dataset; allowed: digits.*npz"):
        config.parse('[matrix]\ndataset = ["imagenet"]', "e.toml")


def test_model_from_path_plans_with_its_own_name_and_keeps_the_reference(example: Path):
    exp = config.parse(
        '[matrix]\nmodel = ["dsconv.py:MODEL", "mlp"]\nframework = ["torch", "numpy"]', "e.toml", example
    )
    assert exp.matrix["model"] == ("dsconv", "mlp")
    assert exp.sources == {"model:dsconv": f"{example.resolve() / 'dsconv.py'}:MODEL"}
    from dlbench.config_toml import to_toml
    from dlbench.plan import expand

    again = config.parse(to_toml(exp), "again.toml")  # the stored text names the file by absolute path
    assert again.sources == exp.sources
    plan = expand(exp)
    cells = {(t.case.framework, t.case.model) for t in plan.trials}
    assert cells == {("torch", "dsconv"), ("torch", "mlp"), ("numpy", "mlp")}
    (skipped,) = [s for s in plan.skipped if s.cell["model"] == "dsconv"]
    assert skipped.reason == "dsconv has no numpy builder (builders: torch, tensorflow, jax)"


def test_example_runs_from_its_path_in_all_three_frameworks_and_records_the_manifest(example: Path, tmp_path: Path):
    db = tmp_path / "r.db"
    result = _cli(
        "run", "--model", "dsconv.py:MODEL", "--framework", "torch,tensorflow,jax", "--dataset", "digits",
        "--option", "dsconv.width=8", *QUICK, "--db", str(db), cwd=example,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    rows = _rows(db, "SELECT framework, model, status, case_json FROM trials")
    assert sorted(r[0] for r in rows) == ["jax", "tensorflow", "torch"]
    assert all(r[1] == "dsconv" and r[2] == "ok" for r in rows)
    assert all(json.loads(r[3])["model_options"] == {"width": 8} for r in rows)
    spec = registry.load_reference("model", f"{example.resolve() / 'dsconv.py'}:MODEL")
    expected = spec.count((8, 8, 1), 10, {"width": 8})
    counts = _rows(db, "SELECT DISTINCT value FROM measurements WHERE metric = 'parameters'")
    assert counts == [(float(expected),)]  # the same network size in every framework, = the formula
    manifests = [json.loads(m) for (m,) in _rows(db, "SELECT manifest_json FROM trials")]
    assert all("init_note" not in m for m in manifests)  # every builder took the init scheme
    config_text = _rows(db, "SELECT config_text FROM runs")[0][0]
    assert f"{example.resolve() / 'dsconv.py'}:MODEL" in config_text


def test_a_resume_imports_no_code_named_by_the_database(example: Path, tmp_path: Path):
    db = tmp_path / "r.db"
    result = _cli("run", "--model", "dsconv.py:MODEL", "--framework", "torch", "--dataset", "digits", *QUICK,
                  "--trials", "2", "--db", str(db), cwd=example)  # fmt: skip
    assert result.returncode == 0, result.stderr
    with sqlite3.connect(db) as con:  # as if interrupted: one trial back to pending
        con.execute("UPDATE trials SET status = 'pending' WHERE id = (SELECT MAX(id) FROM trials)")
        con.execute("DELETE FROM measurements WHERE trial_id = (SELECT MAX(id) FROM trials)")
    marker = tmp_path / "executed"
    # If dlbench imported the file the database names, this line would run.
    (example / "dsconv.py").write_text((example / "dsconv.py").read_text() + f"\nopen({str(marker)!r}, 'w')\n")
    refused = _cli("run", "--resume", "1", "--db", str(db), cwd=tmp_path)
    assert refused.returncode == 2
    line = _one_line_error(refused)
    assert "model 'dsconv'" in line and "name it again with --model" in line and str(example.resolve()) in line
    assert not marker.exists()
    assert _rows(db, "SELECT COUNT(*) FROM trials WHERE status = 'pending'") == [(1,)]  # nothing lost or run
    resumed = _cli("run", "--resume", "1", "--model", str(example / "dsconv.py:MODEL"), "--db", str(db))
    assert resumed.returncode == 0, resumed.stderr
    assert _rows(db, "SELECT status FROM trials") == [("ok",), ("ok",)]
    assert marker.exists()  # named again by the user: imported


def test_explain_imports_your_model_only_when_you_name_it_again(example: Path, tmp_path: Path):
    """`dlbench explain` reruns stored cases: one of your own model is refused, in one line
    giving the reference to name, before any run is created; named again, it is explained
    and profiled, and the explain run records the reference (for --resume's message)."""
    db = tmp_path / "e.db"
    for threads in ("1", "2"):
        result = _cli("run", "--model", "dsconv.py:MODEL", "--framework", "torch", "--dataset", "digits", *QUICK,
                      "--threads", threads, "--db", str(db), cwd=example)  # fmt: skip
        assert result.returncode == 0, result.stderr
    marker = tmp_path / "executed"
    (example / "dsconv.py").write_text((example / "dsconv.py").read_text() + f"\nopen({str(marker)!r}, 'w')\n")
    explain = ["explain", "2", "--case", "torch", "--vs", "torch", "--vs-run", "1", "--only", "threads",
               "--blocks", "2", "--repeats", "1", "--warmup", "0", "--profile-steps", "2", "--profile-calls", "1",
               "--db", str(db)]  # fmt: skip
    refused = _cli(*explain, cwd=tmp_path)
    assert refused.returncode == 2
    line = _one_line_error(refused)
    assert "model 'dsconv'" in line and "name it again with --model" in line and str(example.resolve()) in line
    assert not marker.exists()
    assert _rows(db, "SELECT COUNT(*) FROM runs") == [(2,)]  # nothing left behind
    explained = _cli(*explain, "--model", str(example / "dsconv.py:MODEL"), cwd=tmp_path)
    assert explained.returncode == 0, explained.stderr
    assert marker.exists()
    assert "slower than" in explained.stdout or "No gap to explain" in explained.stdout, explained.stdout
    assert {s for (s,) in _rows(db, "SELECT status FROM trials WHERE run_id = 3")} == {"ok"}
    assert _rows(db, "SELECT COUNT(*) FROM measurements m JOIN trials t ON t.id = m.trial_id "
                     "WHERE t.run_id = 3 AND m.phase = 'profile' AND m.metric = 'step_time'")[0][0] >= 2  # fmt: skip
    sources = json.loads(_rows(db, "SELECT experiment_json FROM runs WHERE id = 3")[0][0])["sources"]
    assert sources == {"model:dsconv": f"{example.resolve() / 'dsconv.py'}:MODEL"}


def test_entry_point_plugin_model_runs_by_name(example: Path, tmp_path: Path):
    """An installed distribution (a .dist-info on the path) that declares the model in the
    dlbench.models group: usable by its plain name, in any framework (torch and JAX here:
    loading by name does not depend on the framework, and each framework's build of the
    example is checked from its path in the test above)."""
    site = tmp_path / "site"
    dist = site / "dsconv_models-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: dsconv-models\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[dlbench.models]\ndsconv = dsconv:MODEL\n")
    for f in example.glob("dsconv*.py"):
        shutil.copy(f, site / f.name)
    env = {**__import__("os").environ, "PYTHONPATH": str(site)}
    listed = _cli("list", "--no-params", env=env)
    assert "dsconv" in listed.stdout and "plugin dsconv-models" in listed.stdout
    db = tmp_path / "p.db"
    result = _cli("run", "--model", "dsconv", "--framework", "torch,jax", "--dataset", "digits",
                  "--option", "dsconv.width=4", *QUICK, "--db", str(db), env=env, cwd=tmp_path)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert sorted(_rows(db, "SELECT framework, status FROM trials")) == [("jax", "ok"), ("torch", "ok")]


def test_check_passes_on_the_example_and_names_a_different_network(example: Path):
    same = _cli("check", "dsconv.py:MODEL", "--option", "dsconv.width=8", cwd=example)
    assert same.returncode == 0, same.stdout + same.stderr
    assert "dsconv: the same network in torch, tensorflow, jax" in same.stdout
    assert "outputs: logits after copying torch's weights" in same.stdout
    # Remembered for the runs of this code: their reports quote it.
    from dlbench.conformance import record

    found = record.lookup(f"{example / 'dsconv.py'}:MODEL")
    assert found is not None and found["ok"] and found["options"] == {"width": 8}
    assert found["verdict"] == same.stdout.strip().splitlines()[-1]
    # The wider network differs in torch only: torch against JAX names it (TensorFlow, the
    # slowest import, would add nothing to this negative case).
    different = _cli(
        "check", "dsconv_wider.py:MODEL", "--option", "dsconv_wider.width=8", "--framework", "torch,jax", cwd=example
    )
    assert different.returncode == 1
    assert "NOT the same network" in different.stdout
    assert "FAIL parameters" in different.stdout and "(not equal)" in different.stdout


FEATURES_MODEL = """
import dlbench


def build_torch(shape, classes, hidden=16):
    import torch.nn as nn

    return nn.Sequential(nn.Linear(shape[0], hidden), nn.ReLU(), nn.Linear(hidden, classes))


def build_jax(shape, classes, hidden=16, kernel_init=None, bias_init=None):
    import flax.linen as nn

    init = {} if kernel_init is None else {"kernel_init": kernel_init, "bias_init": bias_init}

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, x, train=False):
            return nn.Dense(classes, **init)(nn.relu(nn.Dense(hidden, **init)(x)))

    return MLP()


MODEL = dlbench.Model("tabular", {"torch": build_torch, "jax": build_jax}, input_kind="features",
                      options={"hidden": 16})
"""


def test_check_takes_shape_and_classes_from_a_features_dataset(tmp_path: Path):
    (tmp_path / "tabular.py").write_text(FEATURES_MODEL)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 11)).astype(np.float32)
    np.savez(tmp_path / "rows.npz", x_train=x[:30], y_train=np.arange(30) % 4, x_test=x[30:], y_test=np.arange(10) % 4)
    result = _cli("check", "tabular.py:MODEL", "--dataset", "rows.npz", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    # 11 features -> 16 hidden -> 4 classes: (11*16 + 16) + (16*4 + 4) = 260
    assert "trainable parameters: torch 260, jax 260" in result.stdout
    assert "skipped tensorflow: tabular has no tensorflow builder" in result.stdout
    assert "logits [3, 4] for [3, 4]" in result.stdout
    assert "logits after copying torch's weights: jax max |Δ|" in result.stdout
    images = _cli("check", "tabular.py:MODEL", "--dataset", "digits", "--framework", "torch", cwd=tmp_path)
    assert images.returncode == 2
    assert "takes features input, (F,) per sample; the data gives 8x8x1" in _one_line_error(images)
    both = _cli("check", "tabular.py:MODEL", "--dataset", "rows.npz", "--input-shape", "11", cwd=tmp_path)
    assert both.returncode == 2 and "the dataset decides the shape" in _one_line_error(both)


def test_check_fails_a_network_whose_gradients_never_reach_its_weights(tmp_path: Path):
    (tmp_path / "detached.py").write_text(
        FEATURES_MODEL.replace(
            "nn.Sequential(nn.Linear(shape[0], hidden), nn.ReLU(), nn.Linear(hidden, classes))",
            "Detached(nn.Linear(shape[0], classes))",
        ).replace(
            "def build_torch(",
            "import torch\n\n\nclass Detached(torch.nn.Module):\n"
            "    def __init__(self, inner):\n        super().__init__()\n        self.inner = inner\n\n"
            "    def forward(self, x):\n        return self.inner(x).detach().requires_grad_()\n\n\n"
            "def build_torch(",
        )
    )
    result = _cli("check", "detached.py:MODEL", "--input-shape", "5", "--framework", "torch", cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "FAIL loss falls: torch:" in result.stdout and "do gradients reach the weights?" in result.stdout


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("nothere.py:MODEL", "does not exist"),
        ("dsconv.py:NOPE", "has no attribute 'NOPE'"),
        ("dsconv.py:WIDTH", "not a ModelSpec"),
        ("no_such_pkg.models:M", "no module 'no_such_pkg'"),
    ],
)
def test_bad_model_references_fail_in_one_line_and_store_nothing(example: Path, tmp_path: Path, value, expected):
    db = tmp_path / "bad.db"
    result = _cli("run", "--model", value, "--framework", "torch", "--db", str(db), cwd=example)
    assert result.returncode == 2
    line = _one_line_error(result)
    assert expected in line and value.split(":")[0] in line
    assert not db.exists(), "a refused command leaves no database behind"


def test_a_builder_that_raises_is_a_failed_trial_with_one_line(example: Path, tmp_path: Path):
    (example / "broken.py").write_text(
        "import dlbench\n\ndef build(shape, classes):\n    raise RuntimeError('width must be even')\n\n"
        "MODEL = dlbench.Model('broken', {'torch': build})\n"
    )
    db = tmp_path / "b.db"
    result = _cli("run", "--model", "broken.py:MODEL", "--framework", "torch", "--dataset", "digits", *QUICK,
                  "--db", str(db), cwd=example)  # fmt: skip
    assert result.returncode == 1
    ((status, error),) = _rows(db, "SELECT status, error FROM trials")
    assert status == "failed"
    assert "torch builder" in error and "RuntimeError: width must be even" in error


def test_own_npz_data_runs_and_bad_npz_is_one_line(tmp_path: Path):
    rng = np.random.default_rng(0)
    x = rng.random((300, 6, 6, 1), dtype=np.float32)
    y = rng.integers(0, 3, 300)
    good = tmp_path / "blobs.npz"
    np.savez(good, x_train=x[:240], y_train=y[:240], x_test=x[240:], y_test=y[240:])
    db = tmp_path / "d.db"
    result = _cli(
        "run",
        "--trials",
        "1",
        "--dataset",
        str(good),
        "--framework",
        "numpy",
        "--model",
        "mlp",
        *QUICK,
        "--db",
        str(db),
    )
    assert result.returncode == 0, result.stderr
    assert _rows(db, "SELECT dataset, status FROM trials") == [("blobs", "ok")]
    manifest = json.loads(_rows(db, "SELECT manifest_json FROM trials")[0][0])
    assert manifest["input_shape"] == [6, 6, 1] and manifest["num_classes"] == 3
    bad = tmp_path / "bad.npz"
    np.savez(bad, x_train=x[:10], y_train=y[:10], x_test=x[:5])
    refused = _cli(
        "run", "--trials", "1", "--dataset", str(bad), "--framework", "numpy", "--db", str(tmp_path / "e.db")
    )
    assert refused.returncode == 2
    line = _one_line_error(refused)
    assert "bad.npz" in line and "no array 'y_test'" in line
    labels = tmp_path / "labels.npz"
    np.savez(labels, x_train=x[:10], y_train=-y[:10] - 1, x_test=x[:5], y_test=y[:5])
    line = _one_line_error(
        _cli("run", "--dataset", str(labels), "--framework", "numpy", "--db", str(tmp_path / "f.db"))
    )
    assert "labels.npz" in line and "negative labels" in line


def _export_document(path: Path):
    """`export`'s JSON, the dlbench/export document, as a frame: its records in its columns' order."""
    import pandas as pd

    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["schema"] == "dlbench/export"
    return pd.DataFrame(doc["measurements"], columns=doc["columns"])


def test_python_api_runs_loads_and_exports(example: Path, tmp_path: Path):
    import pandas as pd

    import dlbench

    db = tmp_path / "api.db"
    script = (
        "import sys, dlbench; sys.path.insert(0, '.')\n"
        "from dsconv import MODEL\n"
        f"print(dlbench.run(model=[MODEL, 'mlp'], framework=['torch', 'numpy'], dataset='digits', epochs=1,"
        f" trials=1, repeats=2, warmup=0, samplers='none', train_samples=256, options={{'dsconv': {{'width': 4}}}},"
        f" db={str(db)!r}))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=example, timeout=600)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "1"
    data = dlbench.load(db)
    m = data.measurements()
    assert len(m) == _rows(db, "SELECT COUNT(*) FROM measurements")[0][0]
    raw = sorted(v for (v,) in _rows(db, "SELECT value FROM measurements") if v is not None)
    assert sorted(m["value"].dropna().tolist()) == raw
    for column in ("layout", "pipeline", "input_shape", "option.width"):
        assert column in m.columns
    assert set(m.loc[m["model"] == "dsconv", "option.width"]) == {4}
    trials = data.trials()
    assert sorted(zip(trials["framework"], trials["model"])) == [
        ("numpy", "mlp"),
        ("torch", "dsconv"),
        ("torch", "mlp"),
    ]
    summary = data.summary()
    train = m[(m["phase"] == "train") & (m["metric"] == "time") & ~m["warmup"] & (m["model"] == "mlp")]
    for fw, values in train.groupby("framework")["value"]:
        row = summary[
            (summary.framework == fw)
            & (summary.model == "mlp")
            & (summary.phase == "train")
            & (summary.metric == "time")
        ]
        assert row["median"].item() == pytest.approx(float(np.median(values)))
    compared = data.compare("torch", "numpy")
    assert set(compared["a"]) == {"torch:eager"} and (compared["ratio_a_over_b"] > 0).all()
    with pytest.raises(ValueError, match="no 'jax' to compare"):
        data.compare("torch", "jax")
    for fmt in ("json", "parquet", "csv"):
        out = tmp_path / f"m.{fmt}"
        exported = CliRunner().invoke(app, ["export", str(out), "--db", str(db)])
        assert exported.exit_code == 0, exported.output
        readers = {
            "json": _export_document,
            "parquet": pd.read_parquet,
            "csv": lambda p: pd.read_csv(p, float_precision="round_trip"),
        }
        back = readers[fmt](out)
        assert list(back.columns) == list(m.columns)
        got, want = back["value"].to_numpy(dtype=float), m["value"].to_numpy(dtype=float)
        np.testing.assert_array_equal(got, want)  # every stored value, exactly (NaN where NULL)
        assert back["layout"].tolist() == m["layout"].tolist()
    bad = CliRunner().invoke(app, ["export", str(tmp_path / "m.xml"), "--format", "xml", "--db", str(db)])
    assert bad.exit_code == 2 and "allowed: csv, json, parquet" in bad.output
    with pytest.raises(FileNotFoundError, match="no such database"):
        dlbench.load(tmp_path / "missing.db")
    assert not (tmp_path / "missing.db").exists()
