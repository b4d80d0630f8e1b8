"""Log a stored dlbench run to an MLflow tracking server: one parent MLflow run per dlbench
run, one nested MLflow run per case.

- parent run: tags dlbench.run_id, dlbench.version, dlbench.machine (and the run's name and
  status); params the resolved protocol; artifacts the HTML report, the JSON report and every
  figure, rendered by dlbench's own report functions into a temporary folder.
- one nested run per case: params the case's factors (`case.<factor>`) and the resolved
  protocol (`protocol.<setting>`); metrics every measured value, keyed `<phase>.<metric>`
  (train.time, infer.time, accuracy.accuracy, ...): values measured once per repeat take the
  repeat's place in the case (0, 1, 2, ... trial after trial) as their step, values stored
  per epoch (train.loss) take the epoch (0 = the first) as their step, one value per measured
  repeat at each step; tags the dlbench run id and one `verdict.<metric> vs <other>` per
  comparison that involves the case, worded from the report's own analysis
  (report.model.build_report), never computed here.

Warm-up repeats, the per-call latency rows and the trials that did not end ok are left out,
as the report leaves them out of its statistics. mlflow is imported inside log_run only:
dlbench works without it, and `--mlflow` without it is one line naming the extra.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

from dlbench.protocol_settings import MlflowSettings

EXTRA = "pip install 'dlbench[mlflow]'"
# MLflow's limits per log_batch call and on one param value (mlflow.utils.validation).
_BATCH_METRICS, _BATCH_PARAMS, _BATCH_TAGS = 1000, 100, 100
_PARAM_CHARS = 6000
_TAG_KEY = re.compile(r"[^\w./ -]")  # characters MLflow refuses in a key are replaced by '_'
# The client's own default retries an unreachable server with backoff for minutes: a run
# that finished is told in seconds whether it was logged (a user's own settings win).
# The client also prints "View run ... at: URL" on standard output for each run ended; dlbench
# says where the parent run is in one line of its own.
_CLIENT_ENV = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "30",
    "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",
}
_CONNECT_TIMEOUT_S = 5.0
# The whole logging of one run, every request in it, must end within this many seconds
# ($DLBENCH_MLFLOW_DEADLINE overrides): the client's timeout bounds the wait for each
# chunk, so a server that trickles a byte now and then kept `run` from returning at all.
# Past the deadline the logging is abandoned (its thread is left to the process's exit)
# and the line says so; the run is stored before logging starts.
DEADLINE_S = 120.0


class TrackingError(RuntimeError):
    """Logging did not happen (client missing, server unreachable, refused): one line. The
    dlbench run and its store are never touched by it."""


@dataclass
class Logged:
    """What log_run sent: the parent MLflow run and one nested run per case key."""

    experiment_id: str
    parent_run_id: str
    case_runs: dict[str, str] = field(default_factory=dict)  # case_key -> MLflow run id
    artifacts: list[str] = field(default_factory=list)  # paths relative to the parent's artifact root


def installed() -> bool:
    """mlflow (or mlflow-skinny) can be imported here; nothing is imported to find out."""
    import importlib.util

    try:
        return importlib.util.find_spec("mlflow") is not None
    except (ImportError, ValueError, AttributeError):  # a module set to None or without a spec
        return False


def require_installed(where: str) -> None:
    """One TrackingError naming `where` (the flag or key) and the extra when mlflow is missing."""
    if not installed():
        raise TrackingError(f"{where}: MLflow logging needs the mlflow extra, which is not installed: {EXTRA}")


# SQLite's files beside a database: another tool writing any of them writes into it.
_SIBLINGS = ("", "-wal", "-shm", "-journal")


def _uri_path(uri: str) -> Path | None:
    """The local file or folder a tracking URI writes to: sqlite:///rel.db, sqlite:////abs.db,
    file:///abs/folder, or a plain path (MLflow's file store); None for a server."""
    parts = urlsplit(uri)
    if parts.scheme == "sqlite":
        rest = uri.split("://", 1)[1] if "://" in uri else uri[len("sqlite:") :]
        rest = rest[1:] if rest.startswith("/") else rest  # sqlite:///x.db: x.db; sqlite:////a/x.db: /a/x.db
        return Path(rest.split("?", 1)[0]) if rest else None
    if parts.scheme == "file":
        return Path(parts.path) if parts.path else None
    if parts.scheme == "" or len(parts.scheme) == 1:  # a path (a Windows drive letter reads as a scheme)
        return Path(uri)
    return None


