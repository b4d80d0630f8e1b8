"""dlbench: a fair, rigorous benchmark harness for PyTorch, TensorFlow and JAX.

The package is light at import time on purpose: nothing here imports a
deep-learning framework. Frameworks are imported only inside worker processes
(`python -m dlbench.trial.worker`), one per trial.
"""

from dlbench.api import experiment, load, run  # noqa: E402  (each imports what it needs when called)
from dlbench.usermodel import Model  # noqa: E402  (light: no framework, no I/O)
from dlbench.version import __version__

__all__ = ["Model", "__version__", "experiment", "load", "run"]
