"""Log a stored dlbench run to an MLflow tracking server: one parent MLflow run per dlbench
run, one nested MLflow run per case.

- parent run: tags dlbench.run_id, dlbench.run_started_at, dlbench.version, dlbench.machine
  (and the run's name and status); params the resolved protocol; artifacts the HTML report,
  the JSON report and every figure, rendered by dlbench's own report functions into a
  temporary folder; its start and end time the dlbench run's own (the store's started_at and
  finished_at), not the time it was logged.
- one nested run per case, from its first trial's start to its last trial's end: params the
  case's factors (`case.<factor>`) and the resolved protocol (`protocol.<setting>`); metrics
  per measured `<phase>.<metric>` (train.time, infer.time, accuracy.accuracy, ...), the
  numbers the report states, by its own functions (summary_points):
  `<phase>.<metric>` is the median of the sample the report's summary describes
  (dlbench.analysis.summary: one median per trial with 2+ trials, else the one trial's
  repeats), `.q1`, `.q3`, `.min`, `.max` and `.n` that sample's, `.ci95_low`/`.ci95_high`
  the median's 95% interval (report.model.median_interval) where the sample reaches 95%. A
  value stored per epoch (train.loss, CURVES) is a curve instead: at each epoch the median
  over the measured repeats, at the last the median of each repeat's last value (the
  report's final loss), its spread over those last values. Each key holds one value per
  step, so the value MLflow shows for a run (the latest step's) is that median. Every measured
  value as stored goes to `<phase>.<metric>.per_repeat` (per_repeat_points): the repeat's
  place in the case (0, 1, 2, ... trial after trial) as its step, or the epoch for a value
  stored per epoch. Tags: the dlbench run id and one `verdict.<metric> vs <other>` per
  comparison that involves the case, worded from the report's own analysis
  (report.model.build_report).

A dlbench run is logged once per MLflow experiment: an earlier parent with the same
dlbench.run_id and dlbench.run_started_at tags (earlier_logs) makes log_run refuse
(AlreadyLogged, nothing sent) unless replace=True, which logs the run anew and then deletes
the earlier parent and its nested runs (MLflow's soft delete: restorable until `mlflow gc`).
A log that fails half-way deletes what it had created. Where to log: from_environment puts
MLflow's own MLFLOW_TRACKING_URI and MLFLOW_EXPERIMENT_NAME over the [mlflow] table, a
command-line flag goes over both.

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
    replaced: list[str] = field(default_factory=list)  # the earlier parents deleted (replace=True)


class AlreadyLogged(TrackingError):
    """The dlbench run is logged to this experiment already and replace was not asked for:
    nothing was sent. `runs`: the earlier parent MLflow run ids."""

    def __init__(self, run_id: int, experiment: str, experiment_id: str, runs: list[str]) -> None:
        self.run_id, self.experiment, self.experiment_id, self.runs = run_id, experiment, experiment_id, runs
        super().__init__(
            f"run {run_id} is already logged to experiment {experiment!r} as MLflow run {', '.join(runs)}: "
            "not logged again (replace it with --replace)"
        )


# MLflow's own variables for where a client logs: used when no flag names it, over the
# experiment file's [mlflow] table (docs/mlflow.md).
ENV_URI, ENV_EXPERIMENT = "MLFLOW_TRACKING_URI", "MLFLOW_EXPERIMENT_NAME"


def from_environment(base: MlflowSettings, uri: bool = True, experiment: bool = True) -> MlflowSettings:
    """`base` with $MLFLOW_TRACKING_URI (when `uri`) and $MLFLOW_EXPERIMENT_NAME (when
    `experiment`) over it, each where set and not empty: False where a flag gives the value,
    which wins. A bad value is a dlbench.config.ConfigError naming the variable."""
    from dlbench import config

    settings = base
    for wanted, name, key in ((uri, ENV_URI, "uri"), (experiment, ENV_EXPERIMENT, "experiment")):
        value = os.environ.get(name, "").strip()
        if wanted and value:
            settings = config.parse_mlflow(name, {key: value}, settings)
    return settings


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


# Values stored per point of training, their sequence number the epoch (or the step): logged
# as a curve. Other sequence numbers are no time axis (a rank: train.rank_step_time,
# comm.rank_share; a profiled call): those metrics are summarized like any other.
CURVES = frozenset({("train", "loss"), ("train", "loss_step"), ("tta", "accuracy")})
PER_REPEAT = ".per_repeat"  # the suffix of the key that holds every measured value as stored
SPREAD = ("q1", "q3", "min", "max")

# One metric value as MLflow takes it: key, value, timestamp (ms since the epoch), step.
Point = tuple[str, float, int, int]


def _ms(text: str | None) -> int | None:
    """A time as the store writes it (ISO 8601, UTC) in milliseconds since the epoch; None
    when none was recorded."""
    from datetime import UTC, datetime

    if not text:
        return None
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    return round((when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp() * 1000)


def run_span(row: Any, trials: list[Any]) -> tuple[int, int]:
    """(start, end) of the dlbench run in ms: the store's started_at and finished_at (a run
    never finished ends at its last trial's end)."""
    starts = [t for t in (_ms(x.started_at) for x in trials) if t is not None]
    ends = [t for t in (_ms(x.finished_at) for x in trials) if t is not None]
    start = _ms(row.started_at) or min(starts, default=None) or int(time.time() * 1000)
    end = _ms(row.finished_at) or max(ends, default=None) or max(starts, default=start)
    return start, max(start, end)


