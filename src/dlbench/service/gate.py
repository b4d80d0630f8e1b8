"""The regression gate: two runs take turns, one block each at a time, until every compared
time is decided or the budget is spent (dlbench.analysis.sequential has the rule).

`dlbench gate A B` calls `run_gate`; a script or another tool can call it too. A is the
baseline, B the candidate; both are stored runs of the same cases that already took their
first block one after the other (as `dlbench run --trials 1` for each leaves them). Each
round adds one block to each run in ABBA order (runner.extend_runs), then looks at every
gated comparison: a case and one of its timed metrics (train, inference, time to accuracy),
paired by block. The gate stops at the first "slower" (the job fails whatever the rest
say), when every comparison is "within" the band, or when the budget (blocks, minutes) is
spent; what is still open then is "undecided".
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dlbench.service import ServiceError

if TYPE_CHECKING:
    from dlbench.analysis.sequential import Look
    from dlbench.runner import Target

# The budget of docs/ci.md's workflow, and its calibration (benchmarks/calibration.py --gate).
MAX_BLOCKS = 80
MAX_MINUTES = 10.0
BAND = 0.05
ALPHA = 0.05
METRICS = ("train", "infer", "tta")  # the timed phases a gate can compare (comparisons.TIMED)


@dataclass(frozen=True)
class GateSettings:
    max_blocks: int = MAX_BLOCKS  # blocks each run may add
    max_minutes: float = MAX_MINUTES  # wall time the turns may take; the round under way finishes
    band: float = BAND
    alpha: float = ALPHA  # the chance identical code fails the gate, over every look and comparison
    metrics: tuple[str, ...] = METRICS  # timed phases to gate; those the runs did not measure are left out

    def check(self) -> None:
        from dlbench.analysis.sequential import MAX_PAIRS

        if not 1 <= self.max_blocks <= MAX_PAIRS - 1:
            raise ServiceError(f"--max-blocks {self.max_blocks}: allowed 1..{MAX_PAIRS - 1}")
        if not self.max_minutes > 0:
            raise ServiceError(f"--max-minutes {self.max_minutes}: must be above 0")
        if not 0 < self.band < 1 or not 0 < self.alpha < 1:
            raise ServiceError(f"--band {self.band} and --alpha {self.alpha} must lie strictly between 0 and 1")
        unknown = [m for m in self.metrics if m not in METRICS]
        if unknown or not self.metrics:
            raise ServiceError(f"--metric {','.join(self.metrics)}: allowed {', '.join(METRICS)} (comma-separated)")


@dataclass(frozen=True)
class Gated:
    """One comparison of the gate: a case's timed metric, B against A, at the last look."""

    case: dict[str, Any]
    metric: str  # "train time", "inference time", "time to accuracy"
    look: Look | None  # None: no paired values yet (a side has no ok trial of it)
    busy_pairs: int = 0  # pairs left out because a side's trial ran on a busy machine

    @property
    def decision(self) -> str:
        return "missing" if self.look is None else self.look.decision


@dataclass
class GateResult:
    compared: list[Gated]
    level: float  # the one-sided level every look of every comparison used
    alpha: float  # the gate's alpha, over every look and comparison
    family: int  # comparisons sharing alpha (Bonferroni)
    max_pairs: int  # pairs the design allows: the runs' shared blocks at the start + max_blocks
    rounds: int = 0  # blocks each run added
    stopped: str = ""  # why it stopped: decided, a regression, the block or time budget
    minutes: float = 0.0
    counts: list[dict[str, int]] = field(default_factory=list)  # each run's trials per status

    @property
    def regression(self) -> bool:
        return any(g.decision == "slower" for g in self.compared)

    @property
    def missing(self) -> list[Gated]:
        return [g for g in self.compared if g.look is None]

    @property
    def undecided(self) -> list[Gated]:
        return [g for g in self.compared if g.decision == "continue"]


def _rows(target: Target) -> tuple[Any, Any]:
    return target.store.trials(target.run_id), target.store.measurements(target.run_id, latency=False)


