"""The runner interrupted at random moments and at every phase of a trial, by
SIGKILL (nothing can be cleaned up), SIGTERM (what `timeout` and CI cancellations
send) and SIGINT (Ctrl-C), each time followed by `dlbench run --resume`; the
checks are Driver.interrupt_and_resume's. Scenarios run a few at a time: each
spends most of its time in the plugin's sleeps."""

from __future__ import annotations

import random
import signal
from concurrent.futures import ThreadPoolExecutor

import pytest

from .conftest import EXPERIMENT, PHASES, PLANNED_TRIALS, REPEATS_PER_TRIAL
from .driver import Driver, Outcome, summary

SEED = 20261123  # fixed: a failure names its scenario, and rerunning it hits the same moment
# Stratified over a whole run (one moment drawn in each of N equal slices): 30 SIGKILLs and
# 6 of each soft signal land in every part of a run, run creation included; more points
# only add seconds to the suite (50 and 8 before the cluster tests needed the time).
KILL_POINTS = 30
SOFT_POINTS = 6  # per soft signal (SIGTERM, SIGINT)
PARALLEL = 3


def _run_all(driver: Driver, scenarios: list[dict]) -> list[Outcome]:
    def one(i_s):
        i, s = i_s
        return driver.interrupt_and_resume(f"s{i:03d}", **s)

    with ThreadPoolExecutor(PARALLEL) as pool:
        outcomes, errors = [], []
        for _i_s, result in zip(enumerate(scenarios), pool.map(_catching(one), enumerate(scenarios))):
            (outcomes if isinstance(result, Outcome) else errors).append(result)
    assert not errors, f"{len(errors)} of {len(scenarios)} scenarios failed:\n" + "\n".join(map(str, errors))
    return outcomes


def _catching(fn):
    def wrapped(arg):
        try:
            return fn(arg)
        except Exception as exc:  # noqa: BLE001 - every scenario's failure is reported, not only the first
            return f"scenario {arg[0]} ({arg[1]}): {type(exc).__name__}: {exc}"

    return wrapped


@pytest.fixture(scope="module")
def run_span(tmp_path_factory, sleepy_env) -> float:
    """Seconds of an uninterrupted run, PARALLEL at once as the scenarios run: measured
    once for the module (both random-moment tests draw from it; measuring it per test
    started three more full runs for the same number)."""
    root = tmp_path_factory.mktemp("span")
    experiment = root / "faults.toml"
    experiment.write_text(EXPERIMENT)
    return Driver(root, experiment, sleepy_env, PLANNED_TRIALS, REPEATS_PER_TRIAL).full_run_seconds(PARALLEL)


def _random_moments(span: float, n: int, rng: random.Random) -> list[float]:
    """n moments spread over a whole run of `span` seconds, one drawn at random in each
    of n equal slices (stratified: a few must land in run creation, the first seconds)."""
    return [(i + rng.random()) * span / n for i in range(n)]


def test_kill_9_at_random_moments_then_resume(driver, run_span):
    rng = random.Random(SEED)
    moments = _random_moments(run_span, KILL_POINTS, rng)
    outcomes = _run_all(driver, [{"sig": signal.SIGKILL, "after_s": t} for t in moments])
    print(summary(outcomes))
    assert len(outcomes) == KILL_POINTS
    # The moments must really spread over the run: most land once the run exists.
    assert sum(o.run_existed for o in outcomes) >= KILL_POINTS // 2, summary(outcomes)


def test_sigterm_and_sigint_at_random_moments_then_resume(driver, run_span):
    rng = random.Random(SEED + 1)
    moments = _random_moments(run_span, SOFT_POINTS, rng)
    scenarios = [{"sig": sig, "after_s": t} for sig in (signal.SIGTERM, signal.SIGINT) for t in moments]
    outcomes = _run_all(driver, scenarios)
    print(summary(outcomes))
    handled = [o for o in outcomes if o.run_existed and o.returncode not in (0, None)]
    # Once the run executes, the signal is handled: exit 128 + signum, never a traceback or -15.
    for o in handled:
        assert o.returncode in (128 + signal.SIGTERM, 128 + signal.SIGINT, -signal.SIGTERM, -signal.SIGINT), o


def test_every_phase_of_a_trial_by_every_signal_then_resume(driver):
    scenarios = [
        {"sig": sig, "phase": phase, "occurrence": n}
        for sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT)
        for phase, n in PHASES.items()
    ]
    outcomes = _run_all(driver, scenarios)
    print(summary(outcomes))
    assert all(o.run_existed for o in outcomes)
    for o in outcomes:
        if o.signal != "SIGKILL":
            assert o.returncode == 128 + signal.Signals[o.signal], o
    # A signal before the first repeat is stored (import, setup, data) leaves nothing to keep;
    # one in the second repeat leaves the first, kept as a retired attempt, and the trial runs again.
    by = {(o.signal, o.where.split(" at ")[1]): o.retired for o in outcomes}
    assert all(
        by[(sig, phase)] == 0 for sig in ("SIGKILL", "SIGTERM", "SIGINT") for phase in ("import", "setup", "data")
    )
    assert all(
        by[(sig, phase)] == 1
        for sig in ("SIGKILL", "SIGTERM", "SIGINT")
        for phase in ("build", "compile", "train", "evaluate", "infer", "latency")
    ), by
