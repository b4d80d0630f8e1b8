"""Numbers only: statistics, per-case summaries, comparisons between frameworks and
between runs, batch-size sweeps, busy-machine detection and the adaptive stopping
decision. Nothing here writes a sentence or draws: dlbench.report turns these
results into words, tables and figures. Imports run one way: report -> analysis -> store.
"""
