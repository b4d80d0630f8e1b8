"""MLflow tracking (dlbench.tracking.mlflow_log, docs/mlflow.md) against a real `mlflow server`
started here on 127.0.0.1 (a free port, an SQLite backend store and a local artifact folder),
everything read back through MlflowClient: the parent run and its nested case runs, their
params, metrics (the medians and their spread, as computed here by hand from the stored
values, and the per-repeat histories), start and end times (the store's), tags (the
report's verdicts) and artifacts; a second log of the same run refused, then replaced with
--replace; MLFLOW_TRACKING_URI and MLFLOW_EXPERIMENT_NAME used where no flag is given.
Also: a server that cannot be reached is one line and leaves the run, its store and its exit
status alone; without mlflow installed, --mlflow is one line naming the extra."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from datetime import datetime
from pathlib import Path

import pytest

from dlbench.store import Measurement, Store
from stored_cases import stored_case

if importlib.util.find_spec("mlflow") is None:
    pytest.skip(
        "mlflow is not installed (the mlflow extra; pip install -r requirements-dev.txt pins it)",
        allow_module_level=True,
    )

from mlflow.tracking import MlflowClient  # noqa: E402

BLOCKS = 6  # six blocks paired by block: a verdict between the two cases (test_json_output's design)
REPEATS = 3
EPOCHS = 2
CASES = {"torch": stored_case("torch", "eager"), "jax": stored_case("jax", "jit")}
TRAIN = {"torch": 1.0, "jax": 1.5}  # train seconds per repeat: torch is faster


@pytest.fixture(autouse=True)
def _no_mlflow_variables(monkeypatch):
    """MLflow's own variables of whoever runs the tests never reach these tests' settings."""
    for name in ("MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_NAME"):
        monkeypatch.delenv(name, raising=False)


def _ms(text: str) -> int:
    """A time as the store writes it, in MLflow's unit: milliseconds since the epoch."""
    return round(datetime.fromisoformat(text).timestamp() * 1000)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> str:
    """A real tracking server: `mlflow server` with an SQLite store and a local artifact folder;
    stopped (its whole process group) when the module is done."""
    root = tmp_path_factory.mktemp("mlflow")
    port = _free_port()
    mlflow_bin = Path(sys.executable).parent / "mlflow"
    command = [
        str(mlflow_bin), "server", "--backend-store-uri", f"sqlite:///{root}/mlflow.db",
        "--artifacts-destination", str(root / "artifacts"), "--host", "127.0.0.1", "--port", str(port),
        "--workers", "1",
    ]  # fmt: skip
    # No job runner: it starts a pool of consumer processes the tests never use.
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    log = (root / "server.log").open("wb")
    proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    uri = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{uri}/health", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("mlflow server did not start:\n" + (root / "server.log").read_text()[-3000:])
            time.sleep(0.3)
        yield uri
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=15)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


def _trial(store: Store, run_id: int, key: str, block: int, pos: int) -> None:
    tid = store.add_trial(run_id, case_key=key, block=block, position=pos, case=CASES[key], protocol={})
    store.start_trial(tid)
    rows = [Measurement(0, True, "train", "time", 99.0, "s")]  # a warm-up: never logged
    for r in range(REPEATS):
        rows.append(Measurement(r + 1, False, "train", "time", TRAIN[key] * (1 + 0.01 * block + 0.001 * r), "s"))
        rows += [
            Measurement(r + 1, False, "train", "loss", 2.0 - 0.5 * e - 0.01 * block, "nats", seq=e)
            for e in range(EPOCHS)
        ]
    store.add_measurements(tid, rows)
    store.finish_trial(tid, status="ok", error=None, returncode=0, wall_s=1.0, stderr="")


@pytest.fixture(scope="module")
def verdict_db(tmp_path_factory) -> Path:
    """A stored run of two cases (torch eager, jax jit) in six blocks, torch 1.5x faster to train."""
    return _verdict_store(tmp_path_factory.mktemp("mlflow-db") / "v.db")


def _verdict_store(path: Path) -> Path:
    with Store(path) as store:
        run_id = store.create_run(
            name="two frameworks",
            command="dlbench run two.toml",
            config_source="two.toml",
            config_text="",
            experiment={"protocol": {"repeats": REPEATS, "warmup": 1, "trials": BLOCKS, "epochs": EPOCHS}},
            environment={"hostname": "testhost", "cpu_model": "Test CPU", "logical_cores": 2},
            version="0.1.0",
        )
        for block in range(BLOCKS):
            for pos, key in enumerate(CASES):
                _trial(store, run_id, key, block, pos)
        store.finish_run(run_id, "finished")
    return path


