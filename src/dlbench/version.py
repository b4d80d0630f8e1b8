"""dlbench's version, in a module of its own so that any module can read it without
importing the package's public API (dlbench/__init__ imports dlbench.api).

The version comes from git: setuptools-scm computes it from the latest release tag and the
commit when dlbench is built or installed (pyproject.toml, [tool.setuptools_scm]) and writes
it, with the commit and whether the working tree had uncommitted changes, into
dlbench/_version.py. A wheel carries that file, so a copy installed where there is no git
still knows which commit it was built from. `__version__` is that recorded version: reading
it costs one small import, never a subprocess, since every trial's process imports dlbench.

`describe()` (for `dlbench --version`) says more: in a git checkout (the editable install
of scripts/setup.sh) it asks git for the commit checked out now and whether files were
modified, because a checkout moves on after it was installed; elsewhere it reports what the
build recorded.
"""

from __future__ import annotations

import functools
import importlib
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

# The checkout this module sits in, when it runs from one: src/dlbench/version.py -> the root.
_ROOT = Path(__file__).resolve().parents[2]
# setuptools-scm's local part: +g<commit>[.dYYYYMMDD], the date added for a modified tree.
_LOCAL = re.compile(r"\+g(?P<commit>[0-9a-f]{7,40})(?P<dirty>\.d\d{8})?$")


@dataclass(frozen=True)
class Recorded:
    """What the build recorded: commit None when it had no git metadata (an exported tree),
    dirty None when that is not known."""

    version: str
    commit: str | None
    dirty: bool | None


def recorded() -> Recorded:
    """The version, commit and modified flag written at build or install time, else the
    installed distribution's version with no commit, else 0+unknown."""
    try:
        built = importlib.import_module("dlbench._version")
    except ImportError:
        # An install from before the version came from git, or a source tree never built.
        from importlib import metadata

        try:
            return _from_version(metadata.version("dlbench"), None, None)
        except metadata.PackageNotFoundError:
            return Recorded("0+unknown", None, None)
    commit = getattr(built, "commit", None)
    dirty = getattr(built, "dirty", None)
    return _from_version(
        str(built.version), commit.removeprefix("g") if commit else None, bool(dirty) if commit else None
    )


def _from_version(version: str, commit: str | None, dirty: bool | None) -> Recorded:
    """A wheel built from an sdist records no commit (no git there), but the version's local
    part still names it: 0.1.dev5+gabc1234.d20260101 -> commit abc1234, modified."""
    if commit is None and (local := _LOCAL.search(version)):
        return Recorded(version, local["commit"], local["dirty"] is not None)
    return Recorded(version, commit, dirty)


__version__ = recorded().version


@dataclass(frozen=True)
class VersionInfo:
    """The version and where it came from, for `dlbench --version`."""

    version: str
    commit: str | None  # the commit the version was computed from
    dirty: bool | None  # it had uncommitted changes (None: not known)
    checkout: str | None = None  # a git checkout's commit now, when it is not `commit`
    checkout_dirty: bool | None = None  # the checkout has uncommitted changes now

    def text(self) -> str:
        """One line: `dlbench VERSION (commit HASH[, modified working tree])`, or what is not known."""
        if self.checkout is not None:
            now = ", modified" if self.checkout_dirty else ""
            return (
                f"dlbench {self.version} (installed at commit {self.commit or 'unknown'}; the checkout is now at "
                f"{self.checkout}{now}: `bash scripts/setup.sh` records its version)"
            )
        if self.commit is None:
            return f"dlbench {self.version} (commit unknown: built without git metadata)"
        modified = {True: ", modified working tree", False: "", None: ", modified or not: unknown"}[self.dirty]
        return f"dlbench {self.version} (commit {self.commit}{modified})"


def _git(root: Path, *args: str) -> str | None:
    try:
        proc = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def checkout_state(root: Path) -> tuple[str, bool] | None:
    """(HEAD's full commit, modified) of the git checkout at `root`, or None when `root` is no
    checkout or git cannot tell (not installed, a repository owned by another user). Modified
    as setuptools-scm counts it: tracked files changed; untracked files do not count."""
    if not (root / ".git").exists():
        return None
    head = _git(root, "rev-parse", "--verify", "--quiet", "HEAD")
    status = _git(root, "status", "--porcelain", "--untracked-files=no")
    if not head or status is None:
        return None
    return head, bool(status)


@functools.cache
def describe() -> VersionInfo:
    """The recorded version with the live state of the checkout it runs from, if any."""
    rec = recorded()
    live = checkout_state(_ROOT) if (_ROOT / "pyproject.toml").is_file() else None
    if live is None:
        return VersionInfo(rec.version, rec.commit, rec.dirty)
    head, modified = live
    # The recorded commit may be abbreviated (an sdist's local part): a prefix of HEAD is HEAD.
    if rec.commit is not None and head.startswith(rec.commit):
        return VersionInfo(rec.version, head, modified)
    return VersionInfo(rec.version, rec.commit, rec.dirty, checkout=head, checkout_dirty=modified)
