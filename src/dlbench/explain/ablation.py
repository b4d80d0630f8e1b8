"""The ablation: B rerun with each recorded setting toggled, one at a time, and
the share of the A-B gap each toggle closes.

For a pair (A faster, B slower), the settings dlbench records and controls are
toggled on B toward A's value where the two differ, and otherwise toward the
framework's best known value (FrameworkInfo.best_known: torch.compile for PyTorch, XLA for
TensorFlow; channels-last for PyTorch's convolutions; one thread per core; the runtime
settings only where A and B differ in them, or with --only runtime). Each
toggle is a case of its own; with more than one toggle, B with all of them is one
more (what remains of the gap after every toggle is then measured, not assumed).
A and B are rerun too, so that every case of the pair is measured in the same
interleaved blocks (docs/design.md) on the same state of the machine.

The statistic is the step time (train.time / train.steps of each repeat). The
share of the gap a toggle closes is

    closure = (median(B) - median(B with the toggle)) / (median(B) - median(A))

computed on one value per process: each trial's median step time, one trial per
case and block. The 95% percentile-bootstrap CI resamples blocks jointly across the
cases, so that the drift of the machine between blocks stays paired. Repeats inside
one process are not independent (dlbench.analysis.stats: the process is the unit of
evidence), so they are never resampled as if they were: a closure is "measurable"
only with at least MIN_BLOCKS blocks, the pairs the exact Wilcoxon test that judges
the gap needs. 1.0 is the whole gap, 0 none, negative a toggle that made B slower.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from dlbench import runtime_settings
from dlbench.analysis import stats
from dlbench.analysis.comparisons import ALPHA, BAND
from dlbench.plan import Case, Plan, Trial

# The recorded settings an ablation toggles, in the order they are tried.
SETTINGS = ("threads", "variant", "pipeline", "layout", "precision", "init", "runtime")


def best_known(framework: str, device: str) -> dict[str, str]:
    """Where A and B agree on a setting: setting -> the value the framework is known to
    run fastest with on the device, where dlbench exposes a faster one (its declaration,
    FrameworkInfo.best_known, says why per entry)."""
    from dlbench import registry

    return {setting: value for on, setting, value in registry.framework(framework).best_known if on == device}


N_BOOT = 2000
# The blocks a gap and a closure need: the exact two-sided Wilcoxon test reaches p < 0.05
# with 6 pairs (2 / 2^6 = 0.031), never with 5 (0.0625).
MIN_BLOCKS = 6


class AblationError(ValueError):
    """A pair that cannot be ablated (named in the message)."""


@dataclass(frozen=True)
class Toggle:
    setting: str
    before: Any  # B's value
    after: Any  # the value B is rerun with
    toward: str  # "A" (A's value), "best known", "other" (runtime: the other extreme) or "named" (--only's)

    def words(self) -> str:
        return f"{self.setting} {self.before} -> {self.after}"


@dataclass(frozen=True)
class Pair:
    a: Case
    b: Case
    toggles: tuple[Toggle, ...]
    not_tried: tuple[str, ...] = ()  # settings that differ but cannot be toggled, with why

    def toggled(self, toggles: tuple[Toggle, ...]) -> Case:
        return replace(self.b, **{t.setting: t.after for t in toggles})

    def variants(self) -> list[tuple[str, tuple[Toggle, ...], Case]]:
        """(role, toggles, case): A, B, B with each toggle, B with all (when more than one)."""
        out: list[tuple[str, tuple[Toggle, ...], Case]] = [("A", (), self.a), ("B", (), self.b)]
        out += [(t.setting, (t,), self.toggled((t,))) for t in self.toggles]
        # B with every toggle, unless that is A itself (the toggles then are the whole
        # difference between the two, and A's own measurement says the rest).
        if len(self.toggles) > 1 and self.toggled(self.toggles) != self.a:
            out.append(("all", self.toggles, self.toggled(self.toggles)))
        return out

    def as_dict(self) -> dict[str, Any]:
        return {
            "a": self.a.key,
            "b": self.b.key,
            "toggles": [[t.setting, t.before, t.after, t.toward] for t in self.toggles],
            "not_tried": list(self.not_tried),
        }


def _valid(case: Case, cores: int, sources: Mapping[str, str]) -> str | None:
    from dlbench import registry
    from dlbench.plan import layout_reason, pipeline_reason, precision_reason

    info = registry.framework(case.framework)
    if case.variant not in info.variants:
        return f"{case.framework} has no variant {case.variant!r}"
    if case.threads > cores:
        return f"{case.threads} threads but {cores} cores here"
    spec = registry.model(case.model, sources)
    shape = tuple(case.synthetic[:-3]) if case.synthetic else registry.dataset(case.dataset, sources).shape(None)[0]
    return (
        layout_reason(case.framework, case.layout, spec.input_kind)
        or pipeline_reason(case.framework, case.pipeline, spec.input_kind, tuple(shape))
        or precision_reason(case.framework, case.precision, case.device, spec.kind == "classical")
        or runtime_settings.reason(case.framework, case.runtime)
    )


def pair_for(
    a: Case, b: Case, cores: int, only: tuple[str, ...] = (), sources: Mapping[str, str] | None = None
) -> Pair:
    """The toggles of B toward A (or the best known value), each checked runnable;
    `only`: settings ("layout") or settings toward one value ("variant=xla");
    `sources`: the user's own models and datasets, as named in this invocation."""
    if a.key == b.key:
        raise AblationError("A and B are the same case: nothing to explain")
    if a.distributed or b.distributed:
        raise AblationError("distributed cases are explained by their scaling report, not by an ablation")
    same_work = ("model", "dataset", "batch_size", "optimizer", "lr", "momentum", "epochs", "steps", "synthetic")
    differ = [k for k in same_work if getattr(a, k) != getattr(b, k)]
    if differ or a.model_options != b.model_options or a.input_shape != b.input_shape:
        what = ", ".join(differ) or "model options / input shape"
        raise AblationError(f"A and B do different work ({what} differ): a gap between them is not a setting's")
    wanted: dict[str, str | None] = {}
    for entry in only:
        setting, eq, value = entry.partition("=")
        if setting not in SETTINGS:
            raise AblationError(f"unknown setting {setting!r}; the ablation toggles: {', '.join(SETTINGS)}")
        wanted[setting] = value if eq else None
    best = best_known(b.framework, b.device)
    toggles: list[Toggle] = []
    not_tried: list[str] = []
    for setting in [s for s in SETTINGS if s in wanted] if wanted else SETTINGS:
        before = getattr(b, setting)
        named = wanted.get(setting)
        if named is not None:
            after, toward = _named_value(setting, named), "named"
            if after == before:
                not_tried.append(f"{setting} {before}: B has it already")
                continue
        elif getattr(a, setting) != before and (setting != "variant" or a.framework == b.framework):
            after, toward = getattr(a, setting), "A"
        elif setting == "threads":
            after, toward = cores, "best known"
        elif setting == "runtime":
            # No runtime setting is known to be faster, so where A and B agree it is tried
            # only when asked for (--only runtime), with the other extreme: every setting
            # dlbench can impose on B, or none.
            if "runtime" not in wanted:
                continue
            after = runtime_settings.ALL if before == runtime_settings.DEFAULTS else runtime_settings.DEFAULTS
            toward = "other"
        else:
            after, toward = best.get(setting, before), "best known"
        if after == before:
            continue
        reason = _valid(replace(b, **{setting: after}), cores, sources or {})
        if reason is not None:
            not_tried.append(f"{setting} {before} -> {after}: {reason}")
            continue
        toggles.append(Toggle(setting, before, after, toward))
    return Pair(a, b, tuple(toggles), tuple(not_tried))


