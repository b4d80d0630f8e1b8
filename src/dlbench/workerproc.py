"""Alias of dlbench.trial.launch, kept for one version: plugins and stored commands that import
dlbench.workerproc get the same module object. Import dlbench.trial.launch instead."""

import sys

from dlbench.trial import launch as _new

sys.modules[__name__] = _new
