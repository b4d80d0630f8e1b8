"""The last `dlbench check` of a user's model, remembered for the runs of that model.

A benchmark of two frameworks compares frameworks only if both run the same network;
`dlbench check` says whether they do. Its verdict is recorded per model *code*: the
digest of the model's file and every .py file beside it (its builders, by the
tutorial's recipe), so that an edit to any of them makes the record stale and a run of
the edited code reads "not checked". Records live in the user's cache folder
($DLBENCH_CHECKS_DIR, else $XDG_CACHE_HOME/dlbench/checks, else ~/.cache/dlbench/checks),
one JSON file per code digest; `dlbench run` copies the record of each of its models
into the run (dlbench.service.runs.start_run), so that the report says it wherever the
database travels. Installed packages' models (module:NAME) are not recorded: their
version names their code. Nothing here imports or runs the model.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def cache_dir() -> Path:
    given = os.environ.get("DLBENCH_CHECKS_DIR")
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dlbench" / "checks"


def digest(source: str) -> str | None:
    """The digest of a model's code: "PATH.py:NAME" -> sha256 over NAME and every .py file
    in PATH's folder (name and bytes, in name order); None for a module:NAME source or a
    file that cannot be read."""
    path_text, _, attr = source.rpartition(":")
    path = Path(path_text)
    if path.suffix != ".py" or not path.is_file():
        return None
    h = hashlib.sha256(attr.encode())
    try:
        for file in sorted(path.parent.glob("*.py")):
            h.update(file.name.encode() + b"\0" + file.read_bytes() + b"\0")
    except OSError:
        return None
    return h.hexdigest()


def save(model: str, source: str, options: Mapping[str, Any], ok: bool, verdict: str) -> Path | None:
    """Record a check of `model` (from `source`); the file written, None when the source is
    not a file or the cache cannot be written (a check's exit status never depends on it)."""
    code = digest(source)
    if code is None:
        return None
    record = {
        "model": model,
        "source": source,
        "digest": code,
        "options": dict(options),
        "ok": bool(ok),
        "verdict": verdict,
        "checked_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    folder = cache_dir()
    target = folder / f"{code[:32]}.json"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".tmp")
        tmp.write_text(json.dumps(record, sort_keys=True, default=str))
        tmp.replace(target)
    except OSError:
        return None
    return target


def lookup(source: str, code: str | None = None) -> dict[str, Any] | None:
    """The record of the last check of this source's current code (its digest, when the
    caller has it already), or None."""
    code = code or digest(source)
    if code is None:
        return None
    try:
        text = (cache_dir() / f"{code[:32]}.json").read_text()
        record = json.loads(text)
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and record.get("digest") == code else None


def for_sources(sources: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """model name -> its check record, or {"checked": False, "source": ...}, for every user
    model given as a file among `sources` ({"model:NAME": "PATH.py:ATTR", ...})."""
    out: dict[str, dict[str, Any]] = {}
    for key, source in sources.items():
        kind, _, name = key.partition(":")
        code = digest(source) if kind == "model" else None
        if code is None:
            continue
        found = lookup(source, code)
        out[name] = {**found, "checked": True} if found else {"checked": False, "source": source}
    return out
