"""Trials as Slurm jobs through submitit (`--executor slurm`).

One job per trial: submitit pickles executors.node.run_trial and its arguments into
the job folder (on a path every node sees), writes the sbatch script and submits it;
the job runs the trial's worker as a fresh subprocess on its node and leaves the
events and exit in the folder as the job's result, which the parent reads and
stores (the parent stays the only writer of the store: SQLite's locking does not
work over a network filesystem).

Fairness: a block's trials run one after another, in the block's order, on one
node (the first job of a block goes where Slurm puts it, the rest are sent to that
node with --nodelist); each job asks for the node exclusively by default, so that no
other job perturbs its timing (an `--slurm-option oversubscribe` or an explicit
`exclusive=...` overrides it), and for the cores its case uses (threads x world
size) and world size GPUs for a cuda case.

Job states are read from slurmctld with squeue (--states=all keeps finished jobs
for MinJobAge seconds), not with sacct: sacct needs the accounting database
(slurmdbd), which many small clusters do not run. A job that ends without a result
(scancel, past its time limit, a failed node) becomes a trial with the state and
reason Slurm gives.
"""

from __future__ import annotations

import collections
import math
import shutil
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dlbench.executor_settings import missing_engine
from dlbench.executors import ExecutorError, ExecutorSettings
from dlbench.executors.base import Handlers, RemoteResult, RemoteTrial
from dlbench.executors.node import omp_num_threads

# A job's result file is looked for every RESULT_POLL_S (a stat on the job folder: cheap,
# and it is what ends a trial); slurmctld is asked for states every SQUEUE_S (a cluster's
# controller is shared; its states matter only for jobs that end without a result).
RESULT_POLL_S = 0.1
SQUEUE_S = 2.0
# A job's time limit when none is given: the trial's timeout (enforced by the worker
# on the node) plus room for the interpreter's start and the result's write.
MARGIN_MIN = 3
# States of a job that has ended (squeue's long names).
ENDED = {
    "BOOT_FAIL",
    "CANCELLED",
    "COMPLETED",
    "DEADLINE",
    "FAILED",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "PREEMPTED",
    "REVOKED",
    "SPECIAL_EXIT",
    "TIMEOUT",
}
# A job that disappeared from squeue (older than MinJobAge) without a result.
GONE_AFTER_S = 30.0


