#!/usr/bin/env bash
# The test suite, as the README's test command runs it (after setup and lint).
#
#   bash scripts/test.sh            # the whole suite: two phases, below
#   bash scripts/test.sh ARGS...    # plain pytest with ARGS, one process (a file, -k, -m zoo ...)
#
# Phase 1 runs the tests whose results do not rest on measured time on both cores
# (pytest-xdist, one test file per worker so that a module's fixtures are built once).
# Phase 2 runs the tests marked `serial` (tests/conftest.py says which and why: measured
# time, busy-machine detection, fixed ports and machine-wide services) alone, in one
# process, on a machine with nothing else of the suite running. Both must pass; pytest's
# exit status 5 (no tests collected) fails either phase.
set -euo pipefail
cd "$(dirname "$0")/.."
py=.venv/bin/python
if [ "$#" -gt 0 ]; then
    exec "$py" -m pytest "$@"
fi
workers="${DLBENCH_TEST_WORKERS:-2}"
"$py" -m pytest -n "$workers" --dist loadfile -m "not zoo and not serial"
"$py" -m pytest -p no:xdist -m "not zoo and serial"
