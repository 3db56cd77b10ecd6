"""Server saturation: efficiency = ideal / actual for many trajectories against a fixed-latency server.

A stand-in OpenAI-compatible server (plain asyncio HTTP/1.1 with keep-alive, in its own
process so its work does not share our event loop) answers every chat completion after a
fixed latency with a correct Game of 24 line for the numbers in the prompt. The engine
runs N Game of 24 trajectories (standard strategy, one call each, call cache off) at C in
flight through the `veriloop run` code path: the server client, the call counter, a live
progress bar (drawn to a terminal that is thrown away) and the run directory's records.
Ideal time = ceil(N / C) x latency: each wave of C requests takes one latency, and the
client costs nothing (no CPU to start a trajectory, read a reply or write a record).

The actual run and the engine before issue 30 run `--repeat` times each, alternately (the
machine is shared: medians). Baselines, same run, same process:
- the engine before issue 30: a task per trajectory waiting for one of C slots (a freed
  slot woke its next task behind every reply that had come back meanwhile), a slot held
  until its record was fsynced, all C first requests sent only once the last trajectory
  had started (so they reached the server, and came back, in one burst), and every object
  of the process in each full garbage collection;
- the old write path, each finished trajectory appended and fsynced on the event loop's
  thread under a lock (what run_experiment did before the background record writer).
References, the same requests C at a time with no engine around them: through the server
client alone (OpenAICompatModel.generate, its connections opened before timing: the
ceiling its client stack sets, so actual / this is the engine's overhead), and through the
openai SDK with its default httpx stack (what the server client sent through before it
posted over aiohttp).

Where the time beyond the ideal went, in the median actual run, along the slot whose reply
came last: from the run's start to its first request (the slots start one per turn of the
event loop, each sending its request before the next starts, so this is about C times the
CPU one trajectory costs), its replies' time beyond the latency (the stand-in's own delay
and replies waiting while the loop serves others), the time between its calls (checking
the answer, handing the record over, the next prompt) and what follows its last reply
(the last records fsynced, summary.json written); and, from Linux's schedstat, how long
the event loop's thread and the stand-in server were runnable but waited for a CPU that
other processes held (0 on an idle machine; on a shared one it lands mostly in the busy
moments, when the replies of a wave are read and the next requests sent).

    python bench/server_concurrency.py [--trajectories 512] [--concurrency 128] [--latency 0.5] [--repeat 3]
                                       [--no-baseline]
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
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from veriloop.domains import get_domain
from veriloop.domains.game24 import all_solvable_puzzles, solve
from veriloop.models import GenParams, load_model
from veriloop.models.base import Completion
from veriloop.models.counting import CountingModel
from veriloop.progress import ProgressReporter
from veriloop.records import Message, Trajectory
from veriloop.runs import runner
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


async def _engine_before_issue_30(
    model: Any, domain: Any, todo: Sequence[tuple[Any, Any]], out_dir: Path, seed: int, *, total: int,
    concurrency: int | None = None, on_progress: Callable[[int, int], None] | None = None,
    tools: Any = None, role_models: Mapping[str, Any] | None = None,
) -> list[Trajectory]:
    """runner.run_pairs as it was before issue 30: a task per trajectory, all created at
    once, waiting for one of `concurrency` slots, each slot held until its record is on disk."""
    finished = total - len(todo)
    if on_progress:
        on_progress(finished, total)
    semaphore = asyncio.Semaphore(concurrency or model.preferred_concurrency)
    writer = runner.RecordWriter(out_dir / runner.TRAJECTORIES)
    new: list[Trajectory] = []

    async def one(strategy: Any, instance: Any) -> None:
        nonlocal finished
        async with semaphore:
            t = await runner.run_episode(model, domain, strategy, instance, seed, tools, role_models)
            await writer.append(t)
            new.append(t)
            finished += 1
            if on_progress:
                on_progress(finished, total)

    tasks = [asyncio.create_task(one(s, i)) for s, i in todo]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        await runner.cancel_and_wait(tasks)
        raise
    finally:
        await writer.aclose()
    return new


@dataclass
class _Timed:
    """Passes every call through, noting when it started and ended, and in which task."""

    inner: Any
    calls: list[tuple[object, float, float]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.backend, self.identity, self.name = self.inner.backend, self.inner.identity, self.inner.name
        self.preferred_concurrency = self.inner.preferred_concurrency

    async def generate(self, messages: list[Message], params: GenParams) -> list[Completion]:
        started = time.perf_counter()
        completions: list[Completion] = await self.inner.generate(messages, params)
        self.calls.append((asyncio.current_task(), started, time.perf_counter()))
        return completions

    async def aclose(self) -> None:
        await self.inner.aclose()


@dataclass
class _Run:
    seconds: float  # the run's own wall_seconds
    where: dict[str, float]  # seconds beyond the ideal along the slot whose reply came last, by cause
    calls: int  # that slot's calls
    # Seconds the event loop's thread, and the stand-in server, ran on a CPU and waited for
    # one (runnable while other processes held the cores) during the run; None off Linux.
    loop_cpu: tuple[float, float] | None = None
    server_cpu: tuple[float, float] | None = None


def _schedstat(path: str) -> tuple[float, float] | None:
    """Seconds run on a CPU and waited for one so far, from Linux's schedstat (None without it)."""
    try:
        with open(path) as f:
            ran, waited = f.read().split()[:2]
    except (OSError, ValueError):
        return None
    return int(ran) / 1e9, int(waited) / 1e9


