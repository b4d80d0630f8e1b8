"""Which stored values are compared with which, and the verdicts.

Two uses:

- Within a run: cases that differ only in framework/variant form a comparison
  set (same model, data, batch size, settings). With several trials per case
  the sample is one median per trial (one value per process). They are paired by
  interleaving block (paired Wilcoxon / Friedman) when the exact paired test can
  reach alpha with that many blocks for the set's Holm family; with fewer blocks
  the trial medians are compared unpaired (Mann-Whitney / Kruskal-Wallis), which
  decides with fewer processes (5 + 5 for three frameworks, against 7 pairs). The
  choice depends on the design alone, never on the data. With one trial per case
  the sample is the repeats of that trial: a ratio and no verdict (docs/design.md
  "Independence").
- Run vs run (`dlbench compare A B`): the same case key in both runs, B
  relative to A; a significant slowdown beyond the threshold is a regression.
  The ratio is of medians, or of a chosen quantile. Paired by block when the
  two runs took turns block by block (`dlbench extend A B`), so that block k of
  A and block k of B saw the same state of the machine; unpaired otherwise.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from dlbench.analysis import quality, stats

# The verdict criteria, the same for every sentence dlbench prints (re-exported here).
from dlbench.analysis.criteria import ALPHA as ALPHA
from dlbench.analysis.criteria import BAND as BAND
from dlbench.analysis.rows import Case, Row, Rows, columns
from dlbench.cases import case_label, stored_case
from dlbench.store.records import trial_record

# Lower is better for these; they are what verdicts speak of.
TIMED = (("train", "time", "train time"), ("infer", "time", "inference time"), ("tta", "time", "time to accuracy"))


@dataclass(frozen=True)
class Sample:
    values: dict[int, float]  # block (or repeat) -> value
    independent: bool  # one value per trial (True) or repeats inside one process


def samples(trials: Rows, measurements: Rows, phase: str, metric: str) -> dict[str, Sample]:
    """case_key -> the sample of (phase, metric) used for statistics."""
    block_of = {t["id"]: t["block"] for t in trials if t["status"] == "ok"}
    per_trial: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    names = ("phase", "metric", "warmup", "repeat", "trial_id", "value", "case_key")
    for ph, me, warmup, repeat, trial, value, key in zip(*columns(measurements, names), strict=True):
        if (
            ph == phase
            and me == metric
            and not warmup
            and repeat is not None
            and trial in block_of
            and value is not None
        ):
            per_trial[key][trial].append(value)
    out = {}
    for key, trials_values in per_trial.items():
        if len(trials_values) >= 2:
            out[key] = Sample({block_of[t]: stats.median_of(v) for t, v in trials_values.items()}, True)
        else:
            (values,) = trials_values.values()
            out[key] = Sample(dict(enumerate(values)), False)
    return out


def comparison_sets(cases: dict[str, Case]) -> list[list[str]]:
    """Groups of case keys that differ only in framework, variant and data-parallel
    strategy (cases at one world size compare across frameworks and strategies)."""
    groups: dict[str, list[str]] = defaultdict(list)
    for key, case in cases.items():
        rest = {k: v for k, v in case.items() if k not in ("framework", "variant", "strategy")}
        groups[json.dumps(rest, sort_keys=True)].append(key)
    return [keys for keys in groups.values() if len(keys) >= 2]


def label(case: Case) -> str:
    return case_label(case, setting=False)


@dataclass(frozen=True)
class PairVerdict:
    set_label: str
    metric: str
    a: str
    b: str
    comparison: stats.Comparison
    independent: bool


def set_label(case: Case) -> str:
    """What the cases of one comparison set share, in words."""
    return case_label(case, framework=False)


@dataclass(frozen=True)
class Groups:
    set_label: str
    phase: str
    metric: str  # words, e.g. "train time"
    values: dict[str, list[float]]  # framework:variant -> sample
    paired: bool  # trial medians paired by block
    # One value per process on every side (trial medians): the only sample a verdict may
    # rest on. False: the values are the repeats of one process per case.
    independent: bool = True
    # The members (keys of `values`) measured on a busy machine (analysis.busy): their
    # pairs get a ratio and no verdict word.
    busy: frozenset[str] = frozenset()


def pair_by_block(blocks: int, members: int, alpha: float) -> bool:
    """Whether trial medians are compared paired by block: when the exact Wilcoxon test
    over `blocks` pairs can reach alpha for the Holm family of `members` frameworks.
    Otherwise the unpaired Mann-Whitney test over the same trial medians can (it needs
    5 + 5 for three frameworks where the paired test needs 7 pairs)."""
    family = members * (members - 1) // 2
    return blocks >= 2 and stats.min_p_wilcoxon(blocks) * family < alpha


def comparison_groups(
    trials: Rows,
    measurements: Rows,
    metrics: tuple[tuple[str, str, str], ...] | None = None,
    alpha: float = ALPHA,
    busy: Collection[str] = (),
) -> list[Groups]:
    """For every comparison set and metric (default: the timed ones), the samples of each
    framework, paired by block where the paired test can decide (pair_by_block). `busy`:
    the case keys measured on a busy machine (Groups.busy names their members)."""
    metrics = TIMED if metrics is None else with_heads(metrics, measurements)
    cases = {t["case_key"]: stored_case(trial_record(t).case) for t in trials}
    # One pass over the measurements per metric, not one per comparison set.
    by_metric = {(phase, metric): samples(trials, measurements, phase, metric) for phase, metric, _ in metrics}
    out = []
    for keys in comparison_sets(cases):
        for phase, metric, name in metrics:
            smp = by_metric[(phase, metric)]
            present = [k for k in keys if k in smp and smp[k].values]
            if len(present) < 2:
                continue
            independent = all(smp[k].independent for k in present)
            blocks = sorted(set.intersection(*(set(smp[k].values) for k in present))) if independent else []
            paired = independent and pair_by_block(len(blocks), len(present), alpha)
            if paired:
                values = {label(cases[k]): [smp[k].values[b] for b in blocks] for k in present}
            else:
                values = {label(cases[k]): list(smp[k].values.values()) for k in present}
            flagged = frozenset(label(cases[k]) for k in present if k in busy)
            out.append(Groups(set_label(cases[keys[0]]), phase, name, values, paired, independent, flagged))
    return out


def analyse(
    trials: Rows, measurements: Rows, band: float = 0.02, alpha: float = 0.05, busy: Collection[str] = ()
) -> list[tuple[Groups, stats.Omnibus]]:
    """Every comparison set x timed metric with its tests (omnibus + Holm-adjusted pairs),
    computed once: the verdict tables and the hypothesis report both read from it. `busy`:
    the case keys measured on a busy machine, whose comparisons get no verdict word."""
    return [
        (g, stats.compare_many(g.values, g.paired, alpha, band, independent=g.independent, busy=g.busy))
        for g in comparison_groups(trials, measurements, alpha=alpha, busy=busy)
    ]


def within_run(
    trials: Rows,
    measurements: Rows,
    band: float = 0.02,
    alpha: float = 0.05,
    analysed: list[tuple[Groups, stats.Omnibus]] | None = None,
) -> tuple[list[PairVerdict], list[tuple[str, str, stats.Omnibus]]]:
    """Pairwise verdicts between frameworks for every comparison set and timed metric,
    and the omnibus tests (Friedman / Kruskal-Wallis) for sets of three or more."""
    verdicts: list[PairVerdict] = []
    omnibus: list[tuple[str, str, stats.Omnibus]] = []
    for g, result in analysed if analysed is not None else analyse(trials, measurements, band, alpha):
        if result.test != "none":
            omnibus.append((g.set_label, g.metric, result))
        for a, b, comp in result.pairwise:
            verdicts.append(PairVerdict(g.set_label, g.metric, a, b, comp, g.independent))
    return verdicts, omnibus


# Every quality metric of a trained model (accuracy, test MSE, perplexity, ...), each ranked
# in its own direction (analysis.quality). ACCURACY: the name the callers knew it by.
QUALITY = quality.comparison_metrics()
ACCURACY = QUALITY


def with_heads(metrics: tuple[tuple[str, str, str], ...], measurements: Rows) -> tuple[tuple[str, str, str], ...]:
    """`metrics` and, where it holds the quality metrics (QUALITY), the quality metric of
    each head of a model of several outputs found in `measurements` ("mse/price",
    "test MSE (price)"): the heads are named by the user, so the data says which exist."""
    if not any(m in QUALITY for m in metrics):
        return metrics
    return with_heads_of(metrics, {(m["phase"], m["metric"]) for m in measurements if m["phase"] == quality.PHASE})


def with_heads_of(
    metrics: Sequence[tuple[str, str, str]], keys: Iterable[tuple[str, str]]
) -> tuple[tuple[str, str, str], ...]:
    """with_heads, from the (phase, metric) pairs that are stored (`keys`) rather than the rows."""
    metrics = tuple(metrics)
    if not any(m in QUALITY for m in metrics):
        return metrics
    return (*metrics, *(m for m in quality.comparison_metrics(keys) if m not in metrics))


@dataclass(frozen=True)
class Standing:
    """One framework/variant of a comparison set against the best of the set."""

    name: str
    estimate: float  # its median
    comparison: stats.Comparison | None  # name relative to the best (ratio = name / best); None: the best
    difference_ci: tuple[float, float] | None = None  # quality: CI of median(name) - median(best)


@dataclass(frozen=True)
class Ranking:
    """A comparison set and metric with its members best first: lowest time, highest accuracy,
    lowest test MSE (a quality metric's direction is its declaration's)."""

    set_label: str
    phase: str
    metric: str
    paired: bool  # trial medians paired by block; else repeats or trial medians, unpaired
    standings: tuple[Standing, ...]

    @property
    def best(self) -> Standing:
        return self.standings[0]


def _oriented(result: stats.Omnibus, name: str, best: str) -> stats.Comparison:
    for a, b, comp in result.pairwise:
        if (a, b) == (name, best):
            return comp
        if (a, b) == (best, name):
            return stats.reverse(comp)
    raise KeyError(f"no comparison of {name} with {best}")


def rankings(
    analysed: list[tuple[Groups, stats.Omnibus]],
    accuracy: list[tuple[Groups, stats.Omnibus]] | None = None,
) -> list[Ranking]:
    """Every comparison set and metric, ranked: times lowest first, quality metrics (`accuracy`:
    the groups of QUALITY) best first in their declared direction (accuracy highest, test MSE
    lowest). Each member carries its comparison with the best (Holm-adjusted within the set)
    and, for a quality metric, the CI of its difference from the best."""
    out = []
    for groups, is_quality in ((analysed, False), (accuracy or [], True)):
        for g, result in groups:
            medians = {name: float(np.median(v)) for name, v in g.values.items() if len(v)}
            if len(medians) < 2:
                continue
            q = quality.quality(g.phase, _stored_metric(g)) if is_quality else None
            higher_better = q is not None and q.higher_is_better
            order = sorted(medians, key=lambda k: -medians[k] if higher_better else medians[k])
            best = order[0]
            standings = [Standing(best, medians[best], None)]
            for name in order[1:]:
                ci = stats.difference_ci(g.values[name], g.values[best], g.paired) if is_quality else None
                standings.append(Standing(name, medians[name], _oriented(result, name, best), ci))
            out.append(Ranking(g.set_label, g.phase, g.metric, g.paired, tuple(standings)))
    return out


def _stored_metric(g: Groups) -> str:
    """The stored metric name of a group named by its label ("test MSE" -> "mse")."""
    q = quality.by_label(g.metric)
    return q.metric if q is not None else g.metric


@dataclass(frozen=True)
class RunDiff:
    case: Case
    metric: str
    comparison: stats.Comparison | None  # B relative to A; None if one side has no values
    regression: bool
    sample: str = ""  # what the compared values are, in words

    @property
    def declared(self) -> quality.Quality | None:
        """The quality metric compared (its direction reads the verdict), or None for a time."""
        return quality.by_label(self.metric)

    @property
    def verdict(self) -> str:
        """The verdict in the metric's own words: faster/slower for times, better/worse
        for a quality metric in its declared direction."""
        c = self.comparison
        if c is None:
            return "no values on one side"
        q = self.declared
        if q is None or c.verdict not in ("faster", "slower"):
            return c.verdict
        return "worse" if c.verdict == q.worse_verdict else "better"


# Settings of the machine rather than of the experiment: two runs that differ
# only here (another core count, another box) are still the same case.
MACHINE_FIELDS = ("threads",)


def match_key(case: Case) -> str:
    return json.dumps({k: v for k, v in case.items() if k not in MACHINE_FIELDS}, sort_keys=True)


def blocks_alternated(a_trials: Rows, b_trials: Rows) -> bool:
    """Whether two runs took turns block by block, as `dlbench extend A B` runs them:
    every block number of either run was run, in both runs, between the end of the
    previous block number and the start of the next (trial start and finish times).
    Then block k of A and block k of B ran back to back on the same machine state,
    and a pair of them is what a paired test needs: the machine's slow phases, which
    last seconds to minutes, then fall on both members of a pair. Two runs taken one
    after the other fail this (block 0 of A and block 0 of B are a run apart)."""

    def ran(trials: Rows) -> list[Row]:
        return [t for t in trials if t["started_at"] and t["finished_at"]]

    a_ran, b_ran = ran(a_trials), ran(b_trials)
    if len({t["block"] for t in a_ran} & {t["block"] for t in b_ran}) < 2:
        return False
    spans: dict[int, tuple[datetime, datetime]] = {}
    for t in (*a_ran, *b_ran):
        start, end = datetime.fromisoformat(t["started_at"]), datetime.fromisoformat(t["finished_at"])
        lo, hi = spans.get(t["block"], (start, end))
        spans[t["block"]] = (min(lo, start), max(hi, end))
    ordered = [spans[b] for b in sorted(spans)]
    return all(prev[1] <= nxt[0] for prev, nxt in zip(ordered, ordered[1:]))


def _sample_words(sa: Sample, sb: Sample, paired: bool, pairs: int) -> str:
    if paired:
        left_out = len(sa.values) + len(sb.values) - 2 * pairs
        return f"{pairs} pairs of trial medians, by block" + (
            f" ({left_out} trial(s) without a partner left out)" if left_out else ""
        )
    kinds = {s.independent for s in (sa, sb)}
    what = (
        "trial medians"
        if kinds == {True}
        else "repeats in one process"
        if kinds == {False}
        else "trial medians / repeats"
    )
    return f"{len(sa.values)}+{len(sb.values)} {what}, unpaired"


def run_vs_run(
    a_trials: Rows,
    a_measurements: Rows,
    b_trials: Rows,
    b_measurements: Rows,
    threshold: float = 0.05,
    alpha: float = 0.05,
    quantile: float = 0.5,
    with_quality: bool = False,
    busy_verdicts: bool = False,
) -> list[RunDiff]:
    """Every case present in both runs (matched on everything but machine settings
    such as threads), B relative to A (ratio > 1: B slower), as the ratio of medians
    or of another quantile of the trial values (stats module: a low quantile for a
    machine whose speed comes and goes). Trial medians are paired by block when the
    runs alternated block by block (`blocks_alternated`); otherwise unpaired.

    with_quality: the quality metrics too (QUALITY), each a regression when B is
    significantly worse beyond the band in its declared direction (lower accuracy,
    higher test MSE). Off by default: a gate on times alone stays as it was.

    A time of a case measured on a busy machine on either side (dlbench.analysis.busy), or
    of runs in turns whose sides were busy unequally beneath the flag (busy.unequal_load),
    keeps its ratio and CI but gets no verdict word, and so is never a regression, unless
    `busy_verdicts`: its times hold the other processes' load as well as the code."""
    from dlbench.analysis.busy import busy_cases, shares_by_block, unequal_load

    busy_a = set() if busy_verdicts else set(busy_cases(a_measurements))
    busy_b = set() if busy_verdicts else set(busy_cases(b_measurements))
    shares_a = {} if busy_verdicts else shares_by_block(a_trials, a_measurements)
    shares_b = {} if busy_verdicts else shares_by_block(b_trials, b_measurements)
    a_cases = {t["case_key"]: stored_case(trial_record(t).case) for t in a_trials}
    b_by_match = {match_key(stored_case(trial_record(t).case)): t["case_key"] for t in b_trials}
    alternated = blocks_alternated(a_trials, b_trials)
    out = []
    compared = with_heads((*TIMED, *QUALITY), [*a_measurements, *b_measurements]) if with_quality else TIMED
    for phase, metric, name in compared:
        q = quality.quality(phase, metric) if with_quality else None
        sa = samples(a_trials, a_measurements, phase, metric)
        sb = samples(b_trials, b_measurements, phase, metric)
        if not sa and not sb:
            continue  # a metric neither run measures (e.g. time to accuracy)
        for key, case in a_cases.items():
            b_key = b_by_match.get(match_key(case))
            if b_key is None:
                continue
            if q is not None and key not in sa and b_key not in sb:
                continue  # not this case's quality metric (another task's), or no ok trial: its times say so
            if key not in sa or b_key not in sb:
                out.append(RunDiff(case, name, None, False))
                continue
            x, y = sa[key], sb[b_key]
            shared = set(x.values) & set(y.values)
            paired = alternated and x.independent and y.independent and pair_by_block(len(shared), 2, alpha)
            if paired:
                blocks = sorted(shared)
                a_values, b_values = [x.values[k] for k in blocks], [y.values[k] for k in blocks]
            else:
                a_values, b_values = list(x.values.values()), list(y.values.values())
            comp = stats.compare_two(
                b_values,
                a_values,
                paired=paired,
                band=threshold,
                alpha=alpha,
                quantile=quantile,
                independent=x.independent and y.independent,
                # Two runs taken one after the other differ by the machine's drift between
                # them as well as by their code: a verdict needs them taken in turns.
                interleaved=alternated,
                # A side busy (flagged), or the sides busy unequally beneath the flag.
                busy=q is None
                and (
                    key in busy_a
                    or b_key in busy_b
                    or (alternated and unequal_load(shares_a.get(key, {}), shares_b.get(b_key, {})) is not None)
                ),
            )
            worse = "slower" if q is None else q.worse_verdict
            out.append(RunDiff(case, name, comp, comp.verdict == worse, _sample_words(x, y, paired, len(a_values))))
    return out


