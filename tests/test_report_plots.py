"""Figures from a real run (numpy + scikit-learn on digits) and from a synthetic store
with a failed and an out-of-memory trial: files are valid, gaps are gaps, warm-ups
stay out of the statistics."""

from __future__ import annotations

import statistics
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from dlbench.report.plots import file_stem, make_figures
from dlbench.store import Measurement, Store

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
ALL = {
    "01_box_train_time",
    "02_box_infer_time",
    "03_runs_train_time",
    "04_relative_time",
    "05_batch_size",
    "06_accuracy_runs",
    "07_energy_runs",
    "08_telemetry",
    "10_learning_curves",
}


def check_files(figures) -> None:
    # Files are numbered 01, 02, ... in order, with no gap for a figure the run has no data for.
    for number, f in enumerate(figures, start=1):
        assert f.png.name == f"{file_stem(f.name, number)}.png" and f.svg.name == f"{file_stem(f.name, number)}.svg"
        assert f.png.name.startswith(f"{number:02d}_")
        assert f.png.read_bytes()[:8] == PNG_MAGIC, f.png
        assert ET.parse(f.svg).getroot().tag.endswith("svg"), f.svg
        assert f.title and f.caption


# -- a real run -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def real_run(tmp_path_factory, tiny_run):
    db = tmp_path_factory.mktemp("plots") / "real.db"
    tiny_run(
        db, framework="numpy,sklearn", model="mlp,knn", batch_size="32,64", trials=2, warmup=1, latency_batches=1,
        samplers="cpu,memory",
    )  # fmt: skip
    store = Store(db)
    yield store, store.run()["id"]
    store.close()


def test_real_run_figures(real_run, tmp_path):
    store, run_id = real_run
    figures = make_figures(store, run_id, tmp_path)
    by_name = {f.name: f for f in figures}
    # numpy and sklearn share no model, so no ratio; no energy source was selected.
    assert set(by_name) == ALL - {"04_relative_time", "07_energy_runs"}
    check_files(figures)

    rows = store.measurements(run_id)
    trials = store.trials(run_id)
    box = by_name["01_box_train_time"].data
    assert set(box) == {"mlp", "knn"}
    for label, values in [*box["mlp"].items(), *box["knn"].items()]:
        fw = label.split(":")[0]
        batch = int(label.removesuffix(" BUSY").split(" b")[-1])  # BUSY: measured beside other work
        # Two trials: the sample is one median of the measured repeats per trial, warm-ups left out.
        expected = sorted(
            statistics.median(
                r["value"]
                for r in rows
                if r["trial_id"] == t["id"] and r["phase"] == "train" and r["metric"] == "time" and not r["warmup"]
            )
            for t in trials
            if t["framework"] == fw and t["batch_size"] == batch
        )
        assert len(values) == 2 and sorted(values) == pytest.approx(expected)

    runs = by_name["03_runs_train_time"].data
    for panel in runs.values():
        for series in panel.values():
            assert len(series["warmup"]) == 2 and len(series["measured"]) == 4
            assert not series["partial"] and not series["gaps"]

    curves = by_name["05_batch_size"].data
    assert set(curves) == {
        "mlp | train time per sample",
        "mlp | inference throughput",
        "knn | train time per sample",
        "knn | inference throughput",
    }
    for panel in curves.values():
        (line,) = panel.values()
        assert line["x"] == [32, 64] and None not in line["y"] and not line["gaps"]

    telemetry = by_name["08_telemetry"].data
    # A series that never changed is named in "constant" rather than drawn.
    assert {"cpu.process_util:mean | train", "cpu.system_util:mean | infer"} <= set(telemetry) | set(
        telemetry.get("constant", {})
    )
    for values in telemetry["cpu.process_util:mean | train"].values():
        assert len(values) == 4  # 2 trials x 2 measured repeats; warm-ups excluded

    # The per-epoch loss of the numpy mlp (knn has no epochs): the median over measured repeats.
    curves = by_name["10_learning_curves"].data
    assert set(curves) == {"mlp"}
    for label, curve in curves["mlp"].items():
        batch = int(label.removesuffix(" BUSY").split(" b")[-1])  # BUSY: measured beside other work
        losses = [
            r for r in rows if r["phase"] == "train" and r["metric"] == "loss" and not r["warmup"]
            and r["batch_size"] == batch and r["framework"] == "numpy"
        ]  # fmt: skip
        epochs = sorted({r["seq"] for r in losses})
        assert curve["epochs"] == [e + 1 for e in epochs] and curve["repeats"] == 4
        assert curve["median"] == pytest.approx(
            [statistics.median(r["value"] for r in losses if r["seq"] == e) for e in epochs]
        )


