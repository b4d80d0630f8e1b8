"""Why one case is faster than another, measured (issue: `dlbench explain`).

Two instruments, both outside the timed repeats:

- profiles (the profile phase, `dlbench.trial.profiling`, run inside the worker; one
  `profile_<framework>` module per framework here): the framework's own profiler over a
  few steady-state training steps, reduced to one breakdown per step by category
  (`categories`);
- an ablation (`ablation`): the slower case rerun with each recorded setting
  toggled toward the faster one's, in interleaved blocks, and the share of the gap
  each toggle closes, with bootstrap confidence intervals.
"""
