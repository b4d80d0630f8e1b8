"""Alias of dlbench.trial.spec, kept for one version: plugins and stored commands that import
dlbench.trialspec get the same module object. Import dlbench.trial.spec instead."""

import sys

from dlbench.trial import spec as _new

sys.modules[__name__] = _new
