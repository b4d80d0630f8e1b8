"""Alias of dlbench.trial.profiling, kept for one version: plugins and stored commands that import
dlbench.explain.profiling get the same module object. Import dlbench.trial.profiling instead."""

import sys

from dlbench.trial import profiling as _new

sys.modules[__name__] = _new
