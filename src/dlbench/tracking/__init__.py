"""Logging stored runs to experiment trackers outside dlbench (MLflow: dlbench.tracking.mlflow_log).

A tracker is told about a run after it finished, from the store and from the same report the
command line prints; nothing here runs, measures or decides anything. Each tracker's client is
an optional extra, imported only inside the function that logs.
"""