def _runs(client: MlflowClient, experiment: str) -> tuple:
    """(parent, {case label: child run}) of the one dlbench run logged under `experiment`."""
    found = client.get_experiment_by_name(experiment)
    assert found is not None, experiment
    runs = client.search_runs([found.experiment_id])
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    assert len(parents) == 1, [r.info.run_name for r in runs]
    children = {r.data.tags["dlbench.case"]: r for r in runs if r is not parents[0]}
    assert all(r.data.tags["mlflow.parentRunId"] == parents[0].info.run_id for r in children.values())
    return parents[0], children


def test_a_stored_run_logged_reads_back_through_the_client(server, verdict_db, cli, tmp_path):
    out = cli("mlflow-log", "--db", verdict_db, "--mlflow", server, "--experiment", "stored")
    assert out.startswith("mlflow: logged run 1 (2 cases, ") and server in out, out
    client = MlflowClient(tracking_uri=server)
    parent, children = _runs(client, "stored")
    assert parent.info.run_name == "dlbench run 1: two frameworks" and parent.info.status == "FINISHED"
    assert parent.data.tags["dlbench.run_id"] == "1" and parent.data.tags["dlbench.version"] == "0.1.0"
    assert parent.data.tags["dlbench.machine"] == "testhost: Test CPU, 2 logical cores"
    assert parent.data.params["protocol.trials"] == str(BLOCKS)

    report = json.loads(cli("report", "--format", "json", "--db", verdict_db))
    labels = {c["case"]["framework"]: c["label"] for c in report["cases"]}
    assert sorted(children) == sorted(labels.values())
    (verdict,) = [c for c in report["comparisons"] if c["metric"] == "train time"]
    assert verdict["verdict"] in ("faster", "slower")  # the design reaches a verdict
    for framework in ("torch", "jax"):
        run = children[labels[framework]]
        p = run.data.params
        assert p["case.framework"] == framework and p["case.variant"] == CASES[framework]["variant"]
        assert p["case.batch_size"] == "32" and p["protocol.repeats"] == str(REPEATS)
        assert run.data.tags["dlbench.run_id"] == "1"
        other = "jax_jit" if framework == "torch" else "torch_eager"
        tag = run.data.tags[f"verdict.train time vs {other}"]
        # The report's own verdict, ratio and p, as `report --format json` states them.
        assert tag.startswith(f"{verdict['a']} vs {verdict['b']}: {verdict['verdict']} ")
        assert f"ratio {verdict['a']}/{verdict['b']} {verdict['ratio']:.4g}" in tag and f"p {verdict['p']:.3g}" in tag
        # Every measured repeat a step, in order, warm-ups left out; the stored values exactly.
        times = client.get_metric_history(run.info.run_id, "train.time.per_repeat")
        expected = [TRAIN[framework] * (1 + 0.01 * b + 0.001 * r) for b in range(BLOCKS) for r in range(REPEATS)]
        assert [m.step for m in times] == list(range(BLOCKS * REPEATS))
        assert [m.value for m in times] == pytest.approx(expected, rel=1e-12)
        # Per-epoch loss: the epoch is the step, one value per measured repeat at each.
        loss = client.get_metric_history(run.info.run_id, "train.loss.per_repeat")
        by_epoch = {e: sorted(m.value for m in loss if m.step == e) for e in range(EPOCHS)}
        assert sorted({m.step for m in loss}) == list(range(EPOCHS))
        for e in range(EPOCHS):
            want = sorted(2.0 - 0.5 * e - 0.01 * b for b in range(BLOCKS) for _ in range(REPEATS))
            assert by_epoch[e] == pytest.approx(want, rel=1e-12)
    # Artifacts: the HTML and JSON reports and the figures (PNG and SVG), on the parent run.
    top = {a.path: a.is_dir for a in client.list_artifacts(parent.info.run_id)}
    assert top == {"figures": True, "report.html": False, "report.json": False}
    figures = [a.path for a in client.list_artifacts(parent.info.run_id, "figures")]
    assert any(f.endswith(".png") for f in figures) and any(f.endswith(".svg") for f in figures)
    assert any("train_time" in f for f in figures), figures
    got = Path(client.download_artifacts(parent.info.run_id, "report.json", str(tmp_path)))
    assert json.loads(got.read_text())["comparisons"] == report["comparisons"]
    html = Path(client.download_artifacts(parent.info.run_id, "report.html", str(tmp_path))).read_text()
    assert "dlbench run 1: two frameworks" in html


