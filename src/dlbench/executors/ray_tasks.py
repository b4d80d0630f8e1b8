"""Trials as Ray tasks (`--executor ray`).

Each trial is one Ray task that runs the trial's worker as a fresh subprocess on
its node (executors.node.run_trial), so a trial is one fresh process here exactly
as it is locally, and Ray's worker-process reuse does not matter. Ray never
retries a task (max_retries=0): a trial that ran twice would silently replace a
failure with a success. The task's resource request is its case's: threads x
world size CPUs, and world size GPUs for a cuda case.

Placement keeps interleaved blocks meaningful: every trial of a block runs on one
node, in the block's order, one trial at a time per node (a neighbour on the same
node would perturb the timing), and blocks spread over the nodes. Only nodes of
one kind (same CPUs, GPUs and accelerator type, as Ray reports them) are used in a
run; the others are named and left out. Each task returns the node's machine
fingerprint, stored with the trial.

With no --ray-address a local Ray cluster is started for the run (and stopped
after it) with this machine's cores; with one, the run joins that cluster.
"""

from __future__ import annotations

import collections
import logging
import os
import time
from collections.abc import Sequence
from typing import Any

from dlbench.executor_settings import missing_engine
from dlbench.executors import ExecutorError, ExecutorSettings
from dlbench.executors.base import Handlers, RemoteResult, RemoteTrial
from dlbench.executors.node import omp_num_threads

# The worker enforces the trial's timeout on the node and kills its process group;
# the parent cancels a task that has not answered this long after that deadline
# (a hung node, a lost network).
ANSWER_GRACE_S = 60.0
POLL_S = 0.5


def _node_kind(node: dict[str, Any]) -> tuple[Any, ...]:
    res = node.get("Resources", {})
    accelerators = tuple(sorted(k for k in res if k.startswith("accelerator_type:")))
    return (res.get("CPU", 0.0), res.get("GPU", 0.0), accelerators)


def _describe_kind(kind: tuple[Any, ...]) -> str:
    cpus, gpus, accelerators = kind
    text = f"{cpus:g} CPUs"
    if gpus:
        text += f", {gpus:g} GPUs"
    if accelerators:
        text += " (" + ", ".join(a.split(":", 1)[1] for a in accelerators) + ")"
    return text


def _engine_reason(exc: BaseException) -> tuple[str, str]:
    """A Ray error as the trial's status and one-paragraph reason."""
    import ray.exceptions as rex

    name = type(exc).__name__
    text = str(exc).strip().splitlines()
    first = next((line for line in text if line.strip()), name)
    if isinstance(exc, rex.TaskCancelledError):
        return "failed", f"ray: the task was cancelled ({name})"
    if isinstance(exc, rex.WorkerCrashedError):
        return "failed", f"ray: the Ray worker process running the trial died ({name}): {first[:300]}"
    if isinstance(exc, rex.NodeDiedError):
        return "failed", f"ray: the node running the trial died ({name}): {first[:300]}"
    if isinstance(exc, rex.TaskUnschedulableError):
        return "failed", f"ray: the trial could not be scheduled ({name}): {first[:300]}"
    return "failed", f"ray: {name}: {first[:300]}"


