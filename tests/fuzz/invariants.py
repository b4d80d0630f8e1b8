"""What must hold for every experiment the parser accepts, and a tally of the
inputs the fuzz tests tried (printed at the end of the session by conftest.py)."""

from __future__ import annotations

import json
import math
import resource
import threading
from collections import Counter
from dataclasses import asdict
from typing import Any

from dlbench import config, runner
from dlbench.cases import case_label
from dlbench.config import ConfigError, Experiment
from dlbench.datasets import dataset_shape
from dlbench.models import get_spec
from dlbench.plan import Plan, expand, physical_cores
from dlbench.trial.phases import settings_for
from dlbench.trial.spec import TrialSpec, case_from_dict

# kind -> inputs tried; "<kind> accepted" / "<kind> refused" split them.
COUNTS: Counter[str] = Counter()

INT64 = (-(2**63), 2**63 - 1)
SEED_LIMIT = 2**31  # every framework's RNG takes seeds below it (numpy's legacy one below 2**32)


def tally(kind: str, accepted: bool) -> None:
    COUNTS[kind] += 1
    COUNTS[f"{kind} {'accepted' if accepted else 'refused'}"] += 1


def numbers_fit(value: Any, where: str) -> None:
    """Every number inside `value` is finite and fits SQLite's 64-bit integer."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return
    if isinstance(value, int):
        assert INT64[0] <= value <= INT64[1], f"{where}: {value} does not fit SQLite's int64"
    elif isinstance(value, float):
        assert math.isfinite(value), f"{where}: {value} is not finite"
    elif isinstance(value, dict):
        for k, v in value.items():
            numbers_fit(v, f"{where}.{k}")
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            numbers_fit(v, f"{where}[{i}]")
    else:
        raise AssertionError(f"{where}: unexpected {type(value).__name__} {value!r}")


def _lists(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _lists(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_lists(v) for v in value]
    return value


def check_refusal(exc: ConfigError, source: str, needles: tuple[str, ...] = ()) -> None:
    """A refusal is one line naming the file (or flag) and, where known, the key or section."""
    message = str(exc)
    assert "\n" not in message and "\r" not in message, f"not one line: {message!r}"
    assert source in message, f"{message!r} does not name {source!r}"
    if needles:
        assert any(n in message for n in needles), f"{message!r} names none of {needles}"


def check_accepted(exp: Experiment, store=None) -> Plan:
    """Expand an accepted experiment and check that every case is one a worker can run:
    finite numbers that fit SQLite, timeouts Python accepts, seeds every framework takes,
    threads and memory within this machine's limits, options the model resolves again
    after the JSON trip to the worker, and a protocol the runner builds."""
    plan = expand(exp)
    p = exp.protocol
    for name, seconds in (
        ("timeout", p.timeout),
        ("idle_baseline", p.idle_baseline),
        ("sample_interval", p.sample_interval),
        ("tta_budget", p.tta_budget),
        ("budget", p.budget * 60),
        ("infer_min_time", p.infer_min_time),
    ):
        assert math.isfinite(seconds) and 0 <= seconds < threading.TIMEOUT_MAX, f"{name} = {seconds}"
    assert p.timeout > 0
    spec = runner.protocol_for_worker(plan)
    if plan.cases:  # the protocol survives the trip to the worker
        assert TrialSpec.from_json(TrialSpec(plan.cases[0], spec).to_json()).protocol == spec
    protocol = spec.to_dict()
    numbers_fit(protocol, "protocol")
    assert json.loads(json.dumps(protocol, allow_nan=False)) == _lists(protocol)
    memory, _ = config.parse_memory_limit(p.memory_limit)
    # setrlimit takes an rlim_t; RLIM_INFINITY (2**64 - 1 or -1) must stay out of reach.
    assert 0 <= memory <= config.MAX_MEMORY < 2**63 and memory != resource.RLIM_INFINITY
    stored = asdict(exp) | {"text": None}
    json.dumps(stored, allow_nan=False, default=str)
    cores = config.available_cores()
    for case in plan.cases:
        d = case.as_dict()
        numbers_fit(d, f"case {case_label(d)}")
        text = json.dumps(d, allow_nan=False, sort_keys=True)
        assert json.loads(text) == _lists(d)
        assert len(case.key) == 16
        hash(case)
        assert 0 <= case.seed and case.seed + p.warmup + p.repeats - 1 < SEED_LIMIT
        # Replicas x threads per replica never oversubscribe the cores (refused cells are skipped).
        assert 1 <= case.threads and case.threads * case.world_size <= cores, (case.threads, case.world_size, cores)
        worlds = [*exp.matrix["world_size"], *(w for inc in exp.include for w in inc.get("world_size", ()))]
        if not p.threads:
            # Default: one thread per core, split among the replicas of the largest world size.
            assert case.threads == max(1, physical_cores() // max(worlds)), (case.threads, worlds)
        worker_case = case_from_dict(json.loads(text))
        assert worker_case == case  # the typed case survives the trip to the worker
        for repeat in (0, p.warmup + p.repeats - 1):
            settings = settings_for(worker_case, repeat)
            assert 0 <= settings.seed < SEED_LIMIT
        spec = get_spec(case.model)
        if spec.kind == "nn":
            options = settings_for(worker_case, 0).model_options
            assert spec.resolve_options(options) == dict(case.model_options)
            assert 0 < case.lr <= config.MAX_LR and 1 <= case.batch_size <= config.MAX_BATCH_SIZE
            # The spec's count walks the same structure a builder does (lstm: vocab >= classes).
            if case.synthetic:
                shape, classes = tuple(case.synthetic[:-3]), case.synthetic[-3]
            else:
                shape, classes = dataset_shape(case.dataset)
            assert spec.count(tuple(shape), classes, options) > 0
    if store is not None and plan.trials:
        run_id = runner.create_run(store, plan, command="fuzz", environment={})
        assert len(store.trials(run_id)) == len(plan.trials)
    return plan