@dataclass(frozen=True)
class SettingChange:
    """A recorded setting whose values differ between two runs."""

    scope: str  # "case", "protocol", or a framework name (its fairness manifest)
    key: str  # e.g. "threads", "intra_op_threads", "variant_settings.torch.compile"
    a: tuple[str, ...]  # the values in run A (JSON text), sorted
    b: tuple[str, ...]


def _flatten(value: Any, prefix: str = "") -> dict[str, str]:
    if isinstance(value, dict):
        out: dict[str, str] = {}
        for k, v in value.items():
            out.update(_flatten(v, f"{prefix}{k}."))
        return out
    return {prefix[:-1]: json.dumps(value, sort_keys=True)}


def setting_changes(a_trials: Rows, b_trials: Rows) -> list[SettingChange]:
    """Every recorded setting whose values differ between the runs: the case fields, the
    protocol, and each framework's fairness manifest (threads, precision, compile mode,
    pipeline, ...). Versions are the environment's business (packages), not listed here."""

    def collect(trials: Rows) -> dict[tuple[str, str], set[str]]:
        out: dict[tuple[str, str], set[str]] = defaultdict(set)
        for row in trials:
            t = trial_record(row)
            case = stored_case(t.case)
            for key, text in _flatten(case).items():
                out[("case", key)].add(text)
            for key, text in _flatten(t.protocol).items():
                out[("protocol", key)].add(text)
            if t.manifest:
                manifest = dict(t.manifest)
                manifest.pop("versions", None)
                for key, text in _flatten(manifest).items():
                    out[(str(case.get("framework")), key)].add(text)
        return out

    a, b = collect(a_trials), collect(b_trials)
    frameworks = {scope for scope, _ in a} & {scope for scope, _ in b}
    changes = []
    for scope, key in sorted(set(a) | set(b)):
        if scope not in ("case", "protocol") and scope not in frameworks:
            continue  # a framework only one run has: its manifest has nothing to compare with
        if a.get((scope, key), set()) != b.get((scope, key), set()):
            changes.append(
                SettingChange(
                    scope, key, tuple(sorted(a.get((scope, key), ()))), tuple(sorted(b.get((scope, key), ())))
                )
            )
    return changes