def test_the_runs_table_shows_each_cases_median_its_spread_and_the_stored_times(server, verdict_db, cli):
    """The value MLflow shows for each metric (its latest) is the report's median, computed here by
    hand from the stored values: one median per trial over its measured repeats, the median of those
    six; the quartiles, extremes, count and 95% interval of that sample beside it; train.loss a curve
    of the per-epoch medians whose last point is the median of every repeat's final loss. The runs'
    start and end times are the store's, not the time of logging."""
    time.sleep(0.05)  # logged visibly after the run was stored: a time of logging would differ
    cli("mlflow-log", "--db", verdict_db, "--mlflow", server, "--experiment", "medians")
    client = MlflowClient(tracking_uri=server)
    parent, children = _runs(client, "medians")
    report = json.loads(cli("report", "--format", "json", "--db", verdict_db))
    with Store(verdict_db, readonly=True) as store:
        run, trials, rows = store.run(1), store.trials(1), store.measurements(1, latency=False)
    assert (parent.info.start_time, parent.info.end_time) == (_ms(run.started_at), _ms(run.finished_at))
    for case in report["cases"]:
        key = case["case_key"]
        child = client.get_run(children[case["label"]].info.run_id)  # get_run: the latest value of each metric
        ran = [t for t in trials if t.case_key == key]
        assert child.info.start_time == min(_ms(t.started_at) for t in ran)
        assert child.info.end_time == max(_ms(t.finished_at) for t in ran)
        assert child.data.tags["dlbench.sample"] == "one median per trial"
        mine = [m for m in rows if m.case_key == key and not m.warmup]
        # train.time by hand: each trial's median over its repeats, then their median.
        per_trial = {}
        for m in mine:
            if m.metric == "time":
                per_trial.setdefault(m.trial_id, []).append(m.value)
        sample = sorted(statistics.median(v) for v in per_trial.values())
        q1, _, q3 = statistics.quantiles(sample, n=4, method="inclusive")  # numpy's default (type 7)
        want = {
            "train.time": statistics.median(sample),
            "train.time.q1": q1,
            "train.time.q3": q3,
            "train.time.min": sample[0],
            "train.time.max": sample[-1],
            "train.time.n": len(sample),
            # Six values: the widest order-statistic pair, [min, max], covers 1 - 2/2^6 >= 95%.
            "train.time.ci95_low": sample[0],
            "train.time.ci95_high": sample[-1],
        }
        got = {k: child.data.metrics[k] for k in want}
        assert got == pytest.approx(want, rel=1e-12), (got, want)
        (stated,) = [x for x in case["metrics"] if (x["phase"], x["metric"]) == ("train", "time")]
        assert got["train.time"] == pytest.approx(stated["median"], rel=1e-12)  # the report's median
        assert stated["median_ci"]["low"] == got["train.time.ci95_low"]
        # Each summary key holds one value, so the latest is that value and no repeat's.
        assert len(client.get_metric_history(child.info.run_id, "train.time")) == 1
        # train.loss by hand: the median over the repeats at each epoch; the last, every repeat's final loss.
        at = {e: [m.value for m in mine if m.metric == "loss" and m.seq == e] for e in range(EPOCHS)}
        finals = at[EPOCHS - 1]
        curve = client.get_metric_history(child.info.run_id, "train.loss")
        assert [m.step for m in curve] == list(range(EPOCHS))
        assert [m.value for m in curve] == pytest.approx([statistics.median(at[e]) for e in range(EPOCHS)], rel=1e-12)
        assert child.data.metrics["train.loss"] == pytest.approx(statistics.median(finals), rel=1e-12)
        assert child.data.metrics["train.loss.min"] == pytest.approx(min(finals), rel=1e-12)
        assert child.data.metrics["train.loss.max"] == pytest.approx(max(finals), rel=1e-12)
        assert child.data.metrics["train.loss.n"] == len(finals) == BLOCKS * REPEATS