def case_spans(trials: list[Any], run: tuple[int, int]) -> dict[str, tuple[int, int]]:
    """case_key -> (start, end) in ms: its first trial's start and its last trial's end
    (the run's where none was recorded)."""
    found: dict[str, tuple[list[int], list[int]]] = {}
    for t in trials:
        starts, ends = found.setdefault(t.case_key, ([], []))
        if (at := _ms(t.started_at)) is not None:
            starts.append(at)
        if (at := _ms(t.finished_at)) is not None:
            ends.append(at)
    out = {}
    for key, (starts, ends) in found.items():
        start = min(starts, default=run[0])
        out[key] = (start, max(start, max(ends, default=max(starts, default=run[1]))))
    return out


def _measured(rows: list[Any], ok_trials: set[int]) -> Iterator[Any]:
    """The rows the report's statistics take: measured repeats of ok trials, finite values."""
    for r in rows:
        if not r.warmup and r.trial_id in ok_trials and r.value is not None and math.isfinite(r.value):
            yield r


def summary_points(report: Any, rows: list[Any], ok_trials: set[int], at: Mapping[str, int]) -> dict[str, list[Point]]:
    """case_key -> the summary metrics of each `<phase>.<metric>` (the module's docstring),
    timestamped `at[case_key]`: the report's own summary (report.summaries, report.median_cis)
    where it has the metric, else the same summary of the values (stored once per trial, not
    per repeat, which the report's summary tables leave out)."""
    from dlbench.analysis.stats import median_of, summary
    from dlbench.report.model import median_interval

    grouped: dict[str, dict[tuple[str, str], list[Any]]] = {}
    for r in _measured(rows, ok_trials):
        grouped.setdefault(r.case_key, {}).setdefault((r.phase, r.metric), []).append(r)
    stated = {s.case_key: s.stats for s in report.summaries}
    out: dict[str, list[Point]] = {}
    for case_key, metrics in grouped.items():
        ts = at.get(case_key, 0)
        points = out.setdefault(case_key, [])
        for (phase, metric), found in metrics.items():
            name = f"{phase}.{metric}"
            if (phase, metric) in CURVES:
                points += _curve(name, found, ts)
                continue
            st = stated.get(case_key, {}).get((phase, metric))
            if st is not None:
                ci = report.median_cis.get((case_key, phase, metric))
            else:
                per_trial: dict[int, list[float]] = {}
                for r in found:
                    per_trial.setdefault(r.trial_id, []).append(float(r.value))
                values = list(per_trial.values())
                sample = [median_of(v) for v in values] if len(values) >= 2 else values[0]
                st, ci = summary(sample), median_interval(sample)
            named = {"": st.median, **{f".{part}": getattr(st, part) for part in SPREAD}, ".n": st.n}
            if ci and ci.get("why") is None and ci.get("low") is not None and ci.get("high") is not None:
                level = f"ci{round(100 * ci['level'])}"  # ci95: the interval reaches its level
                named.update({f".{level}_low": ci["low"], f".{level}_high": ci["high"]})
            points += [(_key(name + suffix), float(value), ts, 0) for suffix, value in named.items()]
    return out


