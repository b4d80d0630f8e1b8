"""A study's facts file (`studies/<name>/facts.toml`): the paper's reported numbers.

Each [[fact]] is one number as the paper printed it, with its table or figure number,
the paper's machine, framework, model, quantity (a fixed vocabulary, mapped to what
dlbench measures in dlbench.studies.paper_vs_run), statistic and unit (`printed`: the
number's text where TOML cannot keep it, "99.30"; paper_number gives it back); `where` holds
the factor levels it belongs to (batch size, input shape, phase, ...). [[claim]] is a
result stated without a number (which framework is better on a quantity). [[machine]]
is each hardware setup the paper reports, with its hardware and software as stated.
Strict like every input file: an unknown key or value is one line naming the file.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field
from typing import Any

from dlbench.config import ConfigError

QUANTITIES = (
    "train_time",
    "train_time_per_epoch",
    "train_step_time",
    "infer_time",
    "infer_time_per_sample",
    "train_throughput",
    "infer_throughput",
    "accuracy",
    "loss",
    "cpu_energy",
    "gpu_energy",
    "total_energy",
    "power",
    "cpu_util",
    "gpu_util",
    "gpu_memory_util",
    "cpu_temp",
    "gpu_temp",
    "memory",
    "relative_time",
    "speedup",
    "p_value",
    "statistic_value",
)
STATISTICS = ("mean", "sd", "median", "q1", "q3", "min", "max", "value", "best")
FRAMEWORKS = ("torch", "tensorflow", "jax", "keras", "sklearn", "both")
DEVICES = ("cpu", "cuda", "other")
_PAPER_KEYS = ("title", "authors", "year", "venue", "seed")
_MACHINE_KEYS = ("id", "label", "hardware", "software", "device")
_FACT_KEYS = (
    "ref",
    "machine",
    "framework",
    "model",
    "quantity",
    "statistic",
    "value",
    "unit",
    "text",
    "where",
    "approx",
    "printed",
)
_CLAIM_KEYS = ("ref", "quantity", "model", "machine", "better", "text", "where", "trend")
# A claim about how a difference changes along a factor ("the more expensive the
# model, the better TensorFlow"): dlbench judges one comparison at a time, not trends.
TRENDS = ("models", "batch_size", "input_shape")


@dataclass(frozen=True)
class Machine:
    id: str
    label: str
    hardware: str
    software: str
    device: str


@dataclass(frozen=True)
class Fact:
    ref: str
    machine: str
    framework: str
    model: str
    quantity: str
    statistic: str
    value: float
    unit: str
    text: str
    where: dict[str, Any] = field(default_factory=dict)
    approx: bool = False
    # The number as the paper printed it ("99.30", "0.00") where the TOML number cannot
    # keep it: a float drops its trailing zeros. "" = the TOML number says it all.
    printed: str = ""

    def paper_number(self) -> str:
        """The number with the paper's digits, never rounded: `printed` where the file
        gives it, else the TOML number's own shortest form (50.93 -> "50.93", 92.31 ->
        "92.31", 7 -> "7", 3.896559845095909e-18 as it stands)."""
        if self.printed:
            return self.printed
        if self.value.is_integer() and abs(self.value) < 1e15:
            return str(int(self.value))  # TOML's 7 and 7.0 alike: the paper printed no decimals for either
        return repr(self.value)  # Python's shortest text that reads back as the same float: the digits typed


# As a function too (paper_number(fact)), for code that maps it over facts.
paper_number = Fact.paper_number


# A plain decimal number, with thousands commas or an exponent: what `printed` may hold.
_PRINTED = re.compile(r"-?\d[\d,]*(\.\d+)?([eE][-+]?\d+)?")


def _printed(where: str, value: float, raw: Any) -> str:
    if raw is None:
        return ""
    if not isinstance(raw, str) or not _PRINTED.fullmatch(raw) or float(raw.replace(",", "")) != value:
        raise ConfigError(f'{where}: printed = {raw!r}; the value {value!r} as the paper printed it ("99.30")')
    return raw


@dataclass(frozen=True)
class Claim:
    ref: str
    quantity: str
    model: str
    machine: str
    better: str
    text: str
    where: dict[str, Any] = field(default_factory=dict)
    trend: str = ""  # the factor a trend claim runs along (TRENDS); "" for a plain claim


@dataclass(frozen=True)
class Facts:
    title: str
    authors: str
    year: int
    venue: str
    seed: str
    machines: tuple[Machine, ...]
    facts: tuple[Fact, ...]
    claims: tuple[Claim, ...]

    def machine_label(self, machine_id: str) -> str:
        """The paper's name for a machine id ("all": a number the paper gives for every setup)."""
        if machine_id == "all":
            return "all setups"
        return next(m.label for m in self.machines if m.id == machine_id)

    def cite(self) -> str:
        first = self.authors.split(",")[0].strip()
        more = " et al." if "," in self.authors or " and " in self.authors else ""
        return f"{first}{more}" + (f" ({self.year})" if self.year else "")


