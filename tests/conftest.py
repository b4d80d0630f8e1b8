"""Shared fixtures: a real plugin framework (installed as a distribution on sys.path)
whose variants misbehave on purpose, for the runner's fault tests."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

PLUGIN_INFO = """
from dlbench.frameworks import FrameworkInfo

INFO = FrameworkInfo(
    name="faulty", variants=("ok", "raise", "segfault", "hang", "oom", "exit", "diverge"), default_variant="ok",
    modules=("dlbench_faulty",), distributions=("dlbench-faulty",), install_hint="test plugin",
    adapter="dlbench_faulty.adapter:Faulty", in_default_suite=False, models=("mlp",))

# A framework whose module is not installed: must be listed and skipped with the reason.
GHOST = FrameworkInfo(
    name="ghost", variants=("default",), default_variant="default", modules=("dlbench_ghost_runtime",),
    distributions=("dlbench-ghost-runtime",), install_hint="pip install dlbench-ghost-runtime",
    adapter="dlbench_ghost_runtime:Ghost", in_default_suite=False, models=("mlp",))
"""

PLUGIN_ADAPTER = '''
"""A framework adapter that fails in the way its variant names, inside train()."""
import ctypes, os, signal, sys, time

def _delay(threads):
    """The compare tests slow a run down on purpose: train_seconds_<threads> if it exists
    (a run recorded with that many threads, which compare does not match on), else train_seconds."""
    here = os.path.dirname(__file__)
    for name in (f"train_seconds_{threads}", "train_seconds"):
        if os.path.exists(os.path.join(here, name)):
            return float(open(os.path.join(here, name)).read())
    return 0.0

class Trainer:
    def __init__(self, variant, repeat_seed, threads=1):
        self.variant, self.seed, self.threads = variant, repeat_seed, threads
    def parameter_count(self): return 1
    def first_step(self): pass
    def train(self):
        time.sleep(_delay(self.threads))
        if self.variant == "raise" and self.seed >= 1:
            raise RuntimeError("boom: the model diverged")
        if self.variant == "segfault" and self.seed >= 1:
            os.kill(os.getpid(), signal.SIGSEGV)
        if self.variant == "hang":
            time.sleep(3600)
        if self.variant == "oom":
            raise MemoryError("cannot allocate 1 TiB")
        if self.variant == "exit":
            print("about to exit", file=sys.stderr); os._exit(3)
        if self.variant == "diverge" and self.seed >= 1:
            return [2.5, float("inf")]  # the loss of epoch 1 overflowed
        return [1.0]
    def evaluate(self): return 0.5
    def prepare_infer(self, b): return 2
    def infer(self, b):
        time.sleep(_delay(self.threads) / 2)
        return 2 * b
    def predict_batch(self, b, i): pass
    def train_fixed_batch(self, steps): return [1.0] * steps

class Faulty:
    name, variants, default_variant = "faulty", ("ok",), "ok"
    def setup(self, *, variant, threads, seed, device):
        print("noise on stdout that must not break the event stream")
        self.variant, self.threads = variant, threads
        return {"variant": variant}
    def prepare(self, arrays): return arrays
    def build(self, native, settings): return Trainer(self.variant, settings.seed, self.threads)
'''


@pytest.fixture
def faulty_plugin(tmp_path_factory, monkeypatch) -> Path:
    """Install the `faulty` plugin as a real distribution (dist-info with an entry
    point) in a directory put on sys.path here and on PYTHONPATH for workers."""
    from plugin_dist import write_plugin

    root = write_plugin(
        tmp_path_factory.mktemp("plugin"),
        "dlbench_faulty",
        PLUGIN_INFO,
        PLUGIN_ADAPTER,
        {"faulty": "dlbench_faulty:INFO", "ghost": "dlbench_faulty:GHOST"},
    )
    monkeypatch.syspath_prepend(str(root))
    src = str(Path(__file__).resolve().parents[1] / "src")
    monkeypatch.setenv("PYTHONPATH", f"{root}:{src}")
    yield root
    for mod in [m for m in sys.modules if m.startswith("dlbench_faulty")]:
        del sys.modules[mod]


class Cli:
    """The dlbench command line, invoked in this process (typer's CliRunner)."""

    @staticmethod
    def flags(**flags: object) -> list[str]:
        """Keywords as `dlbench run` words: threads=2 -> --threads 2, train_samples=64 ->
        --train-samples 64; a None value leaves its flag out."""
        return [
            part
            for key, value in flags.items()
            if value is not None
            for part in (f"--{key.replace('_', '-')}", str(value))
        ]

    def result(self, *args: object):
        """The command's click Result, its exit status unchecked (arguments as str())."""
        from typer.testing import CliRunner

        from dlbench.cli import app

        return CliRunner().invoke(app, [str(arg) for arg in args])

    def __call__(self, *args: object, code: int | None = 0) -> str:
        """The command's output, after asserting its exit status is `code` (None: any),
        with the output as the failure's message."""
        result = self.result(*args)
        assert code is None or result.exit_code == code, result.output
        return result.output

    def error_line(self, *args: object, code: int = 2) -> str:
        """The one non-blank line a refused command prints, after asserting its exit
        status is `code` and that it printed one line."""
        output = self(*args, code=code)
        lines = [line for line in output.splitlines() if line.strip()]
        assert len(lines) == 1, output
        return lines[0]


@pytest.fixture(scope="session")
def cli() -> Cli:
    """cli("runs", "--db", path) -> output, asserting exit status 0 (code=2: a refusal);
    cli.error_line(...) for a refusal's one line; cli.result(...) for the unchecked click
    Result; cli.flags(**flags) for run's words."""
    return Cli()


# What tiny_run runs unless told otherwise.
TINY_RUN = {
    "framework": "numpy",
    "model": "mlp",
    "dataset": "digits",
    "epochs": 1,
    "repeats": 2,
    "warmup": 0,
    "trials": 1,
    "samplers": "none",
}


@pytest.fixture(scope="session")
def tiny_run(cli):
    """`dlbench run` of the numpy reference MLP on digits (a few seconds), flags given as
    keywords override the defaults (threads=2 -> --threads 2; None leaves a default flag
    out); returns the output and asserts exit status 0 (or `code`)."""

    def run(db: Path, *, code: int | None = 0, **flags: object) -> str:
        return cli("run", *cli.flags(**{**TINY_RUN, **flags}), "--db", db, code=code)

    return run


@pytest.fixture
def faulty_run(faulty_plugin, tiny_run):
    """tiny_run of the `faulty` plugin's mlp (variant ok) on synthetic data, with no epochs
    flag and no latency batches; train_seconds, when given, is how long its train() sleeps."""

    def run(db: Path, *, train_seconds: float | None = None, code: int | None = 0, **flags: object) -> str:
        if train_seconds is not None:
            (faulty_plugin / "dlbench_faulty" / "train_seconds").write_text(str(train_seconds))
        base = {"framework": "faulty", "dataset": "synthetic", "epochs": None, "latency_batches": 0}
        return tiny_run(db, code=code, **{**base, **flags})

    return run


@pytest.fixture(scope="session")
def stored():
    """stored(db, run_id=None) -> (run, trials): a stored run (the latest by default) and
    its trials, as the Store reads them."""
    from dlbench.store import Store

    def read(db: Path, run_id: int | None = None) -> tuple:
        with Store(db) as store:
            run = store.run(run_id)
            return run, store.trials(run["id"])

    return read


@pytest.fixture(scope="module")
def small_db(tmp_path_factory: pytest.TempPathFactory, tiny_run) -> Path:
    """A database holding one real run (numpy MLP on digits, one trial, one repeat), shared by a module."""
    path = tmp_path_factory.mktemp("small") / "d.db"
    tiny_run(path, repeats=1, train_samples=128, test_samples=64)
    return path


# XLA's backend (LLVM) optimizations off for JAX in the tests: the same HLO programs, compiled
# with less work. The tests check what the programs compute (counts, shapes, falling losses,
# the same function across frameworks, loss curves within float32 tolerances), never how fast
# they run. Measured here: five zoo networks' JAX checks 118 s -> 92 s, all passing. A user's
# own XLA_FLAGS win; worker processes the tests start inherit it, and record it as the
# environment's XLA_FLAGS like any other.
TEST_XLA_FLAGS = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"


def pytest_configure(config) -> None:
    os.environ.setdefault("XLA_FLAGS", TEST_XLA_FLAGS)
    # `dlbench check` remembers its verdicts in the user's cache (dlbench.conformance.record):
    # the suite's checks go to a folder of their own, and no record of the user's reaches a
    # test's run.
    if "DLBENCH_CHECKS_DIR" not in os.environ:
        import tempfile

        os.environ["DLBENCH_CHECKS_DIR"] = tempfile.mkdtemp(prefix="dlbench-test-checks-")
    # pytest-xdist's workers start with COLUMNS=80 and LINES=24 where the suite's own process
    # has none, and the command line's consoles read COLUMNS off a terminal (80 columns
    # wrap the lines the tests read whole). A worker takes the terminal size the suite
    # started with: the same output in both phases of scripts/test.sh.
    if os.environ.get("PYTEST_XDIST_WORKER"):
        for name in ("COLUMNS", "LINES"):
            started = os.environ.get(f"DLBENCH_SUITE_{name}")
            if started:
                os.environ[name] = started
            else:
                os.environ.pop(name, None)
    else:
        for name in ("COLUMNS", "LINES"):
            os.environ[f"DLBENCH_SUITE_{name}"] = os.environ.get(name, "")


# The test files that must run alone (marked `serial`; scripts/test.sh runs them after the
# rest, in one process): their assertions rest on measured time or on the whole machine,
# so a second test running beside them could fail them or be failed by them. Every other
# file runs on both cores. A folder's entry covers the files in it; a single test may carry
# @pytest.mark.serial itself (with why beside it).
SERIAL: dict[str, str] = {
    "tests/explain/": "verdicts on measured gaps and profiled sums against timed steps",
    "tests/faults/": "signals at measured moments of a trial, timeouts, a full disk",
    "tests/test_busy.py": "the busy-machine detector reads this machine's load",
    "tests/test_compare.py": "identical runs must show no difference, a slowed one a regression",
    "tests/test_ci_workflow.py": "the CI gate must pass identical code and fail a 1.5x slower candidate",
    "tests/test_adaptive.py": "the stopping rule watches measured intervals narrow",
    "tests/test_telemetry.py": "samplers read this process's and the machine's CPU",
    "tests/test_runner_faults.py": "trial timeouts",
    "tests/test_resume.py": "interrupted runs, resumed",
    "tests/test_executor_slurm.py": "a machine-wide service; counts every dlbench worker on the machine",
    "tests/test_executor_ray.py": "a local Ray cluster on fixed ports",
    "tests/test_executor_ray_nodes.py": "a local Ray cluster on fixed ports",
    "tests/test_store_postgres.py": "a PostgreSQL server on a fixed port",
    "tests/test_distributed.py": "several worker processes per trial, rendezvous timeouts",
    "tests/test_distributed_runs.py": "several worker processes per trial, rendezvous timeouts",
    "tests/test_distributed_faults.py": "a hung rank found by a timeout",
    "tests/test_dist_torch.py": "several worker processes per trial, rendezvous timeouts",
    "tests/test_dist_tensorflow.py": "several worker processes per trial, rendezvous timeouts",
    "tests/test_dist_jax.py": "several worker processes per trial, rendezvous timeouts",
}


def pytest_collection_modifyitems(config, items) -> None:
    root = Path(str(config.rootpath))
    for item in items:
        where = Path(str(item.path)).relative_to(root).as_posix()
        if any(where == key or (key.endswith("/") and where.startswith(key)) for key in SERIAL):
            item.add_marker(pytest.mark.serial)


@pytest.hookimpl(trylast=True)  # after pytest's own teardown has finished the module's fixtures
def pytest_runtest_teardown(item, nextitem) -> None:
    """At the end of each test module, collect and freeze what is left.

    The tests that build models in this process leave frameworks loaded (TensorFlow, JAX and
    torch hold about 600,000 objects). Every later collection walked them all: a test that
    calls gc.collect() per command, or forks, ran 4-30x slower late in the suite than alone
    (a bad-database command sweep: 0.8 s alone, 15 s in the suite). Frozen objects are skipped
    by the collector; only cycles that die after being frozen are never freed, and freezing
    after the module's fixtures are gone leaves those to what outlives a module (imported
    frameworks, session fixtures)."""
    import gc

    if nextitem is None or nextitem.module is not item.module:
        gc.collect()
        gc.freeze()


@pytest.fixture
def make_case():
    """A plan.Case of the torch mlp on digits (what a plain CPU run plans), fields overridable."""
    from dlbench.plan import Case

    base = dict(
        framework="torch", variant="eager", model="mlp", dataset="digits", batch_size=32, init="glorot-uniform",
        optimizer="sgd", lr=0.01, momentum=0.0, epochs=1, steps=None, device="cpu", threads=1,
    )  # fmt: skip
    return lambda **changes: Case(**{**base, **changes})
