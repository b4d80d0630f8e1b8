"""docs/ci.md's GitHub Actions workflow, run on this machine: the YAML block is read from the
page, and its steps are carried out in order as a runner would, with a real (small) benchmark.

- `run:` steps: bash --noprofile --norc -eo pipefail (GitHub's `shell: bash`), in a
  workspace folder, with the workflow's env, the runner's variables (GITHUB_REF, GITHUB_SHA,
  GITHUB_EVENT_NAME, GITHUB_ENV: a file whose KEY=VALUE lines later steps see) and this
  environment's dlbench first on PATH;
- `if:` conditions: the few forms GitHub evaluates that the page uses (status functions,
  github.ref and github.event_name compared with ==, && and ||); a step without a status
  function runs only while no step failed, as on GitHub;
- actions/cache/restore and actions/cache/save: a copy of the cached folder from and to a
  folder standing for GitHub's cache; actions/upload-artifact: a copy into an artifacts
  folder; checkout and setup-python: nothing (this test runs in the checkout and the
  environment it was installed into); the step with id `install` is left out for that reason.

The benchmark is the page's (numpy's reference MLP on digits) made smaller, to keep this
test within about 30 seconds on a loaded 2-core machine: 2 trials instead of the page's, no warm-up
repeat, no latency batches, part of the data (SMALLER). The steps are the page's as written.

Three jobs: a push to main with an empty cache (no baseline yet; the run becomes the
baseline and the database is cached), a pull request (restores it, compares against the
baseline: exit 0, the report uploaded, nothing saved), and a push to main whose trials
produced no values (the gate exits 3, the report is still uploaded, the baseline is kept).
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "ci.md"
yaml = pytest.importorskip("yaml", reason="PyYAML reads the workflow (installed with ray)")


# What the test changes in the page's BENCH_FLAGS (flag -> value; appended when absent).
SMALLER = {
    "--trials": "2",
    "--warmup": "0",
    "--latency-batches": "0",
    "--train-samples": "512",
    "--test-samples": "128",
}


def smaller(flags: str) -> str:
    words = flags.split()
    for flag, value in SMALLER.items():
        if flag in words:
            words[words.index(flag) + 1] = value
        else:
            words += [flag, value]
    return " ".join(words)


def workflow() -> dict[str, Any]:
    """The page's one YAML block that is a workflow (has jobs)."""
    blocks = re.findall(r"^```yaml\n(.*?)^```", DOC.read_text(), flags=re.M | re.S)
    found = [w for w in map(yaml.safe_load, blocks) if isinstance(w, dict) and "jobs" in w]
    assert len(found) == 1, f"{DOC}: expected one workflow block, found {len(found)}"
    return found[0]


def condition(expr: str | None, github: dict[str, str], failed: bool) -> bool:
    """A step's `if:` as GitHub evaluates the forms used here; anything else fails the test."""
    if expr is None:
        return not failed
    text = expr.strip().removeprefix("${{").removesuffix("}}").strip()
    has_status = re.search(r"\b(always|success|failure|cancelled)\(\)", text) is not None
    text = re.sub(r"\balways\(\)", "True", text)
    text = re.sub(r"\bsuccess\(\)", str(not failed), text)
    text = re.sub(r"\bfailure\(\)", str(failed), text)
    text = re.sub(r"\bcancelled\(\)", "False", text)
    text = re.sub(r"\bgithub\.(\w+)", lambda m: repr(github[m.group(1)]), text)
    text = text.replace("&&", " and ").replace("||", " or ").replace("!=", " != ")
    tree = ast.parse(text, mode="eval")
    allowed = (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.Compare, ast.Eq, ast.NotEq, ast.Constant)
    assert all(isinstance(node, allowed) for node in ast.walk(tree)), f"if: {expr!r} is beyond this test's reading"
    value = bool(eval(compile(tree, "if", "eval"), {"__builtins__": {}}, {}))  # only the nodes checked above
    return value if has_status else value and not failed


@dataclass
class Step:
    name: str
    ran: bool
    rc: int = 0
    output: str = ""


