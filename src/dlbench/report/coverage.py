"""Settings that applied only in part to a case, read from its trials' fairness manifests.

A case names the settings it asked for (init=glorot-uniform); the worker records in
the trial's manifest what it could not do. A user's torch layers of a type the init
scheme does not reach (Conv1d, say) keep the builder's own init: the manifest holds
their parameter count (`init_kept_parameters`) and says so in `init_note`. A
TensorFlow or JAX builder that takes no init keywords builds with its own init: its
`init_note` says "builder's own (...)". Such a setting is not one "shared by every
case": the report names it on that case's row and in the answer's notes instead.

Precision has no such record: the manifest holds the flags a framework set for the
precision asked (TF32, the bf16-mixed policy), never a precision it ran instead, and
the plan refuses the cells that would run otherwise (tf32 off a GPU, anything but
float32 for numpy and scikit-learn).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from dlbench.store.records import trial_record

# The words of torch's init_note, for stores written before init_kept_parameters was kept.
_KEPT = re.compile(r"(\d[\d,]*) parameters in other layers keep the builder's own init")
_OWN = re.compile(r"builder's own \((.*); the init scheme was not applied\)")


def _init(manifest: Mapping[str, Any]) -> str | None:
    """How the init scheme applied, in words, where it did not apply in full."""
    kept = manifest.get("init_kept_parameters")
    note = manifest.get("init_note")
    if not isinstance(kept, int) and isinstance(note, str) and (found := _KEPT.search(note)):
        kept = int(found.group(1).replace(",", ""))
    if isinstance(kept, int) and kept > 0:
        return f"partly: {kept:,} parameters kept the builder's init"
    if isinstance(note, str) and note:
        own = _OWN.fullmatch(note)
        return f"not applied: the {own.group(1)}" if own else f"not in full: {note}"
    return None


def _threads(manifest: Mapping[str, Any]) -> str | None:
    """The intra-op threads the framework ran with, where they are not the threads asked for."""
    ran, asked = manifest.get("intra_op_threads"), manifest.get("threads_requested")
    if isinstance(ran, int) and isinstance(asked, int) and asked > 0 and ran != asked:
        return f"ran {ran} intra-op thread{'s' if ran != 1 else ''}"
    return None


def partial_settings(trials: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, str]]:
    """Case key -> {setting: how it applied, in words}, for each setting that some
    trial's manifest says did not apply in full: the init scheme, and the threads where
    the framework's own count (intra_op_threads) is not the count asked for. The shared
    settings line then says only what the manifests bear out."""
    out: dict[str, dict[str, str]] = {}
    for t in trials:
        manifest = trial_record(t).manifest or {}
        for setting, how in (("init", _init(manifest)), ("threads", _threads(manifest))):
            if how:
                out.setdefault(t["case_key"], {})[setting] = how
    return out


def row_notes(partial: Mapping[str, Mapping[str, str]], cases: Mapping[str, Mapping[str, Any]]) -> dict[str, list[str]]:
    """Case key -> the row's notes: "init=glorot-uniform (partly: 2,848 parameters kept the builder's init)"."""
    return {
        key: [f"{setting}={cases[key].get(setting)} ({how})" for setting, how in sorted(settings.items())]
        for key, settings in partial.items()
        if key in cases
    }


def answer_notes(partial: Mapping[str, Mapping[str, str]], labels: Mapping[str, str]) -> list[str]:
    """One note per setting that applied only in part somewhere: where, and how."""
    by_setting: dict[str, list[str]] = {}
    for key, settings in partial.items():
        for setting, how in settings.items():
            by_setting.setdefault(setting, []).append(f"{labels.get(key, key)} ({how})")
    return [
        f"{setting} did not apply in full to every case: " + "; ".join(sorted(where)) + ". Each such case's row "
        f"says so, and the settings shared by every case leave {setting} out."
        for setting, where in sorted(by_setting.items())
    ]
