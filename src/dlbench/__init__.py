"""dlbench: a fair, rigorous benchmark harness for PyTorch, TensorFlow and JAX.

The package is light at import time on purpose: nothing here imports a
deep-learning framework. Frameworks are imported only inside worker processes
(`python -m dlbench.worker`), one per trial.
"""

__version__ = "0.1.0"