def _named_value(setting: str, text: str) -> Any:
    """The value `--only SETTING=VALUE` names, checked against what the setting takes
    (a variant is checked per framework, with the other toggles)."""
    from dlbench.config import LAYOUTS, PIPELINES, PRECISIONS
    from dlbench.frameworks.protocol import INITS

    if setting == "threads":
        if not text.isdigit() or int(text) < 1:
            raise AblationError(f"threads={text}: a thread count is a whole number of at least 1")
        return int(text)
    if setting == "runtime":
        try:
            return runtime_settings.canonical(text)
        except runtime_settings.RuntimeSettingError as exc:
            raise AblationError(str(exc)) from None
    choices = {"init": INITS, "layout": LAYOUTS, "pipeline": PIPELINES, "precision": PRECISIONS}.get(setting)
    if choices is not None and text not in choices:
        raise AblationError(f"{setting}={text}: allowed: {', '.join(choices)}")
    return text


def plan_for(pairs: list[Pair], experiment: Any) -> Plan:
    """Every case of every pair once per block, in a random order per block drawn from
    the experiment's seed (as plan.expand lays out a run)."""
    cases = list(dict.fromkeys(case for pair in pairs for _, _, case in pair.variants()))
    plan = Plan(experiment)
    rng = random.Random(experiment.protocol.seed)
    for block in range(experiment.protocol.trials):
        order = cases[:]
        rng.shuffle(order)
        plan.trials.extend(Trial(case, block, i) for i, case in enumerate(order))
    return plan


