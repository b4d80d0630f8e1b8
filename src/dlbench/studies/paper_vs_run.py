"""The paper's numbers beside this run's: the data of a study report's first section.

Every fact of the paper is matched to what dlbench measured for the same framework,
model, factor levels and statistic, on each machine (one stored run per machine,
never pooled), and each study setting (the matched design beside the paper's own
setting, where the study names both). Absolute numbers cannot agree across machines;
what can is the ratio between frameworks and its direction, so facts that come in
torch / TensorFlow pairs give a paper ratio beside ours, with our 95% CI and verdict
from the same test the run's report uses (dlbench.results.Results.compare). A fact
that cannot be matched (no such quantity measured here, a factor dlbench does not
vary) is kept, with the reason, so that every number of the paper is accounted for.
"""

from __future__ import annotations

import fnmatch
import math
from dataclasses import dataclass, field, fields
from typing import Any

from dlbench.analysis.criteria import ALPHA, BAND
from dlbench.analysis.design import DesignCheck, design
from dlbench.plan import Case
from dlbench.studies.facts import Claim, Fact, Facts
from dlbench.studies.spec import Setting, Study

# quantity -> (phase, metric pattern, lower is better); metric patterns may match
# several counters (RAPL packages): their medians are summed.
MEASURED: dict[str, tuple[str, str, bool]] = {
    "train_time": ("train", "time", True),
    "train_time_per_epoch": ("train", "time", True),
    "train_step_time": ("train", "time", True),
    "infer_time": ("infer", "time", True),
    "infer_time_per_sample": ("infer", "throughput", True),
    "train_throughput": ("train", "throughput", False),
    "infer_throughput": ("infer", "throughput", False),
    "accuracy": ("accuracy", "accuracy", False),
    "loss": ("train", "loss", True),
    "cpu_energy": ("train", "energy:rapl.*", True),
    "gpu_energy": ("train", "energy:gpu*", True),
    "power": ("train", "gpu*.power:mean", True),
    "cpu_util": ("train", "cpu.process_util:mean", False),
    "gpu_util": ("train", "gpu*.util:mean", False),
    "gpu_memory_util": ("train", "gpu*.mem_util:mean", False),
    "cpu_temp": ("train", "thermal*:mean", True),
    "gpu_temp": ("train", "gpu*.temperature:mean", True),
    "memory": ("train", "memory.peak_rss", True),
}
NOT_PER_VALUE = {
    "relative_time": "a ratio: see the framework ratios below",
    "speedup": "a multi-device speed-up: the distributed scenario is not part of this study yet",
    "statistic_value": "a test statistic of the paper's samples: our test of the same pair is in the ratio table",
    "total_energy": "CPU + GPU energy: each is compared apart where measured",
}
STAT_COLUMN = {
    "mean": "mean",
    "sd": "std",
    "median": "median",
    "q1": "q1",
    "q3": "q3",
    "min": "min",
    "max": "max",
    "value": "median",
    "best": "min",
}
# The variable a p-value fact tests (its where.variable) -> the quantity measured.
TESTED = {
    "time": "{phase}_time",
    "cpu_util": "cpu_util",
    "gpu_util": "gpu_util",
    "cpu_temp": "cpu_temp",
    "gpu_temp": "gpu_temp",
    "accuracy": "accuracy",
    "energy": "cpu_energy",
}
# Units dlbench states a quantity in when the paper gives none to convert to (ratios, claims).
NATURAL_UNIT = {"accuracy": "%", "cpu_energy": "J", "gpu_energy": "J", "memory": "MB"}
# The paper's unit -> multiply our value (in dlbench's unit) by this to get it.
TIME_UNITS = {"s": 1.0, "sec": 1.0, "ms": 1e3, "us": 1e6, "min": 1 / 60, "h": 1 / 3600}
ENERGY_UNITS = {"J": 1.0, "kJ": 1e-3, "Wh": 1 / 3600, "kWh": 1 / 3.6e6}
MEMORY_UNITS = {"bytes": 1.0, "B": 1.0, "KB": 1e-3, "MB": 1e-6, "GB": 1e-9, "KiB": 2**-10, "MiB": 2**-20, "GiB": 2**-30}
ALIASES = {"keras": "tensorflow"}
FRAMEWORK_NAMES = {"torch": "PyTorch", "tensorflow": "TensorFlow"}
CLASSICAL = ("sklearn",)  # frameworks whose models have no init, optimizer or learning rate
PAIR = ("torch", "tensorflow")


@dataclass(frozen=True)
class Machine:
    """One stored run taken on one machine: a column group of the comparison."""

    label: str  # the machine in a few words (CPU model, cores, GPU)
    run_id: int
    summary: Any  # Results.summary(run) frame
    compare: Any  # callable (a, b, metric) -> Results.compare frame, or None when one side is missing
    fingerprint: dict[str, Any]
    measurements: Any = None  # Results.measurements(run) frame: per-repeat values for the paper's tests
    band: float = BAND  # the verdicts' band and alpha (dlbench.analysis.criteria; --band, --alpha)
    alpha: float = ALPHA
    # The `dlbench explain` runs stored beside this run that explain one of its gaps.
    explanations: tuple[Explanation, ...] = ()
    # The case keys measured on a busy machine (dlbench.analysis.busy) whose times get no
    # verdict; empty when verdicts are asked for anyway (--busy-verdicts).
    busy: frozenset[str] = frozenset()
    # Every stored run this machine's measurement is made of (run_id first): the parts of one
    # study at one scale run one after another on this machine, each measuring other cases
    # (dlbench.service.studies.parts); just (run_id,) for one run.
    run_ids: tuple[int, ...] = ()

    @property
    def runs(self) -> str:
        """'run 1', or 'runs 1+2' for a measurement made in parts."""
        ids = self.run_ids or (self.run_id,)
        return f"run {ids[0]}" if len(ids) == 1 else "runs " + "+".join(str(i) for i in ids)

    def run_of(self, model: str) -> int:
        """The run that measured `model` (run_id when no part did)."""
        if len(self.summary) and "run_id" in self.summary:
            found = self.summary[self.summary["model"] == model]["run_id"]
            if len(found):
                return int(found.iloc[0])
        return self.run_id


