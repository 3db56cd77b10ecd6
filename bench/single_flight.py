"""Single flight: requests sent against distinct calls, with it on and off (issue 30).

A scripted OpenAI-compatible server on 127.0.0.1 (a stdlib threaded server in this
process) answers every chat completion, after a latency between 0.5 and 1.5 times
--latency (drawn from a hash of the request: replies of uneven length, as a model's are,
and the same for the same request in every run), with the same reply the test suite's
instant server gives (a Game of 24 line that the sound verifier rejects and a
"Verdict: correct" that an LLM verifier accepts), and records each request's body. A
distinct call is a distinct body (the messages and every sampling parameter, the seed of
each sample included); every request beyond the first with a given body is a duplicate,
a call paid twice.

Workloads, each a `veriloop run` command in a subprocess with a fresh call cache:
(a) the main job: `veriloop run` defaults (Game of 24, 10 puzzles, the four strategies,
    the server's default concurrency);
(b) the issue's pair: standard and backprompt's first round, the same request for each
    puzzle, at `--concurrency 20`;
(c) both again on Ray (`--executor ray`, joining a local cluster of 2 CPUs this script
    starts): the driver's single flight across the workers' calls.
Baseline, same run: each workload again with single flight off, through the private
switch `VERILOOP_SINGLE_FLIGHT=0` (read by the call cache; see veriloop/models/cache.py),
which makes every call ask for what the cache lacks, as before single flight existed.
Target: 0 duplicates with single flight on.

    python bench/single_flight.py [--latency 0.2] [--n 10] [--no-ray]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path

from chat_standin import send_json, serving

# What tests/servers.py's instant server answers: a step, a program, an answer and a verdict.
REPLY = "Step 1: 3 + 4 = 7.\nanswer = 7\nAnswer: 7\nVerdict: correct"
SWITCH = "VERILOOP_SINGLE_FLIGHT"  # veriloop.models.cache.SINGLE_FLIGHT_ENV; "0" turns it off


class _Scripted(BaseHTTPRequestHandler):
    latency = 0.2
    lock = threading.Lock()
    bodies: list[str] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        canonical = json.dumps(body, sort_keys=True)
        with self.lock:
            self.bodies.append(canonical)
        spread = int.from_bytes(hashlib.sha256(canonical.encode()).digest()[:2], "big") / 65536
        time.sleep(self.latency * (0.5 + spread))  # this request's own thread: requests in flight overlap
        send_json(self, {
            "id": "scripted", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": REPLY}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19},
        })

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def _server(latency: float) -> Iterator[str]:
    _Scripted.latency = latency
    with serving(_Scripted) as url:
        yield url


@dataclass
class Count:
    requests: int
    distinct: int
    seconds: float

    @property
    def duplicates(self) -> int:
        return self.requests - self.distinct


def _run(args: list[str], base_url: str, where: Path, single_flight: bool) -> Count:
    """One `veriloop run` against the server, in a fresh home and call cache; what it sent."""
    where.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k != SWITCH}
    env.update(VERILOOP_HOME=str(where / "home"), COLUMNS="200")
    if not single_flight:
        env[SWITCH] = "0"
    with _Scripted.lock:
        _Scripted.bodies.clear()
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "veriloop.cli", "run", *args, "--model", "openai/scripted", "--base-url", base_url,
         "--api-key", "none", "--cache", str(where / "calls.sqlite"), "--out", str(where / "run")],
        capture_output=True, text=True, env=env, cwd=where, timeout=3600,
    )
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"veriloop run {' '.join(args)} failed:\n{proc.stderr[-3000:]}")
    with _Scripted.lock:
        sent = Counter(_Scripted.bodies)
    return Count(sum(sent.values()), len(sent), seconds)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=0.2, help="seconds the server takes per request")
    ap.add_argument("--n", type=int, default=10, help="puzzles per workload")
    ap.add_argument("--no-ray", action="store_true", help="skip the Ray workload")
    args = ap.parse_args()

    n = ["-n", str(args.n)]
    workloads: list[tuple[str, list[str]]] = [
        (f"main job (run defaults, n={args.n})", n),
        ("standard + backprompt round 1, --concurrency 20",
         [*n, "-s", "standard", "-s", "backprompt:verifier=sound,feedback=first,max_rounds=1", "--concurrency", "20"]),
    ]
    rows: list[tuple[str, Count, Count]] = []
    ray_context = None
    with _server(args.latency) as base_url, tempfile.TemporaryDirectory() as tmp:
        if not args.no_ray:
            import ray

            ray_context = ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
            on_ray = ["--executor", "ray", "--address", ray_context.address_info["address"]]
            workloads += [(f"main job on Ray (n={args.n})", [*n, *on_ray]),
                          ("the pair on Ray, --concurrency 20", [*workloads[1][1], *on_ray])]
        try:
            for number, (label, run_args) in enumerate(workloads):
                baseline = _run(run_args, base_url, Path(tmp) / f"{number}-off", single_flight=False)
                on = _run(run_args, base_url, Path(tmp) / f"{number}-on", single_flight=True)
                rows.append((label, baseline, on))
        finally:
            if ray_context is not None:
                import ray

                ray.shutdown()

    print(f"requests sent against distinct calls, scripted server on 127.0.0.1 answering in {args.latency:g} s "
          "(x 0.5-1.5 by request)")
    print(f"{'workload':50} {'single flight':15} {'requests':>8} {'distinct':>8} {'duplicates':>10} {'seconds':>8}")
    for label, baseline, on in rows:
        for name, count in (("off (baseline)", baseline), ("on", on)):
            print(f"{label if count is baseline else '':50} {name:15} {count.requests:8} {count.distinct:8} "
                  f"{count.duplicates:10} {count.seconds:8.1f}")
        print(f"{'':50} ratio requests off / on: {baseline.requests / on.requests:.2f}x "
              f"(duplicates on: {on.duplicates}, target 0)")
    total_on = sum(on.duplicates for _, _, on in rows)
    print(f"duplicate requests with single flight on, all workloads: {total_on} (target 0)")


if __name__ == "__main__":
    main()