def gated(a: Target, b: Target, settings: GateSettings, level: float) -> list[Gated]:
    """Every comparison the gate makes between the runs now, at `level`."""
    from dlbench.analysis.busy import busy_trials
    from dlbench.analysis.comparisons import TIMED, match_key, samples
    from dlbench.analysis.sequential import look
    from dlbench.cases import stored_case
    from dlbench.store.records import trial_record

    a_trials, a_meas = _rows(a)
    b_trials, b_meas = _rows(b)
    a_cases = {t["case_key"]: stored_case(trial_record(t).case) for t in a_trials}
    b_by_match = {match_key(stored_case(trial_record(t).case)): t["case_key"] for t in b_trials}
    busy_blocks = {
        side: {t["block"] for t in trials if t["id"] in busy_trials(meas)}
        for side, trials, meas in (("a", a_trials, a_meas), ("b", b_trials, b_meas))
    }
    out = []
    for phase, metric, name in TIMED:
        if phase not in settings.metrics:
            continue
        sa, sb = samples(a_trials, a_meas, phase, metric), samples(b_trials, b_meas, phase, metric)
        if not sa and not sb:
            continue  # a metric neither run measures
        for key, case in a_cases.items():
            b_key = b_by_match.get(match_key(case))
            if b_key is None:
                continue
            if key not in sa or b_key not in sb:
                out.append(Gated(case, name, None))
                continue
            shared = sorted(set(sa[key].values) & set(sb[b_key].values))
            busy = [k for k in shared if k in busy_blocks["a"] or k in busy_blocks["b"]]
            blocks = [k for k in shared if k not in busy]
            values_a = [sa[key].values[k] for k in blocks]
            values_b = [sb[b_key].values[k] for k in blocks]
            out.append(Gated(case, name, look(values_a, values_b, settings.band, level), len(busy)))
    return out


def _shared_blocks(a: Target, b: Target) -> int:
    blocks_a = {t["block"] for t in a.store.trials(a.run_id)}
    blocks_b = {t["block"] for t in b.store.trials(b.run_id)}
    return len(blocks_a & blocks_b)


def design(a: Target, b: Target, settings: GateSettings) -> GateResult:
    """The gate's design for these runs, before any turn: its comparisons, their shared
    alpha and the level every look uses. Raises ServiceError when the runs share no case."""
    from dlbench.analysis.sequential import pocock_level

    settings.check()
    probe = gated(a, b, settings, level=0.0)
    if not probe:
        raise ServiceError(
            "the runs share no case with a timed metric the gate compares (same framework, model, data and settings)"
        )
    max_pairs = _shared_blocks(a, b) + settings.max_blocks
    level = pocock_level(max_pairs, settings.alpha / len(probe))
    return GateResult(probe, level, settings.alpha, len(probe), max_pairs)


def run_gate(
    a: Target,
    b: Target,
    settings: GateSettings,
    on_look: Callable[[GateResult], None] | None = None,
    on_block: Callable[..., None] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> GateResult:
    """Take turns until the gate decides or its budget is spent; the result says which."""
    from dlbench.runner import extend_runs

    result = design(a, b, settings)
    started = clock()
    result.compared = gated(a, b, settings, result.level)

    def stop_after(rounds: int) -> bool:
        result.rounds = rounds
        result.minutes = (clock() - started) / 60
        result.compared = gated(a, b, settings, result.level)
        if on_look is not None:
            on_look(result)
        reason = _reason_to_stop(result, settings)
        if reason:
            result.stopped = reason
        return bool(reason)

    reason = _reason_to_stop(result, settings, before_turns=True)
    if reason:
        result.stopped = reason
        return result
    result.counts = extend_runs([a, b], settings.max_blocks, on_block=on_block, stop_after=stop_after)
    result.minutes = (clock() - started) / 60
    if not result.stopped:
        result.stopped = f"the block budget: {settings.max_blocks} blocks a run"
    return result


def _reason_to_stop(result: GateResult, settings: GateSettings, before_turns: bool = False) -> str:
    if result.regression:
        return "a regression"
    if result.missing:
        # A side without one ok trial of a case: its code fails there, which more turns
        # would not measure; the gate does not pass on no data (exit 3).
        return "a case has no values on one side"
    if result.compared and all(g.decision == "within" for g in result.compared):
        return "every comparison decided"
    if before_turns:
        return ""
    if result.rounds >= settings.max_blocks:
        return f"the block budget: {settings.max_blocks} blocks a run"
    if result.minutes >= settings.max_minutes:
        return f"the time budget: {settings.max_minutes:g} min"
    return ""


def exit_status(result: GateResult, undecided_fails: bool = False) -> int:
    """0 pass, 1 a regression (or an undecided comparison when undecided_fails), 3 a
    comparison without values on one side."""
    if result.regression:
        return 1
    if result.missing:
        return 3
    if undecided_fails and result.undecided:
        return 1
    return 0


def level_words(result: GateResult) -> str:
    """How each look decided, in one line: the level, the design it holds for, the family."""
    many = "s" if result.family != 1 else ""
    return (
        f"each look: exact one-sided signed-rank p <= {result.level:.4g}, the Pocock level that holds alpha "
        f"{result.alpha:g} over every look up to {result.max_pairs} pairs, shared by {result.family} comparison{many}"
    )


def ratio_text(g: Gated) -> str:
    if g.look is None or not math.isfinite(g.look.ratio):
        return "—"
    return f"{g.look.ratio:.3f}"