def refuse_results_file(uri: str, db: str | Path) -> None:
    """A TrackingError when the tracking URI would write into the results database `db` (its
    file or a SQLite sibling: -wal, -shm, -journal), or names the same database server URL:
    MLflow creates its own tables wherever its URI points, and dlbench's database is never
    another tool's to write."""
    text = str(db)
    if "://" in text:  # a PostgreSQL results store: the same URL is the same database
        if uri.split("?", 1)[0].rstrip("/") == text.split("?", 1)[0].rstrip("/"):
            raise TrackingError(f"the MLflow tracking URI {uri} is the results database {text}: give MLflow its own")
        return
    target = _uri_path(uri)
    if target is None:
        return
    results = Path(text).expanduser().resolve()
    where = target.expanduser().resolve()
    if any(where == results.with_name(results.name + sibling) for sibling in _SIBLINGS):
        raise TrackingError(
            f"the MLflow tracking URI {uri} points at the results database {results} (or its SQLite files): MLflow "
            "would write its tables into it; give MLflow a file or server of its own, e.g. sqlite:///mlflow.db"
        )


def _check_reachable(uri: str) -> None:
    """A TCP connection to an http(s) tracking URI's host and port, within seconds: the one
    line says the server cannot be reached instead of a client traceback after retries."""
    parts = urlsplit(uri)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname, port), timeout=_CONNECT_TIMEOUT_S):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise TrackingError(f"cannot reach the MLflow tracking server at {uri} ({reason})") from None


@contextmanager
def _client_settings() -> Iterator[None]:
    added = [name for name in _CLIENT_ENV if name not in os.environ]
    for name in added:
        os.environ[name] = _CLIENT_ENV[name]
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


def _key(text: str) -> str:
    return _TAG_KEY.sub("_", text)[:250]


def _text(value: Any) -> str:
    import json

    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text[:_PARAM_CHARS]


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _number(x: float) -> str:
    return f"{x:.4g}" if x is not None and math.isfinite(x) else "n/a"


def verdict_tags(report: Any, case: Mapping[str, Any]) -> dict[str, str]:
    """`verdict.<metric> vs <other>` -> the report's verdict for each comparison of `case`
    (report.pairs, the analysis the report states), worded with the ratio a/b, its interval and p."""
    from dlbench.analysis.comparisons import set_label
    from dlbench.cases import case_label

    name, where = case_label(case, setting=False), set_label(dict(case))
    tags: dict[str, str] = {}
    for pair in report.pairs:
        if pair.set_label != where or name not in (pair.a, pair.b):
            continue
        c = pair.comparison
        other = pair.b if name == pair.a else pair.a
        lo, hi = c.ratio_ci
        tags[_key(f"verdict.{pair.metric} vs {other}")] = (
            f"{pair.a} vs {pair.b}: {c.verdict} (ratio {pair.a}/{pair.b} {_number(c.ratio)}, "
            f"95% CI [{_number(lo)}, {_number(hi)}], p {_number(c.p)}, band ±{c.band:g}, alpha {c.alpha:g})"
        )
    return tags


def case_metrics(rows: list[Any], ok_trials: set[int]) -> dict[str, dict[str, list[tuple[int, float]]]]:
    """case_key -> metric key -> [(step, value)] in the order measured, warm-ups and the
    trials that did not end ok left out. A value stored with a sequence number (train.loss:
    the epoch) takes it as its step; any other takes its place among the case's values."""
    out: dict[str, dict[str, list[tuple[int, float]]]] = {}
    for r in sorted(rows, key=lambda r: (r.block, r.trial_id, r.repeat if r.repeat is not None else -1, r.id)):
        if r.warmup or r.trial_id not in ok_trials or r.value is None or not math.isfinite(r.value):
            continue
        series = out.setdefault(r.case_key, {}).setdefault(f"{r.phase}.{r.metric}", [])
        series.append((r.seq if r.seq is not None else len(series), float(r.value)))
    return out


