"""Your own model, any task: series, regression and language models from the examples.

The data layer (a `.npz` that declares its layout, regression targets, next-token
targets), a task that cannot learn from a dataset's labels refused with its reason,
and the three examples in examples/ (series_cnn, regression_mlp, tiny_lm) run in
torch, TensorFlow and JAX in one `dlbench run`, reported with each task's own quality
metric and read back through the Python API with the same numbers.
"""

from __future__ import annotations

import importlib.util
import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from dlbench.datasets import files, layouts
from dlbench.datasets.files import UserDataError

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
NEEDS = ("torch", "tensorflow", "jax", "flax")
missing = [m for m in NEEDS if importlib.util.find_spec(m) is None]
frameworks_needed = pytest.mark.skipif(bool(missing), reason=f"not installed: {', '.join(missing)}")


def _write_example_data(name: str, path: Path) -> Path:
    spec = importlib.util.spec_from_file_location(f"{name}_data", EXAMPLES / name / "data.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.write(str(path), train=512, test=256)
    return path


def _plain_regression(path: Path) -> Path:
    """(N, 8) float features and (N, 2) float targets, a linear map plus noise."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((8, 2))
    x_train, x_test = rng.standard_normal((256, 8)), rng.standard_normal((64, 8))
    y_train, y_test = x_train @ w + 0.1 * rng.random((256, 2)), x_test @ w + 0.1 * rng.random((64, 2))
    np.savez(path, x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test)
    return path


# -- the data layer -------------------------------------------------------------------


def test_a_channels_first_series_is_kept_channels_last_and_says_how_it_was_read(tmp_path: Path):
    x = np.arange(2 * 3 * 5, dtype=np.float32).reshape(2, 3, 5)  # (N, C, L)
    path = tmp_path / "s.npz"
    np.savez(path, x_train=x, y_train=np.array([0, 1]), x_test=x, y_test=np.array([1, 0]), layout="NCL")
    arrays = files.load(path)
    assert arrays.input_shape == (5, 3)
    np.testing.assert_array_equal(arrays.train.x, x.transpose(0, 2, 1))
    assert files.describe(path) == ((5, 3), 2, "classes")
    assert files.reading(path).endswith("layout NCL, declared: series of 5 steps x 3 channels")


def test_an_undeclared_3d_array_is_a_greyscale_image_and_the_reading_says_so(tmp_path: Path):
    path = tmp_path / "g.npz"
    x = np.zeros((4, 6, 7), dtype=np.uint8)
    np.savez(path, x_train=x, y_train=np.array([0, 1, 0, 1]), x_test=x, y_test=np.array([1, 0, 1, 0]))
    assert files.load(path).input_shape == (6, 7, 1)
    assert "layout NHW, inferred from its rank (declare layout in the .npz to change it)" in files.reading(path)


@pytest.mark.parametrize(
    ("layout", "said"),
    [
        ("NLCX", "layout 'NLCX' is not one of NF, NT, NLC, NCL, NHW, NHWC, NCHW, NDHWC, NCDHW"),
        ("NHWC", "layout 'NHWC' names 4 axes; the array has 3, shape (4, 8, 2)"),
    ],
)
def test_a_wrong_layout_is_refused_in_one_line(tmp_path: Path, layout: str, said: str):
    path = tmp_path / "bad.npz"
    x = np.zeros((4, 8, 2), dtype=np.float32)
    np.savez(path, x_train=x, y_train=np.zeros(4, int), x_test=x, y_test=np.ones(4, int), layout=layout)
    with pytest.raises(UserDataError) as err:
        files.load(path)
    assert str(err.value) == f"{path}: x_train: {said}"


def test_volumes_channels_first_become_channels_last():
    layout = layouts.LAYOUTS["NCDHW"]
    x = np.random.default_rng(0).random((2, 3, 4, 5, 6)).astype(np.float32)
    moved = layouts.to_channels_last(layout, x)
    assert moved.shape == (2, 4, 5, 6, 3) == (2, *layouts.sample_shape(layout, x.shape))
    assert moved[1, 2, 3, 4, 0] == x[1, 0, 2, 3, 4]


def test_float_targets_are_regression_values_and_token_targets_count_into_the_vocabulary(tmp_path: Path):
    x = np.random.default_rng(0).random((6, 4)).astype(np.float32)
    reg = tmp_path / "reg.npz"
    np.savez(reg, x_train=x, y_train=np.linspace(0, 1, 6), x_test=x, y_test=np.linspace(1, 2, 6))
    arrays = files.load(reg)
    assert arrays.train.y.shape == (6, 1) and arrays.train.y.dtype == np.float32 and arrays.num_classes == 1
    assert files.describe(reg) == ((4,), 1, "values")
    lm = tmp_path / "lm.npz"
    tokens = np.array([[0, 1, 2], [2, 1, 0]])
    np.savez(lm, x_train=tokens, y_train=tokens[:, ::-1] % 2, x_test=tokens + 7, y_test=tokens % 2)
    assert files.describe(lm) == ((3,), 10, "next-token")  # the largest id (9, in x_test) + 1


def test_a_task_that_cannot_learn_from_the_labels_is_skipped_with_what_to_give_it(tmp_path: Path, cli):
    data = _plain_regression(tmp_path / "housing.npz")
    out = cli(
        "plan", "--model", f"{EXAMPLES / 'tiny_lm' / 'tiny_lm.py'}:MODEL", "--framework", "torch", "--dataset", data
    )
    assert (
        "tiny_lm is a next-token model; housing's y holds float regression targets: give it y (N, T): "
        "the next token of each position of x" in " ".join(out.replace("│", " ").split())
    ), out


def test_a_series_model_on_an_undeclared_3d_array_is_told_to_declare_its_layout(tmp_path: Path, cli):
    path = tmp_path / "raw.npz"
    x = np.zeros((8, 64, 3), dtype=np.float32)  # (N, L, C) saved without a layout
    np.savez(path, x_train=x, y_train=np.arange(8) % 2, x_test=x, y_test=np.arange(8) % 2)
    args = ("plan", "--model", f"{EXAMPLES / 'series_cnn' / 'series_cnn.py'}:MODEL", "--dataset", path)
    # The reason as data (a table cell wraps it at the terminal's width), the data line as printed.
    (reason,) = {s["reason"] for s in json.loads(cli(*args, "--format", "json"))["skipped"]}
    assert "series_cnn takes series input, (L, C) per sample; the data gives 64x3x1" in reason
    assert "save it with layout='NLC' (or 'NCL')" in reason
    assert "layout NHW, inferred from its rank" in " ".join(cli(*args).split())


# -- the three examples, end to end -----------------------------------------------------

EXPERIMENT = """
[experiment]
name = "own tasks"
[matrix]
framework = ["torch", "tensorflow", "jax"]
model = [{models}]
dataset = [{datasets}]
batch_size = [32]
optimizer = ["adam"]
lr = [0.003]
[protocol]
epochs = 8
repeats = 1
warmup = 0
trials = 1
samplers = "none"
latency_batches = 0
[models.series_cnn]
width = 8
[models.regression_mlp]
hidden = 16
[models.tiny_lm]
dim = 16
"""
EXAMPLE_NAMES = {"series_cnn": "signals", "regression_mlp": "sales", "tiny_lm": "markov"}


@pytest.fixture(scope="module")
def examples_run(tmp_path_factory) -> tuple[Path, str]:
    from typer.testing import CliRunner

    from dlbench.cli import app

    tmp = tmp_path_factory.mktemp("own_tasks")
    data = {name: _write_example_data(name, tmp / f"{stem}.npz") for name, stem in EXAMPLE_NAMES.items()}
    models = ", ".join(f'"{EXAMPLES / name / name}.py:MODEL"' for name in EXAMPLE_NAMES)
    datasets = ", ".join(f'"{path}"' for path in data.values())
    (tmp / "e.toml").write_text(EXPERIMENT.format(models=models, datasets=datasets))
    db = tmp / "e.db"
    result = CliRunner().invoke(app, ["run", str(tmp / "e.toml"), "--db", str(db)])
    assert result.exit_code == 0, result.output
    return db, result.output


def _rows(db: Path, sql: str, *args: object) -> list[tuple]:
    with sqlite3.connect(db) as con:
        return con.execute(sql, args).fetchall()


def _quality(db: Path) -> dict[tuple[str, str, str], float]:
    rows = _rows(
        db,
        "SELECT t.framework, json_extract(t.case_json, '$.model'), m.metric, m.value FROM measurements m "
        "JOIN trials t ON t.id = m.trial_id WHERE m.phase = 'accuracy'",
    )
    return {(fw, model, metric): value for fw, model, metric, value in rows}


@frameworks_needed
def test_each_example_runs_in_every_framework_only_on_its_own_data(examples_run):
    db, output = examples_run
    done = _rows(
        db,
        "SELECT framework, json_extract(case_json, '$.model'), json_extract(case_json, '$.dataset'), status "
        "FROM trials",
    )
    assert sorted((fw, model, ds) for fw, model, ds, _ in done) == sorted(
        (fw, model, stem) for fw in ("torch", "tensorflow", "jax") for model, stem in EXAMPLE_NAMES.items()
    )
    assert {status for *_, status in done} == {"ok"}


@frameworks_needed
def test_each_task_learns_and_is_measured_by_its_own_metric(examples_run):
    db, _ = examples_run
    quality = _quality(db)
    with np.load(db.parent / "sales.npz") as data:
        variance = float(data["y_test"].var(axis=0).mean())  # the MSE of predicting the mean: about 1.0
    for fw in ("torch", "tensorflow", "jax"):
        assert quality[(fw, "series_cnn", "accuracy")] > 0.6  # 4 classes: chance is 0.25
        # The noise's variance is 0.01: a model that learned is far below the targets' own.
        assert quality[(fw, "regression_mlp", "mse")] < 0.5 * variance
        assert quality[(fw, "tiny_lm", "accuracy")] > 0.6  # 0.81 is the chain's best; chance 1/32
        assert 2.0 < quality[(fw, "tiny_lm", "perplexity")] < 8.0  # the chain's own is about 3.3
        assert (fw, "regression_mlp", "accuracy") not in quality


@frameworks_needed
def test_a_language_model_reports_tokens_per_second_beside_samples(examples_run):
    db, _ = examples_run
    rows = _rows(
        db,
        "SELECT m.trial_id, m.phase, m.metric, m.value, m.unit FROM measurements m JOIN trials t "
        "ON t.id = m.trial_id WHERE m.metric IN ('throughput', 'token_throughput') "
        "AND json_extract(t.case_json, '$.model') = ?",
        "tiny_lm",
    )
    samples = {(trial, phase): v for trial, phase, metric, v, _ in rows if metric == "throughput"}
    tokens = {(trial, phase): (v, unit) for trial, phase, metric, v, unit in rows if metric == "token_throughput"}
    assert {phase for _, phase in tokens} == {"train", "infer"} and tokens.keys() == samples.keys()
    for key, (value, unit) in tokens.items():
        assert unit == "tokens/s" and value == pytest.approx(16 * samples[key])  # 16 tokens per sequence


@frameworks_needed
def test_the_report_names_each_tasks_metric_and_the_api_reads_the_same_numbers(examples_run, cli):
    import dlbench

    db, _ = examples_run
    console = cli("report", "--db", db, "--details")
    assert "test MSE" in console and "perplexity" in console
    frame = dlbench.load(db).measurements()
    mse = frame[(frame["phase"] == "accuracy") & (frame["metric"] == "mse")]
    stored = {k: v for k, v in _quality(db).items() if k[2] == "mse"}
    assert sorted(mse["value"]) == pytest.approx(sorted(stored.values()))
    assert len(stored) == 3


# -- check on the examples, and on a regressor that is broken ---------------------------


@frameworks_needed
@pytest.mark.parametrize("name", list(EXAMPLE_NAMES))
def test_check_calls_each_example_the_same_network_in_the_three_frameworks(name: str, cli):
    out = cli("check", f"{EXAMPLES / name / name}.py:MODEL")
    verdict = out.strip().splitlines()[-1]
    assert verdict.startswith(
        f"{name}: the same network in torch, tensorflow, jax: equal parameter counts, equal outputs after a weight "
        "copy, the same gradient steps"
    ), verdict
    # Keras' Adam ends far from torch's in a network with an embedding (measured: regression_mlp
    # 1.1, tiny_lm 1.8 of the weights' movement) while SGD's steps agree: a warning, not a failure.
    embedded = name in ("regression_mlp", "tiny_lm")
    assert verdict.endswith("warning: training steps differ beyond the code (tensorflow: see above)") == embedded


ROLLED = """
import dlbench


def build(shape, targets, hidden=16):
    import torch
    from torch import nn

    class Rolled(nn.Module):  # each sample gets its neighbour's prediction: outputs and targets out of step
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(shape[0], hidden), nn.ReLU(), nn.Linear(hidden, targets))

        def forward(self, x):
            return torch.roll(self.net(x), 1, dims=0)

    return Rolled()


