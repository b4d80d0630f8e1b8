"""Frameworks declare their capabilities (issue 34 item 4): no module outside
frameworks/ and models/ branches on a framework's name, and a framework installed
through the entry point declares a strategy and a profiler that `dlbench plan` and
`explain`'s profile phase use.

The AST walk flags, in every module of src/dlbench outside dlbench/frameworks/ and
dlbench/models/ (and the allowlist below, one reason each): a comparison or
membership test against a framework-name literal (`fw == "torch"`, `fw in ("torch",
"jax")`), a dict display keyed by one (`{"torch": ...}`), a lookup by one
(`table["torch"]`), and a match case on one.
"""

from __future__ import annotations

import ast
import sys
import textwrap
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "dlbench"
NAMES = frozenset({"torch", "tensorflow", "jax", "numpy", "sklearn"})
EXEMPT_DIRS = ("frameworks", "models")
# path relative to src/dlbench -> why its framework-name literals are not branches on a
# framework's capabilities.
ALLOWLIST: dict[str, str] = {
    "studies/paper_vs_run.py": "what a published paper compared (its PyTorch vs TensorFlow pair), not a capability",
    "report/study_section.py": "display names of the paper study's frameworks (data for one study's section)",
    "env.py": "keyed by Python import name (keras, jaxlib, flax, optax too): which PyPI distributions ship a "
    "module, for the fingerprint; packaging data, not a framework capability",
}


def _literal_names(node: ast.AST | None) -> list[str]:
    """Framework names written as a literal at `node`: a string, or strings in a
    tuple, list or set display, or a frozenset/set/tuple call of one."""
    if node is None:
        return []
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value] if node.value in NAMES else []
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [n for elt in node.elts for n in _literal_names(elt)]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("frozenset", "set", "tuple"):
        return [n for arg in node.args for n in _literal_names(arg)]
    return []


def _patterns(pattern: ast.pattern) -> list[str]:
    if isinstance(pattern, ast.MatchValue):
        return _literal_names(pattern.value)
    if isinstance(pattern, ast.MatchOr):
        return [n for p in pattern.patterns for n in _patterns(p)]
    if isinstance(pattern, ast.MatchAs) and pattern.pattern is not None:
        return _patterns(pattern.pattern)
    return []


def branches(source: str, where: str = "<source>") -> list[str]:
    """'where:line: what' for each branch on a framework-name literal in `source`."""
    found = []
    for node in ast.walk(ast.parse(source, where)):
        hits: list[str] = []
        what = ""
        if isinstance(node, ast.Compare):
            hits = [n for side in (node.left, *node.comparators) for n in _literal_names(side)]
            what = "comparison"
        elif isinstance(node, ast.Dict):
            hits = [n for key in node.keys for n in _literal_names(key)]
            what = "dict key"
        elif isinstance(node, ast.Subscript):
            hits = _literal_names(node.slice)
            what = "lookup"
        elif isinstance(node, ast.match_case):
            hits = _patterns(node.pattern)
            what = "match case"
        if hits:
            line = node.pattern.lineno if isinstance(node, ast.match_case) else getattr(node, "lineno", 0)
            found.append(f"{where}:{line}: {what} on {hits}")
    return found


def _scanned() -> list[Path]:
    out = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel.split("/")[0] in EXEMPT_DIRS or rel in ALLOWLIST:
            continue
        out.append(path)
    return out


def test_the_walker_flags_each_kind_of_branch():
    source = textwrap.dedent(
        """
        if fw == "torch":
            pass
        ok = framework in ("tensorflow", "jax")
        table = {"sklearn": 1, "other": 2}
        wanted = name not in frozenset({"numpy"})
        module = MODULES["jax"]
        match fw:
            case "jax" | "cuda":
                pass
        """
    )
    found = branches(source)
    assert [f.split(": ", 1)[1] for f in found] == [
        "comparison on ['torch']",
        "comparison on ['tensorflow', 'jax']",
        "dict key on ['sklearn']",
        "comparison on ['numpy']",
        "lookup on ['jax']",
        "match case on ['jax']",
    ]
    assert [f.split(":")[1] for f in found] == ["2", "4", "5", "6", "7", "9"]


def test_the_walker_leaves_data_and_other_names_alone():
    source = textwrap.dedent(
        """
        defaults = ("torch", "tensorflow", "jax")   # a value, not a branch
        spec.builder("torch")                       # a call's argument
        if device == "cuda" or layout in ("native", "channels-last"):
            pass
        names = {"keras": "tensorflow"}             # a value keyed by another name
        """
    )
    assert branches(source) == []


def test_no_module_outside_frameworks_and_models_branches_on_a_framework_name():
    found = [f for path in _scanned() for f in branches(path.read_text(), path.relative_to(SRC).as_posix())]
    assert not found, "framework-name branches outside frameworks/ and models/ (ask FrameworkInfo):\n" + "\n".join(
        found
    )