@dataclass(frozen=True)
class Explanation:
    """What a stored `dlbench explain` run found for one gap of a study run: the pair it
    explained (the two cases' settings, by framework) and its finding in words. The words
    are made where the explain run is read (dlbench.service.studies, with the explain
    report's own sentences); here they are only matched to the claims they concern."""

    run_id: int  # the explain run
    model: str
    cases: dict[str, dict[str, Any]]  # framework -> the case's settings (A's and B's)
    summary: str  # the gap and what closes it, in the explain report's words


@dataclass
class Value:
    """Our number for one fact on one machine and setting, or why there is none."""

    value: float | None
    n: int = 0
    why: str = ""


@dataclass
class FactRow:
    fact: Fact
    ours: dict[tuple[str, str], Value]  # (machine label, setting name) -> value


@dataclass
class RatioRow:
    """torch / TensorFlow on one quantity: the paper's ratio beside ours."""

    ref: str
    model: str
    quantity: str
    statistic: str
    where: dict[str, Any]
    paper_machine: str
    paper_ratio: float
    lower_is_better: bool
    ours: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    paper_device: str = ""  # the device of the paper's machine ("" for every machine)
    # (machine, setting) -> one of OUTCOMES with its notes (agreement, at the machine's band)
    verdicts: dict[tuple[str, str], str] = field(default_factory=dict)
    # (machine, setting) -> what explains a difference ("" where nothing needs examining)
    explains: dict[tuple[str, str], str] = field(default_factory=dict)


@dataclass
class ClaimRow:
    claim: Claim
    ours: dict[tuple[str, str], str]  # (machine, setting) -> "agrees" / "differs" / why not
    explains: dict[tuple[str, str], str] = field(default_factory=dict)  # as RatioRow.explains


@dataclass
class Comparison:
    facts: list[FactRow]
    ratios: list[RatioRow]
    claims: list[ClaimRow]
    settings: list[str]
    machines: list[Machine]
    # The designs the machines' runs compared torch and TensorFlow with (run_designs), each
    # once, with what their members are ("frameworks/variants" or "cases"): what the rule
    # above the numbers states (report.words.check_words says them).
    designs: tuple[tuple[DesignCheck, str], ...] = ()

    # The criteria the machines' verdicts were judged at (paper_section gives every machine
    # the same), for the rule and the hypotheses printed above them.
    @property
    def band(self) -> float:
        return self.machines[0].band if self.machines else BAND

    @property
    def alpha(self) -> float:
        return self.machines[0].alpha if self.machines else ALPHA


def setting_names(study: Study) -> list[str]:
    return [s.name for s in study.settings] or ["this run"]


def _settings(study: Study) -> list[Setting]:
    return list(study.settings) or [Setting("this run", {})]


def _convert(quantity: str, value: float, unit: str, epochs: float | None, steps: float | None) -> float | None:
    """Our value (dlbench's unit) of `quantity` in the paper's `unit`; None when not convertible."""
    if quantity == "train_time_per_epoch":
        if not epochs:
            return None
        value /= epochs
    elif quantity == "train_step_time":
        if not steps:
            return None
        value /= steps
    elif quantity == "infer_time_per_sample":
        if value <= 0:
            return None
        value = 1.0 / value
    if quantity in ("train_time", "train_time_per_epoch", "train_step_time", "infer_time", "infer_time_per_sample"):
        return value * TIME_UNITS[unit] if unit in TIME_UNITS else None
    if quantity == "accuracy":
        return value * 100 if unit == "%" else value if unit in ("fraction", "") else None
    if quantity in ("cpu_energy", "gpu_energy"):
        return value * ENERGY_UNITS[unit] if unit in ENERGY_UNITS else None
    if quantity == "memory":
        return value * MEMORY_UNITS[unit] if unit in MEMORY_UNITS else None
    return value


def _missing(value: Any) -> bool:
    """None, NaN or pandas' NA (nullable integer columns)."""
    import pandas as pd

    return bool(pd.isna(value))


def _matches(row: Any, where: dict[str, Any]) -> bool:
    """Whether a summary row (a pandas Series) or a case's settings (a dict) has every level of `where`."""
    for key, level in where.items():
        if key not in row.keys():
            return False
        have = row[key]
        if isinstance(level, float) or isinstance(have, float):
            try:
                if not math.isclose(float(have), float(level)):
                    return False
            except (TypeError, ValueError):
                return False
        elif have != level and str(have) != str(level):
            return False
    return True


