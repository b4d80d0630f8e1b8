"""Distributed training as a factor: planning, rank environments, the launcher's
merge of per-rank results and the scaling analysis, checked against hand-computed
values. (The ranks themselves run in tests/test_distributed_runs.py.)"""

from __future__ import annotations

import json
import math
import socket

import pytest

from dlbench.cases import case_label
from dlbench.config import ConfigError, parse
from dlbench.distributed import DistContext
from dlbench.launchers.merge import merge_process, merge_repeat
from dlbench.launchers.multiprocess import contexts, free_ports
from dlbench.launchers.ranks import context_for, rank_environment
from dlbench.plan import Case, expand
from dlbench.trial.spec import ProtocolSpec, TrialSpec


def _exp(text: str):
    return parse(text, "t.toml")


def _cases(text: str):
    return expand(_exp(text))


CASE = dict(
    framework="torch",
    variant="eager",
    model="mlp",
    dataset="digits",
    batch_size=32,
    init="glorot-uniform",
    optimizer="sgd",
    lr=0.01,
    momentum=0.0,
    epochs=1,
    steps=None,
    device="cpu",
    threads=2,
)


def test_a_single_case_keeps_the_key_it_had_before_distribution_existed():
    # Computed with the plan.py of the commit before strategy/world_size were added:
    # stored runs must resume and compare across versions by this key. Such a case ran
    # with every runtime setting dlbench then imposed: runtime "all" today.
    legacy = Case(**CASE, runtime="all")
    assert legacy.key == "b24d9df77837d825"
    assert "strategy" not in legacy.as_dict() and "runtime" not in legacy.as_dict()
    # The default now imposes nothing: another case, with a key of its own.
    assert Case(**CASE).key != legacy.key
    ddp = Case(**{**CASE, "strategy": "ddp", "world_size": 2})
    assert ddp.key != Case(**CASE).key
    assert ddp.as_dict()["strategy"] == "ddp" and ddp.as_dict()["world_size"] == 2


def test_strategies_pair_only_with_their_frameworks_and_threads_split_the_cores(monkeypatch):
    monkeypatch.setattr("dlbench.plan.physical_cores", lambda: 2)
    plan = _cases(
        '[matrix]\nframework = ["torch", "jax"]\nmodel = ["mlp"]\nstrategy = ["single", "ddp", "sharded"]\n'
        "world_size = [1, 2]\n[protocol]\nsteps = 4"
    )
    got = sorted((c.framework, c.strategy, c.world_size) for c in plan.cases)
    assert got == [
        ("jax", "sharded", 1),
        ("jax", "sharded", 2),
        ("jax", "single", 1),
        ("torch", "ddp", 1),
        ("torch", "ddp", 2),
        ("torch", "single", 1),
    ]
    # torch x sharded, jax x ddp (2 sizes each) and single x 2 (two frameworks): not cells at all.
    assert plan.not_applicable == 6 and plan.skipped == []
    # 2 cores, world sizes up to 2: one thread per replica for every case, baselines included.
    assert {c.threads for c in plan.cases} == {1}
    # A strategy over one replica says so: it is neither the single process nor world size 2.
    labels = {(c.strategy, c.world_size): case_label(c.as_dict()) for c in plan.cases if c.framework == "torch"}
    assert "replica" not in labels[("single", 1)]
    assert labels[("ddp", 1)].startswith("torch:eager ddp mlp") and "x1 replica" in labels[("ddp", 1)]
    assert "global x2 replicas" in labels[("ddp", 2)]


def test_oversubscription_and_uneven_batches_are_refused_with_the_fix(monkeypatch):
    monkeypatch.setattr("dlbench.plan.physical_cores", lambda: 2)
    plan = _cases(
        '[matrix]\nframework = ["torch"]\nmodel = ["mlp"]\nstrategy = ["ddp"]\nworld_size = [2]\n'
        "batch_size = [32, 33]\n[protocol]\nsteps = 4\nthreads = 2"
    )
    reasons = sorted(s.reason for s in plan.skipped)
    assert plan.trials == []
    assert reasons[0] == "global batch 33 does not split evenly over 2 replicas"
    assert reasons[1].startswith("oversubscribed: 2 replicas x 2 threads = 4 > 2 cores") and "--threads 1" in reasons[1]