def test_a_second_log_of_a_run_is_refused_and_replace_replaces_it(server, verdict_db, cli, tmp_path):
    """Logged once per experiment: a second mlflow-log of the same dlbench run is one line naming the
    MLflow run that holds it, exit 1, nothing sent; --replace logs it anew and deletes the earlier
    parent and its nested runs. Another store's run 1 (another run, the same id) is no duplicate."""
    flags = ("--db", verdict_db, "--mlflow", server, "--experiment", "twice")
    cli("mlflow-log", *flags)
    client = MlflowClient(tracking_uri=server)
    first, first_children = _runs(client, "twice")
    experiment_id = first.info.experiment_id

    result = cli.result("mlflow-log", *flags)
    assert result.exit_code == 1, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(
        f"mlflow: not logged: run 1 is already logged to experiment 'twice' as MLflow run {first.info.run_id} "
        f"({server}/#/experiments/{experiment_id}/runs/{first.info.run_id}); to replace it: dlbench mlflow-log "
        f"--run 1 --db {verdict_db} --mlflow {server} --experiment twice --replace"
    ), lines[0]
    assert len(client.search_runs([experiment_id])) == 1 + len(first_children)  # nothing sent

    out = cli("mlflow-log", *flags, "--replace")
    assert f"to experiment 'twice', replacing MLflow run {first.info.run_id} (deleted): " in out, out
    second, second_children = _runs(client, "twice")
    assert second.info.run_id != first.info.run_id and sorted(second_children) == sorted(first_children)
    assert second.data.tags["dlbench.run_id"] == "1"
    for old in [first, *first_children.values()]:
        assert client.get_run(old.info.run_id).info.lifecycle_stage == "deleted"

    other = _verdict_store(tmp_path / "other.db")  # run 1 of another store: another start time
    assert "mlflow: logged run 1 " in cli("mlflow-log", "--db", other, "--mlflow", server, "--experiment", "twice")
    parents = [r for r in client.search_runs([experiment_id]) if "mlflow.parentRunId" not in r.data.tags]
    assert len(parents) == 2


def test_a_log_that_fails_half_way_leaves_nothing_that_refuses_the_next(server, verdict_db, cli, monkeypatch):
    """The server refuses the artifacts after the cases were sent: one line, exit 1, and what was
    created is deleted, so that logging the run again is not refused for half a log."""

    def refused(self, *args, **kwargs):
        raise RuntimeError("artifact store refused the upload")

    flags = ("mlflow-log", "--db", verdict_db, "--mlflow", server, "--experiment", "half")
    with monkeypatch.context() as patch:
        patch.setattr(MlflowClient, "log_artifacts", refused)
        result = cli.result(*flags)
    assert result.exit_code == 1, result.output
    assert "RuntimeError: artifact store refused the upload" in result.stderr, result.stderr
    client = MlflowClient(tracking_uri=server)
    experiment_id = client.get_experiment_by_name("half").experiment_id
    assert client.search_runs([experiment_id]) == []
    assert "mlflow: logged run 1 (2 cases, " in cli(*flags)
    _runs(client, "half")


def test_mlflows_own_variables_are_used_where_no_flag_is_given(server, verdict_db, cli, monkeypatch):
    """MLFLOW_TRACKING_URI and MLFLOW_EXPERIMENT_NAME: mlflow-log takes them over the run's [mlflow]
    table; --mlflow and --experiment win over them; without a URI anywhere, one line names both."""
    from dlbench.cli.running import mlflow_settings
    from dlbench.protocol_settings import MlflowSettings

    client = MlflowClient(tracking_uri=server)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", server)
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "from the environment")
    out = cli("mlflow-log", "--db", verdict_db)
    assert "to experiment 'from the environment'" in out and server in out, out
    parent, _ = _runs(client, "from the environment")
    assert parent.data.tags["dlbench.run_id"] == "1"

    closed = f"http://127.0.0.1:{_free_port()}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", closed)
    out = cli("mlflow-log", "--db", verdict_db, "--mlflow", server, "--experiment", "the flags win")
    assert "to experiment 'the flags win'" in out, out
    _runs(client, "the flags win")

    # run and study run: the variables say where, over the table; logging stays switched on by
    # --mlflow or the table's uri, and the flag wins.
    monkeypatch.setenv("MLFLOW_TRACKING_URI", server)
    assert mlflow_settings(MlflowSettings(), None).uri == ""
    table = MlflowSettings(uri=closed, experiment="table")
    assert mlflow_settings(table, None) == MlflowSettings(uri=server, experiment="from the environment")
    assert mlflow_settings(table, closed).uri == closed

    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:1/\x07")
    line = cli.error_line("mlflow-log", "--db", verdict_db)
    assert line.startswith("error: MLFLOW_TRACKING_URI: uri = "), line
    monkeypatch.delenv("MLFLOW_TRACKING_URI")
    line = cli.error_line("mlflow-log", "--db", verdict_db)
    assert line == "error: run 1: no MLflow tracking URI: give --mlflow URI or set MLFLOW_TRACKING_URI", line


