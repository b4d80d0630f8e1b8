"""The answer first: who is faster, by how much, and whether it is real, in plain words.

Every report opens with this block (console, Markdown, LaTeX, HTML). Per
comparison set (cases that differ only in framework/variant) and metric it names
the fastest (or most accurate) framework, then each other one as
"5.17× slower [95% CI 4.38, 7.31], p = 0.0022 (Holm): slower" — hyperfine's
"ran 1.8 ± 0.1 times faster than" is the tone. An undecided comparison says why
and how many trials or repeats would decide. Quality metrics (accuracy, test MSE,
perplexity: dlbench.analysis.quality) are worded in their declared direction, and
their differences stated in their own units (accuracy in percentage points). The
numbers come from dlbench.analysis.comparisons.rankings; this module only words
them, as plain data (Answer) that each format lays out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from dlbench.analysis import quality
from dlbench.analysis.comparisons import ALPHA, BAND, Ranking, Standing
from dlbench.analysis.stats import FUTILE_SAMPLES, Comparison
from dlbench.report.tables import ratio_text
from dlbench.report.words import design_words, designs_words, reason
from dlbench.terminal import drop_shared
from dlbench.terminal import duration as _duration

# The marker on an answer line (and a table row) whose case ran on a busy machine; the
# answer's notes say once what it means and what to do.
BUSY_MARK = "[BUSY]"


@dataclass(frozen=True)
class AnswerItem:
    subject: str  # what the compared cases share: "mlp digits b32 adam lr=0.001 3 ep"
    metric: str  # "train time", "inference time", "accuracy", "test MSE"
    best: str  # "jax:jit is fastest: median 38.2 ms"
    others: tuple[str, ...]  # one line per other framework/variant


@dataclass
class Answer:
    items: list[AnswerItem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what every line rests on, and warnings (busy machine)
    empty: str = ""  # why there is nothing to answer (one framework only, no values)
    # The notes that warn (a busy machine, one process a side, mixed hardware, failed parts, settings that
    # did not apply in full): renderers show them as warnings, not as the method's fine print.
    warnings: list[str] = field(default_factory=list)

    def warn(self, note: str, first: bool = False) -> None:
        """Add a note that warns; `first` puts it above the others (it concerns every line)."""
        self.notes.insert(0, note) if first else self.notes.append(note)
        self.warnings.append(note)

    def lines(self) -> list[str]:
        """The block as plain text lines (console and anything line-based)."""
        out: list[str] = []
        subject = None
        for item in self.items:
            if item.subject != subject:
                subject = item.subject
                out.append(subject)
            out.append(f"  {item.metric}: {item.best}")
            out += [f"    {line}" for line in item.others]
        return out or [self.empty]


def duration(seconds: float, unit: tuple[str, float] | None = None) -> str:
    """A time in the unit of its quantity (dlbench.terminal.duration): 38.2 ms, 1.52 s, 2.5 min."""
    return _duration(seconds, unit)


def _independent(ranking: Ranking) -> bool:
    """The ranking's samples are trial medians (one value per process), paired or not."""
    return any(s.comparison is not None and s.comparison.independent for s in ranking.standings[1:])


def ranking_design(ranking: Ranking) -> str:
    """The design a ranking's comparisons ran, in words (words.design_words): its members,
    trials per case (trial medians per side), paired or not (the comparisons' own
    pair_by_block decision) and Holm family; "" when nothing was compared."""
    comps = [s.comparison for s in ranking.standings[1:] if s.comparison is not None]
    if not comps:
        return ""
    if not any(c.independent for c in comps):
        return design_words(len(ranking.standings), 1, False, comps[0].family_size, one_process=True)
    sizes = sorted({n for c in comps if c.independent for n in (c.n_a, c.n_b)})
    n = str(sizes[0]) if len(sizes) == 1 else f"{sizes[0]}-{sizes[-1]}"
    return design_words(len(ranking.standings), n, ranking.paired, max(c.family_size for c in comps))


def _units(ranking: Ranking) -> str:
    # Trial medians: more trials decide. Otherwise the repeats of one trial per case.
    return "trials" if ranking.paired or _independent(ranking) else "repeats"


ONE_PROCESS = "no verdict: one process per case"


def one_process_note(need: int | None) -> str:
    """Why a comparison of one process per side has a ratio but no verdict, and what gets one."""
    trials = f"--trials {need}" if need else "--trials N"
    return (
        "no verdict where a case ran in one process: its repeats share that process's placement, caches "
        "and machine phase, so a test on them compares two processes, not two codes (two runs of identical "
        f"code were called 'faster, p = 0.015' in 1 of 4 pairs here); {trials} (or `dlbench extend RUN "
        "--blocks N`) runs independent processes in interleaved blocks and decides"
    )