class Runner:
    """One job of the workflow on this machine: a workspace, the cache and artifact folders."""

    def __init__(self, root: Path, flow: dict[str, Any]) -> None:
        self.flow = flow
        self.cache = root / "cache"
        self.artifacts = root / "artifacts"
        self.cache.mkdir(exist_ok=True)
        self.artifacts.mkdir(exist_ok=True)
        (job,) = flow["jobs"].values()
        self.steps: list[dict[str, Any]] = job["steps"]

    def run(
        self, workspace: Path, *, ref: str, event: str, start: str | None = None, env: dict[str, str] | None = None
    ) -> dict[str, Step]:
        """The job's steps in order (from the step named `start`, with `env` already set by
        the steps before it), as a `event` on `ref`."""
        workspace.mkdir(exist_ok=True)
        github = {"ref": ref, "event_name": event}
        bin_dir = str(Path(sys.executable).parent)
        environ = {
            **os.environ,
            "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            "GITHUB_ACTIONS": "true",
            "GITHUB_REF": ref,
            "GITHUB_EVENT_NAME": event,
            "GITHUB_SHA": "0123456789abcdef0123456789abcdef01234567",
            "GITHUB_WORKSPACE": str(workspace),
            **{k: str(v) for k, v in self.flow.get("env", {}).items()},
            **(env or {}),
        }
        shell = self.flow.get("defaults", {}).get("run", {}).get("shell")
        assert shell == "bash", "the page's steps rely on `shell: bash` (bash -eo pipefail)"
        failed, done, started = False, {}, start is None
        for i, step in enumerate(self.steps):
            name = step.get("name") or step.get("uses") or f"step {i}"
            started = started or name == start
            if not started:
                continue
            if step.get("id") == "install" or not condition(step.get("if"), github, failed):
                done[name] = Step(name, ran=False)
                continue
            if "uses" in step:
                done[name] = self._action(step, workspace)
            else:
                done[name] = self._shell(step["run"], workspace, environ)
            failed = failed or done[name].rc != 0
        return done

    def _shell(self, script: str, workspace: Path, environ: dict[str, str]) -> Step:
        assert "${{" not in script, "a run: step here takes its values from the environment"
        env_file = workspace.parent / f"{workspace.name}.github_env"
        env_file.write_text("")
        proc = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
            cwd=workspace,
            env={**environ, "GITHUB_ENV": str(env_file)},
            capture_output=True,
            text=True,
            timeout=120,
        )
        for line in env_file.read_text().splitlines():  # what later steps see, as GitHub passes it on
            key, _, value = line.partition("=")
            environ[key] = value
        return Step(script, True, proc.returncode, proc.stdout + proc.stderr)

    def _action(self, step: dict[str, Any], workspace: Path) -> Step:
        action = step["uses"].split("@")[0]
        given = step.get("with", {})
        if action in ("actions/checkout", "actions/setup-python"):
            return Step(action, True)
        if action == "actions/cache/restore":
            kept = self.cache / given["path"]
            if kept.exists():
                shutil.copytree(kept, workspace / given["path"], dirs_exist_ok=True)
            return Step(action, True, output="restored" if kept.exists() else "no cache")
        if action == "actions/cache/save":
            shutil.rmtree(self.cache / given["path"], ignore_errors=True)
            shutil.copytree(workspace / given["path"], self.cache / given["path"])
            return Step(action, True, output="saved")
        if action == "actions/upload-artifact":
            source = workspace / given["path"]
            if source.exists():
                shutil.copy(source, self.artifacts / f"{given['name']}-{source.name}")
            return Step(action, True, output="uploaded" if source.exists() else "no file")
        raise AssertionError(f"the page uses an action this test does not simulate: {action}")


def _runs(db: Path) -> list[tuple[int, str, int]]:
    with sqlite3.connect(db) as con:
        return con.execute(
            "SELECT r.id, r.status, (SELECT COUNT(*) FROM trials t WHERE t.run_id = r.id AND t.status = 'ok')"
            " FROM runs r ORDER BY r.id"
        ).fetchall()