def _curve(name: str, rows: list[Any], ts: int) -> list[Point]:
    """A value stored per epoch: at each epoch the median over the measured repeats; at the
    last, the median of each repeat's last value (the report's final loss: the same where
    every repeat ran every epoch); the spread of those last values at that step."""
    from dlbench.analysis.stats import median_of, summary

    at_seq: dict[int, list[float]] = {}
    last: dict[tuple[int, Any], tuple[int, float]] = {}
    for r in rows:
        seq = r.seq if r.seq is not None else 0
        at_seq.setdefault(seq, []).append(float(r.value))
        if (r.trial_id, r.repeat) not in last or seq >= last[(r.trial_id, r.repeat)][0]:
            last[(r.trial_id, r.repeat)] = (seq, float(r.value))
    finals = [value for _, value in last.values()]
    final = max(at_seq)
    points = [(_key(name), median_of(at_seq[seq]), ts, seq) for seq in sorted(at_seq) if seq != final]
    st = summary(finals)
    named = {"": median_of(finals), **{f".{part}": getattr(st, part) for part in SPREAD}, ".n": st.n}
    return points + [(_key(name + suffix), float(value), ts, final) for suffix, value in named.items()]


def per_repeat_points(rows: list[Any], ok_trials: set[int], at: Mapping[int, int]) -> dict[str, list[Point]]:
    """case_key -> every measured value as `<phase>.<metric>.per_repeat`, in the order
    measured. A value stored with a sequence number (train.loss: the epoch) takes it as its
    step; any other takes its place among the case's values. Timestamped at[trial_id] (its
    trial's end), each a millisecond after the previous value of its key at least: MLflow
    keeps one of several values that share key, step, value and timestamp."""
    out: dict[str, dict[str, list[Point]]] = {}
    ordered = sorted(rows, key=lambda r: (r.block, r.trial_id, r.repeat if r.repeat is not None else -1, r.id))
    for r in _measured(ordered, ok_trials):
        name = _key(f"{r.phase}.{r.metric}{PER_REPEAT}")
        series = out.setdefault(r.case_key, {}).setdefault(name, [])
        ts = max(at.get(r.trial_id, 0), series[-1][2] + 1) if series else at.get(r.trial_id, 0)
        series.append((name, float(r.value), ts, r.seq if r.seq is not None else len(series)))
    return {key: [p for series in metrics.values() for p in series] for key, metrics in out.items()}


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
    replace: bool = False,
) -> Logged:
    """Log stored run `run_id` to settings.uri under settings.experiment, every request within
    deadline_s() in all. Raises TrackingError (one line) when mlflow is missing, the server
    cannot be reached, refuses a request or gives no complete answer within the deadline;
    AlreadyLogged when the run is logged to that experiment already and not `replace`
    (then the run is logged anew and the earlier MLflow run deleted: Logged.replaced)."""
    require_installed("--mlflow")
    if not settings.uri:
        raise TrackingError(f"no MLflow tracking URI: give --mlflow URI, set {ENV_URI} or uri in the [mlflow] table")
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
                outcome["logged"] = _log(prepared, run_id, settings, say, replace)
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
    machine: str
    cases: dict[str, dict[str, Any]]
    metrics: dict[str, list[Point]]  # case_key -> its summary metrics, then its per-repeat values
    samples: dict[str, str]  # case_key -> what its summaries' sample is (the report's words)
    span: tuple[int, int]  # the run's start and end, ms since the epoch
    case_spans: dict[str, tuple[int, int]]
    protocol: dict[str, Any]
    artifacts: Path  # the HTML and JSON reports and the figures, rendered into a temporary folder


