"""Named baselines: a name kept in the results database that stands for one stored run.

A CI job saves the run of the main branch as a baseline (`dlbench baseline save main --run
ID`), and a later job compares its own run against it by name (`dlbench compare --baseline
main RUN`) instead of carrying a run id from job to job. The name lives in the store's
baselines table (migration 7), so it travels with the database (a cache, a shared
PostgreSQL database). The command line (cli.baselines, and compare's --baseline) parses
and prints; what is checked, saved, resolved and listed is decided here.

A baseline also says which code measured it: its run recorded the interpreter and the
dlbench version and commit (`provenance`). docs/ci.md's gate reads the commit
(`dlbench baseline show main --field commit`), installs that commit in a virtual
environment of its own and measures it again beside the candidate, in turns.
"""

from __future__ import annotations

import getpass
import os
import re
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dlbench.service import ServiceError

if TYPE_CHECKING:
    from dlbench.report.render import TableData
    from dlbench.store import Store
    from dlbench.store.records import BaselineRecord

# A name is typed on command lines and in CI files: letters, digits and . _ - / (a branch
# name such as release/1.2 fits), starting with a letter or digit, at most 100 characters.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,99}")
NAME_RULE = "letters, digits and . _ - /, starting with a letter or digit, at most 100 characters"
NOTE_MAX = 1000


# What `dlbench baseline show NAME --field FIELD` prints alone, for a script.
FIELDS = ("run", "commit", "python", "version", "note")


@dataclass(frozen=True)
class Provenance:
    """The code a baseline's run measured, as the run recorded it: the interpreter its
    workers ran under, dlbench's version, and the commit (the checkout's, or the one the
    version names: 0.1.dev5+gabc1234 -> abc1234); None where the run recorded nothing."""

    baseline: BaselineRecord
    python: str | None
    version: str | None
    commit: str | None
    modified: bool | None  # the commit's tree had uncommitted changes (None: not known)


@dataclass(frozen=True)
class Saved:
    baseline: BaselineRecord
    replaced: BaselineRecord | None  # the baseline the name stood for before, if any


def check_name(name: str) -> str:
    if NAME.fullmatch(name) is None:
        raise ServiceError(f"baseline name {name!r}: allowed: {NAME_RULE}")
    return name


def who() -> str:
    """USER@HOST of the process saving a baseline (a CI runner's too): kept beside the command."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # a container's uid with no passwd entry and no USER
        user = f"uid {os.getuid()}"
    return f"{user}@{socket.gethostname()}"


def save(
    store: Store, name: str, run_id: int, *, command: str, note: str | None = None, replace: bool = False
) -> Saved:
    """Name run `run_id` of `store` baseline `name`. Refused, with one line, for a bad name
    or note, a run that is not there, a run still executing or without a single finished
    trial (a baseline without values would fail every later comparison as missing data),
    and a name that exists unless `replace`."""
    from dlbench.store import StoreError
    from dlbench.store.core import BaselineExists

    check_name(name)
    if note is not None and (len(note) > NOTE_MAX or "\n" in note):
        raise ServiceError(f"--note: one line of at most {NOTE_MAX} characters (got {len(note)} characters)")
    try:
        run = store.run(run_id)
    except StoreError as exc:
        raise ServiceError(f"--run {run_id}: {exc}") from None
    if run.status == "running":
        raise ServiceError(
            f"--run {run_id}: the run is still running (or its process died: `dlbench run --resume {run_id}` "
            "finishes it); save a baseline of a finished run"
        )
    ok = store.trials(run_id, statuses=("ok",))
    if not ok:
        raise ServiceError(
            f"--run {run_id}: no trial of the run finished (status {run.status}): a baseline without values "
            "compares as missing data every time"
        )
    try:
        baseline, replaced = store.save_baseline(
            name, run_id, saved_by=who(), command=command, note=note, replace=replace
        )
    except BaselineExists as exc:
        old = exc.existing
        raise ServiceError(
            f"baseline {name!r} exists in {store.path}: run {old.run_id}, saved {old.saved_at} by "
            f"{old.saved_by or 'unknown'}; pass --replace to point it at run {run_id}"
        ) from None
    return Saved(baseline, replaced)


def resolve(store: Store, name: str) -> BaselineRecord:
    """The baseline `name` names, or one line that names the baselines there are."""
    found = store.baseline(name)
    if found is not None:
        return found
    names = [b.name for b in store.baselines()]
    there = (
        f"baselines there: {', '.join(names)}"
        if names
        else "it holds no baselines (dlbench baseline save NAME --run ID makes one)"
    )
    raise ServiceError(f"no baseline named {name!r} in {store.path}; {there}")


def provenance(store: Store, name: str) -> Provenance:
    """What baseline `name`'s run recorded about the code that measured it."""
    from dlbench.version import _from_version

    found = resolve(store, name)
    env = store.run(found.run_id).environment
    python, version, git = (env.get(k) for k in ("python_executable", "dlbench_version", "dlbench_git"))
    commit: str | None = None
    modified: bool | None = None
    if isinstance(git, str) and git:  # dlbench ran from a checkout: its commit, +dirty when modified
        commit, modified = git.removesuffix("+dirty"), git.endswith("+dirty")
    elif isinstance(version, str) and version:  # installed from a build: the commit its version names
        recorded = _from_version(version, None, None)
        commit, modified = recorded.commit, recorded.dirty
    return Provenance(
        found,
        python if isinstance(python, str) and python else None,
        version if isinstance(version, str) and version else None,
        commit,
        modified,
    )