def _squeue(job_ids: Sequence[str]) -> dict[str, tuple[str, str, str, str]]:
    """job id -> (state, node list, reason, time limit), for the jobs slurmctld still knows."""
    if not job_ids:
        return {}
    out = subprocess.run(
        ["squeue", "--states=all", "--noheader", "--format=%i|%T|%N|%r|%l", "--jobs", ",".join(job_ids)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    states = {}
    for line in out.stdout.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 5:
            states[parts[0]] = (parts[1], parts[2], parts[3], parts[4])
    return states


def _ended(job_id: str, state: str, reason: str, limit: str) -> str:
    """Slurm's word on how a job ended, for the trial's error."""
    why = f" ({reason})" if reason and reason not in ("None", "(null)") else ""
    text = f"slurm: job {job_id} ended {state}{why}"
    if state == "TIMEOUT":
        text += f": its time limit ({limit} as Slurm held it; --slurm-time sets it) came before the trial's end"
    return text


def _sbatch_options(options: Sequence[str]) -> dict[str, Any]:
    """--slurm-option key=value (or a bare flag) as submitit's additional_parameters."""
    extra: dict[str, Any] = {}
    for option in options:
        key, sep, value = option.removeprefix("--").partition("=")
        extra[key.replace("-", "_")] = value if sep else True
    return extra


class SlurmExecutor:
    name = "slurm"

    def __init__(self, settings: ExecutorSettings) -> None:
        self.settings = settings
        self.folder = Path(settings.slurm_folder or "dlbench-slurm").resolve()
        self.notes: list[str] = []

    def _executor(self) -> Any:
        try:
            import submitit
        except ImportError:
            raise ExecutorError(missing_engine("slurm") or "--executor slurm: submitit cannot be imported") from None
        for tool in ("sbatch", "squeue", "scancel"):
            if shutil.which(tool) is None:
                raise ExecutorError(
                    f"--executor slurm: `{tool}` is not on PATH (run dlbench where Slurm's clients are)"
                )
        # One look at the controller first: unreachable, every sbatch would fail the same
        # way after its retries; that is the run's problem (it stays resumable), not each trial's.
        probe = subprocess.run(["sinfo", "--noheader", "--format=%P"], capture_output=True, text=True, timeout=120)
        if probe.returncode != 0:
            text = " ".join(probe.stderr.split())[:300] or f"sinfo exited {probe.returncode}"
            raise ExecutorError(f"--executor slurm: cannot reach the Slurm controller: {text}")
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ExecutorError(f"--slurm-folder {self.folder}: cannot create it: {exc.strerror or exc}") from None
        return submitit.SlurmExecutor(folder=str(self.folder / "%j"))

    def _parameters(self, trial: RemoteTrial, node: str | None) -> dict[str, Any]:
        s = self.settings
        minutes = s.slurm_time or math.ceil(trial.timeout / 60) + MARGIN_MIN
        extra = {"exclusive": True} | _sbatch_options(s.slurm_options)
        if "oversubscribe" in extra:
            extra.pop("exclusive", None)
        params: dict[str, Any] = dict(
            time=max(1, math.ceil(minutes)),
            nodes=1,
            ntasks_per_node=1,
            cpus_per_task=trial.cpus,
            job_name=f"dlbench-trial-{trial.trial_id}",
            use_srun=False,  # the job's one process is the node side; it starts the worker itself
            additional_parameters=extra,
        )
        gpus = max(s.slurm_gpus, trial.gpus)
        if gpus:
            params["gpus_per_node"] = gpus
        if s.slurm_partition:
            params["partition"] = s.slurm_partition
        if node:
            params["nodelist"] = node
        return params

    def run(self, trials: Sequence[RemoteTrial], handlers: Handlers) -> None:
        from dlbench.executors.node import run_trial

        executor = self._executor()
        blocks: dict[int, collections.deque[RemoteTrial]] = collections.defaultdict(collections.deque)
        for t in sorted(trials, key=lambda t: t.block):
            blocks[t.block].append(t)
        node_of: dict[int, str] = {}
        in_flight: dict[str, tuple[RemoteTrial, Any, dict[str, Any]]] = {}
        last_seen: dict[str, float] = {}
        states: dict[str, tuple[str, str, str, str]] = {}
        asked = float("-inf")
        done = 0
        try:
            while any(blocks.values()) or in_flight:
                busy = {t.block for t, _, _ in in_flight.values()}
                for block, queue in blocks.items():
                    if block in busy or not queue:
                        continue
                    trial = queue.popleft()
                    executor.update_parameters(**self._parameters(trial, node_of.get(block)))
                    try:
                        job = executor.submit(
                            run_trial,
                            trial.spec.to_json(),
                            trial.timeout,
                            list(trial.command) if trial.command else None,
                            omp_num_threads(),
                        )
                    except Exception as exc:  # noqa: BLE001 - sbatch refused it: the trial's status says why
                        placement = {"executor": "slurm", "host": None}
                        handlers.started(trial, placement)
                        reason = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
                        handlers.finished(
                            trial,
                            RemoteResult(
                                engine_status="failed", engine_reason=f"slurm: sbatch refused the job: {reason}"
                            ),
                            placement,
                        )
                        done += 1
                        continue
                    placement = {"executor": "slurm", "slurm_job": job.job_id, "host": node_of.get(block)}
                    handlers.started(trial, placement)
                    in_flight[job.job_id] = (trial, job, placement)
                    last_seen[job.job_id] = time.monotonic()
                if time.monotonic() - asked >= SQUEUE_S:
                    states, asked = _squeue(list(in_flight)), time.monotonic()
                pending = sum(1 for jid in in_flight if states.get(jid, ("",))[0] in ("PENDING", "CONFIGURING"))
                handlers.progress(
                    queued=pending + sum(len(q) for q in blocks.values()), running=len(in_flight) - pending, done=done
                )
                for job_id in list(in_flight):
                    trial, job, placement = in_flight[job_id]
                    state, nodes, reason, limit = states.get(job_id, ("", "", "", ""))
                    if state:
                        last_seen[job_id] = time.monotonic()
                    if nodes and nodes != "(null)":
                        placement["host"] = nodes
                    result = self._result(job, (state, reason, limit), time.monotonic() - last_seen[job_id])
                    if result is None:
                        continue
                    del in_flight[job_id]
                    done += 1
                    if result.machine.get("slurm_node"):
                        placement["host"] = result.machine["slurm_node"]
                    host = placement.get("host")
                    if isinstance(host, str) and host:
                        node_of.setdefault(trial.block, host)
                    handlers.finished(trial, result, placement)
                if in_flight:
                    time.sleep(RESULT_POLL_S)
            handlers.progress(queued=0, running=0, done=done)
        except BaseException:
            if in_flight:
                subprocess.run(["scancel", *in_flight], capture_output=True, timeout=60)
            raise

    def _result(self, job: Any, seen: tuple[str, str, str], unseen_s: float) -> RemoteResult | None:
        """The trial's result once its job has ended, else None; `seen`: the job's state,
        reason and time limit as squeue gave them. The result file is looked for after
        the state was read: a job that wrote it and ended between the two reads is
        still taken as finished, never as lost."""
        state, reason, limit = seen
        ended = state in ENDED or (not state and unseen_s > GONE_AFTER_S)
        if job.paths.result_pickle.exists():
            try:
                value = job.result()
            except Exception as exc:  # noqa: BLE001 - submitit's FailedJobError: the node side raised
                text = str(exc).strip()
                if "timed-out" in text:
                    # Slurm signals a job (USR2) before its time limit; submitit's handler
                    # in the job then raises (nothing to requeue), which stops the worker.
                    return RemoteResult(
                        engine_status="timeout",
                        engine_reason=f"slurm: job {job.job_id} was signalled before its time limit"
                        + (f" ({limit})" if limit else "")
                        + " and stopped before the trial's end (--slurm-time sets the limit)",
                    )
                return RemoteResult(
                    engine_status="failed",
                    engine_reason=f"slurm: job {job.job_id} raised on its node: {text[-1500:]}",
                )
            if isinstance(value, RemoteResult):
                if value.exit is not None and (value.exit.returncode or 0) < 0:
                    # The worker was killed by a signal: if Slurm sent it (scancel, the
                    # time limit), its state says so; read it now, after the result.
                    if state not in ENDED:
                        state, _, reason, limit = _squeue([job.job_id]).get(job.job_id, ("", "", "", ""))
                    if state in ENDED and state != "COMPLETED":
                        value.engine_status = "timeout" if state in ("TIMEOUT", "DEADLINE") else "failed"
                        value.engine_reason = _ended(job.job_id, state, reason, limit)
                return value
            return RemoteResult(engine_status="failed", engine_reason=f"slurm: job {job.job_id} returned {value!r}")
        if not ended:
            return None
        stderr = ""
        try:
            stderr = job.paths.stderr.read_text(errors="replace")[-1500:]
        except OSError:
            pass
        if not state:
            text = f"slurm: job {job.job_id} is no longer known to slurmctld and left no result"
        else:
            text = _ended(job.job_id, state, reason, limit) + " without a result"
        if stderr.strip():
            text += f"; its stderr ends:\n{stderr}"
        return RemoteResult(
            engine_status="timeout" if state in ("TIMEOUT", "DEADLINE") else "failed", engine_reason=text
        )
