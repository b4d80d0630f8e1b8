"""Several named outputs: a model of two heads (a regression and a classification).

The declaration (`dlbench.Model(outputs=..., loss=..., loss_weights=...)`) and its
one-line refusals, a dataset's y_train_<name>/y_test_<name> and its refusals, each
head's quality metric resolved to a labelled declaration, and examples/multi_head run in
torch, TensorFlow and JAX through `dlbench check`, `dlbench run`, the report (console
and CSV) and the Python API, each head's quality better than its baseline.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

import dlbench
from dlbench.analysis import quality
from dlbench.datasets import files
from dlbench.datasets.files import UserDataError

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "multi_head"
NEEDS = ("torch", "tensorflow", "jax", "flax")
missing = [m for m in NEEDS if importlib.util.find_spec(m) is None]
frameworks_needed = pytest.mark.skipif(bool(missing), reason=f"not installed: {', '.join(missing)}")


def _model(**kw: object):
    return dlbench.Model("m", {"torch": "x:y"}, input_kind="features", **kw)  # type: ignore[arg-type]


# -- the declaration ------------------------------------------------------------------


def test_each_head_gets_its_task_loss_and_weight_and_a_metric_that_names_it():
    spec = _model(outputs={"price": "regress", "kind": "classify"}, loss={"price": "mae"}, loss_weights={"kind": 0.5})
    assert spec.task == "multi-output" and spec.loss == "sum"
    assert dict(spec.head_losses) == {"price": "mae", "kind": "cross-entropy"}
    assert dict(spec.loss_weights) == {"price": 1.0, "kind": 0.5}
    assert spec.head_quality("price") == ("mae/price", "target units")
    assert spec.head_quality("kind") == ("accuracy/kind", "fraction")
    assert spec.loss_unit == "total of the heads' weighted losses"


@pytest.mark.parametrize(
    ("kw", "said"),
    [
        ({"outputs": {"p": "next-token"}}, "output p: task 'next-token'; allowed: classify, regress"),
        ({"outputs": {"p": "regress"}, "loss": {"p": "cross-entropy"}}, "output p: loss 'cross-entropy' does not fit"),
        ({"outputs": {"p": "regress"}, "loss": {"q": "mse"}}, "loss['q']: no such output (outputs: p)"),
        ({"outputs": {"p": "regress"}, "loss": "mse"}, "takes loss as a mapping head -> loss, e.g. {'p': 'mse'}"),
        ({"outputs": {"p": "regress"}, "task": "regress"}, "give task (one output) or outputs"),
        ({"outputs": {"p": "regress"}, "loss_weights": {"p": 0}}, "output p: loss weight 0; a weight is a positive"),
        ({"loss_weights": {"p": 1.0}}, "loss_weights weigh the heads of outputs"),
        ({"outputs": {"Price": "regress"}}, "output name 'Price': a lowercase letter"),
        ({"outputs": {}}, "outputs maps at least one head name"),
    ],
)
def test_a_bad_declaration_is_one_line_naming_the_head(kw: dict, said: str):
    with pytest.raises(ValueError) as err:
        _model(**kw)
    assert "\n" not in str(err.value) and said in str(err.value), str(err.value)


# -- the data -------------------------------------------------------------------------


def _write(path: Path, **override: object) -> Path:
    rng = np.random.default_rng(0)
    arrays: dict[str, object] = {
        "x_train": rng.random((20, 4), dtype=np.float32),
        "x_test": rng.random((10, 4), dtype=np.float32),
        "y_train_price": rng.random(20),
        "y_test_price": rng.random(10),
        "y_train_kind": rng.integers(0, 3, 20),
        "y_test_kind": np.array([0, 1, 2, 0, 1, 2, 0, 1, 2, 0]),
    }
    arrays.update(override)
    np.savez(path, **{k: v for k, v in arrays.items() if v is not None})
    return path


def test_a_file_of_two_outputs_gives_each_its_targets_and_classes_and_says_how_it_was_read(tmp_path: Path):
    path = _write(
        tmp_path / "shop.npz",
        y_train_price=np.arange(40, dtype=np.float64).reshape(20, 2) / 3,
        y_test_price=np.ones((10, 2)) / 3,
    )
    arrays = files.load(path)
    assert arrays.num_classes == {"price": 2, "kind": 3}
    assert arrays.train.y["price"].dtype == np.float32 and arrays.train.y["price"].shape == (20, 2)
    assert arrays.train.y["kind"].dtype == np.int64 and arrays.train.y["kind"].shape == (20,)
    assert files.describe(path) == ((4,), {"price": 2, "kind": 3}, "heads")
    assert files.dataset(path).head_targets == (("price", "values"), ("kind", "classes"))
    assert files.reading(path).endswith(
        "output price: y_train_price (20, 2) float64, 2 regression targets per sample; "
        "output kind: y_train_kind (20,) int64, class ids"
    )
    head = arrays.train.head(5)
    assert head.y["price"].shape == (5, 2) and head.y["kind"].shape == (5,)


def test_a_large_file_is_described_from_its_headers_and_labels_alike(tmp_path: Path, monkeypatch):
    path = _write(tmp_path / "shop.npz")
    monkeypatch.setattr(files, "PLAN_FULL_CHECK_BYTES", 0)  # headers and labels only, as for a large file
    assert files.describe(path) == ((4,), {"price": 1, "kind": 3}, "heads")
    bad = _write(tmp_path / "bad.npz", y_test_kind=np.zeros(9, int))
    with pytest.raises(UserDataError, match="x_test has 10 samples but y_test_kind has 9"):
        files.describe(bad)


def test_named_inputs_and_named_outputs_go_together(tmp_path: Path):
    rng = np.random.default_rng(0)
    path = _write(
        tmp_path / "both.npz",
        x_train=None,
        x_test=None,
        x_train_numeric=rng.random((20, 3), dtype=np.float32),
        x_test_numeric=rng.random((10, 3), dtype=np.float32),
        x_train_category=rng.integers(0, 4, (20, 1)),
        x_test_category=rng.integers(0, 4, (10, 1)),
    )
    arrays = files.load(path)
    assert arrays.input_shape == {"category": (1,), "numeric": (3,)}
    assert arrays.num_classes == {"price": 1, "kind": 3}


@pytest.mark.parametrize(
    ("override", "said"),
    [
        ({"y_test_kind": None}, "no array 'y_test_kind'; a dataset .npz holds exactly x_train, x_test, y_train_price"),
        ({"y_train": np.zeros(20)}, "holds y_train and y_train_<name> arrays: either one output"),
        ({"y_train_kind": np.zeros(19, int)}, "x_train has 20 samples but y_train_kind has 19; give one target per"),
        ({"y_train_kind": np.zeros((20, 2), int)}, "y_train_kind is int64 of shape (20, 2); an output's targets are"),
        ({"y_test_kind": np.full(10, 0.5)}, "y_train_kind holds class ids, y_test_kind 1 float values per sample"),
        ({"y_train_price": np.full(20, np.nan)}, "y_train_price holds NaN or infinite values"),
        ({"y_train_kind": np.zeros(20, int), "y_test_kind": np.zeros(10, int)}, "every label of y_train_kind is 0"),
    ],
)
def test_each_bad_file_of_outputs_is_one_line_naming_the_array(tmp_path: Path, override: dict, said: str):
    path = _write(tmp_path / "bad.npz", **override)
    with pytest.raises(UserDataError) as err:
        files.load(path)
    assert "\n" not in str(err.value) and said in str(err.value), str(err.value)


def test_a_model_and_a_file_whose_outputs_differ_are_refused_with_what_to_give(tmp_path: Path):
    from dlbench import plan

    path = _write(tmp_path / "shop.npz", y_train_kind=np.full(20, 0.5), y_test_kind=np.full(10, 0.5))
    spec = _model(outputs={"price": "regress", "kind": "classify"})
    data = files.dataset(path)
    said = plan.heads_reason(spec, "shop", data.targets, dict(data.head_targets))
    assert said == (
        "m's output kind is a classify head; shop's y_train_kind holds float regression targets: give it integer "
        "class ids (N,)"
    )
    other = _model(outputs={"price": "regress", "size": "classify"})
    assert plan.heads_reason(other, "shop", data.targets, dict(data.head_targets)) == (
        "m has outputs price, size; shop's are price, kind"
    )
    assert "holds one y per named output (price, kind)" in str(
        plan.heads_reason(_model(task="regress"), "shop", data.targets, dict(data.head_targets))
    )


# -- the quality declarations ---------------------------------------------------------


def test_a_heads_metric_is_its_base_metric_labelled_with_the_head():
    mse = quality.quality("accuracy", "mse/price")
    acc = quality.quality("accuracy", "accuracy/kind")
    assert mse is not None and acc is not None
    assert (mse.label, mse.unit, mse.higher_is_better, mse.shown) == (
        "test MSE (price)",
        "squared target units",
        False,
        "",
    )
    assert (acc.label, acc.title, acc.higher_is_better) == ("accuracy (kind)", "accuracy (kind) (%)", True)
    assert mse.leader == "has the lowest test MSE (price)"
    assert acc.no_leader == "no framework is more accurate on kind here"
    assert quality.by_label("test MSE (price)") == mse and quality.by_label("accuracy (kind)") == acc
    assert quality.quality("train", "mse/price") is None and quality.quality("accuracy", "rmse/price") is None
    found = quality.present([("accuracy", "mse/price"), ("accuracy", "accuracy/kind"), ("train", "time")])
    assert [q.metric for q in found][-2:] == ["accuracy/kind", "mse/price"]


# -- the example, in the three frameworks ---------------------------------------------


def _write_example(path: Path) -> Path:
    spec = importlib.util.spec_from_file_location("multi_head_data", EXAMPLE / "data.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.write(str(path), train=1024, test=256)
    return path


@pytest.fixture(scope="module")
def heads_run(tmp_path_factory) -> tuple[Path, Path, str]:
    from typer.testing import CliRunner

    from dlbench.cli import app

    tmp = tmp_path_factory.mktemp("multi_output")
    data = _write_example(tmp / "shop.npz")
    db = tmp / "h.db"
    args = [
        "run", "--model", f"{EXAMPLE / 'multi_head.py'}:MODEL", "--dataset", str(data),
        "--framework", "torch,tensorflow,jax",
        "--epochs", "2", "--batch-size", "32", "--lr", "0.01", "--repeats", "1", "--warmup", "0", "--trials", "1",
        "--samplers", "none", "--db", str(db),
    ]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return db, data, result.output


def _quality(db: Path) -> dict[tuple[str, str], tuple[float, str]]:
    with sqlite3.connect(db) as con:
        rows = con.execute(
            "SELECT t.framework, m.metric, m.value, m.unit FROM measurements m JOIN trials t ON t.id = m.trial_id "
            "WHERE m.phase = 'accuracy'"
        ).fetchall()
    return {(fw, metric): (value, unit) for fw, metric, value, unit in rows}


@frameworks_needed
def test_each_head_learns_and_is_stored_under_its_own_metric_in_every_framework(heads_run):
    db, data, output = heads_run
    assert "output price: y_train_price (1024,) float32, 1 regression target per sample" in output
    stored = _quality(db)
    assert sorted(stored) == sorted(
        (fw, metric) for fw in ("torch", "tensorflow", "jax") for metric in ("accuracy/kind", "mse/price")
    )
    with np.load(data) as arrays:
        variance = float(arrays["y_test_price"].var())  # the MSE of predicting the mean: about 0.55
        chance = float(np.bincount(arrays["y_test_kind"]).max() / len(arrays["y_test_kind"]))
    for fw in ("torch", "tensorflow", "jax"):
        mse, unit = stored[(fw, "mse/price")]
        assert unit == "squared target units" and mse < 0.5 * variance
        accuracy, unit = stored[(fw, "accuracy/kind")]
        assert unit == "fraction" and accuracy > chance + 0.15
    with sqlite3.connect(db) as con:
        units = {u for (u,) in con.execute("SELECT DISTINCT unit FROM measurements WHERE phase = 'train' AND "
                                           "metric = 'loss'")}  # fmt: skip
    assert units == {"total of the heads' weighted losses"}


@frameworks_needed
def test_the_report_and_the_csv_show_each_head_and_the_api_reads_the_same_numbers(heads_run, cli, tmp_path: Path):
    db, _, _ = heads_run
    tables = cli("report", "--db", db, "--details")
    assert "accuracy (kind) (%)" in tables and "test MSE (price)" in tables
    answer = " ".join(cli("report", "--db", db).split())  # the answer, its lines unwrapped
    assert "accuracy (kind):" in answer and "test MSE (price):" in answer
    assert "has the lowest test MSE (price)" in answer or "decidedly lower test MSE (price)" in answer
    other = tmp_path / "b.db"
    shutil.copy(db, other)  # the same numbers as another run: compare refuses a run against itself
    compared = cli("compare", f"{db}:1", f"{other}:1", "--quality", "--format", "json")
    for label in ("test MSE (price)", "accuracy (kind)"):
        assert compared.count(f'"metric": "{label}"') == 3  # one per framework
    out = tmp_path / "r.csv"
    cli("report", "--db", db, "--format", "csv", "--out", out)
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    by_metric = {(r["framework"], r["metric"]): r for r in rows}
    stored = _quality(db)
    for fw in ("torch", "tensorflow", "jax"):
        assert float(by_metric[(fw, "test MSE (price)")]["median"]) == pytest.approx(stored[(fw, "mse/price")][0])
        assert by_metric[(fw, "accuracy (kind)")]["unit"] == "fraction"
    frame = dlbench.load(db).measurements()
    heads = frame[(frame["phase"] == "accuracy") & (frame["metric"] == "accuracy/kind")]
    assert sorted(heads["value"]) == pytest.approx(
        sorted(v for (_, m), (v, _) in stored.items() if m == "accuracy/kind")
    )
    (row,) = dlbench.load(db).compare("torch", "jax", metric="accuracy.mse/price").to_dict("records")
    assert row["median_a"] == pytest.approx(stored[("torch", "mse/price")][0])
    assert row["median_b"] == pytest.approx(stored[("jax", "mse/price")][0])


@frameworks_needed
def test_check_calls_the_example_the_same_network_comparing_each_head(cli):
    out = cli("check", f"{EXAMPLE / 'multi_head.py'}:MODEL")
    lines = out.strip().splitlines()
    assert lines[-1] == (
        "multi_head: the same network in torch, tensorflow, jax: equal parameter counts, equal outputs after a "
        "weight copy, the same gradient steps"
    )
    (trains,) = [x for x in lines if x.startswith("ok   training: jax:")]
    assert "first SGD step within " in trains
    (outputs,) = [x for x in lines if x.startswith("ok   outputs:")]
    assert "(price " in outputs and ", kind " in outputs
    falls = [x for x in lines if x.startswith("ok   loss falls:")]
    assert len(falls) == 3 and all("fixed-batch total loss" in x and "price: held-out MSE" in x for x in falls)


def test_a_network_whose_outputs_do_not_fit_its_heads_is_told_what_to_change():
    from dlbench import heads

    spec = _model(outputs={"price": "regress", "kind": "classify"})
    classes = {"price": 1, "kind": 3}
    good = {"price": np.zeros((2, 1)), "kind": np.zeros((2, 3))}
    assert heads.output_problem(spec, good, 2, classes) is None
    assert heads.output_problem(spec, {**good, "price": np.zeros(2)}, 2, classes) is None  # (N,) for K = 1
    assert heads.output_problem(spec, {**good, "kind": np.zeros((2, 2))}, 2, classes) == (
        "returns (2, 2) for head kind; a classify head returns logits (N, classes) = (2, 3)"
    )
    assert heads.output_problem(spec, {"price": good["price"]}, 2, classes) == (
        "returns outputs price; its heads are price, kind"
    )
    assert "a model of several outputs returns a dict name -> output" in str(
        heads.output_problem(spec, np.zeros((2, 4)), 2, classes)
    )


@frameworks_needed
def test_the_training_loss_is_the_same_weighted_sum_in_the_three_frameworks():
    import jax.numpy as jnp
    import keras
    import torch

    from dlbench.frameworks import jax as jax_adapter
    from dlbench.frameworks import tensorflow as tf_adapter
    from dlbench.frameworks import torch as torch_adapter

    spec = dlbench.Model(
        "m", {"torch": "x:y", "tensorflow": "x:y", "jax": "x:y"}, input_kind="features",
        outputs={"price": "regress", "kind": "classify"}, loss={"price": "mae"}, loss_weights={"kind": 0.5},
    )  # fmt: skip
    rng = np.random.default_rng(0)
    out = {"price": rng.standard_normal((8, 2)).astype("f4"), "kind": rng.standard_normal((8, 3)).astype("f4")}
    y = {"price": rng.standard_normal((8, 2)).astype("f4"), "kind": rng.integers(0, 3, 8)}
    by_hand = float(np.mean(np.abs(out["price"] - y["price"])))
    logp = out["kind"] - np.log(np.exp(out["kind"]).sum(axis=1, keepdims=True))
    by_hand += 0.5 * float(-logp[np.arange(8), y["kind"]].mean())
    in_torch = torch_adapter.heads_loss(spec)(
        {k: torch.from_numpy(v) for k, v in out.items()}, {k: torch.from_numpy(v) for k, v in y.items()}
    )
    in_jax = jax_adapter.heads_loss(spec)(
        {k: jnp.asarray(v) for k, v in out.items()}, {k: jnp.asarray(v) for k, v in y.items()}
    )
    # Keras' own sum of the compiled dict of losses, as fit computes it.
    i = keras.Input((1,))
    model = keras.Model(i, {"kind": keras.layers.Dense(3)(i), "price": keras.layers.Dense(2)(i)})
    model.compile("sgd", loss=tf_adapter._training_loss(spec), loss_weights=dict(spec.loss_weights))
    in_keras = model.compute_loss(y=y, y_pred=out)
    for value in (in_torch, in_jax, in_keras):
        assert float(value) == pytest.approx(by_hand, rel=1e-6)


ROLLED_HEADS = """
import dlbench