def _render_artifacts(store: Any, run_id: int, folder: Path) -> None:
    """The HTML report (figures inlined), the JSON report and every figure (PNG and SVG),
    written by dlbench's report functions, as `dlbench report` writes them."""
    from dlbench.report.formats import render
    from dlbench.report.plots import make_figures

    (folder / "report.html").write_text(render(store, run_id, "html"), encoding="utf-8")
    (folder / "report.json").write_text(render(store, run_id, "json"), encoding="utf-8")
    make_figures(store, run_id, folder / "figures")


def log_run(
    store: Any,
    run_id: int,
    settings: MlflowSettings,
    on_step: Callable[[str], None] | None = None,
) -> Logged:
    """Log stored run `run_id` to settings.uri under settings.experiment, every request within
    deadline_s() in all. Raises TrackingError (one line) when mlflow is missing, the server
    cannot be reached, refuses a request or gives no complete answer within the deadline."""
    require_installed("--mlflow")
    if not settings.uri:
        raise TrackingError("no MLflow tracking URI: give --mlflow URI or uri in the [mlflow] table")
    _check_reachable(settings.uri)
    say = on_step or (lambda _line: None)
    deadline = deadline_s()
    # The store is read here, in this thread (SQLite connections belong to their thread);
    # only the requests run in the worker thread that the deadline can abandon.
    with _client_settings():
        try:
            prepared = _prepare(store, run_id)
        except Exception as exc:  # the report or a figure of this run could not be made
            first = (str(exc).strip().splitlines() or [""])[0][:300]
            raise TrackingError(
                f"not logged to MLflow: preparing run {run_id}: {type(exc).__name__}: {first}"
            ) from None
        outcome: dict[str, Any] = {}

        def work() -> None:
            try:
                outcome["logged"] = _log(prepared, run_id, settings, say)
            except BaseException as exc:  # handed to the caller's thread below
                outcome["error"] = exc

        worker = threading.Thread(target=work, name="dlbench-mlflow", daemon=True)
        worker.start()
        worker.join(deadline)
    if not worker.is_alive():  # an abandoned worker may still read its artifacts: left to /tmp
        shutil.rmtree(prepared.artifacts, ignore_errors=True)
    if worker.is_alive():
        raise TrackingError(
            f"the MLflow tracking server at {settings.uri} gave no complete answer within {deadline:g} s "
            "(DLBENCH_MLFLOW_DEADLINE); logging abandoned"
        )
    failure = outcome.get("error")
    if failure is None:
        return cast(Logged, outcome["logged"])
    if isinstance(failure, TrackingError):
        raise failure
    first = (str(failure).strip().splitlines() or [""])[0][:300]
    raise TrackingError(f"logging to MLflow at {settings.uri} failed: {type(failure).__name__}: {first}") from None


def deadline_s() -> float:
    """DEADLINE_S, or $DLBENCH_MLFLOW_DEADLINE when it is a positive number of seconds."""
    given = os.environ.get("DLBENCH_MLFLOW_DEADLINE", "")
    try:
        value = float(given)
    except ValueError:
        return DEADLINE_S
    return value if math.isfinite(value) and value > 0 else DEADLINE_S


@dataclass
class _Prepared:
    """Everything logging sends, read from the store in the caller's thread (a SQLite
    connection belongs to the thread that opened it): the requests then need no store."""

    row: Any
    report: Any
    cases: dict[str, dict[str, Any]]
    metrics: dict[str, dict[str, list[tuple[int, float]]]]
    protocol: dict[str, Any]
    artifacts: Path  # the HTML and JSON reports and the figures, rendered into a temporary folder