def _case_filter(study: Study, fact_model: str, framework: str, where: dict[str, Any], setting: Setting) -> dict:
    """The factor levels our cases must have for a fact; keys that are not factors are left to the caller."""
    wanted: dict[str, Any] = {"framework": ALIASES.get(framework, framework)}
    if fact_model != "all":
        wanted["model"] = study.fact_models.get(fact_model, fact_model)
    wanted.update({k: v for k, v in where.items() if k != "phase"})
    if wanted["framework"] in CLASSICAL:
        return wanted  # no init, optimizer or rate: the study's settings do not apply
    wanted.update(_flat(setting))
    wanted.update(setting.where.get(wanted["framework"], {}))
    return wanted


def _flat(setting: Setting) -> dict[str, Any]:
    """The levels a setting gives every framework (a table under a framework's name is that framework's own)."""
    return {k: v for k, v in setting.where.items() if not isinstance(v, dict)}


def per_framework(setting: Setting) -> bool:
    """Whether the setting gives frameworks different levels: then its cases are not one comparison set."""
    return any(isinstance(v, dict) for v in setting.where.values())


def _unmatched_keys(where: dict[str, Any], columns: Any) -> list[str]:
    return [k for k in where if k != "phase" and k not in columns]


def _ours(
    machine: Machine, study: Study, quantity: str, statistic: str, unit: str, framework: str, model: str,
    where: dict[str, Any], setting: Setting,
) -> Value:  # fmt: skip
    if quantity in NOT_PER_VALUE:
        return Value(None, why=NOT_PER_VALUE[quantity])
    if quantity == "p_value":
        return _test(machine, study, framework, model, where, setting)
    frame = machine.summary
    missing = _unmatched_keys(where, frame.columns)
    if missing:
        return Value(None, why=f"the paper's {missing[0]} = {where[missing[0]]}: not a factor of this study")
    phase, pattern, _ = MEASURED[quantity]
    phase = where.get("phase", phase) if quantity not in ("accuracy",) else phase
    if phase == "infer" and quantity.startswith("train"):
        phase = "train"
    wanted = _case_filter(study, model, framework, where, setting)
    rows = frame[(frame["phase"] == phase) & frame["metric"].map(lambda m: fnmatch.fnmatchcase(str(m), pattern))]
    rows = rows[rows.apply(lambda r: _matches(r, wanted), axis=1)] if len(rows) else rows
    if not len(rows):
        described = ", ".join(f"{k} {v}" for k, v in wanted.items())
        measured_here = (frame["phase"] == phase) & frame["metric"].map(lambda m: fnmatch.fnmatchcase(str(m), pattern))
        if not measured_here.any():
            return Value(None, why=f"{phase} {pattern} not measured on this machine")
        return Value(None, why=f"no case with {described}")
    if quantity == "accuracy" and str(rows.iloc[0]["dataset"]) == "synthetic":
        return Value(None, why="synthetic data (random labels): accuracy means nothing")
    column = STAT_COLUMN[statistic]
    # Several cases can match (a framework's variants, several datasets): keep the
    # framework's first variant by name, deterministically, and sum counters of one case.
    first = rows.sort_values(["variant", "case_key"]).iloc[0]
    same = rows[rows["case_key"] == first["case_key"]]
    raw = float(same[column].sum())
    if math.isnan(raw):
        return Value(None, why=f"{column} not defined for n = {int(first['n'])}")
    steps = None
    if quantity == "train_step_time":
        step_rows = frame[
            (frame["case_key"] == first["case_key"]) & (frame["phase"] == "train") & (frame["metric"] == "steps")
        ]
        steps = float(step_rows["median"].iloc[0]) if len(step_rows) else None
    epochs = float(first["epochs"]) if "epochs" in first.index and not _missing(first["epochs"]) else None
    value = _convert(quantity, raw, unit, epochs, steps)
    if value is None:
        return Value(None, why=f"cannot express {quantity} in {unit}")
    return Value(value, int(first["n"]))


def _per_repeat(machine: Machine, study: Study, quantity: str, phase: str, framework: str, model: str,
                where: dict[str, Any], setting: Setting) -> Any:  # fmt: skip
    """The measured repeats of one case (counters of one repeat summed), indexed by block
    and repeat; warm-ups, failed and retired trials left out; None when no case matches."""
    frame = machine.measurements
    _, pattern, _ = MEASURED[quantity]
    rows = frame[
        (frame["phase"] == phase)
        & frame["metric"].map(lambda m: fnmatch.fnmatchcase(str(m), pattern))
        & ~frame["warmup"].astype(bool)
        & (frame["status"] == "ok")
        & ~frame["retired"].astype(bool)
        & frame["repeat"].notna()
    ]
    wanted = _case_filter(study, model, framework, {k: v for k, v in where.items() if k != "variable"}, setting)
    rows = rows[rows.apply(lambda r: _matches(r, wanted), axis=1)] if len(rows) else rows
    if not len(rows):
        return None
    first = sorted(rows["case_key"].unique())[0]
    out = rows[rows["case_key"] == first].groupby(["block", "repeat"])["value"].sum()
    out.name = first  # the case it is, for the busy rule (_across_sets)
    return out


def _sample(machine: Machine, study: Study, quantity: str, phase: str, framework: str, model: str,
            where: dict[str, Any], setting: Setting) -> Any:  # fmt: skip
    """One value per process of one case: each ok trial's median over its measured
    repeats, indexed by block. The process is the unit of evidence: repeats inside one
    process are not independent, so they are never paired or tested one by one."""
    per_repeat = _per_repeat(machine, study, quantity, phase, framework, model, where, setting)
    if per_repeat is None:
        return None
    out = per_repeat.groupby(level="block").median()
    out.name = per_repeat.name
    return out