def test_every_allowlisted_module_exists_and_still_needs_its_entry():
    for rel, reason in ALLOWLIST.items():
        path = SRC / rel
        assert path.is_file(), f"allowlisted {rel} does not exist"
        assert reason.strip(), rel
        assert branches(path.read_text(), rel), f"{rel} no longer names a framework in a branch: drop its entry"


# -- a framework installed through the entry point declares a strategy and a profiler --

RING_INFO = """
from dlbench.frameworks import FrameworkInfo, Limit, Strategy

INFO = FrameworkInfo(
    name="ringfw", variants=("plain", "fused"), default_variant="plain", modules=("dlbench_ringfw",),
    distributions=("dlbench-ringfw",), install_hint="test plugin", adapter="dlbench_ringfw.adapter:Ring",
    in_default_suite=False, models=("mlp",), devices=("cpu",),
    strategies=(Strategy("ring", "dlbench_ringfw.dist", limits=(Limit("fused rings need a GPU", variant="fused"),)),),
    profiler="dlbench_ringfw.profile",
)
"""

RING_ADAPTER = '''
"""A framework whose training is a sleep, and whose profiler sees one matmul per call."""
import time

class Trainer:
    def __init__(self, settings):
        self.settings = settings
    def parameter_count(self): return 1
    def first_step(self): pass
    def train(self):
        time.sleep(0.002)
        return [1.0]
    def evaluate(self): return 0.5
    def prepare_infer(self, b): return 2
    def infer(self, b): return 2 * b
    def predict_batch(self, b, i): pass
    def train_fixed_batch(self, steps): return [1.0] * steps

class Ring:
    name, variants, default_variant = "ringfw", ("plain", "fused"), "plain"
    def setup(self, *, variant, threads, seed, device):
        return {"variant": variant}
    def prepare(self, arrays): return arrays
    def build(self, native, settings): return Trainer(settings)
'''

RING_PROFILE = '''
"""The ring framework's profiler: one matmul taking half of each profiled call."""
import time

from dlbench.explain.categories import Rule
from dlbench.explain.events import OpEvent, Recording

RULES = (Rule("^ring_matmul$", "matmul"),)

def record(run):
    t0 = time.perf_counter()
    run()
    wall = time.perf_counter() - t0
    return Recording(events=(OpEvent("ring_matmul", "main", 0.0, wall * 0.5e6),), wall_s=wall,
                     source="ring profiler (test plugin)")
'''


@pytest.fixture
def ring_plugin(tmp_path, monkeypatch):
    from plugin_dist import write_plugin

    (tmp_path / "site").mkdir()
    root = write_plugin(tmp_path / "site", "dlbench_ringfw", RING_INFO, RING_ADAPTER, {"ringfw": "dlbench_ringfw:INFO"})
    (root / "dlbench_ringfw" / "profile.py").write_text(textwrap.dedent(RING_PROFILE))
    (root / "dlbench_ringfw" / "dist.py").write_text("def setup(fw, ctx, **runtime): return {}\n")
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setenv("PYTHONPATH", f"{root}:{SRC.parent}")
    yield root
    for mod in [m for m in sys.modules if m.startswith("dlbench_ringfw")]:
        del sys.modules[mod]


def _plan(*args: str) -> str:
    from typer.testing import CliRunner

    from dlbench.cli import app

    result = CliRunner().invoke(app, ["plan", *args], terminal_width=250)
    assert result.exit_code == 0, result.output
    return result.output


def test_a_plugin_strategy_is_known_to_plan_and_the_launcher(ring_plugin):
    from dlbench import registry
    from dlbench.plan import strategy_reason

    assert registry.framework("ringfw").strategy("ring").module == "dlbench_ringfw.dist"
    assert registry.strategies()["ring"] == (("ringfw",), False)
    assert registry.strategy_module("ringfw", "ring") == "dlbench_ringfw.dist"
    assert registry.has_strategy("ringfw", "ring") and not registry.has_strategy("torch", "ring")
    assert not registry.multiprocess("ring")
    # Its limit, and another framework's strategy, said as for a built-in.
    assert strategy_reason("ringfw", "ring", 2, False, "cpu", 32, "fused") == "strategy ring: fused rings need a GPU"
    assert strategy_reason("ringfw", "ddp", 2, False, "cpu", 32) == "strategy ddp is torch's; ringfw has single, ring"
    assert strategy_reason("torch", "ring", 2, False, "cpu", 32) == (
        "strategy ring is ringfw's; torch has single, ddp, dp"
    )

    out = _plan("--framework", "ringfw,ringfw:fused", "--model", "mlp", "--strategy", "ring", "--world-size", "2")
    assert "unknown strategy" not in out and "allowed" not in out
    cells = [line for line in out.splitlines() if "ringfw:plain ring mlp" in line]
    assert cells and all("x2 replicas" in line for line in cells), out
    assert "strategy ring: fused rings need a GPU" in out
    assert "ringfw:fused ring mlp" not in out