def _prepare(store: Any, run_id: int) -> _Prepared:
    from dlbench.report.model import build_report

    row = store.run(run_id)
    trials = store.trials(run_id)
    rows = store.measurements(run_id, latency=False)
    report = build_report(store, run_id)
    protocol = dict(row.experiment.get("protocol", {}) or {})
    cases: dict[str, dict[str, Any]] = {}
    for t in sorted(trials, key=lambda t: (t.block, t.position)):
        cases.setdefault(t.case_key, dict(t.case))
    metrics = case_metrics(rows, {t.id for t in trials if t.status == "ok"})
    folder = Path(tempfile.mkdtemp(prefix="dlbench-mlflow-"))
    _render_artifacts(store, run_id, folder)
    return _Prepared(row, report, cases, metrics, protocol, folder)


def _log(prepared: _Prepared, run_id: int, settings: MlflowSettings, say: Callable[[str], None]) -> Logged:
    from mlflow.tracking import MlflowClient

    from dlbench.report.plots import machine_words

    row = prepared.row
    client = MlflowClient(tracking_uri=settings.uri)
    found = client.get_experiment_by_name(settings.experiment)
    experiment_id = found.experiment_id if found is not None else client.create_experiment(settings.experiment)
    common = {
        "dlbench.run_id": str(run_id),
        "dlbench.version": str(row.dlbench_version or ""),
        "dlbench.machine": machine_words(row.environment) or "",
    }
    parent = client.create_run(
        experiment_id,
        run_name=settings.run_name or f"dlbench run {run_id}: {row.name}"[:250],
        tags={**common, "dlbench.run_name": row.name, "dlbench.status": row.status},
    )
    logged = Logged(experiment_id, parent.info.run_id)
    try:
        _log_cases(client, prepared, common, logged, say)
    except Exception:
        # A parent left RUNNING would read as a run still going: it is marked FAILED if the server still answers.
        try:
            client.set_terminated(parent.info.run_id, "FAILED")
        except Exception:
            pass
        raise
    return logged


def _log_cases(
    client: Any, prepared: _Prepared, common: dict[str, str], logged: Logged, say: Callable[[str], None]
) -> None:
    """The parent's params and artifacts, and one nested run per case (see the module's docstring)."""
    from mlflow.entities import Metric, Param

    from dlbench.cases import case_label

    experiment_id, parent_id = logged.experiment_id, logged.parent_run_id
    now = int(time.time() * 1000)
    protocol_params = [
        Param(_key(f"protocol.{k}"), _text(v)) for k, v in sorted(prepared.protocol.items()) if v is not None
    ]
    for chunk in _chunks(protocol_params, _BATCH_PARAMS):
        client.log_batch(parent_id, params=chunk)
    for key, case in prepared.cases.items():
        label = case_label(case)
        child = client.create_run(
            experiment_id,
            run_name=label[:250],
            tags={
                "mlflow.parentRunId": parent_id,
                **common,
                "dlbench.case_key": key,
                "dlbench.case": label,
                **verdict_tags(prepared.report, case),
            },
        )
        cid = child.info.run_id
        params = [Param(_key(f"case.{k}"), _text(v)) for k, v in sorted(case.items()) if v is not None]
        for chunk in _chunks(params + protocol_params, _BATCH_PARAMS):
            client.log_batch(cid, params=chunk)
        # One millisecond apart per value of a metric: MLflow keeps one of several values that share
        # a key, step, value and timestamp (two repeats with the same loss at an epoch would be one).
        values = [
            Metric(name, value, now + i, step)
            for name, series in prepared.metrics.get(key, {}).items()
            for i, (step, value) in enumerate(series)
        ]
        for chunk in _chunks(values, _BATCH_METRICS):
            client.log_batch(cid, metrics=chunk)
        client.set_terminated(cid)
        logged.case_runs[key] = cid
        say(f"case {label}: {len(values)} values")
    folder = prepared.artifacts
    client.log_artifacts(parent_id, str(folder))
    logged.artifacts = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    client.set_terminated(parent_id, "FINISHED" if prepared.row.status == "finished" else "FAILED")


def run_url(settings: MlflowSettings, logged: Logged) -> str:
    """Where the parent run shows in the MLflow UI (an http(s) server), else its run id."""
    base = settings.uri.rstrip("/")
    if urlsplit(base).scheme in ("http", "https"):
        return f"{base}/#/experiments/{logged.experiment_id}/runs/{logged.parent_run_id}"
    return f"MLflow run {logged.parent_run_id}"
