"""Alias of dlbench.trial.worker, kept for one version: plugins and stored commands that
import dlbench.worker get the same module object, and `python -m dlbench.worker` still runs
one trial (it calls dlbench.trial.worker's main and exits with its status). Import or run
dlbench.trial.worker instead."""

import sys

from dlbench.trial import worker as _new

if __name__ == "__main__":
    sys.exit(_new.main())
sys.modules[__name__] = _new