class RayExecutor:
    name = "ray"

    def __init__(self, settings: ExecutorSettings) -> None:
        self.address = settings.ray_address
        self.notes: list[str] = []

    def _connect(self) -> bool:
        """Join the cluster at --ray-address, or start a local one; True if started here."""
        try:
            import ray
        except ImportError:
            raise ExecutorError(missing_engine("ray") or "--executor ray: Ray cannot be imported") from None
        if ray.is_initialized():
            return False
        kwargs: dict[str, Any] = dict(
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.ERROR,
        )
        try:
            if self.address:
                ray.init(address=self.address, **kwargs)
            else:
                ray.init(num_cpus=os.cpu_count() or 1, **kwargs)
        except Exception as exc:  # noqa: BLE001 - any failure to reach the cluster is one line
            where = f"the Ray cluster at {self.address}" if self.address else "a local Ray cluster"
            raise ExecutorError(f"--executor ray: cannot start or reach {where}: {type(exc).__name__}: {exc}") from None
        return not self.address

    def _nodes(self, trials: Sequence[RemoteTrial]) -> list[dict[str, Any]]:
        """The alive nodes of one kind, the kind with the most nodes that can host a
        trial of this run (a GPU run needs GPU nodes)."""
        import ray

        alive = [n for n in ray.nodes() if n.get("Alive")]
        need_gpu = any(t.gpus for t in trials)
        kinds = collections.Counter(_node_kind(n) for n in alive if not need_gpu or _node_kind(n)[1] > 0)
        if not kinds:
            raise ExecutorError(
                "--executor ray: the cluster has no alive node"
                + (" with a GPU, and this run has cuda cases" if need_gpu else "")
            )
        kind, _ = kinds.most_common(1)[0]
        chosen = [n for n in alive if _node_kind(n) == kind]
        others = [n for n in alive if _node_kind(n) != kind]
        if others:
            self.notes.append(
                f"ray: {len(chosen)} node(s) of {_describe_kind(kind)} used; {len(others)} node(s) of another kind "
                "left out, so that no comparison pools different hardware: "
                + ", ".join(f"{n['NodeManagerAddress']} ({_describe_kind(_node_kind(n))})" for n in others)
            )
        return chosen

    def run(self, trials: Sequence[RemoteTrial], handlers: Handlers) -> None:
        started_here = self._connect()
        try:
            self._run(trials, handlers)
        finally:
            if started_here:
                import ray

                ray.shutdown()

    def _run(self, trials: Sequence[RemoteTrial], handlers: Handlers) -> None:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from dlbench.executors.node import run_trial

        nodes = self._nodes(trials)
        task = ray.remote(max_retries=0)(run_trial)
        # Block b runs on node b mod n, its trials in the block's order.
        queues: dict[str, collections.deque[RemoteTrial]] = {n["NodeID"]: collections.deque() for n in nodes}
        by_id = {n["NodeID"]: n for n in nodes}
        ids = list(queues)
        for t in sorted(trials, key=lambda t: t.block):
            queues[ids[t.block % len(ids)]].append(t)
        in_flight: dict[Any, tuple[RemoteTrial, str, float, dict[str, Any]]] = {}
        busy: set[str] = set()
        done = 0
        try:
            while any(queues.values()) or in_flight:
                for node_id, queue in queues.items():
                    if node_id in busy or not queue:
                        continue
                    trial = queue.popleft()
                    node = by_id[node_id]
                    placement = {
                        "executor": "ray",
                        "host": node.get("NodeManagerHostname") or node.get("NodeManagerAddress"),
                        "ray_node": node_id,
                        "ray_address": node.get("NodeManagerAddress"),
                    }
                    handlers.started(trial, placement)
                    cpus = trial.cpus if trial.spec.case.threads > 0 else node["Resources"].get("CPU", 1)
                    if cpus > node["Resources"].get("CPU", 0) or trial.gpus > node["Resources"].get("GPU", 0):
                        handlers.finished(
                            trial,
                            RemoteResult(
                                engine_status="failed",
                                engine_reason=(
                                    f"ray: the trial needs {cpus:g} CPUs and {trial.gpus} GPUs; the node has "
                                    f"{_describe_kind(_node_kind(node))}"
                                ),
                            ),
                            placement,
                        )
                        done += 1
                        continue
                    ref = task.options(
                        num_cpus=cpus,
                        num_gpus=trial.gpus,
                        scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
                    ).remote(
                        trial.spec.to_json(),
                        trial.timeout,
                        list(trial.command) if trial.command else None,
                        omp_num_threads(),
                    )
                    in_flight[ref] = (trial, node_id, time.monotonic(), placement)
                    busy.add(node_id)
                handlers.progress(queued=sum(len(q) for q in queues.values()), running=len(in_flight), done=done)
                if not in_flight:
                    continue
                ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=POLL_S)
                now = time.monotonic()
                for ref in list(in_flight):
                    trial, node_id, submitted, placement = in_flight[ref]
                    if ref in ready:
                        try:
                            result = ray.get(ref)
                        except ray.exceptions.RayError as exc:
                            status, reason = _engine_reason(exc)
                            result = RemoteResult(engine_status=status, engine_reason=reason)
                    elif now - submitted > trial.timeout + ANSWER_GRACE_S:
                        ray.cancel(ref, force=True)
                        result = RemoteResult(
                            engine_status="timeout",
                            engine_reason=(
                                f"ray: no answer from the task {trial.timeout + ANSWER_GRACE_S:g} s after it was "
                                "submitted (the trial's timeout plus a grace); the task was cancelled"
                            ),
                        )
                    else:
                        continue
                    del in_flight[ref]
                    busy.discard(node_id)
                    done += 1
                    handlers.finished(trial, result, placement)
                    if result.engine_status and not _alive(node_id):
                        self._requeue(node_id, queues, by_id)
            handlers.progress(queued=0, running=0, done=done)
        except BaseException:
            for ref in in_flight:
                ray.cancel(ref, force=True)  # the task's worker dies, and its trial worker with it (lifeline)
            raise

    def _requeue(
        self, dead: str, queues: dict[str, collections.deque[RemoteTrial]], by_id: dict[str, dict[str, Any]]
    ) -> None:
        """A node is gone: its remaining trials go to the alive nodes, whole blocks together."""
        left = queues.pop(dead, collections.deque())
        by_id.pop(dead, None)
        alive = [n for n in queues if _alive(n)]
        self.notes.append(f"ray: node {dead[:12]} died; {len(left)} of its trials moved to other nodes")
        if not alive:
            raise ExecutorError(f"--executor ray: every node of the run died; {len(left)} trials were not run")
        for t in left:
            queues[alive[t.block % len(alive)]].append(t)


def _alive(node_id: str) -> bool:
    import ray

    return any(n["NodeID"] == node_id and n.get("Alive") for n in ray.nodes())
