"""Are dlbench's verdicts calibrated? False-positive rate and power of every verdict path
on simulated stores whose noise has the sizes measured on this machine.

The model (log scale), one value per (case, block, repeat):

    log value = mu_case + block_k + process_(case, k) + repeat_noise

    block_k       ~ N(0, sd_block)    the machine's drift, shared by every case of block k
    process_(c,k) ~ N(0, sd_process)  one worker process: placement, caches, allocator, phase
    repeat_noise  ~ N(0, sd_repeat)   one repeat inside that process

Each trial is one process; its repeats share its process effect, which is why a test on
repeats compares two processes, not two codes. The sizes come from a store of A/A data
(`--from-db DB`: every case with two or more trials is identical code run in several
processes): sd_repeat from the spread of repeats inside each trial, sd_process from the
spread of trial means beyond what sd_repeat explains, each case on its own, then pooled.
Without --from-db, the sizes measured on this 2-core VM are used (DEFAULT_SIZES below):
two default runs (5 trials x 1 repeat of each of 7 cases) and six pairs of numpy A/A
runs taken in turns (6 trials x 6 repeats each), all on 2026-11-26.

Every verdict path runs on the simulated rows through the code the commands use:
  report      comparisons.analyse + rankings (the answer and the per-case tables)
  hypotheses  report.hypotheses.hypothesis_rows (seed 002's H0 decisions)
  compare     comparisons.run_vs_run (dlbench compare A B: two runs of the same code taken
              in turns, as dlbench extend A B runs them; runs taken one after the other get
              no verdict at all)
  explain     explain.ablation: a toggle with no effect, its closure "measurable" or not
  claims      studies.paper_vs_run.agreement (a study claim: agrees or differs, vs undecided)
Under no true difference a verdict of a difference is a false positive; the rate of each
path must be at most alpha within binomial error (Clopper-Pearson 95%). Then the power:
the share of comparisons decided in the right direction for a 10% and a 2x effect, at the
default run's design and at each study's quick scale.

    .venv/bin/python benchmarks/calibration.py [--sims 1000] [--from-db dlbench.db] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

# Measured on this VM (see the module docstring; recomputed by --from-db): log-scale sds.
DEFAULT_SIZES = {"sd_block": 0.0, "sd_process": 0.125, "sd_repeat": 0.161}


@dataclass(frozen=True)
class Design:
    name: str
    frameworks: int
    trials: int  # processes per case, one per block
    repeats: int  # measured repeats per process

    def words(self, unit: str = "frameworks/variants") -> str:
        """The design as every report states it (analysis.design decides paired or not, as
        the comparisons' pair_by_block does on the simulated rows)."""
        from dlbench.analysis.design import design
        from dlbench.report.words import check_words, design_words

        d = design(self.frameworks, self.trials, self.repeats)
        if unit != "frameworks/variants":
            return design_words(d.members, d.n, d.paired, d.family, d.one_process, unit=unit)
        return check_words(d) + f", {self.repeats} repeat(s) per trial"


def plan_design(name: str, data: dict[str, Any] | None = None) -> Design:
    """The design a plan runs, from analysis.design.check: the embedded default run (data
    None) or a study's experiment at a scale; its largest comparison set's members."""
    from dlbench import config
    from dlbench.analysis.design import check
    from dlbench.plan import expand

    exp = config.default() if data is None else config.from_dict(data, f"<{name}>")
    d = check(expand(exp))
    if d is None:
        raise SystemExit(f"{name}: compares nothing")
    return Design(name, d.members, exp.protocol.trials, exp.protocol.repeats)


def study_designs(scale: str = "quick") -> tuple[Design, ...]:
    """Every built-in study's design at `scale` (its study.toml, as `dlbench study plan` runs it)."""
    from dlbench import studies

    out = []
    for name in studies.NAMES:
        data = studies.load(name).experiment_data(scale)
        data.setdefault("protocol", {})["device"] = "cpu"
        out.append(plan_design(f"{name} {scale}", data))
    return tuple(out)


# Two runs of the same code taken in turns (dlbench extend A B): 6 blocks, one case each.
RUN_PAIR = Design("run vs run", 2, 6, 2)
# explain: A, B and B with a toggle, 6 blocks (ablation.MIN_BLOCKS); each comparison is two cases, paired.
EXPLAIN = Design("explain", 3, 6, 2)


def estimate_sizes(paths: list[str]) -> dict[str, float]:
    """sd_repeat and sd_process (log scale) from the train times of every case with two
    or more ok trials in these stores: identical code in several processes is A/A data.
    Each spread is pooled over the cases that show it (a case of one repeat per trial
    shows no within-process spread)."""
    from dlbench.store import Store

    per_trial: dict[tuple[str, int], list[float]] = defaultdict(list)
    for path in paths:
        with Store(path, readonly=True) as store:
            for run in store.runs():
                trials = {t["id"]: t for t in store.trials(run["id"]) if t["status"] == "ok"}
                for m in store.measurements(run["id"], latency=False):
                    measured = m["phase"] == "train" and m["metric"] == "time" and not m["warmup"]
                    if measured and m["repeat"] is not None and m["trial_id"] in trials and m["value"]:
                        case = f"{path}:{run['id']}:{m['case_key']}"
                        per_trial[(case, m["trial_id"])].append(math.log(m["value"]))
    within: list[float] = []
    process: list[float] = []
    by_case: dict[str, list[list[float]]] = defaultdict(list)
    for (case, _), values in per_trial.items():
        by_case[case].append(values)
    for trials in by_case.values():
        if len(trials) < 2:
            continue
        # Each case on its own: its repeats' spread inside a process, and the spread of its
        # trial means beyond what that explains (all of it where a trial has one repeat).
        inside = [float(np.var(v, ddof=1)) for v in trials if len(v) >= 2]
        var_repeat = float(np.mean(inside)) if inside else 0.0
        within += inside
        n_rep = float(np.mean([len(v) for v in trials]))
        means = [float(np.mean(v)) for v in trials]
        process.append(max(float(np.var(means, ddof=1)) - var_repeat / n_rep, 0.0))
    if not process:
        raise SystemExit(f"{', '.join(paths)}: no case with two or more ok trials: no A/A data to estimate from")
    sd_repeat = math.sqrt(float(np.mean(within))) if within else 0.0
    var_process = float(np.mean(process))
    return {"sd_block": 0.0, "sd_process": math.sqrt(max(var_process, 0.0)), "sd_repeat": sd_repeat}


def simulate_run(
    rng: np.random.Generator,
    design: Design,
    sizes: dict[str, float],
    effects: list[float],
    run_id: int = 1,
    drifts: list[float] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(trials, measurements) rows of one run: framework i's true time is exp(effects[i]),
    one process per case and block, `design.repeats` repeats each. `drifts`: the block
    effects, when several runs take turns in the same blocks (dlbench extend A B); each
    run's block k then gets start and finish times inside slot k, after the previous run's."""
    trials, rows = [], []
    tid = run_id * 100_000
    for block in range(design.trials):
        if drifts is not None:
            drift = drifts[block]
        else:
            drift = rng.normal(0, sizes["sd_block"]) if sizes["sd_block"] else 0.0
        start = f"2026-01-01T{block // 60:02d}:{block % 60:02d}:{10 * run_id:02d}"
        end = f"2026-01-01T{block // 60:02d}:{block % 60:02d}:{10 * run_id + 5:02d}"
        for i, effect in enumerate(effects):
            tid += 1
            case = {
                "framework": f"fw{i}",
                "variant": "default",
                "model": "mlp",
                "dataset": "digits",
                "batch_size": 32,
                "runtime": "defaults",
            }
            key = f"case{i}"
            trials.append(
                {
                    "id": tid,
                    "case_key": key,
                    "case_json": json.dumps(case),
                    "block": block,
                    "status": "ok",
                    "started_at": start if drifts is not None else None,
                    "finished_at": end if drifts is not None else None,
                    "manifest_json": "{}",
                    "protocol_json": "{}",
                }
            )
            process = rng.normal(0, sizes["sd_process"])
            for r in range(design.repeats):
                value = math.exp(effect + drift + process + rng.normal(0, sizes["sd_repeat"]))
                for phase in ("train", "infer"):
                    rows.append(
                        {
                            "trial_id": tid,
                            "case_key": key,
                            "phase": phase,
                            "metric": "time",
                            "value": value,
                            "warmup": 0,
                            "repeat": r,
                        }
                    )
    return trials, rows


@dataclass
class Tally:
    positives: int = 0
    total: int = 0

    def add(self, positive: bool) -> None:
        self.positives += int(positive)
        self.total += 1

    def interval(self) -> tuple[float, float]:
        from scipy.stats import binomtest

        ci = binomtest(self.positives, self.total).proportion_ci(0.95)
        return float(ci.low), float(ci.high)

    def rate(self) -> float:
        return self.positives / self.total if self.total else math.nan


def report_path(trials, rows) -> list[str]:
    """Verdicts of the answer block and the per-case tables: every pair of every set."""
    from dlbench.analysis.comparisons import analyse

    return [c.verdict for g, result in analyse(trials, rows) if g.phase == "train" for _, _, c in result.pairwise]


def hypotheses_path(trials, rows) -> list[bool]:
    from dlbench.analysis.comparisons import analyse
    from dlbench.report.hypotheses import hypothesis_rows

    analysed = [(g, r) for g, r in analyse(trials, rows) if g.phase == "train"]
    return [row["decision"].startswith("reject H0") for row in hypothesis_rows(trials, rows, analysed=analysed)]


def compare_path(a: tuple[list, list], b: tuple[list, list]) -> list[str]:
    from dlbench.analysis.comparisons import run_vs_run

    return [d.comparison.verdict for d in run_vs_run(*a, *b) if d.comparison is not None and d.metric == "train time"]


def explain_path(rng: np.random.Generator, design: Design, sizes: dict[str, float], gap: float) -> bool:
    """A (fast), B (slower by `gap` in log) and B with a toggle that does nothing: is the
    toggle's closure called measurable? The closure code and rule of dlbench explain."""
    from dlbench.explain.ablation import Effect, _closure_ci, _compare, per_block

    trials, rows = simulate_run(rng, design, sizes, [0.0, gap, gap])
    times: dict[str, dict[tuple[int, int], float]] = defaultdict(dict)
    block_of = {t["id"]: t["block"] for t in trials}
    for m in rows:
        if m["phase"] == "train":
            times[m["case_key"]][(block_of[m["trial_id"]], m["repeat"])] = m["value"]
    blocks = per_block(times)
    keys = sorted(blocks["case0"])
    a, b, s = (np.array([blocks[k][x] for x in keys]) for k in ("case0", "case1", "case2"))
    ma, mb, ms = (float(np.median(x)) for x in (a, b, s))
    ci = _closure_ci(a, b, s, int(rng.integers(1 << 30)))
    effect = Effect("toggle", (), None, ms, (mb - ms) / (mb - ma), ci, _compare(list(s), list(b)), len(keys))
    return effect.measurable


def claims_path(trials, rows, paper_ratio: float) -> str:
    """The agreement outcome of a study claim on a torch / TensorFlow time, from the
    engine's verdict on trial medians (what Results.compare gives a study report)."""
    from dlbench.analysis.comparisons import analyse
    from dlbench.studies.paper_vs_run import agreement

    ((g, result),) = [(g, r) for g, r in analyse(trials, rows) if g.phase == "train"]
    c = result.pair("fw0:default", "fw1:default")  # the "torch / TensorFlow" ratio, Holm over the set
    ours = {"ratio": c.ratio, "ci": c.ratio_ci, "verdict": c.verdict, "independent": c.independent}
    return agreement(paper_ratio, ours, True)


def false_positives(
    sims: int, sizes: dict[str, float], seed: int, alpha: float, default: Design, study: Design
) -> dict[str, Tally]:
    rng = np.random.default_rng(seed)
    tallies = {k: Tally() for k in ("report", "report-study", "hypotheses", "compare", "explain", "claims")}
    for i in range(sims):
        trials, rows = simulate_run(rng, default, sizes, [0.0] * default.frameworks)
        # Family-wise: a set with any pair called faster or slower is one false positive.
        tallies["report"].add(any(v in ("faster", "slower") for v in report_path(trials, rows)))
        tallies["hypotheses"].add(any(hypotheses_path(trials, rows)))
        t2, r2 = simulate_run(rng, study, sizes, [0.0] * study.frameworks)
        tallies["report-study"].add(any(v in ("faster", "slower") for v in report_path(t2, r2)))
        # The study claim: fw0 / fw1 ("torch / TensorFlow") in the study's set, Holm over its family.
        tallies["claims"].add(not claims_path(t2, r2, 0.5).startswith(("undecided", "not measured")))
        # Two runs of the same code taken in turns (dlbench extend A B): shared block drift.
        drifts = [float(rng.normal(0, sizes["sd_block"])) if sizes["sd_block"] else 0.0 for _ in range(6)]
        run_a = simulate_run(rng, RUN_PAIR, sizes, [0.0], run_id=1, drifts=drifts)
        run_b = simulate_run(rng, RUN_PAIR, sizes, [0.0], run_id=2, drifts=drifts)
        tallies["compare"].add(any(v in ("faster", "slower") for v in compare_path(run_a, run_b)))
        tallies["explain"].add(explain_path(rng, EXPLAIN, sizes, math.log(2.0)))
        if (i + 1) % 200 == 0:
            print(f"  {i + 1}/{sims} simulated", file=sys.stderr, flush=True)
    return tallies


def power(design: Design, sizes: dict[str, float], effect: float, sims: int, seed: int) -> float:
    """The share of simulated runs in which the slowest framework (true ratio `effect`
    against the others) is decided slower than the fastest."""
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(sims):
        effects = [0.0] * (design.frameworks - 1) + [math.log(effect)]
        trials, rows = simulate_run(rng, design, sizes, effects)
        from dlbench.analysis.comparisons import analyse

        for g, result in analyse(trials, rows):
            if g.phase != "train":
                continue
            slow = f"fw{design.frameworks - 1}:default"
            c = result.pair("fw0:default", slow)
            hits += c.verdict == "faster"
    return hits / sims


# The gate of docs/ci.md (dlbench gate; dlbench.service.gate): one case, its train and
# inference times gated (2 comparisons sharing alpha), 3 repeats a trial, the runs' first
# blocks taken one after the other and then up to MAX_BLOCKS rounds in turns. A trial of its
# benchmark (numpy mlp on digits, 20 epochs) took 2.0 s with its process start on this VM
# (6 rounds, 12 trials, in 0.4 min), which gives each design's minutes.
GATE_REPEATS = 3
GATE_METRICS = 2
GATE_TRIAL_SECONDS = 2.0
GATE_RATIOS = (1.0, 1.05, 1.1, 1.2, 1.5, 2.0)


def _trial_values(
    rng: np.random.Generator, sizes: dict[str, float], shape: tuple[int, ...], repeats: int
) -> np.ndarray:
    """Log of each trial's median of `repeats` repeats: process effect plus repeat noise."""
    process = rng.normal(0, sizes["sd_process"], shape)
    repeat = rng.normal(0, sizes["sd_repeat"], (*shape, repeats))
    return process + np.median(repeat, axis=-1)


def simulate_gate(
    rng: np.random.Generator, sizes: dict[str, float], ratio: float, max_blocks: int, band: float, level: float
) -> tuple[str, int]:
    """One gate: (how it ended, rounds taken). Train time of B is `ratio` times A's; the
    inference time is the same code on both sides. Every look goes through
    analysis.sequential.look, as `dlbench gate` calls it."""
    from dlbench.analysis.sequential import look

    pairs = max_blocks + 1
    drift = rng.normal(0, sizes["sd_block"], (GATE_METRICS, pairs)) if sizes["sd_block"] else 0.0
    a = np.exp(drift + _trial_values(rng, sizes, (GATE_METRICS, pairs), GATE_REPEATS))
    b = np.exp(drift + _trial_values(rng, sizes, (GATE_METRICS, pairs), GATE_REPEATS))
    b[0] *= ratio  # metric 0: train time, slowed; metric 1: inference, unchanged
    for rounds in range(1, max_blocks + 1):
        n = rounds + 1  # block 0 of each run, then one pair a round
        decisions = [look(list(a[m, :n]), list(b[m, :n]), band, level).decision for m in range(GATE_METRICS)]
        if "slower" in decisions:
            return "fail", rounds
        if all(d == "within" for d in decisions):
            return "pass", rounds
    return "undecided", max_blocks


def gate_calibration(sizes: dict[str, float], sims: int, seed: int, max_blocks: int, band: float, alpha: float) -> bool:
    """Print the gate's false-positive rate and power; False when identical code fails it
    more often than alpha (by the rate's 95% interval)."""
    from dlbench.analysis.sequential import first_look, pocock_level

    level = pocock_level(max_blocks + 1, alpha / GATE_METRICS)
    print(
        f"\nthe regression gate (dlbench gate, docs/ci.md's design): band {band:g}, alpha {alpha:g} shared by "
        f"{GATE_METRICS} comparisons (train and inference time of one case), up to {max_blocks} blocks a run, "
        f"{GATE_REPEATS} repeats a trial; each look's level {level:.4g} (first possible decision at "
        f"{first_look(level)} pairs); {sims} simulated gates per ratio"
    )
    print(
        f"  {'train B/A':>9} {'fails':>6}  95% CI            {'passes':>6} {'undecided':>9} "
        f"{'blocks':>6} {'minutes':>7}"
    )
    rng = np.random.default_rng(seed)
    ok = True
    for ratio in GATE_RATIOS:
        ends: dict[str, int] = {"fail": 0, "pass": 0, "undecided": 0}
        rounds = []
        for _ in range(sims):
            end, r = simulate_gate(rng, sizes, ratio, max_blocks, band, level)
            ends[end] += 1
            rounds.append(r)
        lo, hi = Tally(ends["fail"], sims).interval()
        minutes = float(np.mean(rounds)) * 2 * GATE_TRIAL_SECONDS / 60
        print(
            f"  {ratio:>9.2f} {ends['fail'] / sims:>6.3f}  [{lo:.3f}, {hi:.3f}]  {ends['pass'] / sims:>6.3f} "
            f"{ends['undecided'] / sims:>9.3f} {np.mean(rounds):>6.1f} {minutes:>7.1f}"
            + ("   <- identical code: fails must stay at or below alpha" if ratio == 1.0 else "")
        )
        if ratio == 1.0 and lo > alpha:
            ok = False
    return ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--sims", type=int, default=1000, help="simulated comparisons per verdict path (1000 for the figures)"
    )
    ap.add_argument("--power-sims", type=int, default=300, help="simulated runs per design and effect")
    ap.add_argument(
        "--from-db", nargs="+", help="estimate the noise sizes from these stores' cases with 2+ trials (pooled)"
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--gate-sims", type=int, default=2000, help="simulated gates per ratio")
    ap.add_argument("--gate-only", action="store_true", help="only the regression gate's calibration")
    ap.add_argument("--max-blocks", type=int, default=None, help="the gate's block budget (default: dlbench gate's)")
    args = ap.parse_args(argv)
    from dlbench.analysis.criteria import ALPHA, BAND

    sizes = estimate_sizes(args.from_db) if args.from_db else dict(DEFAULT_SIZES)
    source = f"estimated from {', '.join(args.from_db)}" if args.from_db else "this VM's default-run estimate"
    print(
        f"noise sizes ({source}, log scale): per process sd {sizes['sd_process']:.4f}, per repeat sd "
        f"{sizes['sd_repeat']:.4f}, block drift sd {sizes['sd_block']:.4f}"
    )
    if args.gate_only:
        return 0 if _gate(args, sizes) else 1
    print(f"criteria: alpha {ALPHA:g}, band ±{BAND:.0%}; {args.sims} simulated A/A comparisons per path")
    default = plan_design("default run")
    studies = study_designs("quick")
    study = studies[0]
    start = time.perf_counter()
    tallies = false_positives(args.sims, sizes, args.seed, ALPHA, default, study)
    print(f"\nfalse-positive rate under no true difference ({time.perf_counter() - start:.0f} s):")
    print(f"  {'path':<12} {'rate':>6}  95% CI (Clopper-Pearson)  <= alpha?  design (analysis.design)")
    designs = {
        "report": f"{default.name}, any pair: {default.words()}",
        "report-study": f"{study.name}, any pair: {study.words()}",
        "hypotheses": f"{default.name}, any H0 rejected of {default.frameworks * (default.frameworks - 1) // 2}",
        "compare": f"{RUN_PAIR.name} in turns: {Design('', 2, RUN_PAIR.trials, RUN_PAIR.repeats).words('runs')}",
        "explain": f"toggle with no effect, gap 2x: {Design('', 2, EXPLAIN.trials, 2).words('cases')}",
        "claims": f"torch/TF claim, {study.name}: {study.words()}",
    }
    failed = False
    for name, t in tallies.items():
        lo, hi = t.interval()
        ok = lo <= ALPHA
        failed |= not ok
        print(
            f"  {name:<12} {t.rate():>6.3f}  [{lo:.3f}, {hi:.3f}] ({t.positives}/{t.total})  "
            f"{'yes' if ok else 'NO ':<3}  {designs[name]}"
        )
    print("\npower: the slowest framework decided slower than the fastest")
    print(f"  {'design':<18} {'10% slower':>11} {'2x slower':>10}")
    for design in (default, *studies):
        p10 = power(design, sizes, 1.10, args.power_sims, args.seed + 1)
        p2 = power(design, sizes, 2.0, args.power_sims, args.seed + 2)
        print(f"  {design.name:<18} {p10:>11.2f} {p2:>10.2f}   {design.words()}")
    failed |= not _gate(args, sizes)
    return 1 if failed else 0


def _gate(args: argparse.Namespace, sizes: dict[str, float]) -> bool:
    from dlbench.service import gate

    blocks = args.max_blocks or gate.MAX_BLOCKS
    return gate_calibration(sizes, args.gate_sims, args.seed + 3, blocks, gate.BAND, gate.ALPHA)


if __name__ == "__main__":
    raise SystemExit(main())
