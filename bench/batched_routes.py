"""The two routes to batched local decoding, side by side on the same model and workloads.

Route 1 (ours, the default): the in-process engine in `veriloop.models.batched`, 16
sequences in one llama.cpp context driven by llama-cpp-python's low-level API, prompt
prefixes shared across sequences with `llama_memory_seq_cp`.
Route 2: llama.cpp's own server with 16 slots, continuous batching and a unified KV cache,
run in process by the `xllamacpp` wheel (in a separate interpreter, so the two llama.cpp
builds never share a process) and called through veriloop's OpenAI-compatible client.

Workloads, each run on both routes in the same run:
  G  16 long generations at once (128 tokens, temperature 0.8): generated tokens per second.
  P  16 Game of 24 `standard` trajectories at once (the main job's first wave: every
     prompt starts with the same few-shot examples): wall seconds.

xllamacpp is not a dependency of veriloop; install it apart and point at its interpreter:

    python -m venv /tmp/xl && /tmp/xl/bin/pip install xllamacpp==2026.10.11549
    python bench/batched_routes.py --xllamacpp-python /tmp/xl/bin/python [--model qwen2.5-coder-1.5b]
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from veriloop.models import GenParams, load_backend  # noqa: E402
from veriloop.models.batched import DEFAULT_SEQUENCES  # noqa: E402
from veriloop.models.openai_compat import OpenAICompatModel  # noqa: E402
from veriloop.models.packs import verified_pack_path  # noqa: E402

SERVE = textwrap.dedent("""
    import sys, xllamacpp
    model, port, slots, threads, context = sys.argv[1], int(sys.argv[2]), *map(int, sys.argv[3:6])
    params = xllamacpp.CommonParams()
    params.model.path = model
    params.n_parallel = slots
    params.n_ctx = context * slots
    params.cont_batching = True
    params.kv_unified = True
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.port = port
    params.hostnames = ["127.0.0.1"]
    server = xllamacpp.Server(params)
    print("ready", server.listening_address, flush=True)
    sys.stdin.read()  # serve until the bench closes our stdin
""")

TOPICS = ["a lighthouse keeper", "a lost dragon", "a clockmaker", "a desert city", "a comet", "an old library",
          "a river pilot", "a chess prodigy", "a mountain village", "a robot gardener", "a pirate cook",
          "a winter market", "a deep-sea diver", "a tea merchant", "a glass bridge", "a forgotten song"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def generation(model: Any) -> float:
    params = GenParams(temperature=0.8, top_p=0.95, max_tokens=128, seed=1)
    await model.generate([{"role": "user", "content": "Say hello."}], params.with_(max_tokens=2))  # warm-up
    started = time.perf_counter()
    replies = await asyncio.gather(*(
        model.generate([{"role": "user", "content": f"Write a long, detailed story about {topic}."}], params)
        for topic in TOPICS[:DEFAULT_SEQUENCES]))
    return sum(r[0].completion_tokens for r in replies) / (time.perf_counter() - started)


async def first_wave(model: Any, out: Path) -> float:
    from veriloop.domains import get_domain
    from veriloop.runs.runner import run_experiment
    from veriloop.strategies import parse_strategy

    domain = get_domain("game24")
    instances = domain.load_instances(None, n=DEFAULT_SEQUENCES)
    started = time.perf_counter()
    await run_experiment(model, domain, [parse_strategy("standard", {})], instances, out, concurrency=DEFAULT_SEQUENCES)
    return time.perf_counter() - started


async def measure(model: Any, out: Path) -> tuple[float, float]:
    rate = await generation(model)
    seconds = await first_wave(model, out)
    return rate, seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--xllamacpp-python", required=True, help="an interpreter that can import xllamacpp")
    args = ap.parse_args()
    path = verified_pack_path(args.model)

    with tempfile.TemporaryDirectory() as tmp:
        ours = load_backend(args.model, threads=args.threads, concurrency=DEFAULT_SEQUENCES)
        ours_rate, ours_seconds = asyncio.run(measure(ours, Path(tmp) / "ours"))
        del ours

        port = free_port()
        server = subprocess.Popen(
            [args.xllamacpp_python, "-c", SERVE, str(path), str(port), str(DEFAULT_SEQUENCES), str(args.threads),
             "4096"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            line = server.stdout.readline() if server.stdout else ""
            if not line.startswith("ready"):
                raise SystemExit(f"the xllamacpp server did not start (got {line!r})")
            theirs = OpenAICompatModel("local", base_url=f"http://127.0.0.1:{port}/v1",
                                       concurrency=DEFAULT_SEQUENCES)
            theirs_rate, theirs_seconds = asyncio.run(measure(theirs, Path(tmp) / "theirs"))
        finally:
            if server.stdin:
                server.stdin.close()
            server.wait(timeout=60)

    print(f"{args.model}, {args.threads} threads, {DEFAULT_SEQUENCES} sequences at once")
    print(f"  G  16 generations:  in-process engine {ours_rate:6.1f} tok/s   xllamacpp server {theirs_rate:6.1f} tok/s"
          f"   ours/theirs {ours_rate / theirs_rate:.2f}x")
    print(f"  P  16 Game of 24:   in-process engine {ours_seconds:6.1f} s       xllamacpp server {theirs_seconds:6.1f} s"
          f"       theirs/ours {theirs_seconds / ours_seconds:.2f}x")


if __name__ == "__main__":
    main()