def pairs_from(stored: Any, cases: dict[str, Case]) -> list[Pair]:
    """The pairs of a stored explain run (Store.explain: {"explain": [pair, ...], "from_run": N})."""
    data = stored.get("explain") if isinstance(stored, dict) else None
    if not isinstance(data, list):
        raise AblationError("this run is not an explain run (dlbench explain RUN starts one)")
    out = []
    for p in data:
        try:
            toggles = tuple(Toggle(str(s), before, after, str(t)) for s, before, after, t in p["toggles"])
            a, b, not_tried = p["a"], p["b"], tuple(p.get("not_tried", ()))
        except (KeyError, TypeError, ValueError, AttributeError):
            raise AblationError("its stored explain pairs are damaged (runs.explain_json)") from None
        if not isinstance(a, str) or not isinstance(b, str) or a not in cases or b not in cases:
            raise AblationError("the explain run lacks its A or B case")
        out.append(Pair(cases[a], cases[b], toggles, not_tried))
    return out


# -- analysis -------------------------------------------------------------------


def step_times(trials: list[Any], measurements: list[Any]) -> dict[str, dict[tuple[int, int], float]]:
    """case_key -> {(block, repeat): seconds per step} over the measured repeats of ok trials."""
    block_of = {t["id"]: (t["case_key"], t["block"]) for t in trials if t["status"] == "ok"}
    parts: dict[tuple[int, int], dict[str, float]] = defaultdict(dict)
    for m in measurements:
        if m["trial_id"] in block_of and m["phase"] == "train" and m["metric"] in ("time", "steps"):
            if not m["warmup"] and m["repeat"] is not None and m["value"] is not None:
                parts[(m["trial_id"], m["repeat"])][m["metric"]] = float(m["value"])
    out: dict[str, dict[tuple[int, int], float]] = defaultdict(dict)
    for (trial_id, repeat), v in parts.items():
        if v.get("steps") and "time" in v:
            key, block = block_of[trial_id]
            out[key][(block, repeat)] = v["time"] / v["steps"]
    return out


@dataclass(frozen=True)
class Effect:
    role: str  # a setting, or "all"
    toggles: tuple[Toggle, ...]
    case: Case
    median_s: float
    closure: float  # share of the A-B gap closed (1 = all of it)
    ci: tuple[float, float]
    versus_b: stats.Comparison | None  # the toggled case against B (faster = the toggle helped)
    blocks: int = 0  # blocks (processes per case) the closure rests on

    @property
    def measurable(self) -> bool:
        """The toggle changed B's step time: over enough blocks, the engine decided the
        toggled case faster or slower than B (_compare: two cases, their trial medians
        paired by block, the exact Wilcoxon signed-rank test, one comparison: no Holm),
        and the closure's CI excludes 0. The CI alone is not enough: a percentile
        bootstrap over six blocks covers less than 95%."""
        lo, hi = self.ci
        decided = self.versus_b is not None and self.versus_b.verdict in ("faster", "slower")
        return self.blocks >= MIN_BLOCKS and decided and not (math.isnan(lo) or lo <= 0 <= hi)


@dataclass(frozen=True)
class Gap:
    pair: Pair
    a_median_s: float
    b_median_s: float
    ratio: float  # B / A
    ratio_ci: tuple[float, float]
    comparison: stats.Comparison | None  # A against B
    n: int  # blocks: one trial median per case in each
    effects: list[Effect] = field(default_factory=list)

    @property
    def significant(self) -> bool:
        return self.comparison is not None and self.comparison.verdict == "faster"

    @property
    def all_effect(self) -> Effect | None:
        done = [e for e in self.effects if e.role == "all"]
        if done:
            return done[0]
        singles = [e for e in self.effects if e.role != "all"]
        return singles[0] if len(singles) == 1 else None


def _closure_ci(a: np.ndarray, b: np.ndarray, s: np.ndarray, seed: int) -> tuple[float, float]:
    n = len(a)
    if n < 2:
        return math.nan, math.nan
    idx = np.random.default_rng(seed).integers(0, n, size=(N_BOOT, n))
    ma, mb, ms = (np.median(x[idx], axis=1) for x in (a, b, s))
    gap = mb - ma
    ok = gap != 0
    values = (mb[ok] - ms[ok]) / gap[ok]
    if values.size < N_BOOT // 2:
        return math.nan, math.nan
    lo, hi = np.percentile(values, [2.5, 97.5])
    return float(lo), float(hi)