def undecided_words(c: Comparison, units: str) -> str:
    """Why a comparison is undecided, short, with what would decide it."""
    why = c.why
    if why is None:
        return "undecided"
    if why.cause == "one process":
        return ONE_PROCESS
    if why.cause == "busy machine":
        return f"not decided: the machine was busy (the {BUSY_MARK} note above says what decides)"
    if why.cause == "too few":
        return (
            f"undecided: too few {units}; the exact test needs at least {why.need} {units} per "
            f"framework{' (Holm-adjusted for ' + str(c.family_size) + ' comparisons)' if c.family_size > 1 else ''}"
        )
    if why.cause in ("overlaps band", "not significant"):
        if why.projection == "edge":
            return f"undecided: the ratio sits on the ±{c.band:.0%} band's edge; more {units} alone cannot decide"
        if why.projection == "futile":
            return f"undecided: more than {FUTILE_SAMPLES:,} {units} would be needed at this spread"
        return f"undecided: about {why.projected} {units} per framework would decide at this spread"
    return "undecided: " + reason(c)


def p_short(c: Comparison) -> str:
    """ "p = 0.0022": two significant digits are what a reader compares with alpha; a p at
    the smallest value the design can give says so (the data could not have said more)."""
    text = f"p = {c.p:.2g}"
    if c.at_floor:
        design = f"{c.n_a} pairs" if c.paired else f"{c.n_a}+{c.n_b} values"
        holm = f" after Holm over {c.family_size}" if c.family_size > 1 else ""
        text += f" (the smallest {design} can give{holm})"
    return text


def _ci_text(c: Comparison, lo: float, hi: float, fmt: str = ".3g") -> str:
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "[CI undefined]"
    kind = "95% CI" if c.independent else "within-process 95% CI"
    return f"[{kind} {lo:{fmt}}, {hi:{fmt}}]"


def _time_line(s: Standing, best: str, units: str) -> str:
    c = s.comparison
    assert c is not None
    lo, hi = c.ratio_ci
    ratio = ratio_text(c.ratio)
    ci = _ci_text(c, lo, hi)
    if not c.independent:
        return f"{s.name} {ratio} slower than {best} {ci}: {ONE_PROCESS}"
    p = p_short(c)
    if c.verdict == "slower":
        verdict = "slower"
    elif c.verdict == "no meaningful difference":
        verdict = f"no meaningful difference (within ±{c.band:.0%})"
    elif c.verdict == "faster":  # cannot happen for a ranked median, but never hide it
        verdict = "faster"
    else:
        verdict = undecided_words(c, units)
    return f"{s.name} {ratio} slower than {best} {ci}, {p}: {verdict}"


def _quality_line(s: Standing, best: Standing, units: str, q: quality.Quality) -> str:
    """One other member against the best in a quality metric: the difference of medians
    in the metric's shown units (percentage points for accuracy) with its CI, and the
    engine's verdict read in the metric's direction."""
    c = s.comparison
    assert c is not None
    diff = q.scale * (s.estimate - best.estimate)
    lo, hi = (q.scale * x for x in (s.difference_ci or (math.nan, math.nan)))
    ci = _ci_text(c, lo, hi, "+.2f" if q.difference == "pp" else "+.3g")
    # Ranked best first, every other median lies on the worse side of the best's.
    amount = f"{abs(diff):.2f} {q.difference}" if q.difference else f"{abs(diff):.3g}"
    words = f"{s.name} {amount} {'lower' if q.higher_is_better else 'higher'} {ci}"
    if not c.independent:
        return f"{words}: {ONE_PROCESS}"
    p = p_short(c)
    # The engine's verdict on the ratio of medians ("faster" = lower in its words).
    if c.verdict == q.worse_verdict:
        verdict = q.worse
    elif c.verdict == "no meaningful difference":
        verdict = f"no meaningful difference (within ±{c.band:.0%})"
    elif c.verdict in ("faster", "slower"):  # cannot happen for a ranked median, but never hide it
        verdict = q.better
    else:
        verdict = undecided_words(c, units)
    return f"{words}, {p}: {verdict}"


def _head(r: Ranking, names: dict[str, str]) -> str:
    """The ranking's first line: "fastest" / "most accurate" / "lowest test MSE" only where
    every other member is decided worse; otherwise the best median, and that nothing is decided."""
    best = r.best
    q = quality.by_label(r.metric) if r.phase == quality.PHASE else None
    value = q.value(best.estimate) if q is not None else duration(best.estimate)
    best = replace(best, name=names.get(best.name, best.name))
    worse = q.worse_verdict if q is not None else "slower"  # the engine's word for "worse than the best"
    decided = all(s.comparison is not None and s.comparison.verdict == worse for s in r.standings[1:])
    if decided:
        return f"{best.name} {q.leader}: median {value}" if q is not None else f"{best.name} is fastest: median {value}"
    if q is not None:
        return f"{q.no_leader} ({q.extreme} median: {best.name}, {value})"
    return f"no framework is decided fastest here (lowest median: {best.name}, {value})"


