#!/usr/bin/env bash
# The machine's own limit for batched generation, measured by llama.cpp's tool rather than
# by us: builds `llama-batched-bench` from the llama.cpp sources vendored in the pinned
# llama-cpp-python sdist (the same llama.cpp our engine runs) and times prompt 128 /
# generation 64 tokens per sequence at 1, 4, 8 and 16 sequences on 2 threads.
# S_TG at 16 over S_TG at 1 is the most any engine on this llama.cpp can gain from
# batching generation here; bench/batched_throughput.py (a) is judged against it.
#
#   bash bench/llama_batched_bench.sh [MODEL.gguf]   (default: Qwen2.5-Coder-1.5B's pack)
#
# The first run downloads the sdist from PyPI and compiles for about 10 minutes; the
# build is kept in ~/.cache/veriloop/llama-batched-bench.
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("llama_cpp_python"))')
model=${1:-$HOME/.cache/veriloop/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf}
[ -f "$model" ] || { echo "error: no model file at $model (install it: .venv/bin/veriloop models install qwen2.5-coder-1.5b)" >&2; exit 2; }

work=$HOME/.cache/veriloop/llama-batched-bench/$version
tool=$work/llama.cpp/build/bin/llama-batched-bench
if [ ! -x "$tool" ]; then
    mkdir -p "$work"
    .venv/bin/python -m pip download -q --no-deps --no-binary :all: "llama-cpp-python==$version" -d "$work"
    tar xzf "$work/llama_cpp_python-$version.tar.gz" -C "$work"
    rm -rf "$work/llama.cpp"
    mv "$work/llama_cpp_python-$version/vendor/llama.cpp" "$work/llama.cpp"
    cmake -S "$work/llama.cpp" -B "$work/llama.cpp/build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF \
        -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_TESTS=OFF -DBUILD_SHARED_LIBS=OFF >/dev/null
    cmake --build "$work/llama.cpp/build" --target llama-batched-bench -j "$(nproc)" >/dev/null
fi
"$tool" -m "$model" -c 4096 -b 2048 -ub 512 -npp 128 -ntg 64 -npl 1,4,8,16 -t 2 2>/dev/null
