"""Server saturation: efficiency = ideal / actual for many trajectories against a fixed-latency server.

A stand-in OpenAI-compatible server (plain asyncio HTTP/1.1 with keep-alive, in its own
process so its work does not share our event loop) answers every chat completion after a
fixed latency with a correct Game of 24 line for the numbers in the prompt. The engine
runs N Game of 24 trajectories (standard strategy, one call each, call cache off) at C in
flight through the `veriloop run` code path: the server client, the call counter, a live
progress bar (drawn to a terminal that is thrown away) and the run directory's records.
Ideal time = ceil(N / C) x latency: each wave of C requests takes one latency.

Baseline, same run, same process: the old write path, each finished trajectory appended
and fsynced on the event loop's thread under a lock (what run_experiment did before the
background record writer). References, the same requests C at a time with no engine around
them: through the server client alone (OpenAICompatModel.generate: the ceiling its client
stack sets, so actual / this is the engine's overhead), and through the openai SDK with its
default httpx stack (what the server client sent through before it posted over aiohttp).

    python bench/server_concurrency.py [--trajectories 512] [--concurrency 128] [--latency 0.5] [--no-baseline]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import math
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console

from veriloop.domains import get_domain
from veriloop.domains.game24 import all_solvable_puzzles, solve
from veriloop.experiment import runner
from veriloop.models import GenParams, load_model
from veriloop.models.counting import CountingModel
from veriloop.progress import ProgressReporter
from veriloop.strategies import parse_strategy

MODEL = "standin-24"
_NUMBERS = re.compile(rb"Numbers: (\d+) (\d+) (\d+) (\d+)\\nReply")


# ------------------------------------------------------------------ the stand-in server


async def _serve_client(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, latency: float, answers: dict[tuple[int, ...], str | None]
) -> None:
    """HTTP/1.1 with keep-alive: every POST is answered after `latency` seconds."""
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            body = await reader.readexactly(length) if length else b""
            await asyncio.sleep(latency)
            payload = json.dumps(_completion(body, answers)).encode()
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                + f"content-length: {len(payload)}\r\n\r\n".encode() + payload
            )
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


def _completion(body: bytes, answers: dict[tuple[int, ...], str | None]) -> dict[str, object]:
    found = _NUMBERS.search(body)
    expression = answers.get(tuple(sorted(int(x) for x in found.groups()))) if found else None
    text = f"Answer: {expression}" if expression else "Answer: 24"
    return {
        "id": "chatcmpl-standin", "object": "chat.completion", "created": 0, "model": MODEL,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 150, "completion_tokens": 12, "total_tokens": 162},
    }


async def _serve(port: int, latency: float) -> None:
    # Solved before listening, so the server spends no time solving while it is measured.
    answers = {tuple(sorted(p)): solve(p) for p in all_solvable_puzzles()}
    server = await asyncio.start_server(
        lambda r, w: _serve_client(r, w, latency, answers), "127.0.0.1", port, backlog=1024
    )
    async with server:
        await server.serve_forever()


def _start_server(latency: float) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    proc = subprocess.Popen([sys.executable, __file__, "--serve", str(port), "--latency", str(latency)])
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, f"http://127.0.0.1:{port}/v1"
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise SystemExit("the stand-in server did not start") from None
            time.sleep(0.05)


# ------------------------------------------------------------------ the run


class _BlockingWriter:
    """The old write path: serialise, append and fsync on the event loop's thread under a lock."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = asyncio.Lock()

    async def append(self, record) -> None:  # type: ignore[no-untyped-def]
        async with self._lock:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(record.model_dump_json() + "\n")
                f.flush()
                os.fsync(f.fileno())

    async def aclose(self) -> None:
        pass


def _run(base_url: str, n: int, concurrency: int, out_dir: Path) -> float:
    domain = get_domain("game24")
    instances = domain.load_instances(None, n=n)
    strategy = parse_strategy("standard")
    # The client bounds its own requests in flight by the model's concurrency, as `--concurrency` sets it.
    model = CountingModel(load_model(f"openai/{MODEL}", base_url=base_url, use_cache=False, concurrency=concurrency))
    terminal = Console(file=io.StringIO(), force_terminal=True, width=100)
    progress = ProgressReporter("bench", live=True, console=terminal)

    async def go() -> float:
        try:
            with progress:
                result = await runner.run_experiment(
                    model, domain, [strategy], instances, out_dir, concurrency=concurrency,
                    on_progress=progress.update,
                )
        finally:
            await model.aclose()
        if result.new_trajectories != n or result.backend_calls != n:
            raise SystemExit(f"expected {n} new trajectories and calls, got {result.new_trajectories}"
                             f" and {result.backend_calls}")
        accuracy = result.summaries[0].accuracy
        if accuracy != 1.0:
            raise SystemExit(f"the stand-in answers every puzzle correctly; accuracy was {accuracy}")
        return result.wall_seconds

    return asyncio.run(go())


