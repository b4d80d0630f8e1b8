"""A study file (`studies/<name>/study.toml`): a paper's design as an experiment, at three or four scales.

[study] names the study (after the paper's first author), its version, the seed paper,
the choices the paper left open and what dlbench picked, and what cannot be reproduced
here. [[study.setting]] names the variants of the design the paper comparison reads apart
(for example the paper's framework-default init beside the matched Glorot init).
[experiment]/[matrix]/[protocol]/[[include]]/... is the `paper` scale: an ordinary
experiment file; its paper's repetitions are independent processes (trials) in
interleaved blocks, enough to reach alpha for its comparison. [scale.quick] and
[scale.smoke] say what they change (`changes`, in words, printed by `study show` and in
the report) and replace whole keys of [matrix], [protocol] and [synthetic]; `include`
replaces the include list. [scale.cpu], in the studies whose paper scale would take
more than a day on a 2-core CPU (dlbench.studies.estimate), shrinks the paper's
numbers as far as it says and no further, and still decides.

Parsing is strict, like experiment files: an unknown key is one line naming the file,
the key and what is allowed.
"""

from __future__ import annotations

import copy
import tomllib
from dataclasses import dataclass, field
from typing import Any

from dlbench.config import ConfigError

SCALES = ("smoke", "quick", "cpu", "paper")
# Scales every study has; cpu only where the paper scale exceeds a day here.
REQUIRED_SCALES = ("smoke", "quick")
_STUDY_KEYS = (
    "name",
    "version",
    "seed",
    "title",
    "first_line",
    "choices",
    "cannot",
    "setting",
    "reading",
    "fact_models",
    "size_factor",
)
# The default size rule of a study that states none: our CI within a factor 2 of the paper's ratio.
SIZE_FACTOR = 2.0
_SETTING_KEYS = ("name", "where", "about")
_SCALE_KEYS = ("changes", "first_line", "matrix", "protocol", "synthetic", "include", "models")
_EXPERIMENT_KEYS = ("experiment", "matrix", "protocol", "synthetic", "include", "exclude", "models")


@dataclass(frozen=True)
class Setting:
    """A named slice of the study's cases (factor -> value) that the paper comparison reads apart."""

    name: str
    where: dict[str, Any]
    about: str = ""


@dataclass(frozen=True)
class Scale:
    name: str
    changes: tuple[str, ...]
    overrides: dict[str, Any]
    first_line: str = ""  # replaces the study's first line at this scale (a substituted dataset)


@dataclass(frozen=True)
class Study:
    name: str
    version: int
    seed: str
    title: str
    first_line: str  # what every report of the study says first ("" when nothing must come first)
    choices: tuple[str, ...]  # open choices of the paper and what the study picked
    cannot: tuple[str, ...]  # what the paper did that cannot be reproduced here
    settings: tuple[Setting, ...]
    reading: tuple[str, ...]  # what a reader must know to read the comparison (causes known from the design)
    design: dict[str, Any]  # the paper scale, as an experiment file's structure
    fact_models: dict[str, str] = field(default_factory=dict)  # the paper's network name -> the model run for it
    scales: dict[str, Scale] = field(default_factory=dict)
    # The agreement rule's size part: a paper ratio r and ours agree in size when our 95% CI
    # lies within [r / size_factor, r * size_factor] (dlbench.studies.paper_vs_run.Rule).
    size_factor: float = SIZE_FACTOR

    def experiment_data(self, scale: str) -> dict[str, Any]:
        """The experiment file structure at `scale` (the paper's design with the scale's replacements)."""
        if scale not in SCALES:
            raise ConfigError(f"--scale {scale!r}: allowed: {', '.join(SCALES)}")
        if scale != "paper" and scale not in self.scales:
            raise ConfigError(
                f"--scale {scale}: study {self.name} has none (its paper scale fits in a day on a 2-core CPU); "
                f"its scales: {', '.join(self.scale_names())}"
            )
        data = copy.deepcopy(self.design)
        if scale != "paper":
            for key, value in self.scales[scale].overrides.items():
                if key == "include":
                    data["include"] = copy.deepcopy(value)
                else:
                    merged = data.setdefault(key, {})
                    if key == "protocol":
                        # epochs and steps exclude each other: the scale's one replaces the design's.
                        for one, other in (("steps", "epochs"), ("epochs", "steps")):
                            if one in value and other not in value:
                                merged.pop(other, None)
                    merged.update(copy.deepcopy(value))
        data.setdefault("experiment", {})
        data["experiment"]["name"] = self.run_name(scale)
        return data

    def scale_names(self) -> tuple[str, ...]:
        """This study's scales, in SCALES' order (cpu only where the study has one)."""
        return tuple(s for s in SCALES if s == "paper" or s in self.scales)

    def lead(self, scale: str) -> str:
        """What every report of a run at `scale` says first ("" when nothing must)."""
        if scale in self.scales and self.scales[scale].first_line:
            return self.scales[scale].first_line
        return self.first_line

    def run_name(self, scale: str) -> str:
        """The name stored with a run of this study: how `study report` finds its runs."""
        return f"study {self.name} v{self.version} {scale}"


