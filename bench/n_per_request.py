"""k samples of one prompt: requests and prompt tokens billed, one request a sample
against n = k in one request (issue 39).

The server is the test suite's OpenAI stand-in (tests/standins/openai.py, a stdlib
server in this process): it bills a request's prompt once whatever its `n`, counts
tokens as words (3 more a message), and answers every sample with the suite's reply.
Workloads, each a `veriloop run` in a subprocess with a fresh call cache and run
directory, on Game of 24 (--n puzzles, seed 0):
(a) sampling with k = 15 and `together=true`: the 15 samples drawn in one call, then
    checked in order (the suite's reply is never right, so all 15 are checked);
(b) self-consistency with k = 15: 15 samples of one prompt per puzzle;
(c) the main job's four strategies (its sampling, k = 15, draws one sample a round and
    stops at the first the verifier accepts, so it is one request a round whatever the
    provider: it is here to show what does not change).
Baseline, same run: the same workloads against the stand-in told to ignore `n` (one
choice per request, as llama.cpp's server does), so veriloop falls back to one request a
sample, as every version before this one sent them.

    python bench/n_per_request.py [--n 10]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests")]

from standins.openai import OpenAIStandin  # noqa: E402  # the suite's stand-in, on the path just added

WORKLOADS = {
    "sampling k=15, together": ["-s", "sampling:k=15,together=true"],
    "self-consistency k=15": ["-s", "self-consistency:k=15"],
    "main job (sampling k=15)": ["--k", "15"],
}


def run(server: OpenAIStandin, args: list[str], n: int, scratch: Path) -> dict[str, int]:
    before = dict(server.billed)
    env = {**os.environ, "VERILOOP_HOME": str(scratch / "home"), "PYTHONPATH": str(ROOT / "src")}
    subprocess.run(
        [sys.executable, "-m", "veriloop.cli", "run", "--model", "openai/gpt-4o-mini", "--base-url", server.base_url,
         "--api-key", server.key, "-n", str(n), "--out", str(scratch / "run"), *args],
        check=True, env=env, capture_output=True, text=True,
    )
    return {key: server.billed[key] - before[key] for key in ("requests", "prompt_tokens", "completion_tokens")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10, help="Game of 24 puzzles (default 10)")
    args = parser.parse_args()
    print(f"Game of 24, {args.n} puzzles, seed 0; the OpenAI stand-in bills a request's prompt once")
    print(f"{'workload':28} {'':18} {'requests':>9} {'prompt tokens':>14} {'completion tokens':>18}")
    for name, extra in WORKLOADS.items():
        figures = {}
        for label, ignore_n in (("one request/sample", True), ("n per request", False)):
            with tempfile.TemporaryDirectory() as scratch, OpenAIStandin(ignore_n=ignore_n) as server:
                figures[label] = run(server, extra, args.n, Path(scratch))
            f = figures[label]
            print(f"{name:28} {label:18} {f['requests']:9d} {f['prompt_tokens']:14d} {f['completion_tokens']:18d}")
        base, new = figures["one request/sample"], figures["n per request"]
        print(f"{name:28} {'ratio (new/base)':18} {new['requests'] / base['requests']:9.3f} "
              f"{new['prompt_tokens'] / base['prompt_tokens']:14.3f} "
              f"{new['completion_tokens'] / base['completion_tokens']:18.3f}")


if __name__ == "__main__":
    main()