def _spent(before: tuple[float, float] | None, after: tuple[float, float] | None) -> tuple[float, float] | None:
    return None if before is None or after is None else (after[0] - before[0], after[1] - before[1])


def _where(calls: list[tuple[object, float, float]], started: float, ended: float, latency: float) -> tuple[dict[str, float], int]:
    """The time of the slot whose reply came last, beyond its calls' latency, by cause."""
    last = max(calls, key=lambda call: call[2])[0]
    mine = sorted((start, end) for task, start, end in calls if task is last)
    return {
        "to its first request": mine[0][0] - started,
        "its replies beyond the latency": sum(end - start - latency for start, end in mine),
        "between its calls": sum(nxt[0] - prev[1] for prev, nxt in zip(mine, mine[1:], strict=False)),
        "after its last reply": ended - mine[-1][1],
    }, len(mine)


def _run(base_url: str, n: int, concurrency: int, out_dir: Path, latency: float = 0.0, server_pid: int = 0) -> _Run:
    domain = get_domain("game24")
    instances = domain.load_instances(None, n=n)
    strategy = parse_strategy("standard")
    # The client bounds its own requests in flight by the model's concurrency, as `--concurrency` sets it.
    timed = _Timed(load_model(f"openai/{MODEL}", base_url=base_url, use_cache=False, concurrency=concurrency))
    model = CountingModel(timed)
    terminal = Console(file=io.StringIO(), force_terminal=True, width=100)
    progress = ProgressReporter("bench", live=True, console=terminal)

    async def go() -> _Run:
        try:
            with progress:
                loop, server = _schedstat("/proc/thread-self/schedstat"), _schedstat(f"/proc/{server_pid}/schedstat")
                started = time.perf_counter()
                result = await runner.run_experiment(
                    model, domain, [strategy], instances, out_dir, concurrency=concurrency,
                    on_progress=progress.update,
                )
                ended = time.perf_counter()
                loop = _spent(loop, _schedstat("/proc/thread-self/schedstat"))
                server = _spent(server, _schedstat(f"/proc/{server_pid}/schedstat"))
        finally:
            await model.aclose()
        if result.new_trajectories != n or result.backend_calls != n:
            raise SystemExit(f"expected {n} new trajectories and calls, got {result.new_trajectories}"
                             f" and {result.backend_calls}")
        accuracy = result.summaries[0].accuracy
        if accuracy != 1.0:
            raise SystemExit(f"the stand-in answers every puzzle correctly; accuracy was {accuracy}")
        return _Run(result.wall_seconds, *_where(timed.calls, started, ended, latency), loop, server)

    return asyncio.run(go())


