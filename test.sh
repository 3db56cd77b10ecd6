#!/usr/bin/env bash
# Set up (venv, every extra and the test tools, the small test model, Chromium for the browser tests), run
# the static checks (ruff, mypy) and the whole test suite, model-backed and browser tests
# included. Arguments, if any, go to one pytest run instead (e.g. -m "not model", or a test's path).
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh --dev --browser smollm2-135m
echo "ruff check:" && .venv/bin/ruff check --quiet src tests bench docs && echo "  clean"
echo "mypy:" && .venv/bin/mypy --no-error-summary && echo "  clean"
# pytest keeps the tests' rewritten bytecode, and every command a test starts keeps its own,
# for the next run: half of each worker's collection (a clean clone's first run compiles).
unset PYTHONDONTWRITEBYTECODE
if [ $# -gt 0 ]; then
    exec .venv/bin/python -m pytest -q "$@"
fi
# The tests without models, servers, browser or Ray on every core (pytest-xdist), then the
# others one at a time: two llama.cpp runs side by side on two cores slow each other 10-45x.
status=0
.venv/bin/python -m pytest -q -m "not (model or server or browser or ray)" || status=$?
.venv/bin/python -m pytest -q -n 0 -m "model or server or browser or ray" || status=$?
exit "$status"