def _test(machine: Machine, study: Study, framework: str, model: str, where: dict[str, Any], setting: Setting) -> Value:
    """Our p-value for a paper's test: the paired Wilcoxon signed-rank test of torch against
    TensorFlow (framework "both") over trial medians paired by interleaving block, the
    test the report's verdicts use; or the normality of one framework's trial medians by
    Lilliefors' test (KS with the mean and sd estimated from the sample: the plain KS
    p-value of a self-standardized sample is too large)."""
    from dlbench.analysis import stats

    variable, phase = where.get("variable"), str(where.get("phase", "train"))
    if variable not in TESTED or machine.measurements is None:
        return Value(
            None, why=f"the paper's test of {variable or 'an unnamed variable'} is not mapped to a measurement"
        )
    quantity = TESTED[str(variable)].format(phase=phase)
    if quantity not in MEASURED:
        return Value(None, why=f"no {phase} phase for {variable}")
    what = f"{phase} {MEASURED[quantity][1]}"
    if framework == "both":
        x = _sample(machine, study, quantity, phase, "torch", model, where, setting)
        y = _sample(machine, study, quantity, phase, "tensorflow", model, where, setting)
        if x is None or y is None:
            return Value(None, why=f"{what} not measured for both frameworks here")
        pairs = x.to_frame("x").join(y.to_frame("y"), how="inner")
        if len(pairs) < 2:
            return Value(
                None,
                why=f"{len(pairs)} process per framework: the paired test needs independent trials paired by "
                f"block (at least {stats.min_pairs()} to reach p < 0.05: --trials {stats.min_pairs()})",
            )
        if (pairs["x"] == pairs["y"]).all():
            return Value(None, why=f"{len(pairs)} pairs, all equal: nothing to test")
        c = stats.compare_two(pairs["x"].to_numpy(), pairs["y"].to_numpy(), paired=True)
        return Value(c.p_value, len(pairs))
    sample = _sample(machine, study, quantity, phase, ALIASES.get(framework, framework), model, where, setting)
    if sample is None:
        return Value(None, why=f"{what} not measured here")
    nm = stats.normality(sample.to_numpy())
    if not nm.testable:
        return Value(None, why=f"{what}: Lilliefors' test on {len(sample)} trial median(s): {nm.reason}")
    return Value(nm.ks_p, len(sample))


def _ratio_ours(machine: Machine, study: Study, ratio: RatioRow, setting: Setting) -> dict[str, Any]:
    """Our torch / TensorFlow ratio for a paper ratio: the medians' ratio, with the
    report's CI, test and verdict where the quantity is a timed metric."""
    unit = NATURAL_UNIT.get(ratio.quantity, "s")
    torch_v = _ours(machine, study, ratio.quantity, "median", unit, "torch", ratio.model, ratio.where, setting)
    tf_v = _ours(machine, study, ratio.quantity, "median", unit, "tensorflow", ratio.model, ratio.where, setting)
    if torch_v.value is None or tf_v.value is None or tf_v.value == 0:
        return {"why": torch_v.why or tf_v.why or "TensorFlow's value is 0"}
    out: dict[str, Any] = {"ratio": torch_v.value / tf_v.value, "ci": None, "verdict": None}
    phase, metric, _ = MEASURED[ratio.quantity]
    phase = ratio.where.get("phase", phase)
    # Times and accuracy are tested (the report's test and CI); other quantities are medians only.
    tested = metric in ("time", "accuracy")
    if tested and per_framework(setting) and machine.measurements is not None:
        out.update(_across_sets(machine, study, ratio, setting, phase))
    elif tested and machine.compare is not None:
        try:
            frame = machine.compare("torch", "tensorflow", f"{phase}.{metric}")
        except ValueError:
            frame = None
        if frame is not None and len(frame):
            wanted = _case_filter(study, ratio.model, "torch", ratio.where, setting)
            wanted.pop("framework")
            rows = frame[frame.apply(lambda r: _matches(r, wanted), axis=1)]
            if len(rows):
                r = rows.iloc[0]
                if ratio.quantity in (
                    "train_time",
                    "infer_time",
                    "train_time_per_epoch",
                    "train_step_time",
                    "accuracy",
                ):
                    out.update(ratio=float(r["ratio_a_over_b"]), ci=(float(r["ci_low"]), float(r["ci_high"])))
                out["verdict"] = r["verdict"]
                out["why"] = None if _missing(r["why"]) else str(r["why"])
                out["to_decide"] = None if _missing(r["to_decide"]) else int(r["to_decide"])
                out["independent"] = bool(r["independent"])
                out["test"] = r["test"]
                out["p"] = None if _missing(r["p_adjusted"]) else float(r["p_adjusted"])
    return out


