"""Alias of dlbench.trial.phases, kept for one version: plugins and stored commands that import
dlbench.phases get the same module object. Import dlbench.trial.phases instead."""

import sys

from dlbench.trial import phases as _new

sys.modules[__name__] = _new
