"""The last `dlbench check` of a user's model code, remembered and said in the report of
its runs (dlbench.conformance.record, dlbench.report.checks)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlbench.conformance import record
from dlbench.report.checks import check_notes


@pytest.fixture
def model_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DLBENCH_CHECKS_DIR", str(tmp_path / "cache"))
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "net.py").write_text("MODEL = None\n")
    (folder / "net_torch.py").write_text("def build(shape, classes): ...\n")
    return folder


def test_a_check_is_found_for_the_same_code_and_lost_when_a_builder_changes(model_dir: Path):
    source = f"{model_dir / 'net.py'}:MODEL"
    assert record.lookup(source) is None
    assert record.for_sources({"model:net": source}) == {"net": {"checked": False, "source": source}}
    written = record.save("net", source, {"width": 8}, True, "net: the same network in torch, jax: ...")
    assert written is not None and written.parent == model_dir.parent / "cache"
    found = record.for_sources({"model:net": source, "dataset:x": "x.npz"})["net"]
    assert found["checked"] and found["ok"] and found["options"] == {"width": 8}
    assert found["verdict"].startswith("net: the same network")
    # An edit to a builder beside the model file: another code, not checked.
    (model_dir / "net_torch.py").write_text("def build(shape, classes): return 1\n")
    assert record.lookup(source) is None


def test_a_package_model_is_not_recorded(model_dir: Path):
    assert record.save("net", "mypkg.net:MODEL", {}, True, "ok") is None
    assert record.for_sources({"model:net": "mypkg.net:MODEL"}) == {}


def test_the_report_says_the_check_or_warns_that_there_was_none():
    checked = {"ok": True, "checked": True, "checked_at": "2026-11-28T14:00:00Z", "options": {"width": 8},
               "verdict": "net: the same network in torch, jax: equal parameter counts"}  # fmt: skip
    ((line, warns),) = check_notes({"net": checked})
    assert not warns
    assert line == (
        "check (2026-11-28T14:00:00Z, options width=8, this code): net: the same network in torch, jax: equal "
        "parameter counts"
    )
    ((failed, warns),) = check_notes({"net": {**checked, "ok": False, "verdict": "net: NOT the same network"}})
    assert warns and failed.startswith("CHECK FAILED (") and failed.endswith("net: NOT the same network")
    ((missing, warns),) = check_notes({"net": {"checked": False, "source": "/x/net.py:MODEL"}})
    assert warns and missing.startswith("NOT CHECKED: net is your own model")
    assert "`dlbench check /x/net.py:MODEL`" in missing
    assert check_notes(["not", "a", "record"]) == [] and check_notes({"net": 3}) == []


def test_a_run_of_a_user_model_carries_the_record_into_its_report(tmp_path: Path, monkeypatch):
    from dlbench.report.model import build_report
    from dlbench.store import Measurement, Store

    store = Store(tmp_path / "r.db")
    environment = {"model_checks": {"net": {"checked": False, "source": "/x/net.py:MODEL"}}}
    run_id = store.create_run(
        name="own", command="test", config_source="test", config_text="", experiment={}, environment=environment,
        version="0",
    )  # fmt: skip
    case = {"dataset": "digits", "device": "cpu", "epochs": 1, "init": "glorot-uniform", "lr": 0.01, "momentum": 0.0,
            "optimizer": "sgd", "precision": "float32", "seed": 0, "steps": None, "threads": 1, "model": "net",
            "batch_size": 32, "input_shape": 0, "layout": "native", "pipeline": "preloaded", "model_options": {},
            "synthetic": None, "train_samples": 0, "test_samples": 0, "framework": "torch",
            "variant": "eager"}  # fmt: skip
    tid = store.add_trial(run_id, case_key="k", block=0, position=0, case=case, protocol={"repeats": 1, "warmup": 0})
    store.start_trial(tid)
    store.add_measurements(tid, [Measurement(1, False, "train", "time", 1.0, "s")])
    store.finish_trial(tid, status="ok", error=None, returncode=0, wall_s=1.0, stderr="")
    report = build_report(store, run_id, hypotheses=False)
    assert any(n.startswith("NOT CHECKED: net is your own model") for n in report.answer.warnings)
