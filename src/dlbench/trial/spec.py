"""The trial as it crosses the process boundary: typed, frozen, with to/from JSON.

The runner writes one TrialSpec as a JSON line to the worker's stdin; the worker
reads it back with TrialSpec.from_json. The case is plan.Case (the cell of the
matrix), the protocol is ProtocolSpec (how to measure it). Every optional setting
has its default here, in one place, so that rows stored by older versions (which
lack a setting added since) read the same way everywhere; an unknown key or a
missing required one is an error that names it, never a silent default.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, NoReturn

from dlbench import runtime_settings
from dlbench.distributed import DistContext
from dlbench.plan import Case
from dlbench.protocol_settings import (
    MAX_EPOCHS,
    MAX_LR,
    MAX_MEMORY,
    MAX_SAMPLES,
    MAX_STEPS,
    REQUIRED,
    TrialProtocol,
    declared,
    trial_settings,
)


def worker_command(python: str | None = None) -> list[str]:
    """The worker's command line. -P: `python -m` would otherwise put the working
    directory first on sys.path, and a `dlbench/` (or `torch/`) folder there would
    be imported instead of the installed package: code the user never meant to run.
    -X faulthandler: a worker killed by a fatal signal (SIGSEGV, SIGABRT from a
    framework's C++) leaves every thread's Python stack in its stderr, which the
    store keeps. --parent-pid: the worker dies with this process (see
    worker.die_with_parent)."""
    interpreter = python or sys.executable
    return [interpreter, "-P", "-X", "faulthandler", "-m", "dlbench.trial.worker", "--parent-pid", str(os.getpid())]


class SpecError(ValueError):
    """A trial spec that does not describe a trial (unknown or missing key, wrong shape)."""


def _check_keys(what: str, data: Any, known: set[str], required: set[str]) -> None:
    if not isinstance(data, dict):
        raise SpecError(f"{what}: expected a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - known)
    if unknown:
        raise SpecError(f"{what}: unknown key {unknown[0]!r}; known keys: {', '.join(sorted(known))}")
    missing = sorted(required - set(data))
    if missing:
        raise SpecError(f"{what}: missing key {missing[0]!r}")


def _tuples(value: Any) -> Any:
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def _dist_from(data: Any) -> DistContext | None:
    if data is None:
        return None
    names = {f.name for f in fields(DistContext)}
    _check_keys("trial dist", data, names, {"strategy", "world_size"})
    try:
        return DistContext.from_dict(data)
    except (TypeError, ValueError) as exc:
        raise SpecError(f"trial dist: {exc}") from None


def same_folder(stored: Any, named: str) -> bool:
    """A stored folder path is the one named now (both made absolute; never an empty name)."""
    if not named or not isinstance(stored, str):
        return False
    return os.path.abspath(os.path.expanduser(stored)) == os.path.abspath(os.path.expanduser(named))


def _check_case_values(values: dict[str, Any]) -> None:
    """A stored case's values, checked as the experiment file checks them (types, ranges,
    the fixed choices), so that damage is refused before it reaches a worker."""
    from dlbench import config as c

    def fail(name: str, rule: str) -> NoReturn:
        raise SpecError(f"trial case: {name} = {values[name]!r}: expected {rule}")

    for name in ("framework", "variant", "model", "dataset", "init", "optimizer", "device"):
        if not isinstance(values[name], str) or not values[name]:
            fail(name, "a non-empty string")
    numbers = {
        "batch_size": (1, c.MAX_BATCH_SIZE),
        "threads": (1, 2**16),
        "seed": (0, 2**31 - 1),
        "train_samples": (0, MAX_SAMPLES),
        "test_samples": (0, MAX_SAMPLES),
        "input_shape": (0, c.MAX_INPUT_SHAPE),
        "world_size": (1, c.MAX_WORLD_SIZE),
        "epochs": (1, MAX_EPOCHS),
        "steps": (1, MAX_STEPS),
    }
    for name, (low, high) in numbers.items():
        value = values.get(name)
        if value is None and name in ("epochs", "steps"):
            continue
        if name in values and (isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high):
            fail(name, f"an integer from {low} to {high}")
    for name in ("lr", "momentum"):
        value = values[name]
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= MAX_LR:
            fail(name, f"a number from 0 to {MAX_LR:g}")
    choices = {"precision": c.PRECISIONS, "layout": c.LAYOUTS, "pipeline": c.PIPELINES, "device": c.DEVICES}
    for name, allowed in choices.items():
        if (
            name in values
            and values[name] not in allowed
            and not (name == "device" and isinstance(values[name], str) and values[name].startswith("cuda:"))
        ):
            fail(name, "one of " + ", ".join(allowed))
    if values.get("synthetic") is not None and (
        not isinstance(values["synthetic"], list | tuple)
        or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in values["synthetic"])
    ):
        fail("synthetic", "a list of positive integers")
    if not isinstance(values.get("model_options") or {}, dict):
        fail("model_options", "a table of option names and values")


def case_from_dict(data: Any) -> Case:
    """A plan.Case from its as_dict() form (model_options a dict, synthetic a list)."""
    names = {f.name for f in fields(Case)}
    required = {f.name for f in fields(Case) if f.default is MISSING and f.default_factory is MISSING}
    _check_keys("trial case", data, names, required)
    # A case stored before `runtime` existed ran with the settings every worker had then.
    values = runtime_settings.complete(data)
    _check_case_values(values)
    try:
        runtime_settings.canonical(values["runtime"])
    except runtime_settings.RuntimeSettingError as exc:
        raise SpecError(f"trial case: {exc}") from None
    # JSON has lists where the plan has tuples (hashable option values, e.g. resnet's blocks).
    values["model_options"] = tuple(sorted((k, _tuples(v)) for k, v in (values.get("model_options") or {}).items()))
    if values.get("synthetic") is not None:
        values["synthetic"] = tuple(values["synthetic"])
    return Case(**values)


def _check_number(name: str, value: Any, kind: type, low: float, high: float) -> None:
    ok_type = isinstance(value, int) if kind is int else isinstance(value, int | float)
    if isinstance(value, bool) or not ok_type or not (low <= value <= high):
        what = "an integer" if kind is int else "a number"
        raise SpecError(f"trial protocol: {name} = {value!r}: expected {what} from {low:g} to {high:g}")


# Settings whose stored form is not their declared one: the worker gets them resolved
# (sampler names, the memory cap in bytes and whether it is relative), as every stored
# trial has had them since these settings exist.
_RESOLVED = ("samplers", "memory_limit")


def _memory_text(limit: int, relative: bool) -> str:
    return ("+" if relative else "") + str(limit) if limit else ""


@dataclass(frozen=True)
class ProtocolSpec(TrialProtocol):
    """How a trial is measured: every setting of protocol_settings.TrialProtocol (same
    names, defaults and bounds, declared there once) plus what the parent derives for
    the run. Built by `for_worker`; stored and sent as `to_dict`."""

    # The first steps whose loss every case records (0: none); set for every case of a
    # run with a distributed case, so loss curves compare step by step (dlbench.distributed).
    loss_curve: int = 0

    @classmethod
    def for_worker(cls, protocol: TrialProtocol, loss_curve: int = 0) -> ProtocolSpec:
        """The experiment's protocol resolved for the worker: sampler names and the memory
        limit in canonical form, the traces folder absolute (a worker may run in another
        directory, a cluster node's job folder)."""
        from dlbench.config import parse_memory_limit
        from dlbench.samplers import parse_names

        # Samplers first: a bad samplers string is reported before a bad memory_limit.
        samplers = ",".join(parse_names(protocol.samplers)) or "none"
        memory = _memory_text(*parse_memory_limit(protocol.memory_limit))
        traces = protocol.profile_traces
        values = {f.name: getattr(protocol, f.name) for f in trial_settings()}
        values.update(
            samplers=samplers,
            memory_limit=memory,
            profile_traces=os.path.abspath(os.path.expanduser(traces)) if traces else "",
        )
        return cls(**values, loss_curve=loss_curve)

    @property
    def sampler_names(self) -> tuple[str, ...]:
        from dlbench.samplers import parse_names

        return parse_names(self.samplers)

    @property
    def memory_limit_bytes(self) -> int:
        from dlbench.config import parse_memory_limit

        return parse_memory_limit(self.memory_limit)[0]

    @property
    def memory_limit_relative(self) -> bool:
        from dlbench.config import parse_memory_limit

        return parse_memory_limit(self.memory_limit)[1]

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["samplers"] = list(self.sampler_names)
        d["memory_limit"] = self.memory_limit_bytes
        d["memory_limit_relative"] = self.memory_limit_relative
        return d

    @classmethod
    def from_dict(cls, data: Any) -> ProtocolSpec:
        """A stored or sent spec; a setting an older version did not store takes the value
        trials ran with then (its declared `legacy`, else its default)."""
        declared_fields = {f.name: f for f in fields(cls)}
        names = set(declared_fields) | {"memory_limit_relative"}
        required = {
            name for name, f in declared_fields.items() if f.metadata.get("declared") and declared(f).legacy is REQUIRED
        }
        _check_keys("trial protocol", data, names, required)
        values = dict(data)
        for name, f in declared_fields.items():
            if name in values or name not in names or not f.metadata.get("declared"):
                continue
            legacy = declared(f).legacy
            if legacy is not None and legacy is not REQUIRED:
                values[name] = legacy
        for name, f in declared_fields.items():
            rule = declared(f).rule if f.metadata.get("declared") else None
            value = values.get(name)
            if rule is not None and not rule.local and value is not None and not rule.allows(value):
                raise SpecError(f"trial protocol: {name} = {value!r}: expected {rule.says()}")
        if values.get("loss_curve") is not None:
            _check_number("loss_curve", values["loss_curve"], int, 0, MAX_STEPS)
        if values.get("memory_limit") is not None:
            _check_number("memory_limit", values["memory_limit"], int, 0, MAX_MEMORY)
        for name in ("until_ci_metrics", "profile_traces"):
            if name in values and not isinstance(values[name], str):
                raise SpecError(f"trial protocol: {name} = {values[name]!r}: expected a string")
        if values.get("data_dir") is not None and not isinstance(values["data_dir"], str):
            raise SpecError(f"trial protocol: data_dir = {values['data_dir']!r}: expected a string or null")
        samplers = values.get("samplers") or ()
        if not isinstance(samplers, list | tuple) or not all(isinstance(n, str) for n in samplers):
            raise SpecError(f"trial protocol: samplers = {samplers!r}: expected a list of sampler names")
        values["samplers"] = ",".join(samplers) or "none"
        relative = values.pop("memory_limit_relative", False)
        values["memory_limit"] = _memory_text(int(values.get("memory_limit") or 0), bool(relative))
        try:
            spec = cls(**values)
            spec.sampler_names, spec.memory_limit_bytes  # noqa: B018  (refused here, not in the worker)
        except (TypeError, ValueError) as exc:
            raise SpecError(f"trial protocol: {exc}") from None
        return spec


@dataclass(frozen=True)
class TrialSpec:
    """What the worker needs to run one trial."""

    case: Case
    protocol: ProtocolSpec
    idle_power: dict[str, float] = field(default_factory=dict)  # W per energy domain, subtracted at report time
    # The user's own model and dataset of this case, as this invocation named them
    # ({"model:<name>": reference}; see dlbench.registry). Never stored in the database.
    sources: dict[str, str] = field(default_factory=dict)
    # One rank's place in a multi-process trial, given by the launcher to each rank
    # (None: the trial's own worker, which launches the ranks when its case needs them).
    dist: DistContext | None = None
    # The trial's interleaving block: it offsets the repeats' seeds (phases.repeat_seed), so
    # that the trials of a case train different initializations and are independent samples
    # of accuracy and loss as well as of time.
    block: int = 0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "case": self.case.as_dict(),
            "protocol": self.protocol.to_dict(),
            "idle_power": dict(self.idle_power),
            "sources": dict(self.sources),
        }
        if self.dist is not None:
            out["dist"] = self.dist.as_dict()
        if self.block:
            out["block"] = self.block
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: Any) -> TrialSpec:
        _check_keys(
            "trial spec", data, {"case", "protocol", "idle_power", "sources", "dist", "block"}, {"case", "protocol"}
        )
        sources = data.get("sources") or {}
        if not isinstance(sources, dict) or not all(isinstance(v, str) for v in sources.values()):
            raise SpecError("trial spec: sources must map names to reference strings")
        block = data.get("block", 0)
        if isinstance(block, bool) or not isinstance(block, int) or not 0 <= block < 1_000_000:
            raise SpecError(f"trial spec: block = {block!r}; an integer in [0, 1000000)")
        return cls(
            case_from_dict(data["case"]),
            ProtocolSpec.from_dict(data["protocol"]),
            dict(data.get("idle_power") or {}),
            dict(sources),
            _dist_from(data.get("dist")),
            block,
        )

    @classmethod
    def from_json(cls, text: str) -> TrialSpec:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SpecError(f"trial spec: not JSON ({exc})") from None
        return cls.from_dict(data)

    @classmethod
    def from_row(
        cls,
        row: Any,
        idle_power: dict[str, float] | None = None,
        sources: dict[str, str] | None = None,
        traces: str = "",
    ) -> TrialSpec:
        """From a stored trials row (case_json, protocol_json), old versions' rows included.
        `sources` come from the caller (what the user named now), never from the row; so
        does `traces`: a stored profile_traces folder is written to only when the caller
        names the same folder now (a database someone sent chooses no place to write)."""
        from dlbench.store.records import trial_record

        record = trial_record(row)  # the store's record, or a row read as one
        block = record.block or 0
        protocol = dict(record.protocol)
        if (
            isinstance(protocol, dict)
            and protocol.get("profile_traces")
            and not same_folder(protocol["profile_traces"], traces)
        ):
            protocol["profile_traces"] = ""
        return cls(
            case_from_dict(record.case),
            ProtocolSpec.from_dict(protocol),
            dict(idle_power or {}),
            dict(sources or {}),
            block=int(block) if isinstance(block, int) and block >= 0 else 0,
        )