def _across_sets(machine: Machine, study: Study, ratio: RatioRow, setting: Setting, phase: str) -> dict[str, Any]:
    """torch / TensorFlow for a setting whose two cases differ in more than the framework
    (the paper's cited code): the two cases' trial medians compared directly with the
    report's engine (ratio of medians, bootstrap CI), paired by block where both ran in
    every block and the paired test can decide (comparisons.pair_by_block, a family of
    one); one process per case gives a ratio and no verdict."""
    from dlbench.analysis import stats
    from dlbench.analysis.comparisons import pair_by_block

    x = _sample(machine, study, ratio.quantity, phase, "torch", ratio.model, ratio.where, setting)
    y = _sample(machine, study, ratio.quantity, phase, "tensorflow", ratio.model, ratio.where, setting)
    if x is None or y is None:
        return {}
    independent = len(x) >= 2 and len(y) >= 2
    if independent and set(x.index) == set(y.index) and pair_by_block(len(x), 2, machine.alpha):
        pairs = x.to_frame("x").join(y.to_frame("y"), how="inner")
        groups, paired = {"torch": list(pairs["x"]), "tensorflow": list(pairs["y"])}, True
    else:
        groups, paired = {"torch": list(x), "tensorflow": list(y)}, False
    if not independent:
        # One process per case: its repeats give the within-process ratio, never a verdict.
        groups = {fw: list(v) for fw, v in (("torch", _repeats(machine, study, ratio, setting, phase, "torch")),
                                               ("tensorflow", _repeats(machine, study, ratio, setting, phase,
                                                                       "tensorflow")))}  # fmt: skip
        if min(len(v) for v in groups.values()) < 2:
            return {}
    # A time with a case measured on a busy machine: its ratio, no verdict (as in the report).
    timed = ratio.quantity in ("train_time", "infer_time", "train_time_per_epoch", "train_step_time")
    busy = {fw for fw, s in (("torch", x), ("tensorflow", y)) if timed and s.name in machine.busy}
    result = stats.compare_many(
        groups, paired=paired, alpha=machine.alpha, band=machine.band, independent=independent, busy=busy
    )
    ((a, _, comp),) = result.pairwise
    comp = comp if a == "torch" else stats.reverse(comp)
    from dlbench.results import to_decide

    return {
        "ratio": float(comp.ratio),
        "ci": (float(comp.ratio_ci[0]), float(comp.ratio_ci[1])),
        "verdict": comp.verdict,
        "why": comp.why.cause if comp.why is not None else None,
        "to_decide": to_decide(comp),
        "test": comp.test,
        "p": None if comp.p_adjusted is None else float(comp.p_adjusted),
        "independent": comp.independent,
    }


def _repeats(machine: Machine, study: Study, ratio: RatioRow, setting: Setting, phase: str, framework: str) -> list:
    """The measured repeats of a case that ran in one process (for its within-process ratio)."""
    found = _per_repeat(machine, study, ratio.quantity, phase, framework, ratio.model, ratio.where, setting)
    return [] if found is None else list(found)


def direction(ratio: float, lower_is_better: bool, band: float = 0.0) -> str:
    """Which of torch / TensorFlow is better at this torch / TensorFlow ratio: "none" where
    the ratio lies within `band` of 1 (the paper's own numbers then show no meaningful
    difference by the rule this run's verdicts use)."""
    if abs(ratio - 1) <= band:
        return "none"
    return "torch" if (ratio < 1) == lower_is_better else "tensorflow"


# The test where the design is not known (no stored run to read it from): what
# comparisons.pair_by_block decides for every comparison set.
GENERAL_TEST = (
    "trial medians paired by block (paired Wilcoxon signed-rank) where that many blocks can reach alpha "
    "for the set's Holm family, else unpaired (Mann-Whitney); Holm within each comparison set"
)


@dataclass(frozen=True)
class Rule:
    """How a paper's ratio or claim is judged against this run, stated before any number.

    Direction: dlbench's own verdict (the one engine, dlbench.analysis.stats.decide) on
    independent processes per framework must name the same framework better. Size: our
    95% CI of the PyTorch / TensorFlow ratio must lie within `size_factor` of the paper's
    ratio. Anything the engine leaves undecided is "undecided here", never agreement."""

    size_factor: float
    band: float
    alpha: float
    # The designs that ran (Comparison.designs), in words (report.words.check_words); none
    # known: the general rule, GENERAL_TEST.
    designs: tuple[str, ...] = ()

    def words(self) -> str:
        tests = "this run: " + "; ".join(dict.fromkeys(self.designs)) if self.designs else GENERAL_TEST
        return (
            "Agreement rule, stated before any number: a paper's ratio or claim agrees in direction when "
            "dlbench's verdict names the same framework better (a verdict needs independent processes per "
            f"framework, interleaved in blocks; {tests}; alpha {self.alpha:g}, band "
            f"±{self.band:.0%}), and in size when our 95% CI of the PyTorch / TensorFlow ratio lies within a "
            f"factor {self.size_factor:g} of the paper's ratio. 'Differs': the verdict names the other framework, "
            "or no meaningful difference where the paper found one (a paper ratio within the band names neither "
            "framework better). 'Undecided here': our verdict is undecided "
            "(one process per framework never decides). 'Not measured here': hardware, models, scales or trends "
            "this run did not have."
        )


OUTCOMES = ("agrees in direction and size", "agrees in direction", "differs", "undecided here", "not measured here")


def decided_better(ours: dict[str, Any], lower_is_better: bool) -> str | None:
    """Which framework the engine decided better: "torch", "tensorflow", "none" (no
    meaningful difference), or None (undecided, one process per side, or untested)."""
    verdict = ours.get("verdict")
    if verdict == "no meaningful difference":
        return "none"
    if verdict in ("faster", "lower"):
        torch_lower = True
    elif verdict in ("slower", "higher"):
        torch_lower = False
    else:
        return None
    return "torch" if torch_lower == lower_is_better else "tensorflow"


def _undecided_why(ours: dict[str, Any]) -> str:
    """Why our comparison decided nothing, and the trials that would decide where more
    trials would (the engine's projection at this spread: results.to_decide)."""
    if ours.get("verdict") is None:
        return " (medians only: not tested)"
    if ours.get("independent") is False:
        return " (one process per framework: a ratio, no verdict)"
    if ours.get("why") == "busy machine":
        return " (the machine was busy while it ran: no verdict; dlbench run --resume RUN --redo-busy re-measures)"
    need = ours.get("to_decide")
    if need:
        return f" (about {need} trials per framework would decide at this spread)"
    if ours.get("why") in ("overlaps band", "not significant"):
        return " (more trials alone would hardly decide: the ratio sits on the band's edge, or the spread is too wide)"
    return ""