def test_import_is_light_and_files_are_deterministic(real_run, tmp_path):
    code = "import sys, dlbench.report.plots; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    # scipy.stats (0.7-1 s to import) waits for the first test statistic: the figures'
    # forked children, which compute none, never import it.
    code = (
        "import sys, dlbench.analysis.stats as s, dlbench.analysis.comparisons; print('scipy.stats' in sys.modules); "
        "s.summary([1.0, 2.0]); print('scipy.stats' in sys.modules); "
        "print(s.st.norm.cdf(0.0), 'scipy.stats' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False", "0.5", "True"]
    store, run_id = real_run
    a = make_figures(store, run_id, tmp_path / "a")
    b = make_figures(store, run_id, tmp_path / "b")
    assert [f.svg.read_bytes() for f in a] == [f.svg.read_bytes() for f in b]


# -- a synthetic store with failures -----------------------------------------------------------------
CASE = {
    "runtime": "defaults",  # as dlbench stores a case today (without it: an older run's "all")
    "dataset": "mnist",
    "device": "cpu",
    "epochs": 1,
    "init": "glorot-uniform",
    "lr": 0.01,
    "momentum": 0.0,
    "optimizer": "sgd",
    "precision": "float32",
    "seed": 0,
    "steps": None,
    "threads": 2,
}
WARMUP_TIME = 100.0  # far above every measured value: a warm-up in a statistic would show


def train_time(fw: str, model: str, batch: int, repeat: int) -> float:
    base = {"mlp": 2.0, "lenet5": 8.0}[model] * 32 / batch
    return base * (1.5 if fw == "torch" else 1.0) * (1 + 0.01 * repeat)


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """tensorflow:default and torch:eager x mlp, lenet5 x batch 32, 64, 128, two blocks.
    torch lenet5 b128 runs out of memory in both blocks; torch mlp b64 fails in block 1
    after its warm-up and one measured repeat."""
    store = Store(tmp_path_factory.mktemp("synthetic") / "s.db")
    run_id = store.create_run(
        name="synthetic",
        command="test",
        config_source="test",
        config_text="",
        experiment={},
        environment={},
        version="0",
    )
    position = 0
    for block in (0, 1):
        for fw, variant in (("tensorflow", "default"), ("torch", "eager")):
            for model in ("mlp", "lenet5"):
                for batch in (32, 64, 128):
                    case = {**CASE, "framework": fw, "variant": variant, "model": model, "batch_size": batch}
                    tid = store.add_trial(
                        run_id,
                        case_key=f"{fw}-{model}-{batch}",
                        block=block,
                        position=position,
                        case=case,
                        protocol={"repeats": 3, "warmup": 1},
                    )
                    position += 1
                    store.start_trial(tid)
                    status = "ok"
                    if (fw, model, batch) == ("torch", "lenet5", 128):
                        status, repeats = "oom", []
                    elif (fw, model, batch, block) == ("torch", "mlp", 64, 1):
                        status, repeats = "failed", [0, 1]
                    else:
                        repeats = [0, 1, 2, 3]
                    rows = []
                    for r in repeats:
                        warm = r == 0
                        t = WARMUP_TIME if warm else train_time(fw, model, batch, r)
                        rows += [
                            Measurement(r, warm, "train", "time", t, "s"),
                            Measurement(r, warm, "train", "throughput", 1000 / t, "samples/s"),
                            Measurement(r, warm, "accuracy", "accuracy", 0.9 + 0.01 * r, "fraction"),
                            Measurement(r, warm, "infer", "time", t / 10, "s"),
                            Measurement(r, warm, "infer", "throughput", 10000 / t, "samples/s"),
                            Measurement(r, warm, "train", "energy:rapl-package", 30 * t, "J"),
                            Measurement(r, warm, "train", "cpu.process_util:mean", 90.0 + r, "%"),
                            Measurement(r, warm, "train", "temp.coretemp.package:max", 60.0 + r, "C"),
                        ]
                    store.add_measurements(tid, rows)
                    store.finish_trial(
                        tid,
                        status=status,
                        error=None if status == "ok" else status,
                        returncode=0,
                        wall_s=1.0,
                        stderr="",
                    )
    yield store, run_id
    store.close()


