"""Alias of dlbench.trial.output_check, kept for one version: plugins and stored commands that import
dlbench.output_check get the same module object. Import dlbench.trial.output_check instead."""

import sys

from dlbench.trial import output_check as _new

sys.modules[__name__] = _new