def _instead(ours: dict[str, Any], lower_is_better: bool) -> str:
    """What this run's own comparison decided where the paper's number is from other
    hardware: shown beside "not measured here", labelled as another machine, and never
    counted (the counts read only the leading outcome)."""
    if "ratio" not in ours:
        return ""
    better = decided_better(ours, lower_is_better)
    if better is None:
        said = "undecided" + _undecided_why(ours)
    elif better == "none":
        said = "no meaningful difference"
    else:
        said = f"{FRAMEWORK_NAMES.get(better, better)} better, decided"
    return f"; on this run's machine instead (another machine than the paper's, not counted as agreement): {said}"


def agreement(
    paper_ratio: float, ours: dict[str, Any], lower_is_better: bool, size_factor: float = 2.0, band: float = BAND
) -> str:
    """One of OUTCOMES (with why, where undecided): the paper's ratio against our verdict and
    CI. A paper ratio within `band` of 1 names neither framework better: our 'no meaningful
    difference' agrees with it (the paper's 99.30% against 99.13% is not a difference the
    verdicts here would call one)."""
    if "elsewhere" in ours:
        return f"not measured here ({ours['elsewhere']})" + _instead(ours, lower_is_better)
    if "ratio" not in ours:
        return "not measured here"
    better = decided_better(ours, lower_is_better)
    if better is None:
        return "undecided here" + _undecided_why(ours)
    if better != direction(paper_ratio, lower_is_better, band):
        return "differs"
    ci = ours.get("ci")
    if ci is not None and paper_ratio / size_factor <= ci[0] and ci[1] <= paper_ratio * size_factor:
        return "agrees in direction and size"
    return "agrees in direction"


# An undecided ratio this far from the paper's (either way) is examined as a difference is.
OUT_OF_BAND = 0.10
# Quantities a `dlbench explain` run attributes: it times training steps.
EXPLAINED = ("train_time", "train_time_per_epoch", "train_step_time")


def needs_examining(verdict: str, paper_ratio: float | None, ours: dict[str, Any]) -> bool:
    """A difference owes an explanation: the verdict differs, or it is undecided while our
    ratio lies more than OUT_OF_BAND from the paper's (a claim has no paper ratio)."""
    if verdict.startswith("differs"):
        return True
    if verdict.startswith("undecided here") and paper_ratio and "ratio" in ours:
        return abs(ours["ratio"] / paper_ratio - 1) > OUT_OF_BAND
    return False


# The recorded settings that make two stored cases the same case, bar the framework.
CASE_SETTINGS = (
    "variant", "dataset", "batch_size", "init", "optimizer", "lr", "epochs", "precision", "threads", "pipeline",
    "layout", "runtime",
)  # fmt: skip


def _compared_cases(machine: Machine, study: Study, model: str, setting: Setting) -> dict[str, Any]:
    """framework -> the summary row of the case a torch / TensorFlow ratio of `model` reads
    (the framework's first variant by name, as _ours picks it); {} where one is missing."""
    frame = machine.summary
    if not len(frame):
        return {}
    first = {}
    for fw in PAIR:
        wanted = _case_filter(study, model, fw, {}, setting)
        rows = frame[frame.apply(lambda r, w=wanted: _matches(r, w), axis=1)]
        if not len(rows):
            return {}
        first[fw] = rows.sort_values(["variant", "case_key"]).iloc[0]
    return first


def _shared(compared: dict[str, Any]) -> list[str]:
    """The settings PyTorch's and TensorFlow's compared cases share, as stored."""
    if not compared:
        return []
    t, tf = compared["torch"], compared["tensorflow"]
    keys = ("dataset", "batch_size", "init", "optimizer", "lr", "epochs", "precision")
    return [f"{k} {t[k]}" for k in keys if k in t.index and not _missing(t[k]) and str(t[k]) == str(tf[k])]


def _explains_these(explanation: Explanation, compared: dict[str, Any]) -> bool:
    """Whether an explain run's pair is the two cases the ratio compares: the same settings
    as stored (an explain run of the paper's cited code does not explain the matched one)."""
    if set(explanation.cases) != set(PAIR) or not compared:
        return False
    for fw in PAIR:
        row, case = compared[fw], explanation.cases[fw]
        levels = {k: row[k] for k in CASE_SETTINGS if k in row.index and not _missing(row[k])}
        if not _matches(case, levels):
            return False
    return True


def examination(machine: Machine, study: Study, quantity: str, model: str, setting: Setting) -> str:
    """What explains our difference from the paper on `quantity` for `model`: the stored
    explain runs' findings for this machine's PyTorch-TensorFlow gap; else what has not
    been examined, with the command that would examine it; or why explain cannot."""
    compared = _compared_cases(machine, study, model, setting)
    if quantity in EXPLAINED:
        found = [e for e in machine.explanations if e.model == model and _explains_these(e, compared)]
        if found:
            return " ".join(f"explain run {e.run_id}: {e.summary}" for e in found)
        run = machine.run_of(model)
        return f"not examined yet: dlbench explain {run} --case torch --vs tensorflow --where model={model}"
    shared = _shared(compared)
    tried = f"; both frameworks here share {', '.join(shared)}" if shared else ""
    return f"not attributed: dlbench explain attributes training step time, not {quantity.replace('_', ' ')}{tried}"