def test_run_logs_where_mlflows_variables_say(server, cli, tmp_path, monkeypatch):
    """`dlbench run` with an [mlflow] table: MLFLOW_TRACKING_URI and MLFLOW_EXPERIMENT_NAME go over
    the table's uri (here a port where nothing listens) and experiment."""
    experiment = tmp_path / "e.toml"
    experiment.write_text(
        '[matrix]\nframework = "numpy"\nmodel = "mlp"\ndataset = "digits"\n'
        '[protocol]\nepochs = 1\nrepeats = 1\nwarmup = 0\ntrials = 1\nsamplers = "none"\n'
        "train_samples = 128\ntest_samples = 64\n"
        f'[mlflow]\nuri = "http://127.0.0.1:{_free_port()}"\nexperiment = "table"\n'
    )
    monkeypatch.setenv("MLFLOW_TRACKING_URI", server)
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "run from the environment")
    out = cli("run", experiment, "--db", tmp_path / "r.db")
    assert "mlflow: logged run 1 (1 cases, " in out and "experiment 'run from the environment'" in out, out
    parent, _ = _runs(MlflowClient(tracking_uri=server), "run from the environment")
    assert parent.info.status == "FINISHED"


def test_run_logs_per_its_mlflow_table_and_an_unreachable_server_leaves_the_run_alone(server, cli, stored, tmp_path):
    db = tmp_path / "r.db"
    experiment = tmp_path / "e.toml"
    experiment.write_text(
        '[matrix]\nframework = "numpy"\nmodel = "mlp"\ndataset = "digits"\n'
        f'[protocol]\nepochs = {EPOCHS}\nrepeats = 1\nwarmup = 0\ntrials = 1\nsamplers = "none"\n'
        "train_samples = 128\ntest_samples = 64\n"
        f'[mlflow]\nuri = "{server}"\nexperiment = "from the table"\nrun_name = "table run"\n'
    )
    out = cli("run", experiment, "--db", db)
    assert "mlflow: logged run 1 (1 cases, " in out and "experiment 'from the table'" in out, out
    client = MlflowClient(tracking_uri=server)
    parent, children = _runs(client, "from the table")
    (child,) = children.values()
    assert parent.info.run_name == "table run" and parent.data.tags["dlbench.run_id"] == "1"
    assert child.data.params["case.framework"] == "numpy" and child.data.params["protocol.epochs"] == str(EPOCHS)
    loss = client.get_metric_history(child.info.run_id, "train.loss")
    assert [m.step for m in loss] == list(range(EPOCHS))
    with Store(db) as store:
        losses = [m.value for m in store.measurements(1) if m.metric == "loss" and not m.warmup]
    # One repeat: the curve's median at each epoch is that repeat's loss, as stored.
    assert [m.value for m in loss] == pytest.approx(losses, rel=1e-12)
    each = client.get_metric_history(child.info.run_id, "train.loss.per_repeat")
    assert [m.value for m in each] == pytest.approx(losses, rel=1e-12)

    # --mlflow over the table's uri, where nothing listens: one line on stderr, exit 0, the run stored.
    closed = f"http://127.0.0.1:{_free_port()}"
    started = time.monotonic()
    result = cli.result("run", experiment, "--db", db, "--mlflow", closed)
    assert result.exit_code == 0, result.output
    assert time.monotonic() - started < 120
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"mlflow: not logged: cannot reach the MLflow tracking server at {closed}")
    assert f"dlbench mlflow-log --run 2 --db {db} --mlflow {closed}" in lines[0]
    run, trials = stored(db, 2)
    assert run["status"] == "finished" and [t["status"] for t in trials] == ["ok"]
    assert len(client.search_runs([parent.info.experiment_id])) == 2  # nothing more reached the server