def _prepare(store: Any, run_id: int) -> _Prepared:
    from dlbench.report.model import build_report
    from dlbench.report.plots import machine_words

    row = store.run(run_id)
    trials = store.trials(run_id)
    rows = store.measurements(run_id, latency=False)
    report = build_report(store, run_id, trials=trials, measurements=rows)
    protocol = dict(row.experiment.get("protocol", {}) or {})
    cases: dict[str, dict[str, Any]] = {}
    for t in sorted(trials, key=lambda t: (t.block, t.position)):
        cases.setdefault(t.case_key, dict(t.case))
    span = run_span(row, trials)
    spans = case_spans(trials, span)
    ok = {t.id for t in trials if t.status == "ok"}
    ends = {t.id: _ms(t.finished_at) or _ms(t.started_at) or span[0] for t in trials}
    summaries = summary_points(report, rows, ok, {key: end for key, (_, end) in spans.items()})
    each = per_repeat_points(rows, ok, ends)
    metrics = {key: summaries.get(key, []) + each.get(key, []) for key in cases}
    samples = {
        s.case_key: "repeats in one process" if s.within_process else "one median per trial"
        for s in report.summaries
        if s.stats
    }
    folder = Path(tempfile.mkdtemp(prefix="dlbench-mlflow-"))
    _render_artifacts(store, run_id, folder)
    machine = machine_words(row.environment) or ""
    return _Prepared(row, report, machine, cases, metrics, samples, span, spans, protocol, folder)


def _search(client: Any, experiment_id: str, where: str) -> list[Any]:
    """Every active run of the experiment that matches the filter, page after page."""
    found: list[Any] = []
    token = None
    while True:
        page = client.search_runs([experiment_id], filter_string=where, max_results=1000, page_token=token)
        found += list(page)
        token = page.token
        if not token:
            return found


def earlier_logs(client: Any, experiment_id: str, run_id: int, row: Any, machine: str) -> list[Any]:
    """The parent MLflow runs (active ones) of the experiment that hold this dlbench run: tagged
    with its run id and its start time; one logged before dlbench tagged the start time,
    with its run id, run name and machine."""
    out = []
    for found in _search(client, experiment_id, f"tags.`dlbench.run_id` = '{run_id}'"):
        tags = found.data.tags
        if "mlflow.parentRunId" in tags:
            continue
        started = tags.get("dlbench.run_started_at")
        legacy = tags.get("dlbench.run_name") == row.name and tags.get("dlbench.machine") == machine
        if started == row.started_at or (started is None and legacy):
            out.append(found)
    return sorted(out, key=lambda r: r.info.start_time or 0)


def _delete(client: Any, experiment_id: str, parent_id: str) -> None:
    """The parent MLflow run and its nested runs, deleted (MLflow's soft delete)."""
    for child in _search(client, experiment_id, f"tags.`mlflow.parentRunId` = '{parent_id}'"):
        client.delete_run(child.info.run_id)
    client.delete_run(parent_id)