def _claim_examination(machine: Machine, study: Study, claim: Claim, setting: Setting, verdict: str) -> str:
    """A claim that differs, examined for each model whose verdict names the other framework
    (a claim has no paper ratio, so only 'differs' owes an examination)."""
    if not needs_examining(verdict, None, {}):
        return ""
    ran = sorted(str(m) for m in set(machine.summary["model"])) if len(machine.summary) else []
    models = ran if claim.model == "all" else [study.fact_models.get(claim.model, claim.model)]
    lower = MEASURED[claim.quantity][2]
    wanted = ALIASES.get(claim.better, claim.better)
    against = []
    for model in models:
        ratio = RatioRow(claim.ref, model, claim.quantity, "median", claim.where, "", 1.0, lower)
        ours = _ratio_ours(machine, study, ratio, setting)
        better = decided_better(ours, lower) if "ratio" in ours else None
        if better is not None and better != wanted:
            against.append(model)
    if len(against) == 1:
        return examination(machine, study, claim.quantity, against[0], setting)
    return "; ".join(f"{m}: {examination(machine, study, claim.quantity, m, setting)}" for m in against)


def _ratios(facts: Facts) -> list[RatioRow]:
    by_key: dict[tuple, dict[str, Fact]] = {}
    for f in facts.facts:
        fw = ALIASES.get(f.framework, f.framework)
        if fw not in PAIR or f.quantity not in MEASURED or f.statistic == "sd":
            continue
        key = (f.ref, f.machine, f.model, f.quantity, f.statistic, tuple(sorted(f.where.items())))
        by_key.setdefault(key, {})[fw] = f
    rows = []
    for (ref, machine, model, quantity, statistic, where), pair in by_key.items():
        if set(pair) != set(PAIR) or pair["tensorflow"].value == 0 or pair["torch"].unit != pair["tensorflow"].unit:
            continue
        rows.append(
            RatioRow(
                ref=ref,
                model=model,
                quantity=quantity,
                statistic=statistic,
                where=dict(where),
                paper_machine=facts.machine_label(machine),
                paper_ratio=pair["torch"].value / pair["tensorflow"].value,
                lower_is_better=MEASURED[quantity][2],
                paper_device=next((m.device for m in facts.machines if m.id == machine), ""),
            )
        )
    return rows


def _claim(machine: Machine, study: Study, claim: Claim, setting: Setting, facts: Facts) -> str:
    """One of OUTCOMES for a claim on one machine's run, with what it rests on."""
    if claim.quantity not in MEASURED:
        return "not measured here (no such measurement in dlbench)"
    if claim.trend:
        return (
            f"not measured here: a trend over {claim.trend.replace('_', ' ')}, which dlbench does not test "
            "(it judges one comparison at a time)"
        )
    devices = sorted(str(d) for d in set(machine.summary["device"])) if len(machine.summary) else []
    here = ", ".join(devices) or "no device"
    if claim.machine != "all":
        paper = next((m for m in facts.machines if m.id == claim.machine), None)
        if paper is not None and paper.device not in devices:
            instead = _claim_verdict(machine, study, claim, setting)
            shown = (
                ""
                if instead.startswith("not measured")
                else f"; on this {here} machine instead (another machine than the paper's, not counted as "
                f"agreement): {_as_direction(instead)}"
            )
            return (
                f"not measured here: the paper's claim is for its {paper.label} machine ({paper.device}); "
                f"this run: {here}{shown}"
            )
    verdict = _claim_verdict(machine, study, claim, setting)
    if claim.machine == "all" and len(facts.machines) > 1 and not verdict.startswith("not measured"):
        verdict += (
            f" (on this {here} machine only; the paper's claim spans {', '.join(m.label for m in facts.machines)})"
        )
    return verdict


def _as_direction(verdict: str) -> str:
    """A verdict of this machine's comparison worded as what it found, not as agreement
    with a paper whose hardware it lacks ("agrees in direction" -> "the same direction as
    the paper's claim")."""
    for outcome, said in (
        ("agrees in direction", "the same direction as the paper's claim, decided"),
        ("differs", "the other direction than the paper's claim, decided"),
        ("undecided here", "undecided"),
    ):
        if verdict.startswith(outcome):
            return said + verdict[len(outcome) :]
    return verdict


def _claim_verdict(machine: Machine, study: Study, claim: Claim, setting: Setting) -> str:
    lower = MEASURED[claim.quantity][2]
    ran = sorted(str(m) for m in set(machine.summary["model"])) if len(machine.summary) else []
    models = ran if claim.model == "all" else [study.fact_models.get(claim.model, claim.model)]
    wanted = ALIASES.get(claim.better, claim.better)
    decided: dict[str, str | None] = {}
    whys: list[str] = []
    for model in models:
        ratio = RatioRow(claim.ref, model, claim.quantity, "median", claim.where, "", 1.0, lower)
        ours = _ratio_ours(machine, study, ratio, setting)
        if "ratio" not in ours:
            continue
        decided[model] = decided_better(ours, lower)
        if decided[model] is None:
            whys.append(_undecided_why(ours))
    if not decided:
        return "not measured here"
    scope = f" (judged on {', '.join(decided)} only)" if claim.model == "all" else ""
    against = [m for m, b in decided.items() if b is not None and b != wanted]
    if against:
        return "differs" + (f" ({', '.join(against)})" if len(decided) > 1 else "") + scope
    if all(b == wanted for b in decided.values()):
        return "agrees in direction" + scope
    agreeing = [m for m, b in decided.items() if b == wanted]
    why = whys[0] if whys and len(set(whys)) == 1 else ""
    partly = f" (agrees in direction for {', '.join(agreeing)}; undecided for the rest)" if agreeing else ""
    return "undecided here" + (why if not partly else "") + partly + scope


