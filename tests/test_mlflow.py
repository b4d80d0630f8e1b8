"""MLflow tracking (dlbench.tracking.mlflow_log, docs/mlflow.md) against a real `mlflow server`
started here on 127.0.0.1 (a free port, an SQLite backend store and a local artifact folder),
everything read back through MlflowClient: the parent run and its nested case runs, their
params, metric histories (steps), tags (the report's verdicts) and artifacts. Also: a server
that cannot be reached is one line and leaves the run, its store and its exit status alone;
without mlflow installed, --mlflow is one line naming the extra."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
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
    path = tmp_path_factory.mktemp("mlflow-db") / "v.db"
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
        times = client.get_metric_history(run.info.run_id, "train.time")
        expected = [TRAIN[framework] * (1 + 0.01 * b + 0.001 * r) for b in range(BLOCKS) for r in range(REPEATS)]
        assert [m.step for m in times] == list(range(BLOCKS * REPEATS))
        assert [m.value for m in times] == pytest.approx(expected, rel=1e-12)
        # Per-epoch loss: the epoch is the step, one value per measured repeat at each.
        loss = client.get_metric_history(run.info.run_id, "train.loss")
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
    assert [m.value for m in loss] == pytest.approx(losses, rel=1e-12)

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