def _client_alone(base_url: str, n: int, concurrency: int) -> float:
    """The same requests sent through the server client directly, C at a time, no engine:
    the ceiling that its client stack puts on any run through it."""
    domain = get_domain("game24")
    prompts = [domain.prompt(i) for i in domain.load_instances(None, n=n)]
    params = GenParams(max_tokens=domain.answer_tokens, seed=0)

    async def go() -> float:
        model = load_model(f"openai/{MODEL}", base_url=base_url, use_cache=False, concurrency=concurrency)
        try:
            await asyncio.gather(*(model.generate(m, params) for m in prompts[:concurrency]))  # connections opened
            started = time.perf_counter()
            await asyncio.gather(*(model.generate(m, params) for m in prompts))
            return time.perf_counter() - started
        finally:
            await model.aclose()

    return asyncio.run(go())


def _sdk_alone(base_url: str, n: int, concurrency: int) -> float:
    """The same requests sent with the openai SDK directly (its default httpx stack), C at
    a time, no engine: the ceiling of the client stack the server client used before."""
    import openai

    domain = get_domain("game24")
    prompts = [domain.prompt(i) for i in domain.load_instances(None, n=n)]

    async def go() -> float:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="not-needed", max_retries=0)
        slots = asyncio.Semaphore(concurrency)

        async def one(messages) -> None:  # type: ignore[no-untyped-def]
            async with slots:
                raw = await client.chat.completions.with_raw_response.create(
                    model=MODEL, messages=messages, temperature=0.0, top_p=1.0, max_tokens=domain.answer_tokens,
                    n=1, seed=0,
                )
                raw.parse()

        try:
            await asyncio.gather(*(one(m) for m in prompts[:concurrency]))  # connections opened
            started = time.perf_counter()
            await asyncio.gather(*(one(m) for m in prompts))
            return time.perf_counter() - started
        finally:
            await client.close()

    return asyncio.run(go())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trajectories", type=int, default=512)
    ap.add_argument("--concurrency", type=int, default=128)
    ap.add_argument("--latency", type=float, default=0.5, help="seconds the server takes per request")
    ap.add_argument("--no-baseline", action="store_true", help="skip the old write path's run")
    ap.add_argument("--serve", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        asyncio.run(_serve(args.serve, args.latency))
        return

    ideal = math.ceil(args.trajectories / args.concurrency) * args.latency
    proc, base_url = _start_server(args.latency)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            _run(base_url, min(args.concurrency, args.trajectories), args.concurrency, Path(tmp) / "warm-up")
            alone = _client_alone(base_url, args.trajectories, args.concurrency)
            sdk = _sdk_alone(base_url, args.trajectories, args.concurrency)
            actual = _run(base_url, args.trajectories, args.concurrency, Path(tmp) / "run")
            baseline = None
            if not args.no_baseline:
                writer = runner.RecordWriter
                runner.RecordWriter = _BlockingWriter  # type: ignore[misc, assignment]
                try:
                    baseline = _run(base_url, args.trajectories, args.concurrency, Path(tmp) / "baseline")
                finally:
                    runner.RecordWriter = writer  # type: ignore[misc]
    finally:
        proc.terminate()
        proc.wait()

    print(f"{args.trajectories} Game of 24 trajectories (standard, cache off) at {args.concurrency} in flight, "
          f"server latency {args.latency:g} s")
    print(f"ideal  (ceil(N / C) x latency): {ideal:6.2f} s")
    print(f"actual (background record writer): {actual:6.2f} s  efficiency {ideal / actual:.2f}  (goal >= 0.8)")
    print(f"server client alone, same requests, no engine: {alone:6.2f} s  efficiency {ideal / alone:.2f}"
          "  (its client stack's own ceiling)")
    print(f"ratio actual / client alone (engine overhead): {actual / alone:.2f}")
    print(f"openai SDK alone (httpx, the old client stack): {sdk:6.2f} s  efficiency {ideal / sdk:.2f}")
    if baseline is not None:
        print(f"baseline (old path, fsync on the loop thread): {baseline:6.2f} s  efficiency {ideal / baseline:.2f}")
        print(f"ratio baseline / actual: {baseline / actual:.2f}")


if __name__ == "__main__":
    main()