def test_dataparallel_on_a_cpu_is_skipped_with_the_reason():
    plan = _cases('[matrix]\nframework = ["torch"]\nmodel = ["mlp"]\nstrategy = ["dp"]\nworld_size = [2]')
    (skip,) = plan.skipped
    assert "DataParallel" in skip.reason and "with no device ids it just calls the module" in skip.reason


def test_per_replica_batch_scope_is_weak_scaling():
    plan = _cases(
        '[matrix]\nframework = ["torch"]\nmodel = ["mlp"]\nstrategy = ["single", "ddp"]\nworld_size = [1, 2]\n'
        'batch_size = [16]\n[protocol]\nsteps = 4\nthreads = 1\nbatch_scope = "per-replica"'
    )
    by = {(c.strategy, c.world_size): c for c in plan.cases}
    assert by[("ddp", 2)].global_batch == 32 and by[("ddp", 2)].batch_scope == "per-replica"
    # One replica: the scope changes nothing and is not recorded (same key as a global-scope case).
    assert by[("ddp", 1)].batch_scope == "global" and by[("single", 1)].global_batch == 16


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('strategy = ["horovod"]', "strategy = 'horovod': unknown strategy; allowed: single, ddp, dp"),
        ("world_size = [0]", "world_size must be a positive integer"),
        ('world_size = ["2"]', "world_size must be a positive integer"),
    ],
)
def test_bad_strategy_settings_name_the_key(text, needle):
    with pytest.raises(ConfigError) as err:
        _exp(f"[matrix]\n{text}")
    assert needle in str(err.value)


def test_bad_batch_scope_names_the_allowed_values():
    with pytest.raises(ConfigError, match="batch_scope = 'local': allowed: global, per-replica"):
        _exp('[protocol]\nbatch_scope = "local"')


def test_rank_environments_follow_each_frameworks_contract():
    ctx = context_for("ddp", 2, threads=1, device="cpu", rank=1, coordinator="127.0.0.1:4711")
    env = rank_environment("torch", ctx, {})
    assert env == {
        "OMP_NUM_THREADS": "1",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": "4711",
        "RANK": "1",
        "LOCAL_RANK": "1",
        "WORLD_SIZE": "2",
        "LOCAL_WORLD_SIZE": "2",
        "GLOO_SOCKET_IFNAME": "lo",
    }
    tf = context_for("multiworker", 2, threads=1, device="cpu", rank=0, workers=("127.0.0.1:1", "127.0.0.1:2"))
    assert json.loads(rank_environment("tensorflow", tf, {})["TF_CONFIG"]) == {
        "cluster": {"worker": ["127.0.0.1:1", "127.0.0.1:2"]},
        "task": {"type": "worker", "index": 0},
    }
    # One process holding 2 replicas: 2 host devices, the flag replaced rather than repeated,
    # and threads per replica x replicas for the process.
    jax = context_for("sharded", 2, threads=1, device="cpu")
    env = rank_environment("jax", jax, {"XLA_FLAGS": "--a=1 --xla_force_host_platform_device_count=8"})
    assert env["XLA_FLAGS"] == "--a=1 --xla_force_host_platform_device_count=2"
    assert (jax.processes, jax.local_replicas, jax.threads) == (1, 2, 2)


def test_each_rank_gets_its_context_and_ports_are_free_and_distinct():
    ports = free_ports(3)
    assert len(set(ports)) == 3
    for p in ports:  # each one can be bound now
        with socket.socket() as s:
            s.bind(("127.0.0.1", p))
    case = Case(**{**CASE, "framework": "tensorflow", "strategy": "multiworker", "world_size": 2, "threads": 1})
    spec = TrialSpec(case, ProtocolSpec(repeats=1, warmup=0))
    ctxs = contexts(spec, [5001, 5002])
    assert [c.rank for c in ctxs] == [0, 1]
    assert ctxs[1].workers == ("127.0.0.1:5001", "127.0.0.1:5002")
    assert ctxs[0].coordinator == "127.0.0.1:5001"
    # The context travels with the spec to each rank, and back.
    again = TrialSpec.from_json(TrialSpec(case, spec.protocol, dist=ctxs[1]).to_json())
    assert again.dist == ctxs[1] and isinstance(again.dist, DistContext)


