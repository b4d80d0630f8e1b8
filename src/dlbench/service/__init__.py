"""The service layer: what a command does, once, for the command line and the Python API.

`dlbench run` and `dlbench.run(...)` both build their experiment, check it can run,
put its data in place, store the run, measure the idle baseline and execute it here
(`service.runs`); `dlbench explain` builds its explain run in `service.explain`, and
`dlbench study run` its plan in `service.studies`. The command line parses flags and
prints; a ServiceError is one line for it to show.
"""

from __future__ import annotations


class ServiceError(ValueError):
    """A request that cannot be carried out, said in one line (the file, key or value, and what is allowed)."""
