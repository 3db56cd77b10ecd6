#!/usr/bin/env bash
# Set up (venv, dependencies, default model) and run the main job: four strategies on
# 10 Game of 24 puzzles with Qwen2.5-Coder-1.5B. Extra arguments go to `veriloop run`.
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh qwen2.5-coder-1.5b
exec .venv/bin/veriloop run "$@"
