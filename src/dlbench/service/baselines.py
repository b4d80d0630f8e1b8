"""Named baselines: a name kept in the results database that stands for one stored run.

A CI job saves the run of the main branch as a baseline (`dlbench baseline save main --run
ID`), and a later job compares its own run against it by name (`dlbench compare --baseline
main RUN`) instead of carrying a run id from job to job. The name lives in the store's
baselines table (migration 7), so it travels with the database (a cache, a shared
PostgreSQL database). The command line (cli.baselines, and compare's --baseline) parses
and prints; what is checked, saved, resolved and listed is decided here.
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