def test_the_documented_workflow_runs_gates_and_keeps_its_baseline(tmp_path: Path):
    flow = workflow()
    runner = Runner(tmp_path, flow)
    names = [s.get("name") or s.get("uses") for s in runner.steps]
    gate, save = "Compare with the baseline", "Make this run the baseline"
    assert {gate, save, "Run the benchmark", "Upload the report"} <= set(names)
    bench = {"BENCH_FLAGS": smaller(flow["env"]["BENCH_FLAGS"])}
    trials = int(SMALLER["--trials"])
    html = "benchmark-report-benchmark.html"

    # 1. A push to main, nothing cached: no baseline to compare with; this run becomes it.
    main = runner.run(tmp_path / "main", ref="refs/heads/main", event="push", env=bench)
    for step in main.values():
        assert step.rc == 0, f"{step.name}\n{step.output}"
    assert not main["Install dlbench"].ran and main["Restore the results database"].output == "no cache"
    assert "no baseline saved yet" in main[gate].output
    assert "saved baseline 'main': run 1" in main[save].output
    assert _runs(runner.cache / "bench" / "results.db") == [(1, "finished", trials)]
    report = runner.artifacts / html
    assert report.read_text().lstrip().lower().startswith("<!doctype html") and "numpy" in report.read_text()
    report.unlink()
    cached = (runner.cache / "bench" / "results.db").read_bytes()

    # 2. A pull request: the cached database restored, run 2 compared with baseline main (run 1).
    pr = runner.run(tmp_path / "pr", ref="refs/pull/7/merge", event="pull_request", env=bench)
    assert pr[gate].rc == 0, pr[gate].output
    flat = " ".join(pr[gate].output.split())
    assert "A is baseline 'main': run 1" in flat and "B (2) relative to A (1)" in flat
    # Two runs taken one after the other: ratios and intervals, no verdict, and the gate passes.
    assert "2 comparisons, 0 regressions, 0 without values on one side" in flat
    assert "the runs were taken one after the other" in flat and "REGRESSION" not in flat
    assert report.exists() and "numpy" in report.read_text()
    assert not pr[save].ran and not pr["Keep the results database"].ran
    assert (runner.cache / "bench" / "results.db").read_bytes() == cached  # a pull request saves nothing
    assert _runs(tmp_path / "pr" / "bench" / "results.db") == [(1, "finished", trials), (2, "finished", trials)]

    # 3. A push to main whose trials left no values: the gate exits 3 and fails the job; the
    # report is still uploaded, and the failed run does not become the baseline.
    db = tmp_path / "pr" / "bench" / "results.db"
    with sqlite3.connect(db) as con:
        con.execute("UPDATE trials SET status = 'timeout' WHERE run_id = 2")
    report.unlink()
    broken = runner.run(
        tmp_path / "pr",
        ref="refs/heads/main",
        event="push",
        start="Write the HTML report",
        env={**bench, "RUN_ID": "2"},
    )
    assert broken[gate].rc == 3, broken[gate].output
    assert "have no values on one side" in " ".join(broken[gate].output.split())
    assert broken["Upload the report"].ran and report.exists()
    assert not broken[save].ran and not broken["Keep the results database"].ran
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT name, run_id FROM baselines").fetchall() == [("main", 1)]


def test_conditions_are_read_as_github_reads_them():
    github = {"ref": "refs/heads/main", "event_name": "push"}
    main_push = "github.ref == 'refs/heads/main' && github.event_name == 'push'"
    assert condition(main_push, github, failed=False)
    assert not condition(main_push, github, failed=True)  # no status function: success() implied
    assert not condition(main_push, {**github, "event_name": "pull_request"}, failed=False)
    assert condition("always()", github, failed=True) and condition("failure()", github, failed=True)
    assert not condition(None, github, failed=True) and condition(None, github, failed=False)
    with pytest.raises(AssertionError, match="beyond this test's reading"):
        condition("contains(github.ref, 'main')", github, failed=False)
