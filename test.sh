#!/usr/bin/env bash
# Set up (venv, dependencies, the small test model) and run the whole test suite,
# model-backed tests included. Extra arguments go to pytest (e.g. -m "not model").
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh smollm2-135m
exec .venv/bin/python -m pytest -q "$@"