def build(shape, outputs, hidden=32):
    import torch
    from torch import nn

    class Rolled(nn.Module):  # each sample gets its neighbour's outputs: outputs and targets out of step
        def __init__(self):
            super().__init__()
            self.trunk = nn.Linear(shape[0], hidden)
            self.kind = nn.Linear(hidden, outputs["kind"])
            self.price = nn.Linear(hidden, outputs["price"])

        def forward(self, x):
            h = torch.roll(torch.relu(self.trunk(x)), 1, dims=0)
            return {"price": self.price(h), "kind": self.kind(h)}

    return Rolled()


MODEL = dlbench.Model(
    "rolled_heads", {"torch": build}, input_kind="features", outputs={"price": "regress", "kind": "classify"},
    options={"hidden": 32},
)
"""


@frameworks_needed
def test_check_fails_a_network_whose_heads_are_out_of_step_with_their_targets(tmp_path: Path, cli):
    (tmp_path / "rolled.py").write_text(ROLLED_HEADS)
    result = cli.result("check", f"{tmp_path / 'rolled.py'}:MODEL", "--framework", "torch")
    assert result.exit_code == 1, result.output
    (line,) = [x for x in result.output.splitlines() if x.startswith("FAIL loss falls")]
    assert "price: held-out MSE" in line and "needs below 80% of" in line, line
    assert "kind: held-out accuracy" in line and "outputs and labels out of step" in line, line