def _table(where: str, raw: Any, allowed: tuple[str, ...], required: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: must be a table")
    for key in raw:
        if key not in allowed:
            raise ConfigError(f"{where}: unknown key {key!r}; allowed: {', '.join(allowed)}")
    for key in required:
        if key not in raw:
            raise ConfigError(f"{where}: missing {key!r}")
    return raw


def _one_of(where: str, key: str, value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ConfigError(f"{where}: {key} = {value!r}; allowed: {', '.join(allowed)}")
    return str(value)


def _text(where: str, key: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}: {key} must be a non-empty string")
    return value


def _unit(where: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ConfigError(f'{where}: unit must be a string ("" for a number without a unit, a p-value)')
    return value


def parse(text: str, source: str) -> Facts:
    """The facts in `text` (TOML), checked; `source` names the file in errors."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML ({exc})") from None
    _table(source, data, ("paper", "machine", "fact", "claim"), ("paper", "machine", "fact"))
    paper = _table(f"{source} [paper]", data["paper"], _PAPER_KEYS, _PAPER_KEYS)
    machines = []
    for i, raw in enumerate(data["machine"]):
        where = f"{source} [[machine]] {i + 1}"
        m = _table(where, raw, _MACHINE_KEYS, _MACHINE_KEYS)
        machines.append(
            Machine(
                _text(where, "id", m["id"]),
                _text(where, "label", m["label"]),
                _text(where, "hardware", m["hardware"]),
                _text(where, "software", m["software"]),
                _one_of(where, "device", m["device"], DEVICES),
            )
        )
    ids = tuple(m.id for m in machines)
    facts = []
    for i, raw in enumerate(data["fact"]):
        where = f"{source} [[fact]] {i + 1}"
        f = _table(where, raw, _FACT_KEYS, _FACT_KEYS[:9])
        value = f["value"]
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ConfigError(f"{where}: value = {value!r}; a finite number")
        if not isinstance(f.get("where", {}), dict):
            raise ConfigError(f"{where}: where must be a table of factor = level")
        facts.append(
            Fact(
                ref=_text(where, "ref", f["ref"]),
                machine=_one_of(where, "machine", f["machine"], (*ids, "all")),
                framework=_one_of(where, "framework", f["framework"], FRAMEWORKS),
                model=_text(where, "model", f["model"]),
                quantity=_one_of(where, "quantity", f["quantity"], QUANTITIES),
                statistic=_one_of(where, "statistic", f["statistic"], STATISTICS),
                value=float(value),
                unit=_unit(where, f["unit"]),
                text=_text(where, "text", f["text"]),
                where=dict(f.get("where", {})),
                approx=bool(f.get("approx", False)),
                printed=_printed(where, float(value), f.get("printed")),
            )
        )
    claims = []
    for i, raw in enumerate(data.get("claim", [])):
        where = f"{source} [[claim]] {i + 1}"
        c = _table(where, raw, _CLAIM_KEYS, _CLAIM_KEYS[:6])
        claims.append(
            Claim(
                ref=_text(where, "ref", c["ref"]),
                quantity=_one_of(where, "quantity", c["quantity"], QUANTITIES),
                model=_text(where, "model", c["model"]),
                machine=_one_of(where, "machine", c["machine"], (*ids, "all")),
                better=_one_of(where, "better", c["better"], (*FRAMEWORKS, "none")),
                text=_text(where, "text", c["text"]),
                where=dict(c.get("where", {})) if isinstance(c.get("where", {}), dict) else {},
                trend=_one_of(where, "trend", c["trend"], TRENDS) if "trend" in c else "",
            )
        )
    year = paper["year"]
    if not isinstance(year, int) or isinstance(year, bool):
        raise ConfigError(f"{source} [paper]: year must be an integer (0: not stated)")
    return Facts(
        title=_text(f"{source} [paper]", "title", paper["title"]),
        authors=_text(f"{source} [paper]", "authors", paper["authors"]),
        year=year,
        venue=str(paper["venue"]),
        seed=str(paper["seed"]),
        machines=tuple(machines),
        facts=tuple(facts),
        claims=tuple(claims),
    )
