"""dlbench's version, in a module of its own so that any module can read it without
importing the package's public API (dlbench/__init__ imports dlbench.api)."""

__version__ = "0.1.0"
