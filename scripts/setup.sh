#!/usr/bin/env bash
# Set up everything veriloop needs, idempotently: the virtualenv, the pinned dependencies
# (llama-cpp-python is compiled from source once; pip caches the wheel), and the model
# packs named as arguments. A second run checks stamps and returns in about a second.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=.venv
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "error: veriloop needs Python >= 3.11 (found: $("$PYTHON" --version 2>&1)); set PYTHON=/path/to/python3.11" >&2
    exit 2
fi
if [ ! -x "$VENV/bin/python" ]; then
    echo "setup: creating $VENV"
    "$PYTHON" -m venv "$VENV"
fi

# Reinstall only when the declared dependencies change.
want=$(cat pyproject.toml constraints.txt | sha256sum | cut -c1-32)
stamp="$VENV/.veriloop-deps"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "setup: installing dependencies (the first time, llama-cpp-python compiles for about 4 minutes)"
    export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check -c constraints.txt -e ".[dev]"
    echo "$want" > "$stamp"
fi

for model in "$@"; do
    "$VENV/bin/veriloop" models install "$model"
done
