"""An explain run: which cases are explained, the toggles tried, the protocol, the stored run.

`dlbench explain` parses its flags and prints; this module picks the pairs from a stored
run, builds the explain run's protocol from the declaration (the stored trial's timeout and
data folder, the explain's own repeats, blocks and profile), plans it and stores it with
its pairs, and reads a stored explain run back for its report.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from dlbench.service import ServiceError

if TYPE_CHECKING:
    from dlbench.config import Protocol
    from dlbench.explain.ablation import Gap, Pair
    from dlbench.plan import Plan
    from dlbench.store import Store


@dataclass(frozen=True)
class Settings:
    """How the explain run measures: its flags."""

    blocks: int = 6
    repeats: int = 5
    warmup: int = 1
    profile_steps: int = 10
    profile_calls: int = 3
    traces: str = ""


@dataclass(frozen=True)
class Prepared:
    """An explain run ready to store: the run explained, its pairs and the plan."""

    source_run: int
    pairs: list[Pair]
    plan: Plan


def protocol(stored: Mapping[str, Any], settings: Settings) -> Protocol:
    """The explain run's protocol: the stored trial's timeout and data folder, the
    explain's repeats, blocks and profile, checked against the declaration's bounds."""
    from dlbench import config
    from dlbench.protocol_settings import MAX_TRIALS
    from dlbench.trial.spec import ProtocolSpec, SpecError

    if settings.blocks < 2:
        raise ServiceError(f"--blocks {settings.blocks}: allowed 2..{MAX_TRIALS} (a CI needs two blocks)")
    try:
        spec = ProtocolSpec.from_dict(dict(stored))
    except SpecError as exc:
        raise ServiceError(str(exc)) from None
    p = replace(
        config.Protocol(),
        repeats=settings.repeats,
        warmup=settings.warmup,
        trials=settings.blocks,
        timeout=spec.timeout,
        data_dir=spec.data_dir,
        samplers="cpu",  # the busy-machine check; telemetry is not what an explanation needs
        latency_batches=0,
        infer_min_time=0.0,
        profile_steps=settings.profile_steps,
        profile_traces=settings.traces,
        profile_calls=settings.profile_calls,
    )
    flags = {"trials": "--blocks", "profile_traces": "--traces"}
    try:
        return config.validate_protocol(
            "dlbench explain",
            p,
            lambda name: f"dlbench explain ({flags.get(name, '--' + name.replace('_', '-'))})",
        )
    except config.ConfigError as exc:
        raise ServiceError(str(exc)) from None


def prepare(
    store: Store,
    run_id: int | None,
    *,
    case: str | None,
    vs: str | None,
    vs_run: int | None,
    where: str,
    only: str | None,
    sources: dict[str, str],
    settings: Settings,
) -> Prepared:
    """The pairs of `run_id` to explain (--case/--vs, or the fastest case of every comparison
    set against each other one) and the explain run's plan. Your own model or data is
    imported (to check the toggles) only when named again in `sources`."""
    from dlbench import runner
    from dlbench.config import Experiment
    from dlbench.explain import ablation, selection
    from dlbench.plan import physical_cores
    from dlbench.store import StoreError
    from dlbench.trial.spec import case_from_dict

    if (case is None) != (vs is None):
        raise ServiceError("--case and --vs go together (or leave both out to explain every comparison set)")
    if vs_run is not None and vs is None:
        raise ServiceError("--vs-run names where --vs is found: give --case and --vs too")
    try:
        source = store.run(run_id)
        b_source = store.run(vs_run) if vs_run is not None else source
    except StoreError as exc:
        raise ServiceError(str(exc)) from None
    trials = store.trials(source.id)
    b_trials = store.trials(b_source.id) if vs_run is not None else trials
    cases = {t.case_key: case_from_dict(t.case) for t in trials}
    b_cases = {t.case_key: case_from_dict(t.case) for t in b_trials}
    toggled = tuple(s.strip() for s in (only or "").split(",") if s.strip())
    try:
        if case is not None and vs is not None:
            a_case = selection.select(cases.values(), case, where)
            chosen = [(a_case, selection.select(b_cases.values(), vs, where, "--vs"))]
        else:
            times = ablation.step_times(trials, store.measurements(source.id, latency=False))
            chosen = selection.default_pairs(selection.narrowed(cases, where), selection.medians(times))
            if not chosen:
                raise ServiceError(
                    f"run {source.id}: no two cases of one comparison set have step times; name them with --case/--vs"
                )
        for run_of_cases, side in ((source.id, 0), (b_source.id, 1)):
            uses = {(kind, getattr(two[side], kind)) for two in chosen for kind in ("model", "dataset")}
            runner.check_uses(store, run_of_cases, uses, sources)
        pairs = [ablation.pair_for(a, b, physical_cores(), toggled, sources) for a, b in chosen]
    except runner.SourcesMissing as exc:
        raise ServiceError(str(exc)) from None
    except ablation.AblationError as exc:
        raise ServiceError(f"run {source.id}: {exc}") from None
    stored = next(t.protocol for t in b_trials if t.case_key == pairs[0].b.key)
    label = ", ".join(f"{selection_label(p.b)} vs {selection_label(p.a)}" for p in pairs[:3])
    exp = Experiment(
        name=f"explain run {source.id}: {label}" + (f" (+{len(pairs) - 3} more)" if len(pairs) > 3 else ""),
        description=f"explain of run {source.id}: each setting of B toggled toward A, in interleaved blocks",
        protocol=protocol(stored, settings),
        source="dlbench explain",
        sources=sources,
    )
    return Prepared(source.id, pairs, ablation.plan_for(pairs, exp))


def start(store: Store, prepared: Prepared, command: str) -> int:
    """Store the explain run with its pairs (runs.explain_json); its id."""
    from dlbench import env, runner

    run_id = runner.create_run(store, prepared.plan, command=command, environment=env.fingerprint())
    store.set_explain(run_id, {"explain": [p.as_dict() for p in prepared.pairs], "from_run": prepared.source_run})
    return run_id


@dataclass(frozen=True)
class Explained:
    """A stored explain run read back: each pair's gap and the profiles, for its report."""

    run_id: int
    name: str
    gaps: list[Gap]
    notes: list[str]  # pairs that could not be analysed, one line each
    profiles: Any


def read(store: Store, run_id: int, band: float, alpha: float) -> Explained:
    from dlbench.explain import ablation
    from dlbench.store import StoreError
    from dlbench.trial.spec import case_from_dict

    try:
        run = store.run(run_id)
    except StoreError as exc:
        raise ServiceError(str(exc)) from None
    trials = store.trials(run.id)
    cases = {t.case_key: case_from_dict(t.case) for t in trials}
    try:
        pairs = ablation.pairs_from(store.explain(run.id), cases)
    except ablation.AblationError as exc:
        raise ServiceError(f"run {run.id}: {exc}") from None
    measurements = store.measurements(run.id, latency=False)
    times = ablation.step_times(trials, measurements)
    gaps, notes = [], []
    for pair in pairs:
        try:
            gaps.append(ablation.analyse(pair, times, band=band, alpha=alpha))
        except ablation.AblationError as exc:
            notes.append(f"run {run.id}: {exc}")
    return Explained(run.id, str(run.name), gaps, notes, ablation.profiles(trials, measurements))


def selection_label(case: Any) -> str:
    from dlbench.cases import case_label

    return case_label(case.as_dict(), setting=False)