def field_value(p: Provenance, name: str) -> str:
    """One of FIELDS, as text for a script; one line when it is unknown or was not recorded."""
    if name not in FIELDS:
        raise ServiceError(f"--field {name!r}: allowed: {', '.join(FIELDS)}")
    values = {
        "run": str(p.baseline.run_id),
        "commit": p.commit,
        "python": p.python,
        "version": p.version,
        "note": p.baseline.note,
    }
    value = values[name]
    if value is None and name == "note":
        raise ServiceError(f"baseline {p.baseline.name!r} was saved without a note (dlbench baseline save --note)")
    if value is None:
        what = {
            "commit": "no dlbench commit (neither a checkout's nor one in its version)",
            "python": "no interpreter",
            "version": "no dlbench version",
        }[name]
        raise ServiceError(
            f"baseline {p.baseline.name!r}: its run {p.baseline.run_id} recorded {what}; "
            "a run made by this dlbench records it (dlbench runs --format json shows a run's environment)"
        )
    return value


def provenance_table(p: Provenance) -> TableData:
    """One baseline, a row per fact: the run it names, who saved it, and the code that ran it."""
    from dlbench.report.render import TableData

    b = p.baseline
    t = TableData(f"baseline {b.name!r}", ["field", "value"], align=["left", "left"])
    commit = p.commit and p.commit + (" (with uncommitted changes)" if p.modified else "")
    for key, value in (
        ("run", b.run_id),
        ("run name", b.run_name or "—"),
        ("run started", b.run_started_at or "—"),
        ("cases", "—" if b.n_cases is None else b.n_cases),
        ("saved", b.saved_at),
        ("saved by", b.saved_by or "—"),
        ("note", b.note or "—"),
        ("command", b.command or "—"),
        ("python", p.python or "not recorded"),
        ("dlbench", p.version or "not recorded"),
        ("commit", commit or "not recorded"),
    ):
        t.add_row(key, value)
    return t


def delete(store: Store, name: str) -> BaselineRecord:
    """Forget baseline `name` (its run stays): the baseline it was."""
    resolve(store, name)  # unknown: the names there are
    gone = store.delete_baseline(name)
    if gone is None:  # deleted by another process between the two reads
        raise ServiceError(f"no baseline named {name!r} in {store.path} any more (deleted meanwhile)")
    return gone


def listing(store: Store) -> list[BaselineRecord]:
    return store.baselines()


def table(baselines: list[BaselineRecord]) -> TableData:
    """One row per baseline: its name, the run, the run's name and start, its cases, and
    when, by whom and with which note it was saved."""
    from dlbench.report.render import TableData

    t = TableData(
        "baselines",
        ["name", "run", "run name", "run started", "cases", "saved", "saved by", "note"],
        align=["left", "right", "left", "left", "right"],
        optional=("note", "saved by"),
    )
    for b in baselines:
        t.add_row(
            b.name,
            b.run_id,
            b.run_name or "—",
            b.run_started_at or "—",
            "—" if b.n_cases is None else b.n_cases,
            b.saved_at,
            b.saved_by or "—",
            b.note or "",
        )
    return t
