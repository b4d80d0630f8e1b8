"""dlbench as a package: a wheel built with the standard `build` tool, installed with pinned
extras into a fresh virtual environment, works there; and its version names the commit.

The wheel is built with `python -m build --wheel --no-isolation`: with the pinned setuptools,
setuptools-scm and vcs-versioning of requirements-dev.txt, the very versions pyproject's
build-system requires, so the test downloads no build tools. The fresh environment gets
`dlbench[torch,jax,sklearn]` constrained by requirements.txt (torch==2.13.0 from the local
wheel; sklearn because the digits dataset is scikit-learn's).

TensorFlow is left out for CI's time budget. Measured on the project's 2-core VM while other
tests ran (pip's cache warm, --no-compile): torch + jax installed in 62 s, torch + tensorflow
+ jax in 108 s (tensorflow-cpu is about 1.3 GB of the 3.0 GB); here, with sklearn, the install
took 72-94 s at a load average of 7-8, and the build and the environment another 15 s. Two
extras besides sklearn show that extras resolve together; the run is torch alone, since a
first import in an environment installed without bytecode compiles as it goes (torch + jax:
77 s at that load). `pip install "dlbench[tensorflow]"` is the same mechanism with a larger
download.

Python: only 3.11 exists on these machines, and requires-python is >=3.11,<3.12; the fresh
environment is made by this interpreter."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXTRAS = "torch,jax,sklearn"


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True).stdout.strip()


def _clean_env() -> dict[str, str]:
    """The environment without this test run's interpreter settings (the fresh venv must find only its own)."""
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "DLBENCH_DB")
    return {k: v for k, v in os.environ.items() if k not in drop}


def _copy_of_checkout(dest: Path) -> Path:
    """The working tree as it is (tracked and new files, not ignored ones) with its git metadata,
    copied: a build writes build/ and src/dlbench/_version.py into its source folder, and the
    checkout's own files are left to the editable install that other tests run from."""
    if not (ROOT / ".git").is_dir():  # a worktree or submodule: its metadata lies elsewhere
        return ROOT
    listed = _git("ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
    for name in filter(None, listed):
        if (ROOT / name).is_file():  # a tracked file deleted in the working tree is not there
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    shutil.copytree(ROOT / ".git", dest / ".git", symlinks=True)
    return dest


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """Build the wheel, make a fresh venv, install the wheel with pinned extras: the venv's
    bin folder, the wheel, the commits before and after the build, and how long each step took."""
    tmp = tmp_path_factory.mktemp("packaging")
    heads = [_git("rev-parse", "HEAD")]
    took: dict[str, float] = {}
    t0 = time.perf_counter()
    source = _copy_of_checkout(tmp / "source")
    build = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp / "dist"), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert build.returncode == 0, build.stdout[-5000:] + build.stderr[-5000:]
    heads.append(_git("rev-parse", "HEAD"))
    took["build"] = time.perf_counter() - t0
    (wheel,) = (tmp / "dist").glob("dlbench-*.whl")
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", str(tmp / "venv")], check=True, timeout=300, env=_clean_env())
    took["venv"] = time.perf_counter() - t0
    bin_dir = tmp / "venv" / "bin"
    t0 = time.perf_counter()
    pip = subprocess.run(
        [str(bin_dir / "pip"), "install", "--quiet", "--no-compile", "--disable-pip-version-check"]
        + ["-c", str(ROOT / "requirements.txt"), f"{wheel}[{EXTRAS}]"],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        env=_clean_env(),
    )
    assert pip.returncode == 0, pip.stdout[-5000:] + pip.stderr[-5000:]
    took["install"] = time.perf_counter() - t0
    print(f"wheel {wheel.name}: " + ", ".join(f"{k} {v:.0f} s" for k, v in took.items()))
    return {"bin": bin_dir, "wheel": wheel, "heads": heads, "tmp": tmp}