MODEL = dlbench.Model("rolled", {"torch": build}, input_kind="features", task="regress", options={"hidden": 16})
"""


CONSTANT = ROLLED.replace("torch.roll(self.net(x), 1, dims=0)", "0 * self.net(x) + self.net[2].bias")


@frameworks_needed
@pytest.mark.parametrize(
    ("source", "why"),
    [(ROLLED, "predictions and targets out of step"), (CONSTANT, "does the output depend on the input")],
    ids=["rolled", "ignores its input"],
)
def test_check_fails_a_broken_regressor_for_its_reason(tmp_path: Path, cli, source: str, why: str):
    (tmp_path / "rolled.py").write_text(source)
    result = cli.result("check", f"{tmp_path / 'rolled.py'}:MODEL", "--framework", "torch")
    assert result.exit_code == 1, result.output
    (line,) = [x for x in result.output.splitlines() if x.startswith("FAIL loss falls")]
    assert "held-out MSE" in line and "needs below 80% of" in line and why in line, line


WRONG_HEAD = """
import dlbench


def build(shape, targets, hidden=8):
    from torch import nn

    return nn.Sequential(nn.Linear(shape[0], hidden), nn.ReLU(), nn.Linear(hidden, 3))  # 3 outputs, whatever K is


MODEL = dlbench.Model("wrong_head", {"torch": build}, input_kind="features", task="regress", options={"hidden": 8})
"""


@frameworks_needed
def test_a_network_whose_output_does_not_fit_its_task_fails_its_trial_with_one_line(tmp_path: Path, cli):
    (tmp_path / "wrong_head.py").write_text(WRONG_HEAD)
    data = _plain_regression(tmp_path / "housing.npz")
    db = tmp_path / "w.db"
    cli(
        "run", "--model", f"{tmp_path / 'wrong_head.py'}:MODEL", "--dataset", data, "--framework", "torch",
        "--epochs", "1", "--repeats", "1", "--warmup", "0", "--trials", "1", "--samplers", "none", "--db", db,
        code=None,
    )  # fmt: skip
    ((status, error),) = _rows(db, "SELECT status, error FROM trials")
    assert status == "failed"
    assert error.splitlines()[0] == (
        "OutputShapeError: model wrong_head: the torch network returns (2, 3) for 2 samples of (8,); a regress model "
        "returns (N, K) = (2, 2): one value per target: check the builder's last layer and the second argument it "
        "is given"
    )