def _run_with(engine: Callable[..., Any], *args: Any, **kwargs: Any) -> _Run:
    """_run with `engine` in place of runner.run_pairs."""
    current = runner.run_pairs
    runner.run_pairs = engine
    try:
        return _run(*args, **kwargs)
    finally:
        runner.run_pairs = current


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
    ap.add_argument("--repeat", type=int, default=3, help="runs of the engine and of its baseline (medians)")
    ap.add_argument("--no-baseline", action="store_true", help="skip the old write path's run")
    ap.add_argument("--serve", type=int, metavar="PORT", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error("--repeat must be at least 1")
    if args.serve:
        asyncio.run(_serve(args.serve, args.latency))
        return

    n, c, latency = args.trajectories, args.concurrency, args.latency
    ideal = math.ceil(n / c) * latency
    proc, base_url = _start_server(latency)
    actual: list[_Run] = []
    before: list[_Run] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            _run(base_url, min(c, n), c, Path(tmp) / "warm-up")
            alone = _client_alone(base_url, n, c)
            sdk = _sdk_alone(base_url, n, c)
            for i in range(args.repeat):  # alternately, so that both see the machine as it is
                for which in ("actual", "before") if i % 2 == 0 else ("before", "actual"):
                    if which == "actual":
                        actual.append(_run(base_url, n, c, Path(tmp) / f"run-{i}", latency, proc.pid))
                    else:
                        before.append(_run_with(_engine_before_issue_30, base_url, n, c, Path(tmp) / f"before-{i}"))
            baseline = None
            if not args.no_baseline:
                writer = runner.RecordWriter
                runner.RecordWriter = _BlockingWriter  # type: ignore[misc, assignment]
                try:
                    baseline = _run(base_url, n, c, Path(tmp) / "baseline").seconds
                finally:
                    runner.RecordWriter = writer  # type: ignore[misc]
    finally:
        proc.terminate()
        proc.wait()

    def median(runs: list[_Run]) -> float:
        return statistics.median(r.seconds for r in runs)

    def each(runs: list[_Run]) -> str:
        return " ".join(f"{r.seconds:.2f}" for r in runs)

    runs = f"median of {args.repeat} runs" if args.repeat > 1 else "one run"
    print(f"{n} Game of 24 trajectories (standard, cache off) at {c} in flight, server latency {latency:g} s")
    print(f"ideal  (ceil(N / C) x latency): {ideal:6.2f} s")
    print(f"actual: {median(actual):6.2f} s  efficiency {ideal / median(actual):.2f}  (goal >= 0.95; {runs}: "
          f"{each(actual)})")
    print(f"baseline, the engine before issue 30 (a task per trajectory behind a semaphore, the slot held until the "
          f"record is fsynced, the first wave sent in one burst, full collections): {median(before):6.2f} s  "
          f"efficiency {ideal / median(before):.2f}  ({each(before)})")
    print(f"ratio baseline / actual: {median(before) / median(actual):.2f}")
    typical = sorted(actual, key=lambda r: r.seconds)[(len(actual) - 1) // 2]
    parts = ", ".join(f"{name} {seconds:.3f} s" for name, seconds in typical.where.items())
    print(f"where the median actual run's {typical.seconds - ideal:.2f} s beyond the ideal went, along the slot whose "
          f"reply came last ({typical.calls} calls): {parts}")
    if typical.loop_cpu is not None and typical.server_cpu is not None:
        (ran, waited), (_, server_waited) = typical.loop_cpu, typical.server_cpu
        print(f"  meanwhile its event loop's thread ran {ran:.3f} s on a CPU and waited {waited:.3f} s for one (other "
              f"processes held the cores; 0 on an idle machine), the stand-in server waited {server_waited:.3f} s")
    print(f"server client alone, same requests, no engine: {alone:6.2f} s  efficiency {ideal / alone:.2f}"
          "  (its client stack's own ceiling)")
    print(f"ratio actual / client alone (engine overhead): {median(actual) / alone:.2f}")
    print(f"openai SDK alone (httpx, the old client stack): {sdk:6.2f} s  efficiency {ideal / sdk:.2f}")
    if baseline is not None:
        print(f"old write path (fsync on the loop thread): {baseline:6.2f} s  efficiency {ideal / baseline:.2f}")
        print(f"ratio old write path / actual: {baseline / median(actual):.2f}")


if __name__ == "__main__":
    main()