def test_synthetic_figures_show_failures_as_gaps(synthetic, tmp_path):
    store, run_id = synthetic
    figures = make_figures(store, run_id, tmp_path)
    by_name = {f.name: f for f in figures}
    assert set(by_name) == ALL - {"10_learning_curves"}  # no per-epoch loss stored
    check_files(figures)

    box = by_name["01_box_train_time"].data
    assert box["lenet5"]["torch:eager lenet5 b128"] == []  # OOM: a gap, not a zero
    assert len(box["lenet5"]["tensorflow:default lenet5 b128"]) == 2  # one median per trial
    # One trial of torch mlp b64 failed: the other's three measured repeats are the sample.
    assert box["mlp"]["torch:eager mlp b64"] == pytest.approx([train_time("torch", "mlp", 64, r) for r in (1, 2, 3)])
    assert max(v for panel in box.values() for values in panel.values() for v in values) < WARMUP_TIME

    runs = by_name["03_runs_train_time"].data
    failed = runs["mlp"]["torch:eager mlp b64"]
    assert failed["gaps"] == ["failed"] and len(failed["partial"]) == 1 and len(failed["warmup"]) == 2
    assert runs["lenet5"]["torch:eager lenet5 b128"] == {
        "measured": [],
        "warmup": [],
        "partial": [],
        "gaps": ["OOM", "OOM"],
    }

    relative = by_name["04_relative_time"].data
    train = {(r["set"].split()[0], r["set"].split()[2], r["a"], r["b"]): r for r in relative["train time"]}
    assert train[("mlp", "b32", "torch:eager", "tensorflow:default")]["ratio"] == pytest.approx(1.5)
    assert train[("lenet5", "b64", "torch:eager", "tensorflow:default")]["ratio"] == pytest.approx(1.5)
    # torch lenet5 b128 ran out of memory: a row without a ratio, with the status.
    oom = train[("lenet5", "b128", "torch:eager", "tensorflow:default")]
    assert oom["ratio"] is None and oom["gap"] == "OOM"
    assert "inference time" in relative

    curves = by_name["05_batch_size"].data["lenet5 | inference throughput"]
    torch_line = curves["torch:eager"]
    assert torch_line["x"] == [32, 64, 128]
    assert torch_line["y"][2] is None and torch_line["y"][0] is not None
    assert torch_line["gaps"] == {128: "OOM"}
    assert curves["tensorflow:default"]["gaps"] == {} and None not in curves["tensorflow:default"]["y"]

    energy = by_name["07_energy_runs"].data
    assert set(energy) == {"mlp — rapl-package", "lenet5 — rapl-package"}
    telemetry = by_name["08_telemetry"].data
    assert set(telemetry) == {"cpu.process_util:mean | train", "temp.coretemp.package:max | train"}
    assert telemetry["temp.coretemp.package:max | train"]["torch:eager lenet5 b128"] == []
    assert max(telemetry["temp.coretemp.package:max | train"]["tensorflow:default mlp b32"]) == 63.0


def test_baseline_choice(synthetic, tmp_path):
    store, run_id = synthetic
    figures = make_figures(store, run_id, tmp_path, baseline="torch")
    relative = {f.name: f for f in figures}["04_relative_time"].data
    train = {(r["set"].split()[0], r["set"].split()[2], r["a"], r["b"]): r for r in relative["train time"]}
    # torch is the denominator now: the same pair, inverted, verdict and interval with it.
    row = train[("mlp", "b32", "tensorflow:default", "torch:eager")]
    assert row["ratio"] == pytest.approx(1 / 1.5)
    assert row["ci"][0] <= row["ratio"] <= row["ci"][1]
    assert train[("lenet5", "b128", "tensorflow:default", "torch:eager")]["gap"] == "torch:eager OOM"
    with pytest.raises(ValueError, match="baseline 'jax' is not in this run"):
        make_figures(store, run_id, tmp_path, baseline="jax")


def test_nothing_to_draw(tmp_path):
    with Store(tmp_path / "empty.db") as store:
        run_id = store.create_run(
            name="e", command="", config_source="", config_text="", experiment={}, environment={}, version="0"
        )
        assert make_figures(store, run_id, tmp_path / "out") == []
