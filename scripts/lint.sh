#!/usr/bin/env bash
# Lint, format and type checks, each with zero findings (configured in pyproject.toml):
# ruff check, ruff format --check, mypy (strict on plan, config, store, analysis, runner,
# trial/worker, trial/spec). Part of the README's test command, before pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
py=.venv/bin/python
$py -m ruff check src tests benchmarks
$py -m ruff format --check src tests benchmarks
$py -m mypy