def test_plan_asks_the_plugin_for_its_devices_layouts_and_precisions(ring_plugin):
    from dlbench.plan import device_reason, layout_reason, pipeline_reason, precision_reason

    assert device_reason("ringfw", "cuda") == "ringfw runs on the CPU only; device 'cuda' is not supported"
    assert device_reason("torch", "cuda") is None
    assert layout_reason("ringfw", "channels-last", "image") == "ringfw has no layout setting"
    assert precision_reason("ringfw", "bf16-mixed", "cpu", False) == (
        "precision bf16-mixed: ringfw has no mixed-precision or TF32 mode here; use float32 (the default)"
    )
    assert pipeline_reason("ringfw", "native", "image", (32, 32, 3)) == (
        "ringfw has no augmentation pipeline (pipeline native)"
    )


def test_explain_picks_the_plugins_profiler(ring_plugin):
    from dlbench.plan import Case
    from dlbench.trial import profiling

    assert profiling.profiler_for("ringfw") == "dlbench_ringfw.profile"
    assert profiling.profiler_for("torch") == "dlbench.explain.profile_torch"
    assert profiling.profiler_for("numpy") is None
    assert profiling.profilers() == {
        "torch": "dlbench.explain.profile_torch",
        "tensorflow": "dlbench.explain.profile_tensorflow",
        "jax": "dlbench.explain.profile_jax",
        "ringfw": "dlbench_ringfw.profile",
    }
    fields = dict(
        variant="plain", model="mlp", dataset="digits", batch_size=32, init="glorot-uniform", optimizer="adam",
        lr=1e-3, momentum=0.9, epochs=1, steps=None, device="cpu", threads=1,
    )  # fmt: skip
    assert profiling.unsupported_reason(Case(framework="ringfw", **fields)) is None
    reason = profiling.unsupported_reason(Case(framework="numpy", **fields))
    assert reason == "no profiler for framework 'numpy' (profiles exist for torch, tensorflow, jax, ringfw)"


def test_a_plugin_run_is_profiled_by_its_own_profiler(ring_plugin, tmp_path):
    """End to end: `dlbench run --profile-steps` of the plugin framework records the
    profile phase its profiler saw (one matmul, half of each step)."""
    from typer.testing import CliRunner

    from dlbench.cli import app
    from dlbench.store import Store

    db = str(tmp_path / "ring.db")
    args = [
        "run", "--framework", "ringfw", "--model", "mlp", "--dataset", "digits", "--epochs", "1",
        "--repeats", "1", "--warmup", "0", "--trials", "1", "--samplers", "none",
        "--profile-steps", "2", "--profile-calls", "1", "--db", db,
    ]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    with Store(db) as store:
        rows = store.measurements(1, latency=False)
    profile = {r["metric"]: r for r in rows if r["phase"] == "profile"}
    assert profile["matmul"]["method"] == "ring profiler (test plugin)"
    assert profile["matmul"]["value"] == pytest.approx(profile["step_time"]["value"] / 2, rel=1e-6)
    assert profile["steps"]["value"] == 2.0


def test_explain_profiles_a_plugin_framework_with_its_own_profiler(ring_plugin, tmp_path):
    """End to end: `dlbench explain` of two variants of the plugin framework toggles the
    variant and profiles every case of its explain run with the plugin's profiler."""
    from typer.testing import CliRunner

    from dlbench.cli import app
    from dlbench.store import Store

    db = str(tmp_path / "ring.db")
    common = ["--repeats", "1", "--warmup", "0", "--samplers", "none", "--db", db]
    args = ["run", "--framework", "ringfw:plain,ringfw:fused", "--model", "mlp", "--dataset", "digits"]
    result = CliRunner().invoke(app, [*args, "--epochs", "1", "--trials", "1", *common])
    assert result.exit_code == 0, result.output
    explain = ["explain", "1", "--case", "ringfw:fused", "--vs", "ringfw:plain", "--only", "variant"]
    result = CliRunner().invoke(
        app, [*explain, "--blocks", "2", "--profile-steps", "2", "--profile-calls", "1", *common[:4], "--db", db]
    )
    assert result.exit_code == 0, result.output
    assert "toggles variant" in result.output, result.output
    with Store(db) as store:
        pairs = store.explain(2)
        trials = store.trials(2)
        rows = store.measurements(2, latency=False)
    assert pairs is not None and pairs["from_run"] == 1 and len(pairs["explain"]) == 1
    assert {t.case["variant"] for t in trials} == {"plain", "fused"} and all(t.status == "ok" for t in trials)
    profiled = {(r["trial_id"], r["method"]) for r in rows if r["phase"] == "profile" and r["metric"] == "matmul"}
    assert {method for _, method in profiled} == {"ring profiler (test plugin)"}
    assert {trial for trial, _ in profiled} == {t.id for t in trials}
