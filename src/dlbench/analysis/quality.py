"""The quality metrics of a trained model: one declaration that every reader follows.

A trial stores the quality of its trained model under phase "accuracy", with the
metric its task defines (the storage contract):

- classify: "accuracy" (fraction), higher is better, shown in %;
- regress: "mse" (squared target units) or "mae" (target units), the test-set error
  under the model's loss, lower is better, shown as plain numbers;
- next-token: "accuracy" (token accuracy, fraction) and "perplexity", lower is better;
- several named outputs: each head's metric of its task, named "<metric>/<head>"
  ("accuracy/kind", "mse/price"), declared as its base metric is (direction, unit,
  display), labelled with the head: "accuracy (kind)", "test MSE (price)".

The comparisons, the answer, the tables, the CSV, the figures and `dlbench compare`
read the label, the display and above all the direction from here, so that a lower
MSE is "better" wherever it is spoken of and a metric added to the contract is
added here once.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import cache

PHASE = "accuracy"  # the phase every quality row is stored under, whatever the task


@dataclass(frozen=True)
class Quality:
    """One quality metric as stored (phase PHASE, `metric`, `unit`) and as shown."""

    metric: str  # the stored metric name
    label: str  # how reports name it: "accuracy", "test MSE"
    unit: str  # the stored unit
    scale: float  # stored value x scale = the shown number
    shown: str  # the shown unit: "%" or "" (a plain number)
    higher_is_better: bool
    tasks: tuple[str, ...]  # the model tasks that produce it
    leader: str  # the best of a set, decided: "is most accurate"
    no_leader: str  # the best median, undecided: "no framework is more accurate here"
    worse: str  # the verdict on a decidedly worse member: "less accurate"
    better: str  # ... on a decidedly better one (a ranked median cannot be, but never hidden)
    difference: str = ""  # the unit of a difference of shown values: "pp" (percentage points)

    @property
    def phase(self) -> str:
        return PHASE

    @property
    def title(self) -> str:
        """A table's or an axis's title: "accuracy (%)", "test MSE"."""
        return f"{self.label} ({self.shown})" if self.shown else self.label

    @property
    def extreme(self) -> str:
        """The best median's word: "highest" or "lowest"."""
        return "highest" if self.higher_is_better else "lowest"

    @property
    def worse_verdict(self) -> str:
        """The statistics engine's verdict (on the ratio other / best, read as times are:
        "faster" = lower) that means worse for this metric."""
        return "faster" if self.higher_is_better else "slower"

    def value(self, v: float) -> str:
        """One value as the answer shows it: "91.23%", "0.04213"."""
        if not math.isfinite(v):
            return "—"
        return f"{v * self.scale:.2f}%" if self.shown == "%" else f"{v * self.scale:.4g}"


QUALITY: tuple[Quality, ...] = (
    Quality(
        "accuracy",
        "accuracy",
        "fraction",
        100.0,
        "%",
        True,
        ("classify", "next-token"),
        "is most accurate",
        "no framework is more accurate here",
        "less accurate",
        "more accurate",
        "pp",
    ),
    Quality(
        "mse",
        "test MSE",
        "squared target units",
        1.0,
        "",
        False,
        ("regress",),
        "has the lowest test MSE",
        "no framework has a decidedly lower test MSE here",
        "worse",
        "better",
    ),
    Quality(
        "mae",
        "test MAE",
        "target units",
        1.0,
        "",
        False,
        ("regress",),
        "has the lowest test MAE",
        "no framework has a decidedly lower test MAE here",
        "worse",
        "better",
    ),
    Quality(
        "perplexity",
        "perplexity",
        "",
        1.0,
        "",
        False,
        ("next-token",),
        "has the lowest perplexity",
        "no framework has a decidedly lower perplexity here",
        "worse",
        "better",
    ),
)

_BY_METRIC = {q.metric: q for q in QUALITY}
_BY_LABEL = {q.label: q for q in QUALITY}
assert len(_BY_METRIC) == len(_BY_LABEL) == len(QUALITY), "quality metrics and labels must be unique"


# A head's metric: "<base metric>/<head>" (dlbench.heads), the head an output's name.
HEAD_SEPARATOR = "/"
_HEAD = re.compile(r"[a-z][a-z0-9_]{0,31}")


@cache
def _for_head(base: Quality, head: str) -> Quality:
    """A head's quality: the base metric's direction, unit and display, its label naming
    the head ("test MSE (price)"), and so its verdicts ("has the lowest test MSE (price)")."""
    label = f"{base.label} ({head})"

    def said(phrase: str) -> str:
        if base.label in phrase:
            return phrase.replace(base.label, label)
        stem, here = (phrase[: -len(" here")], " here") if phrase.endswith(" here") else (phrase, "")
        return f"{stem} on {head}{here}"

    return replace(
        base,
        metric=f"{base.metric}{HEAD_SEPARATOR}{head}",
        label=label,
        leader=said(base.leader),
        no_leader=said(base.no_leader),
    )


def quality(phase: str, metric: str) -> Quality | None:
    """The declaration of a stored (phase, metric), or None when it is no quality metric;
    a head's metric ("mse/price") resolves to its base metric's, labelled with the head."""
    if phase != PHASE:
        return None
    if metric in _BY_METRIC:
        return _BY_METRIC[metric]
    base, sep, head = metric.partition(HEAD_SEPARATOR)
    if sep and base in _BY_METRIC and _HEAD.fullmatch(head):
        return _for_head(_BY_METRIC[base], head)
    return None


def by_label(label: str) -> Quality | None:
    """The declaration a comparison names by its label ("test MSE", "test MSE (price)"),
    or None (a time)."""
    if label in _BY_LABEL:
        return _BY_LABEL[label]
    match = re.fullmatch(r"(.+) \(([a-z][a-z0-9_]{0,31})\)", label)
    if match and match.group(1) in _BY_LABEL:
        return _for_head(_BY_LABEL[match.group(1)], match.group(2))
    return None


def present(keys: Iterable[tuple[str, str]]) -> tuple[Quality, ...]:
    """Every declared quality metric, then the heads' metrics found among `keys` (the
    (phase, metric) pairs a set of results holds), each head's after its base metric's
    order and by head name: what a reader shows, the static list alone missing the heads."""
    found = {q.metric: q for phase, metric in keys if (q := quality(phase, metric)) is not None}
    heads = sorted(
        (q for name, q in found.items() if name not in _BY_METRIC),
        key=lambda q: (QUALITY.index(_BY_METRIC[q.metric.partition(HEAD_SEPARATOR)[0]]), q.metric),
    )
    return (*QUALITY, *heads)


def comparison_metrics(keys: Iterable[tuple[str, str]] = ()) -> tuple[tuple[str, str, str], ...]:
    """(phase, metric, label) of every quality metric, in the form the comparisons take;
    with `keys` (the (phase, metric) pairs present) also the heads' metrics among them."""
    return tuple((PHASE, q.metric, q.label) for q in present(keys))


def for_task(task: str) -> tuple[Quality, ...]:
    """The quality metrics a model task produces."""
    return tuple(q for q in QUALITY if task in q.tasks)


# Token throughput of next-token models, beside samples/s where a trial stores it: (phase,
# metric, label). "inference" is the contract's name; the harness's own phase is "infer".
TOKEN_THROUGHPUT: tuple[tuple[str, str, str], ...] = (
    ("train", "token_throughput", "train token throughput"),
    ("infer", "token_throughput", "inference token throughput"),
    ("inference", "token_throughput", "inference token throughput"),
)
TOKEN_UNIT = "tokens/s"