def _row(phase, metric, value, seq=None, repeat=0):
    return {"repeat": repeat, "warmup": False, "phase": phase, "metric": metric, "value": value, "unit": "", "seq": seq}


def test_a_synchronous_step_takes_the_slowest_ranks_time_and_throughput_is_summed():
    rank0 = [
        _row("train", "time", 2.0),
        _row("train", "throughput", 100.0),
        _row("train", "loss", 0.7, seq=0),
        _row("train", "rank_step_time", 0.02, seq=0),
        _row("accuracy", "accuracy", 0.9),
    ]
    rank1 = [
        _row("train", "time", 2.5),
        _row("train", "throughput", 80.0),
        _row("train", "loss", 0.7, seq=0),
        _row("train", "rank_step_time", 0.025, seq=1),
        _row("accuracy", "accuracy", 0.9),
    ]
    merged = merge_repeat({0: rank0, 1: rank1})
    value = {(r["phase"], r["metric"], r["seq"]): r["value"] for r in merged}
    assert value[("train", "time", None)] == 2.5
    assert value[("train", "throughput", None)] == 180.0
    assert value[("train", "rank_step_time", 0)] == 0.02 and value[("train", "rank_step_time", 1)] == 0.025
    assert [r["metric"] for r in merged].count("accuracy") == 1  # rank 0's, once
    rank1[1]["value"] = None  # a rank without a throughput leaves the sum unknown
    assert {r["metric"]: r["value"] for r in merge_repeat({0: rank0, 1: rank1})}["throughput"] is None


def test_process_rows_keep_every_ranks_rendezvous_and_the_launch_time():
    rows = {
        k: [_row("process", "import_time", 2.0 + k, repeat=None), _row("process", "rendezvous_time", 0.1 * (k + 1))]
        for k in (0, 1)
    }
    merged = merge_process(rows, 3.5)
    got = {(r["metric"], r["seq"]): r["value"] for r in merged}
    assert got[("import_time", None)] == 2.0
    assert got[("rank_rendezvous_time", 1)] == pytest.approx(0.2)
    assert got[("rank_import_time", 1)] == 3.0
    assert got[("launch_time", None)] == 3.5


def _trial(tid, case, block=0, status="ok"):
    return {
        "id": tid,
        "case_key": Case(**case).key,
        "case_json": json.dumps(Case(**case).as_dict()),
        "block": block,
        "status": status,
    }


def _measure(trial, metric, value, seq=None, repeat=0, phase="train"):
    return {
        "trial_id": trial["id"],
        "case_key": trial["case_key"],
        "phase": phase,
        "metric": metric,
        "value": value,
        "seq": seq,
        "repeat": repeat,
        "warmup": False,
        "status": trial["status"],
    }


def test_speedup_and_efficiency_against_the_single_process_of_the_same_run():
    from dlbench.analysis.scaling import scaling

    single = {**CASE, "threads": 1, "steps": 8, "epochs": None}
    ddp2 = {**single, "strategy": "ddp", "world_size": 2}
    t1, t2 = _trial(1, single), _trial(2, ddp2)
    rows = [_measure(t1, "throughput", v, repeat=r) for r, v in enumerate((100.0, 110.0, 90.0))]
    rows += [_measure(t2, "throughput", v, repeat=r) for r, v in enumerate((150.0, 160.0, 170.0))]
    rows += [_measure(t2, "rank_step_time", 0.2, seq=0), _measure(t2, "rank_step_time", 0.25, seq=1)]
    (s,) = scaling([t1, t2], rows)
    (p,) = s.points
    assert s.baseline_throughput == 100.0
    assert p.speedup == pytest.approx(1.6) and p.efficiency == pytest.approx(0.8)
    assert p.efficiency_ci[0] <= 0.8 <= p.efficiency_ci[1]
    assert p.rank_step_time == {0: 0.2, 1: 0.25}
    assert s.best() is p
    # Without the single baseline: no ratio, and the reason.
    (alone,) = scaling([t2], rows)
    assert alone.points[0].speedup is None and "single-process case" in alone.note
    assert math.isnan(alone.points[0].speedup_ci[0])