def _present(setting: Setting, machines: list[Machine]) -> bool:
    """Whether some machine ran a case of the setting (for each framework it names apart)."""
    if not setting.where:
        return True
    own = [k for k, v in setting.where.items() if isinstance(v, dict)]
    wanted = [{**_flat(setting), "framework": fw, **setting.where[fw]} for fw in own] or [_flat(setting)]
    for m in machines:
        if not len(m.summary):
            continue
        if all(m.summary.apply(lambda r, w=w: _matches(r, w), axis=1).any() for w in wanted):
            return True
    return False


def compare(study: Study, facts: Facts, machines: list[Machine]) -> Comparison:
    """Every fact, ratio and claim of the paper beside each machine's run and each setting,
    judged at each machine's band and alpha."""
    # A setting no machine ran (the smoke scale runs only the matched one) is left out.
    settings = [s for s in _settings(study) if _present(s, machines)] or [Setting("this run", {})]
    fact_rows = []
    for fact in facts.facts:
        ours = {}
        for m in machines:
            for s in settings:
                ours[(m.label, s.name)] = _ours(
                    m, study, fact.quantity, fact.statistic, fact.unit, fact.framework, fact.model, fact.where, s
                )
        fact_rows.append(FactRow(fact, ours))
    ratios = _ratios(facts)
    for r in ratios:
        for m in machines:
            devices = {str(d) for d in set(m.summary["device"])} if len(m.summary) else set()
            for s in settings:
                mine = _ratio_ours(m, study, r, s)
                if r.paper_device and devices and r.paper_device not in devices:
                    # A ratio from the paper's GPU or M1 is not judged by this run's CPU.
                    mine["elsewhere"] = (
                        f"the paper's ratio is from its {r.paper_machine} machine ({r.paper_device}); "
                        f"this run: {', '.join(sorted(devices))}"
                    )
                r.ours[(m.label, s.name)] = mine
                verdict = agreement(r.paper_ratio, mine, r.lower_is_better, study.size_factor, m.band)
                r.verdicts[(m.label, s.name)] = verdict
                r.explains[(m.label, s.name)] = (
                    examination(m, study, r.quantity, study.fact_models.get(r.model, r.model), s)
                    if needs_examining(verdict, r.paper_ratio, mine)
                    else ""
                )
    claims = []
    for c in facts.claims:
        row = ClaimRow(c, {})
        for m in machines:
            for s in settings:
                verdict = _claim(m, study, c, s, facts)
                row.ours[(m.label, s.name)] = verdict
                row.explains[(m.label, s.name)] = _claim_examination(m, study, c, s, verdict)
        claims.append(row)
    designs = tuple(dict.fromkeys(d for m in machines for s in settings for d in run_designs(m, s)))
    return Comparison(fact_rows, ratios, claims, [s.name for s in settings], machines, designs)


def run_designs(machine: Machine, setting: Setting) -> list[tuple[DesignCheck, str]]:
    """The designs this machine's run compared PyTorch and TensorFlow with in `setting`, read
    from the stored run (its train-time summary), each with what its members are: in a
    matched setting each comparison set holding both ("frameworks/variants"), with its
    members, trials per case and Holm family, paired or not as analysis.design
    (comparisons.pair_by_block) decides; in a setting whose frameworks differ in more than
    the framework, the two cases compared directly ("cases", _across_sets). [] when the
    run's summary cannot say."""
    summary = machine.summary
    needed = {"framework", "phase", "metric", "n", "within_process"}
    if not len(summary) or not needed <= set(summary.columns):
        return []
    rows = summary[(summary["phase"] == "train") & (summary["metric"] == "time")]
    rows = rows[~rows["framework"].isin(CLASSICAL)]
    if per_framework(setting):
        sides = [rows[rows.apply(lambda r, fw=fw: _matches(r, {**_flat(setting), "framework": fw,
                                                                  **setting.where.get(fw, {})}), axis=1)]
                 for fw in PAIR]  # fmt: skip
        if any(not len(side) for side in sides):
            return []
        one = any(bool(side["within_process"].iloc[0]) for side in sides)
        n = min(int(side["n"].iloc[0]) for side in sides)
        return [(design(2, 1 if one else n, n, machine.alpha), "cases")]
    rows = rows[rows.apply(lambda r: _matches(r, _flat(setting)), axis=1)] if _flat(setting) else rows
    key = [c for c in rows.columns if c in _SET_COLUMNS or c.startswith("option.")]
    out = []
    for _, members in rows.groupby(key, dropna=False, sort=False) if key else [((), rows)]:
        if not set(PAIR) <= set(members["framework"]):
            continue
        one = bool(members["within_process"].any())
        n = int(members["n"].min())
        out.append((design(len(members), 1 if one else n, n, machine.alpha), "frameworks/variants"))
    return list(dict.fromkeys(out))


# The summary's columns that place a case in its comparison set: every factor but the
# framework and variant (analysis.comparisons.comparison_sets; option.* columns too).
_SET_COLUMNS = frozenset(f.name for f in fields(Case)) - {"framework", "variant", "model_options"}
