"""Fuzzed command lines for `plan`, `run` and `export`: every invocation exits 0
(accepted) or 2 (refused, one `error:` line or typer's usage error, naming the flag
or file), never with a traceback. `run` never starts a worker here: the run is
created in a temporary database (so the accepted values meet real SQLite), then
execute_run is replaced by a function that stops the command."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from dlbench.cli import app
from dlbench.config import MATRIX_DEFAULTS

from .invariants import check_accepted, tally
from .strategies import FACTOR_VALUES, ODD_STRINGS, OPTION_VALUES, PROTOCOL_VALUES, toml_value

FUZZ = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

cli = CliRunner()


@pytest.fixture(scope="module", autouse=True)
def _command_built_once():
    """typer rebuilds the click command from the annotations on every invoke (about
    60 ms, most of an invocation's time); the fuzz tests build it once."""
    import typer.testing

    real = typer.testing._get_command
    built = real(app)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(typer.testing, "_get_command", lambda a: built if a is app else real(a))
        yield


MATRIX_FLAGS = tuple(MATRIX_DEFAULTS)  # --framework ... --pipeline: one flag per factor
PLAN_PROTOCOL = ("epochs", "steps", "repeats", "warmup", "trials", "threads")  # the protocol flags of `plan`
RUN_PROTOCOL = tuple(PROTOCOL_VALUES)  # `run` has a flag for every protocol setting

HOSTILE_TEXT = st.one_of(
    st.sampled_from(
        ODD_STRINGS
        + [
            "nan",
            "-nan",
            "inf",
            "-inf",
            "1e999",
            "-1e999",
            "1e12",
            "-1",
            "-0",
            "0",
            "99999999999999999999",
            "2147483648",
            "abc",
            ",,,",
            ",",
            "1,,2",
            "1, 2",
            "1;2",
            "0.0.1",
            "1_000",
            "=",
            ".",
            "lstm.=1",
            ".hidden=1",
            "lstm.hidden=",
            "lstm.hidden=-5",
            "lstm.hidden=1e999",
            "lstm.dropout=nan",
            "transformer.hidden=30",
            "resnet18.blocks=[0,1]",
            "x.y=1",
            "mlp.hidden=3",
        ]
    ),
    st.text(max_size=10),
)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _list_text(values: list) -> str:
    return ",".join(str(v) for v in values)


def _valid_text(name: str) -> st.SearchStrategy[str]:
    if name in MATRIX_FLAGS:
        return st.lists(FACTOR_VALUES[name], min_size=1, max_size=2).map(_list_text)
    value = PROTOCOL_VALUES[name]
    return value.map(lambda v: v if isinstance(v, str) else repr(v) if isinstance(v, float) else str(v))


def _option_text(model: str, values: dict) -> st.SearchStrategy[str]:
    return st.sampled_from(sorted(values)).flatmap(
        lambda key: values[key].map(lambda v: f"{model}.{key}={toml_value(v)}")
    )


OPTION_TEXT = st.one_of(*(_option_text(m, values) for m, values in OPTION_VALUES.items() if values))


@st.composite
def command_lines(draw, protocol_names: tuple[str, ...], hostile_share: int):
    """(args, flags given): some flags, each valid or hostile (1 in `hostile_share`)."""
    names = draw(
        st.lists(st.sampled_from(sorted(MATRIX_FLAGS) + list(protocol_names) + ["option"]), max_size=5, unique=True)
    )
    args, given_names = [], []
    for name in names:
        # Not integers(...) == 0: Hypothesis favours the smallest value, which would make most flags hostile.
        hostile = draw(st.sampled_from([False] * (hostile_share - 1) + [True]))
        if name == "option":
            for _ in range(draw(st.integers(1, 2))):
                args.append(f"--option={draw(HOSTILE_TEXT if hostile else OPTION_TEXT)}")
        else:
            args.append(f"{_flag(name)}={draw(HOSTILE_TEXT if hostile else _valid_text(name))}")
        given_names.append(name)
    # An accepted plan must stay small: the default suite is crossed with every factor given.
    if not any(a.startswith(("--framework=", "--model=")) for a in args):
        args += ["--framework=numpy,sklearn", "--model=mlp,knn"]
    return args, given_names


def _check_result(result, given: list[str], files: tuple[str, ...] = (), accepted_exc=None) -> bool:
    """True when the command accepted its input; asserts the refusal rules otherwise."""
    output = result.output
    assert "Traceback" not in output, output
    exc = result.exception
    if accepted_exc is not None and isinstance(exc, accepted_exc):
        return True
    assert exc is None or isinstance(exc, SystemExit), repr(exc)
    assert result.exit_code in (0, 2), (result.exit_code, output)
    if result.exit_code == 0:
        return True
    assert output.count("error:") <= 1, output
    names = [_flag(n) for n in given] + given + list(files)
    generic = ("nothing to run: every cell was skipped",)
    assert any(n in output for n in names) or any(g in output for g in generic), f"names none of {names}: {output}"
    return False


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("cli-files")
    made = {
        "valid.toml": "[matrix]\nframework = ['numpy']\nmodel = ['mlp']\n[protocol]\nrepeats = 2\n",
        "bad.toml": "[protocol]\ntimeout = inf\n",
        "empty.toml": "",
    }
    out = {}
    for name, text in made.items():
        (root / name).write_text(text)
        out[name] = root / name
    (root / "binary.toml").write_bytes(b"\xff\xfe\x00\x01garbage")
    out["binary.toml"] = root / "binary.toml"
    (root / "dir.toml").mkdir()
    out["dir.toml"] = root / "dir.toml"
    out["missing.toml"] = root / "missing.toml"
    return out


@FUZZ
@given(case=command_lines(PLAN_PROTOCOL, hostile_share=3), data=st.data())
def _plan_inner(case, data, files):
    args, given_names = case
    file = data.draw(st.sampled_from([None, *files]))
    if file is not None:
        args = [str(files[file]), *args]
    result = cli.invoke(app, ["plan", *args])
    tally("plan command line", _check_result(result, given_names, (file,) if file else ()))


def test_plan_flags(files):
    _plan_inner(files=files)


class _Reached(Exception):
    """execute_run was called: the command line was accepted and the run stored."""


@pytest.fixture(scope="module")
def no_worker(tmp_path_factory):
    """`run` up to execute_run, with no network, no idle wait and no worker."""
    import dlbench.datasets
    import dlbench.env
    from dlbench import runner

    plans = []
    real_create = runner.create_run

    def create_run(store, plan, **kw):
        plans.append(plan)
        return real_create(store, plan, **kw)

    def execute_run(store, run_id, **kw):
        raise _Reached(run_id)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(dlbench.env, "fingerprint", lambda: {})
        mp.setattr(dlbench.datasets, "ensure", lambda *a, **k: None)
        mp.setattr(runner, "measure_idle", lambda *a, **k: {})
        mp.setattr(runner, "create_run", create_run)
        mp.setattr(runner, "execute_run", execute_run)
        yield tmp_path_factory.mktemp("run") / "fuzz.db", plans


@FUZZ  # each accepted run is stored in SQLite
@given(case=command_lines(RUN_PROTOCOL, hostile_share=4))
def _run_inner(case, db, plans):
    args, given_names = case
    plans.clear()
    result = cli.invoke(app, ["run", *args, "--db", str(db)])
    accepted = _check_result(result, given_names, accepted_exc=_Reached)
    if accepted:
        assert isinstance(result.exception, _Reached), result.output
        (plan,) = plans
        check_accepted(plan.experiment)
    tally("run command line", accepted)


def test_run_flags(no_worker):
    db, plans = no_worker
    _run_inner(db=db, plans=plans)


@settings(FUZZ, max_examples=200)
@given(name=st.sampled_from(PLAN_PROTOCOL + tuple(MATRIX_FLAGS)), value=HOSTILE_TEXT)
def _one_flag_inner(name, value):
    """One hostile flag alone: a refusal must name that very flag."""
    args = [f"{_flag(name)}={value}"]
    if name not in ("framework", "model"):
        args += ["--framework=numpy", "--model=mlp"]
    result = cli.invoke(app, ["plan", *args])
    assert "Traceback" not in result.output and result.exit_code in (0, 2), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    if result.exit_code == 2:
        assert _flag(name) in result.output, result.output
    tally("single plan flag", result.exit_code == 0)


def test_one_hostile_flag_is_named():
    _one_flag_inner()


@settings(FUZZ, max_examples=150)
@given(
    out=st.sampled_from(["out.csv", "dir", "missing/dir/x.csv", "dir/", "", ".", "a\x00b.csv"]),
    run=st.one_of(st.none(), st.sampled_from(["-1", "0", "1", "2", "99999999999999999999", "abc", "nan"])),
)
def _export_inner(out, run, root, db):
    args = ["export", str(root / out) if out else out, "--db", str(db)]
    if run is not None:
        args += [f"--run={run}"]
    before = db.read_bytes()
    result = cli.invoke(app, args)
    tally("export command line", _check_result(result, ["run"], (out or "export", "export")))
    assert db.read_bytes() == before


def test_export_destinations(tmp_path, no_worker):
    db, _ = no_worker
    result = cli.invoke(app, ["run", "--trials", "1", "--framework=numpy", "--model=mlp", "--db", str(db)])
    assert isinstance(result.exception, _Reached), result.output
    (tmp_path / "dir").mkdir()
    _export_inner(root=tmp_path, db=db)
