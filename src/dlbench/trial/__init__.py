"""The life of one trial, on both sides of the process boundary, in one folder.

In the parent (the runner's process, or a Ray task or Slurm job on the node):

- `spec`: what is sent to the worker. The runner builds a `TrialSpec` (the case, and
  `ProtocolSpec.for_worker` of the protocol) and `worker_command` says how the worker
  is started: `python -P -X faulthandler -m dlbench.trial.worker --parent-pid PID`.
- `launch`: the parent's side. `run_worker` starts that process in its own process
  group, writes the spec to its stdin as one JSON line, reads its events from its
  stdout as they come, polls the telemetry samplers beside it, kills the group at the
  deadline, and hands back a `WorkerExit` (the runner turns it into a trial status).

In the child (one fresh process per trial):

- `worker`: its main. It reads the spec (`TrialSpec.from_json`), dies with its parent,
  pins threads, imports the one framework adapter, loads the data (untimed) and
  streams its events (started, manifest, marker, measurements, error, done).
- `phases`: the timed loop, written once against the framework protocol: build,
  compile, train, accuracy, infer, latency, each repeat on a fresh model with its own
  seed.
- `output_check`: a user's network checked against its task once, untimed, after
  the first build.
- `profiling`: the profile phase (`--profile-steps`), after the timed repeats and
  apart from them, under the framework's own profiler (`dlbench.explain` reads it).

Nothing is imported here: importing `dlbench.trial.spec` in the parent must not load
the worker's side, and the worker imports only what its trial needs.
"""