def _dlbench(installed: dict[str, object], *args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    """The installed console script, run outside the repository (no checkout to read a version from)."""
    bin_dir = installed["bin"]
    assert isinstance(bin_dir, Path)
    env = {**_clean_env(), "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}", "COLUMNS": "200"}
    return subprocess.run(
        [str(bin_dir / "dlbench"), *args],
        cwd=installed["tmp"],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=env,
    )


def test_wheel_records_its_version_commit_and_extras(installed) -> None:
    wheel = installed["wheel"]
    version = wheel.name.split("-")[1]
    with zipfile.ZipFile(wheel) as zf:
        recorded = zf.read("dlbench/_version.py").decode()
        (metadata_name,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = zf.read(metadata_name).decode()
    values: dict[str, object] = {}
    exec(recorded, values)  # the generated module: three assignments
    assert values["version"] == version
    commit = str(values["commit"]).removeprefix("g")
    assert commit in installed["heads"]
    # The version itself names the commit (setuptools-scm's +g<hash>) unless the build was a clean tag.
    tags = _git("tag", "--points-at", commit, "--list", "v[0-9]*")
    if not tags or values["dirty"]:
        assert re.fullmatch(r"\d+(\.\d+)*\.dev\d+\+g[0-9a-f]{7,40}(\.d\d{8})?", version), version
        assert commit.startswith(version.split("+g")[1][:7])
    # setuptools-scm marks a build from a modified tree with the date: .dYYYYMMDD.
    assert bool(re.search(r"\.d\d{8}$", version)) == bool(values["dirty"])
    assert "Requires-Python: <3.12,>=3.11" in metadata
    assert 'Requires-Dist: torch==2.13.0; extra == "torch"' in metadata
    for extra in ("torch", "tensorflow", "jax", "sklearn"):
        assert f"Provides-Extra: {extra}" in metadata


def test_installed_version_names_the_commit(installed) -> None:
    proc = _dlbench(installed, "--version")
    assert proc.returncode == 0, proc.stderr
    version = installed["wheel"].name.split("-")[1]
    line = proc.stdout.strip()
    match = re.fullmatch(rf"dlbench {re.escape(version)} \(commit ([0-9a-f]{{40}})(, modified working tree)?\)", line)
    assert match, line
    assert match[1] in installed["heads"]
    # A modified tree at build time shows in the version's local part (.dYYYYMMDD) and in the line.
    assert bool(match[2]) == bool(re.search(r"\.d\d{8}$", version))


def test_installed_frameworks_are_the_pinned_extras(installed) -> None:
    proc = _dlbench(installed, "list", "--no-params")
    assert proc.returncode == 0, proc.stderr
    rows = {line.split("│")[1].strip(): line for line in proc.stdout.splitlines() if line.count("│") >= 4}
    assert "installed" in rows["torch"] and "torch 2.13.0" in rows["torch"]
    assert "installed" in rows["jax"] and "jax 0.10.2" in rows["jax"] and "jaxlib 0.10.2" in rows["jax"]
    assert "installed" in rows["sklearn"]
    # Not an extra asked for: listed, with what is missing and how to install it.
    assert (
        "tensorflow is not installed (missing: tensorflow, keras; pip install tensorflow-cpu==2.21.0)"
        in rows["tensorflow"]
    )


def test_installed_dlbench_runs_trials_in_the_fresh_environment(installed, stored) -> None:
    db = installed["tmp"] / "run.db"
    proc = _dlbench(
        installed,
        "run",
        *("--framework", "torch", "--model", "mlp", "--dataset", "digits", "--epochs", "1"),
        *("--repeats", "1", "--warmup", "0", "--trials", "1", "--samplers", "none"),
        *("--train-samples", "128", "--test-samples", "64", "--db", str(db)),
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-5000:]
    run, trials = stored(db)
    assert run["status"] == "finished"
    assert run["dlbench_version"] == installed["wheel"].name.split("-")[1]
    # Recorded by the installed dlbench, running under the fresh environment's interpreter.
    assert Path(run["environment"]["python_executable"]).parent == installed["bin"]
    assert [(t["framework"], t["status"]) for t in trials] == [("torch", "ok")]
    assert trials[0].manifest["versions"]["torch"].split("+")[0] == "2.13.0"


def test_checkout_version_reports_the_live_commit() -> None:
    """In this checkout (the editable install) --version names HEAD, or says the checkout moved on."""
    from dlbench.version import checkout_state, describe

    state = checkout_state(ROOT)
    assert state is not None
    info = describe()
    assert info.commit == state[0] or info.checkout == state[0]
    assert info.text().startswith(f"dlbench {info.version} (")


def test_version_line_says_what_is_known() -> None:
    from dlbench.version import VersionInfo, _from_version

    commit = "0123456789abcdef0123456789abcdef01234567"
    assert VersionInfo("0.2.0", commit, False).text() == f"dlbench 0.2.0 (commit {commit})"
    assert (
        VersionInfo("0.2.1.dev3+g0123456.d20260101", commit, True).text()
        == f"dlbench 0.2.1.dev3+g0123456.d20260101 (commit {commit}, modified working tree)"
    )
    assert VersionInfo("0.0", None, None).text() == "dlbench 0.0 (commit unknown: built without git metadata)"
    moved = VersionInfo("0.1.dev5+g0123456", commit, False, checkout="f" * 40, checkout_dirty=True)
    assert moved.text() == (
        f"dlbench 0.1.dev5+g0123456 (installed at commit {commit}; the checkout is now at {'f' * 40}, "
        "modified: `bash scripts/setup.sh` records its version)"
    )
    # A wheel built from an sdist records no commit; the version's local part still names it.
    assert _from_version("0.1.dev5+g0123456ab.d20260101", None, None).commit == "0123456ab"
    assert _from_version("0.1.dev5+g0123456ab.d20260101", None, None).dirty is True
    assert _from_version("0.1.dev5+g0123456ab", None, None).dirty is False
    assert _from_version("0.2.0", None, None).commit is None
