#!/usr/bin/env bash
# Set up (venv, dependencies with Ray, the small test model, Chromium for the browser tests), run
# the static checks (ruff, mypy) and the whole test suite, model-backed and browser tests
# included. Extra arguments go to pytest (e.g. -m "not model").
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh --browser --ray smollm2-135m
echo "ruff check:" && .venv/bin/ruff check --quiet src tests bench && echo "  clean"
echo "mypy:" && .venv/bin/mypy --no-error-summary && echo "  clean"
exec .venv/bin/python -m pytest -q "$@"