def _strings(where: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{where}: a list of non-empty strings")
    return tuple(value)


def _check(where: str, table: Any, allowed: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: must be a table")
    for key in table:
        if key not in allowed:
            raise ConfigError(f"{where}: unknown key {key!r}; allowed: {', '.join(allowed)}")
    return table


def _fact_models(source: str, raw: Any) -> dict[str, str]:
    if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
        raise ConfigError(f"{source} [study] fact_models: a table of the paper's model name = the model run for it")
    return dict(raw)


def parse(text: str, source: str) -> Study:
    """The study in `text` (TOML), checked; `source` names the file in errors."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML ({exc})") from None
    _check(source, data, ("study", "scale", *_EXPERIMENT_KEYS))
    head = _check(f"{source} [study]", data.get("study"), _STUDY_KEYS)
    for key in ("name", "seed", "title"):
        if not isinstance(head.get(key), str) or not head[key]:
            raise ConfigError(f"{source} [study]: {key} must be a non-empty string")
    version = head.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ConfigError(f"{source} [study]: version must be an integer >= 1")
    factor = head.get("size_factor", SIZE_FACTOR)
    if isinstance(factor, bool) or not isinstance(factor, int | float) or not 1 < factor <= 100:
        raise ConfigError(f"{source} [study]: size_factor = {factor!r}; a number > 1 and <= 100 (e.g. 1.5)")
    settings = []
    for i, raw in enumerate(head.get("setting", [])):
        s = _check(f"{source} [[study.setting]] {i + 1}", raw, _SETTING_KEYS)
        if not isinstance(s.get("name"), str) or not isinstance(s.get("where", {}), dict):
            raise ConfigError(f"{source} [[study.setting]] {i + 1}: needs name (string) and where (table)")
        settings.append(Setting(s["name"], dict(s.get("where", {})), str(s.get("about", ""))))
    scales: dict[str, Scale] = {}
    raw_scales = _check(f"{source} [scale]", data.get("scale", {}), ("smoke", "quick", "cpu"))
    for name in ("smoke", "quick", "cpu"):
        if name not in raw_scales and name not in REQUIRED_SCALES:
            continue
        if name not in raw_scales:
            raise ConfigError(f"{source}: no [scale.{name}]; a study has smoke, quick and (its design) paper scales")
        sc = _check(f"{source} [scale.{name}]", raw_scales[name], _SCALE_KEYS)
        changes = _strings(f"{source} [scale.{name}] changes", sc.get("changes", []))
        if not changes:
            raise ConfigError(f"{source} [scale.{name}] changes: say what this scale changes from the paper's design")
        first = sc.get("first_line", "")
        if not isinstance(first, str):
            raise ConfigError(f"{source} [scale.{name}] first_line: a string")
        overrides = {k: v for k, v in sc.items() if k not in ("changes", "first_line")}
        scales[name] = Scale(name, changes, overrides, first)
    return Study(
        name=head["name"],
        version=version,
        seed=head["seed"],
        title=head["title"],
        first_line=str(head.get("first_line", "")),
        choices=_strings(f"{source} [study] choices", head.get("choices", [])),
        cannot=_strings(f"{source} [study] cannot", head.get("cannot", [])),
        settings=tuple(settings),
        reading=_strings(f"{source} [study] reading", head.get("reading", [])),
        design={k: v for k, v in data.items() if k in _EXPERIMENT_KEYS},
        fact_models=_fact_models(source, head.get("fact_models", {})),
        scales=scales,
        size_factor=float(factor),
    )