def _log(
    prepared: _Prepared, run_id: int, settings: MlflowSettings, say: Callable[[str], None], replace: bool
) -> Logged:
    from mlflow.tracking import MlflowClient

    row = prepared.row
    client = MlflowClient(tracking_uri=settings.uri)
    found = client.get_experiment_by_name(settings.experiment)
    experiment_id = found.experiment_id if found is not None else client.create_experiment(settings.experiment)
    earlier = [r.info.run_id for r in earlier_logs(client, experiment_id, run_id, row, prepared.machine)]
    if earlier and not replace:
        raise AlreadyLogged(run_id, settings.experiment, experiment_id, earlier)
    common = {
        "dlbench.run_id": str(run_id),
        "dlbench.run_started_at": str(row.started_at),
        "dlbench.version": str(row.dlbench_version or ""),
        "dlbench.machine": prepared.machine,
    }
    parent = client.create_run(
        experiment_id,
        start_time=prepared.span[0],
        run_name=settings.run_name or f"dlbench run {run_id}: {row.name}"[:250],
        tags={**common, "dlbench.run_name": row.name, "dlbench.status": row.status},
    )
    logged = Logged(experiment_id, parent.info.run_id)
    try:
        _log_cases(client, prepared, common, logged, say)
    except BaseException:
        # Half a log is no log: what was created is deleted, so that logging again is not
        # refused for it; where the server no longer answers that, the parent is marked FAILED
        # (left RUNNING it would read as a run still going).
        try:
            _delete(client, experiment_id, parent.info.run_id)
        except Exception:
            try:
                client.set_terminated(parent.info.run_id, "FAILED", end_time=prepared.span[1])
            except Exception:
                pass
        raise
    # The earlier logs go only once this one is complete: a failure above leaves them be.
    for old in earlier:
        _delete(client, experiment_id, old)
        logged.replaced.append(old)
    return logged


def _log_cases(
    client: Any, prepared: _Prepared, common: dict[str, str], logged: Logged, say: Callable[[str], None]
) -> None:
    """The parent's params and artifacts, and one nested run per case (see the module's docstring)."""
    from mlflow.entities import Metric, Param

    from dlbench.cases import case_label

    experiment_id, parent_id = logged.experiment_id, logged.parent_run_id
    protocol_params = [
        Param(_key(f"protocol.{k}"), _text(v)) for k, v in sorted(prepared.protocol.items()) if v is not None
    ]
    for chunk in _chunks(protocol_params, _BATCH_PARAMS):
        client.log_batch(parent_id, params=chunk)
    for key, case in prepared.cases.items():
        label = case_label(case)
        start, end = prepared.case_spans.get(key, prepared.span)
        sample = prepared.samples.get(key)
        child = client.create_run(
            experiment_id,
            start_time=start,
            run_name=label[:250],
            tags={
                "mlflow.parentRunId": parent_id,
                **common,
                "dlbench.case_key": key,
                "dlbench.case": label,
                **({"dlbench.sample": sample} if sample else {}),
                **verdict_tags(prepared.report, case),
            },
        )
        cid = child.info.run_id
        params = [Param(_key(f"case.{k}"), _text(v)) for k, v in sorted(case.items()) if v is not None]
        for chunk in _chunks(params + protocol_params, _BATCH_PARAMS):
            client.log_batch(cid, params=chunk)
        values = [Metric(name, value, ts, step) for name, value, ts, step in prepared.metrics.get(key, [])]
        for chunk in _chunks(values, _BATCH_METRICS):
            client.log_batch(cid, metrics=chunk)
        client.set_terminated(cid, end_time=end)
        logged.case_runs[key] = cid
        say(f"case {label}: {len(values)} values")
    folder = prepared.artifacts
    client.log_artifacts(parent_id, str(folder))
    logged.artifacts = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    status = "FINISHED" if prepared.row.status == "finished" else "FAILED"
    client.set_terminated(parent_id, status, end_time=prepared.span[1])


def ui_url(settings: MlflowSettings, experiment_id: str, run_id: str) -> str | None:
    """Where an MLflow run shows in the MLflow UI of an http(s) server; None for any other URI."""
    base = settings.uri.rstrip("/")
    if urlsplit(base).scheme in ("http", "https"):
        return f"{base}/#/experiments/{experiment_id}/runs/{run_id}"
    return None


def run_url(settings: MlflowSettings, logged: Logged) -> str:
    """Where the parent run shows in the MLflow UI (an http(s) server), else its run id."""
    return ui_url(settings, logged.experiment_id, logged.parent_run_id) or f"MLflow run {logged.parent_run_id}"
