"""Runtime settings dlbench imposes are named, recorded variants, none by default
(issue 32 item 9): parsing, which framework each applies to, keys of older cases,
and a real worker that runs what its case records."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from dlbench import runtime_settings as rs
from dlbench.cases import case_label, stored_case
from dlbench.config import ConfigError, from_dict
from dlbench.plan import expand
from dlbench.trial.spec import SpecError, case_from_dict


def test_parse_and_canonical_spelling():
    assert rs.parse("defaults") == ()
    assert rs.parse("autotune-off+malloc-fixed") == ("malloc-fixed", "autotune-off")
    assert rs.canonical("autotune-off+malloc-fixed") == "malloc-fixed+autotune-off"
    assert rs.canonical("all") == "all"
    assert rs.canonical("malloc-fixed+interop-fixed+autotune-off") == "malloc-fixed+interop-fixed+autotune-off"
    for bad in ("", "fast", "malloc-fixed+turbo", 3, None):
        with pytest.raises(rs.RuntimeSettingError, match="allowed: defaults, all"):
            rs.parse(bad)


def test_all_applies_what_concerns_each_framework():
    assert rs.applied("torch", "all") == ("malloc-fixed", "interop-fixed")
    assert rs.applied("tensorflow", "all") == ("malloc-fixed", "interop-fixed", "autotune-off")
    assert rs.applied("jax", "all") == ("malloc-fixed",)
    assert rs.applied("numpy", "defaults") == ()
    assert rs.reason("torch", "all") is None
    reason = rs.reason("jax", "interop-fixed+malloc-fixed")
    assert reason is not None and "interop-fixed applies to tensorflow, torch, not to jax" in reason


def test_a_case_stored_before_the_setting_keeps_its_key_and_reads_as_all(make_case):
    # What every worker ran with then (thresholds fixed, inter-op fixed, autotune off) is
    # runtime "all": such a case's JSON lacks the field, and the same case today has its key.
    legacy = make_case(runtime="all")
    stored = legacy.as_dict()
    assert "runtime" not in stored
    assert case_from_dict(stored) == legacy and case_from_dict(stored).key == legacy.key
    assert stored_case(json.dumps(stored))["runtime"] == "all"
    # The new default is a different case, with a key of its own.
    default = make_case()
    assert default.runtime == "defaults" and default.as_dict()["runtime"] == "defaults"
    assert default.key != legacy.key


def test_a_stored_runtime_outside_the_allowed_values_is_refused(make_case):
    with pytest.raises(SpecError, match="trial case: runtime 'turbo'"):
        case_from_dict({**make_case().as_dict(), "runtime": "turbo"})


def test_labels_name_a_runtime_only_where_one_was_imposed(make_case):
    assert "runtime" not in case_label(make_case().as_dict())
    assert case_label(make_case(runtime="all").as_dict(), setting=False) == "torch:eager runtime=all"


def _experiment(runtime):
    return from_dict(
        {
            "experiment": {"name": "rt"},
            "matrix": {"framework": ["torch", "jax", "numpy"], "model": "mlp", "runtime": runtime},
            "protocol": {"epochs": 1, "repeats": 1},
        },
        "test",
    )


def test_plan_default_is_defaults_and_a_named_setting_that_does_not_apply_is_skipped_with_why():
    plan = expand(_experiment(["defaults", "interop-fixed", "all"]))
    by = {(c.framework, c.runtime) for c in plan.cases}
    assert ("torch", "defaults") in by and ("jax", "all") in by and ("torch", "interop-fixed") in by
    assert ("jax", "interop-fixed") not in by and ("numpy", "interop-fixed") not in by
    reasons = [s.reason for s in plan.skipped if s.cell["runtime"] == "interop-fixed"]
    assert len(reasons) == 2 and all("interop-fixed applies to tensorflow, torch" in r for r in reasons)
    assert {c.runtime for c in expand(from_dict({"experiment": {"name": "d"}}, "t")).cases} == {"defaults"}


def test_an_unknown_runtime_in_an_experiment_names_the_key_and_what_is_allowed():
    with pytest.raises(ConfigError, match=r"\[matrix\]: runtime = 'fast': unknown runtime; allowed: defaults, all"):
        _experiment(["fast"])


def test_a_worker_runs_what_its_case_records(tmp_path: Path, tiny_run):
    """Real workers: runtime=defaults leaves glibc's thresholds, the inter-op pools and
    tf.data's autotuning alone; runtime=all sets each that applies, and each manifest says so."""
    db = tmp_path / "rt.db"
    tiny_run(db, framework="torch,tensorflow", repeats=1, threads=1, runtime="defaults,all", train_samples=256)
    with sqlite3.connect(db) as con:
        rows = con.execute("select case_json, manifest_json from trials where status = 'ok'").fetchall()
    got = {(json.loads(c)["framework"], stored_case(c)["runtime"]): json.loads(m) for c, m in rows}
    assert len(got) == 4
    for framework in ("torch", "tensorflow"):
        default, every = got[framework, "defaults"], got[framework, "all"]
        assert default["runtime_applied"] == [] and every["runtime_applied"] == list(rs.applied(framework, "all"))
        assert default["allocator"]["malloc_mmap_threshold"] is None
        assert default["allocator"]["malloc_thresholds_set_by"].startswith("nobody")
        assert every["allocator"]["malloc_mmap_threshold"] == str(32 * 2**20)
        assert every["allocator"]["malloc_thresholds_set_by"] == "dlbench"
    torch, tf = got["torch", "all"], got["tensorflow", "all"]
    assert torch["inter_op_threads"] == 1 and torch["inter_op_threads_note"].startswith("set to 1")
    assert got["torch", "defaults"]["inter_op_threads_note"] == "torch's default"
    assert tf["inter_op_threads"] == 2 and tf["inter_op_threads_note"].startswith("set to 2")
    assert "prefetch(2), tf.data autotune off" in tf["data_pipeline"]
    assert got["tensorflow", "defaults"]["inter_op_threads_note"] == "TensorFlow's default"
    assert "prefetch(AUTOTUNE), tf.data autotune on" in got["tensorflow", "defaults"]["data_pipeline"]
