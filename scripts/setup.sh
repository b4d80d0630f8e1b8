#!/usr/bin/env bash
# Set up dlbench on a fresh machine: a virtual environment in .venv with the
# exact versions of requirements.txt, dlbench itself installed editable.
#   bash scripts/setup.sh          # to run benchmarks
#   bash scripts/setup.sh --dev    # also test tools and the Fashion-MNIST test data
set -euo pipefail
cd "$(dirname "$0")/.."
dev=0
[ "${1:-}" = "--dev" ] && dev=1

python=${PYTHON:-python3.11}
command -v "$python" >/dev/null || python=python3
"$python" -c 'import sys; assert sys.version_info[:2] == (3, 11), f"dlbench needs Python 3.11, found {sys.version.split()[0]}"'

# Say what each step does and how long it took: the first install downloads about 1.5 GB
# (torch, TensorFlow, JAX) and is silent for minutes otherwise.
step() { echo "setup: $* ($(date +%H:%M:%S), ${SECONDS}s so far)"; }
step "virtual environment in .venv"
[ -x .venv/bin/python ] || "$python" -m venv .venv
req=requirements.txt
[ $dev = 1 ] && req=requirements-dev.txt
step "installing the pinned packages of $req (a first install takes 3-5 minutes; pip's own progress below)"
set +e  # pip's status, not grep's (grep finds nothing where every package is already there)
.venv/bin/pip install --disable-pip-version-check --progress-bar off -r "$req" \
    | grep --line-buffered -E '^(Collecting|Installing collected|Successfully installed)'
pip_status=${PIPESTATUS[0]}
set -e
[ "$pip_status" = 0 ] || { echo "setup: pip install -r $req failed (exit $pip_status)" >&2; exit 1; }
step "installing dlbench itself (editable)"
.venv/bin/pip install --quiet --disable-pip-version-check --no-deps -e .

if [ $dev = 1 ]; then
    # Test data and tools from Debian: the full Fashion-MNIST set (offline) for the
    # IDX reader tests, and headless Chromium to check that HTML reports render.
    missing=""
    [ -d /usr/share/datasets/fashion-mnist ] || missing="$missing dataset-fashion-mnist"
    command -v chromium >/dev/null || missing="$missing chromium"
    if [ -n "$missing" ]; then
        step "installing Debian's$missing"
        if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
            (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null) \
                || echo "warning: could not install$missing; the tests that need them will be skipped" >&2
        else
            echo "note: install Debian's$missing (as root) to run the tests that need them" >&2
        fi
    fi
fi
echo "dlbench installed in .venv (${SECONDS}s)"