BUSY_WORDS = (
    "a busy loop on one core made a 2-thread torch cnn train 50x slower on a 2-core machine: "
    "re-measure on a quiet machine, or pin a 1-thread worker (--threads 1 under taskset)"
)
# The same, for cases that already ran one thread: --threads 1 is no remedy there.
BUSY_WORDS_ONE_THREAD = (
    "these cases already ran one intra-op thread, which another process can still share a core "
    "with: re-measure on a quiet machine, or give the worker a core of its own (taskset)"
)


def build_answer(
    rankings: list[Ranking],
    busy: dict[str, float] | None = None,
    band: float = BAND,
    alpha: float = ALPHA,
    busy_threads: frozenset[int] = frozenset(),
    per: dict[str, str] | None = None,
    cases: int = 0,
    withheld: bool = True,
) -> Answer:
    """The answer block from the rankings. busy: full case label -> the share of the CPU
    (% of all cores) other processes took while it ran, for the cases measured on a busy
    machine (dlbench.analysis.busy); their lines carry BUSY_MARK and one note says what it
    means, with the remedy that fits the thread counts those cases ran with
    (`busy_threads`; empty: not known). Subjects name only what tells the comparison sets
    apart (the shared settings are printed once above). per: phase -> what one value
    of its time covers ("3 epochs over 1,437 samples"); cases: how many the run has.
    withheld: the time comparisons with a busy case were given no verdict word (the
    default; False where the reader asked for verdicts anyway, --busy-verdicts)."""
    busy = busy or {}
    per = per or {}
    # Where every case ran on a busy machine a marker on every line tells nothing: the note says "every".
    everywhere = bool(busy) and cases > 0 and len(busy) >= cases
    marks = {} if everywhere else busy
    answer = Answer()

    def named(s: Standing) -> Standing:
        return replace(s, name=names.get(s.name, s.name))

    set_labels = list(dict.fromkeys(r.set_label for r in rankings))
    subjects = dict(zip(set_labels, drop_shared(set_labels)))
    # Framework names without what every member shares ("runtime=all" in each: said once above).
    members = list(dict.fromkeys(s.name for r in rankings for s in r.standings))
    names = dict(zip(members, drop_shared(members))) if len(members) > 1 else {}
    for r in rankings:
        units = _units(r)
        best = r.best
        head = _head(r, names)
        q = quality.by_label(r.metric) if r.phase == quality.PHASE else None
        if q is not None:
            others = tuple(_quality_line(named(s), named(best), units, q) for s in r.standings[1:])
        else:
            others = tuple(_time_line(named(s), names.get(best.name, best.name), units) for s in r.standings[1:])
        marked = tuple(
            line + (f" {BUSY_MARK}" if f"{s.name} {r.set_label}" in marks else "")
            for line, s in zip(others, r.standings[1:])
        )
        if f"{best.name} {r.set_label}" in marks:
            head += f" {BUSY_MARK}"
        metric = f"{r.metric} ({per[r.phase]})" if r.phase in per else r.metric
        answer.items.append(AnswerItem(subjects.get(r.set_label, r.set_label), metric, head, marked))
    # Times first within each subject, quality metrics last, subjects in their first-seen order.
    order = list(dict.fromkeys(i.subject for i in answer.items))
    answer.items.sort(key=lambda i: (order.index(i.subject), quality.by_label(i.metric) is not None))
    if answer.items:
        tests = designs_words(d for d in map(ranking_design, rankings) if d)
        answer.notes.append(
            "ratio of medians, 95% bootstrap CI; "
            + (tests + "; " if tests else "")
            + f"verdicts at band ±{band:.0%} and alpha {alpha:g}: 'slower' = p < {alpha:g} and CI clear of "
            f"±{band:.0%}; 'no meaningful difference' = CI inside it"
        )
        single = [
            s.comparison
            for r in rankings
            for s in r.standings[1:]
            if s.comparison is not None and not s.comparison.independent
        ]
        if single:
            answer.warn(one_process_note(max((c.why.need or 0) for c in single if c.why) or None))
    else:
        answer.empty = "nothing to compare: every comparison needs two frameworks or variants with values"
    if busy:
        worst = max(busy.values())
        of = f" of {cases}" if cases >= len(busy) else ""
        plural = "s" if max(len(busy), cases) > 1 else ""  # "1 of 3 cases"
        which = (
            f"every case ({cases}): every number here"
            if everywhere
            else f"{len(busy)}{of} case{plural} (the lines and rows marked {BUSY_MARK})"
        )
        answer.warn(
            f"{BUSY_MARK} measured on a busy machine: other processes took up to {worst:.0f}% of the CPU "
            f"during {which}; "
            + (BUSY_WORDS_ONE_THREAD if busy_threads == {1} else BUSY_WORDS)
            + (
                "; no time comparison with such a case is decided here: the ratios stand, the verdicts wait for "
                "a quiet rerun (dlbench run --resume RUN --redo-busy runs the busy blocks again; dlbench report "
                "--busy-verdicts judges them anyway)"
                if withheld
                else "; judged anyway (--busy-verdicts): these verdicts may hold the load, not the code"
            ),
            first=True,
        )
    return answer