def _compare(x: list[float], y: list[float], band: float = BAND, alpha: float = ALPHA) -> stats.Comparison | None:
    try:
        return stats.compare_two(x, y, paired=True, band=band, alpha=alpha)
    except ValueError:
        return None


def per_block(times: dict[str, dict[tuple[int, int], float]]) -> dict[str, dict[int, float]]:
    """case_key -> {block: the median of that block's trial}: one value per process."""
    out: dict[str, dict[int, float]] = {}
    for key, values in times.items():
        blocks: dict[int, list[float]] = defaultdict(list)
        for (block, _), v in values.items():
            blocks[block].append(v)
        out[key] = {b: float(np.median(v)) for b, v in blocks.items()}
    return out


def analyse(
    pair: Pair,
    repeat_times: dict[str, dict[tuple[int, int], float]],
    seed: int = 0,
    band: float = BAND,
    alpha: float = ALPHA,
) -> Gap:
    """The gap between A and B and each toggle's share of it, on the trial medians of
    the blocks every case of the pair has (one value per process and case), judged by
    the verdict engine at `band` and `alpha`."""
    times = per_block(repeat_times)
    variants = pair.variants()
    common = set(times.get(pair.a.key, {})) & set(times.get(pair.b.key, {}))
    for _, _, case in variants:
        common &= set(times.get(case.key, {}))
    keys = sorted(common)
    if not keys:
        raise AblationError(f"no repeat measured by every case of {pair.a.framework} vs {pair.b.framework}")
    a = np.array([times[pair.a.key][k] for k in keys])
    b = np.array([times[pair.b.key][k] for k in keys])
    ma, mb = float(np.median(a)), float(np.median(b))
    gap = Gap(
        pair,
        ma,
        mb,
        mb / ma if ma > 0 else math.nan,
        stats.ratio_ci(b, a, paired=True, seed=seed),
        _compare(list(a), list(b), band, alpha),
        len(keys),
    )
    for role, toggles, case in variants[2:]:
        s = np.array([times[case.key][k] for k in keys])
        ms = float(np.median(s))
        closure = (mb - ms) / (mb - ma) if mb != ma else math.nan
        gap.effects.append(
            Effect(
                role,
                toggles,
                case,
                ms,
                closure,
                _closure_ci(a, b, s, seed),
                _compare(list(s), list(b), band, alpha),
                len(keys),
            )
        )
    return gap


# -- profiles ---------------------------------------------------------------------


@dataclass(frozen=True)
class Profile:
    """A case's profile rows, median over its trials: s/step by category, and the rest."""

    per_step: dict[str, float]
    step_s: float
    unprofiled_s: float
    calls: int  # profiled calls, over every trial of the case
    top_ops: dict[str, list[tuple[str, float]]]
    source: str

    @property
    def cost(self) -> float:
        """What the profiler added to a step, as a fraction of the unprofiled step."""
        return self.step_s / self.unprofiled_s - 1 if self.unprofiled_s > 0 else math.nan


def profiles(trials: list[Any], measurements: list[Any]) -> dict[str, Profile]:
    """case_key -> its Profile, from the phase "profile" rows of ok trials."""
    from dlbench.explain.categories import CATEGORIES

    case_of = {t["id"]: t["case_key"] for t in trials if t["status"] == "ok"}
    values: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    ops: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    sources: dict[str, str] = {}
    counted: dict[str, set[tuple[int, int]]] = defaultdict(set)  # (trial, profiled call)
    for m in measurements:
        key = case_of.get(m["trial_id"])
        if key is None or m["value"] is None:
            continue
        if m["phase"] == "profile":
            values[key][m["metric"]].append(float(m["value"]))
            counted[key].add((m["trial_id"], m["seq"] or 0))
            if m["method"]:
                sources[key] = m["method"]
        elif m["phase"] == "profile_op":
            ops[key][m["metric"]].append(float(m["value"]))
    out = {}
    for key, v in values.items():
        if "step_time" not in v:
            continue
        med = {name: float(np.median(x)) for name, x in v.items()}
        top: dict[str, list[tuple[str, float]]] = defaultdict(list)
        for metric, x in ops[key].items():
            category, _, name = metric.partition("|")
            # An op seen in some calls only: its median over all of them (absent = 0).
            top[category].append((name, float(np.median(x + [0.0] * (len(counted[key]) - len(x))))))
        out[key] = Profile(
            {c: med.get(c, 0.0) for c in CATEGORIES},
            med["step_time"],
            med.get("unprofiled_step_time", math.nan),
            len(counted[key]),
            {c: sorted(x, key=lambda o: -o[1])[:3] for c, x in top.items()},
            sources.get(key, ""),
        )
    return out