def test_without_mlflow_the_flag_is_one_line_naming_the_extra(tmp_path):
    """mlflow hidden from the interpreter: --mlflow is refused before anything runs or is stored."""
    db = tmp_path / "none.db"
    argv = ["dlbench", "run", "--framework", "numpy", "--db", str(db), "--mlflow", "http://127.0.0.1:1"]
    code = f"import sys; sys.modules['mlflow'] = None; from dlbench.cli import main; sys.argv = {argv!r}; main()"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "pip install 'dlbench[mlflow]'" in lines[0], result.stderr
    assert lines[0].startswith("error: --mlflow: MLflow logging needs the mlflow extra")
    assert not db.exists()


def test_the_mlflow_table_is_checked_and_written_back():
    from dlbench import config, config_toml

    exp = config.parse('[matrix]\nframework = "numpy"\n[mlflow]\nuri = "http://127.0.0.1:5000"\nexperiment = "e"\n')
    assert (exp.mlflow.uri, exp.mlflow.experiment, exp.mlflow.run_name) == ("http://127.0.0.1:5000", "e", "")
    assert config.parse(config_toml.to_toml(exp)).mlflow == exp.mlflow
    with pytest.raises(config.ConfigError, match=r"\[mlflow\]: unknown key 'url'; allowed keys: uri, experiment"):
        config.parse('[mlflow]\nurl = "http://x"\n')
    with pytest.raises(config.ConfigError, match=r"\[mlflow\]: experiment = '': must be a non-empty string"):
        config.parse('[mlflow]\nexperiment = ""\n')


@pytest.mark.parametrize(
    "uri",
    [
        "sqlite:///{rel}",  # relative to the working directory
        "sqlite:////{abs}",
        "sqlite:////{abs}-wal",
        "{abs}-journal",  # a plain path: MLflow's file store
        "file://{abs}",
    ],
)
def test_a_tracking_uri_into_the_results_database_is_refused_before_anything_runs(tmp_path, uri, monkeypatch):
    """MLflow creates its tables wherever its URI points: never inside dlbench's database."""
    from typer.testing import CliRunner

    from dlbench.cli import app

    monkeypatch.chdir(tmp_path)
    db = tmp_path / "r.db"
    given = uri.format(rel="r.db", abs=str(db).lstrip("/") if uri.startswith("sqlite:////") else str(db))
    flags = ["--framework", "numpy", "--model", "mlp", "--trials", "1", "--repeats", "1", "--epochs", "1"]
    result = CliRunner().invoke(app, ["run", *flags, "--db", str(db), "--mlflow", given])
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert f"the MLflow tracking URI {given} points at the results database" in said
    assert not db.exists()


def test_mlflow_elsewhere_is_not_refused(tmp_path):
    from dlbench.tracking.mlflow_log import refuse_results_file

    db = tmp_path / "r.db"
    for uri in (f"sqlite:///{tmp_path / 'mlflow.db'}", "http://127.0.0.1:5000", str(tmp_path / "mlruns")):
        refuse_results_file(uri, db)  # no error
    refuse_results_file("postgresql://u@h/mlflow", "postgresql://u@h/results")
    with pytest.raises(Exception, match="is the results database"):
        refuse_results_file("postgresql://u@h/results", "postgresql://u@h/results")


def test_a_server_that_trickles_its_answer_is_abandoned_at_the_deadline(verdict_db, tmp_path):
    """A server on 127.0.0.1 that accepts, then sends a byte a second and never finishes:
    each read is within the client's timeout, the whole request never ends. mlflow-log
    returns at the deadline with one line, the run untouched."""
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]
    stop = threading.Event()

    def trickle(conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
                while not stop.is_set():
                    conn.sendall(b" ")
                    time.sleep(0.5)
            except OSError:
                pass

    def serve() -> None:
        listener.settimeout(0.5)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            threading.Thread(target=trickle, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    env = {**os.environ, "DLBENCH_MLFLOW_DEADLINE": "6"}
    uri = f"http://127.0.0.1:{port}"
    started = time.monotonic()
    try:
        result = subprocess.run(
            [sys.executable, "-m", "dlbench", "mlflow-log", "--run", "1", "--db", str(verdict_db), "--mlflow", uri],
            capture_output=True, text=True, timeout=120, env=env,
        )  # fmt: skip
    finally:
        stop.set()
        listener.close()
    took = time.monotonic() - started
    assert result.returncode != 0 and took < 60, (took, result.stdout, result.stderr)
    said = " ".join(result.stderr.split())
    assert f"the MLflow tracking server at {uri} gave no complete answer within 6 s" in said, said
    with Store(verdict_db, readonly=True) as store:
        assert store.run(1).status == "finished"
