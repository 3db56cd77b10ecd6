"""`BatchModel`: a server model whose calls go through the provider's batch API (OpenAI's
Batch API, Anthropic's Message Batches: half the price, answers within 24 h).

A call does not send: it queues its requests (built by the provider, one per sample, or
one per run of samples where the provider takes n) and waits for their results. The
queue goes as ONE batch when the run can add no call to it: every slot of the run
(veriloop.models.batch.scope) waits on a model, or, outside a run or when a trajectory
waits on something else, no call was queued for `quiet_seconds`. The batch is then
looked at every `poll_seconds` until it ends; its results are parsed by the provider
(`replies`) and handed to the waiting calls, whose completions say in `sent["batch"]`
which batch carried them (prices halve those). The next round's calls form the next batch.

Crash safety (the journal, veriloop.models.batch.journal, in the run directory):
- an intent (its custom_ids and the (call key, samples) of each) is fsynced BEFORE the
  submit request, the batch id right after; a later run on the directory reads them
  first, and a call whose samples are in a batch not yet collected waits for that batch
  instead of queuing them again: nothing is submitted twice;
- an intent without its batch id (a kill during the submit) is resolved by asking the
  provider (OpenAI: the intent id in the batch's metadata; Anthropic: the intent id
  starts every custom_id, read from the results of the ended batches of as many
  requests created since the intent's time less apis.CLOCK_SLACK_SECONDS: a provider's
  clock further behind this machine's would hide the batch): found, it is collected;
  not found, its calls are queued afresh;
- results are not held anywhere but the call cache: a batch is marked collected (in
  the order its results arrived) only when they were read and the run ended normally
  (every reply it used is committed), so results fetched but not committed at a kill
  are fetched again (providers keep them: OpenAI's files, Anthropic's 29 days);
- an expired or cancelled line, or a provider's fault on one, goes into the next batch
  (at most MAX_TRIES times per sample); a refused line fails its call with one line; a
  batch that failed as a whole fails its calls with the provider's reason, and a re-run
  (once the user fixed it) sends them again.
The key is never written: the journal holds ids and call keys (hashes) only.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
import weakref
from collections.abc import Awaitable, Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

from ...errors import ModelTransportError, VeriloopError
from ...progress import batch_status
from ...records import Message
from ..base import Completion, GenParams
from ..cache import call_key
from ..providers.base import Damaged, Provider, Request
from .apis import BATCH_APIS, PENDING, BatchAPI, Http, Outcome
from .journal import Intent, Journal
from .scope import RunScope, current_scope

POLL_SECONDS = 30.0
QUIET_SECONDS = 2.0
MAX_TRIES = 3  # batches a sample may go in (expired, or a provider's fault) before its call fails
MAX_REQUESTS = 50_000  # OpenAI's limit per batch (Anthropic's is 100,000)
CONCURRENCY = 100_000  # trajectories at once: every one's next call belongs in the batch


@dataclass(eq=False)
class _Line:
    """One custom_id: the samples first .. first+count-1 of the call `key`."""

    intent: str
    key: str
    first: int
    count: int
    future: asyncio.Future[Outcome]
    batch: str | None = None


@dataclass(eq=False)
class _Pending:
    key: str
    first: int
    count: int
    request: Request
    future: asyncio.Future[Outcome]


@dataclass(eq=False)
class _Queue:
    """The calls of one run directory (or of no run) not yet answered, and its batches."""

    scope: RunScope | None
    journal: Journal | None
    pending: list[_Pending] = field(default_factory=list)
    waiting: dict[tuple[str, int], _Line] = field(default_factory=dict)
    arrived: dict[str, None] = field(default_factory=dict)  # intents whose results are in, in arrival order
    tasks: set[asyncio.Task[None]] = field(default_factory=set)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    last: float = 0.0
    flusher: asyncio.Task[None] | None = None


class BatchModel:
    """A Model that sends its calls through a provider's batch API (see the module docstring).

    Args:
        provider: The wire format (its `request` and `replies`); its prefix picks the batch API.
        base_url: The API's base URL (as the live client's).
        api_key: The key (kept in the request headers only).
        identity: The cache identity: the live model's, so batch and live calls share the cache.
        backend: The backend name in the cache key (the live model's).
        poll_seconds: Seconds between two looks at a submitted batch.
        quiet_seconds: Outside a run (or while a trajectory waits on something else), how
            long without a new call before the queue goes as a batch.
        concurrency: Trajectories at once (default: all of them).
    """

    def __init__(self, provider: Provider, *, base_url: str, api_key: str | None, identity: str,
                 backend: str | None = None, poll_seconds: float | None = None, quiet_seconds: float = QUIET_SECONDS,
                 concurrency: int | None = None, retry_budget: float | None = None, max_requests: int = MAX_REQUESTS,
                 sleep: Callable[[float], Awaitable[Any]] | None = None) -> None:
        api = BATCH_APIS.get(provider.prefix)
        if api is None:
            raise VeriloopError(f"{provider.title} has no batch API veriloop speaks (openai/ and anthropic/ do); "
                                "drop --batch (batch = true) for this model")
        self.provider = provider
        self.backend = backend or provider.prefix
        self.identity = identity
        self.name = provider.model
        self.preferred_concurrency = concurrency or CONCURRENCY
        self.poll_seconds = POLL_SECONDS if poll_seconds is None else poll_seconds
        self.quiet_seconds = quiet_seconds
        self.max_requests = max_requests
        self._sleep = sleep or asyncio.sleep
        headers = {"Accept": "application/json", **provider.headers(api_key)}
        self.http = Http(api.name, headers, api_key, retry_budget=retry_budget, sleep=self._sleep)
        self.api: BatchAPI = api(provider, base_url, self.http)
        self._queues: weakref.WeakKeyDictionary[RunScope, _Queue] = weakref.WeakKeyDictionary()
        self._unscoped: _Queue | None = None

    # ------------------------------------------------------------------ the calls

    async def generate(self, messages: list[Message], params: GenParams) -> list[Completion]:
        queue = self._queue(current_scope())
        key = call_key(self.backend, self.identity, messages, params)
        wanted = range(params.sample_offset, params.sample_offset + params.n)
        found: dict[int, Completion] = {}
        tries: dict[int, int] = {}
        started = time.perf_counter()
        while len(found) < params.n:
            missing = [i for i in wanted if i not in found]
            fresh = [i for i in missing if (key, i) not in queue.waiting]
            for first, count in self._runs(fresh):
                request = self.provider.request(messages, params.with_(n=count, sample_offset=first), 0, count)
                self._enqueue(queue, _Pending(key, first, count, request, asyncio.get_running_loop().create_future()))
            lines = {id(queue.waiting[(key, i)]): queue.waiting[(key, i)] for i in missing}
            with queue.scope.waiting() if queue.scope is not None else nullcontext():
                for line in lines.values():
                    await asyncio.shield(line.future)  # shared: a cancelled call leaves it to the others
            parsed: dict[int, list[Completion]] = {}
            for i in missing:
                line = queue.waiting.pop((key, i))
                outcome = line.future.result()
                if outcome.kind == "error":
                    raise VeriloopError(outcome.why)
                if outcome.kind == "ok":
                    try:
                        if id(line) not in parsed:
                            parsed[id(line)] = self._completions(messages, params, line, outcome, started)
                        found[i] = parsed[id(line)][i - line.first]
                        continue
                    except Damaged as exc:
                        outcome = Outcome("retry", why=str(exc))
                tries[i] = tries.get(i, 0) + 1
                if tries[i] >= MAX_TRIES:
                    raise ModelTransportError(
                        f"{self.api.name}: sample {i} of a call to {self.name} went in {MAX_TRIES} batches without an "
                        f"answer (last: {outcome.why}); re-run later (finished work is kept)")
        return [found[i] for i in wanted]

    def _runs(self, indices: list[int]) -> list[tuple[int, int]]:
        if not self.provider.supports.n:
            return [(i, 1) for i in indices]
        runs: list[tuple[int, int]] = []
        for i in indices:
            if runs and runs[-1][0] + runs[-1][1] == i:
                runs[-1] = (runs[-1][0], runs[-1][1] + 1)
            else:
                runs.append((i, 1))
        return runs

    def _completions(self, messages: list[Message], params: GenParams, line: _Line, outcome: Outcome,
                     started: float) -> list[Completion]:
        at = params.with_(n=line.count, sample_offset=line.first)
        sent = self.provider.request(messages, at, 0, line.count).sent
        completions = self.provider.replies(outcome.data, line.count, at)
        for completion in completions:
            completion.sent = {**(completion.sent or sent), "batch": line.batch}
            completion.seconds = time.perf_counter() - started
        return completions

    # ------------------------------------------------------------------ the queue

    def _queue(self, scope: RunScope | None) -> _Queue:
        if scope is None:
            if self._unscoped is None:
                self._unscoped = _Queue(None, None)
            return self._unscoped
        queue = self._queues.get(scope)
        if queue is None:
            queue = self._queues[scope] = _Queue(scope, Journal(scope.run_dir))
            scope.listeners.add(queue.changed.set)
            scope.closers.append(lambda normally: self._close(queue, normally))
            self._resume(queue)
        return queue

    def _enqueue(self, queue: _Queue, pending: _Pending) -> None:
        line = _Line("", pending.key, pending.first, pending.count, pending.future)
        for i in range(pending.first, pending.first + pending.count):
            queue.waiting[(pending.key, i)] = line
        queue.pending.append(pending)
        queue.last = time.monotonic()
        queue.changed.set()
        if queue.flusher is None or queue.flusher.done():
            queue.flusher = self._spawn(queue, self._flush(queue))

    def _spawn(self, queue: _Queue, work: Awaitable[None]) -> asyncio.Task[None]:
        async def run() -> None:
            await work

        task = asyncio.get_running_loop().create_task(run())
        queue.tasks.add(task)
        task.add_done_callback(queue.tasks.discard)
        return task

    async def _flush(self, queue: _Queue) -> None:
        """Send the queue as a batch whenever the run can add nothing to it."""
        while queue.pending:
            quiet_for = time.monotonic() - queue.last
            if ((queue.scope is not None and queue.scope.all_waiting()) or quiet_for >= self.quiet_seconds
                    or len(queue.pending) >= self.max_requests):
                entries, queue.pending = queue.pending[:self.max_requests], queue.pending[self.max_requests:]
                await self._submit(queue, entries)
                continue
            queue.changed.clear()
            try:
                await asyncio.wait_for(queue.changed.wait(), self.quiet_seconds - quiet_for)
            except TimeoutError:
                pass

    async def _submit(self, queue: _Queue, entries: list[_Pending]) -> None:
        intent = uuid.uuid4().hex[:16]
        lines = [(f"{intent}-{n}", entry) for n, entry in enumerate(entries)]
        ours = {}
        for cid, entry in lines:
            line = queue.waiting[(entry.key, entry.first)]
            line.intent = intent
            ours[cid] = line
        await self._journal(queue, {"event": "intent", "intent": intent, "provider": self.provider.prefix,
                                    "identity": self.identity, "time": time.time(),
                                    "calls": [[cid, e.key, e.first, e.count] for cid, e in lines]})
        try:
            batch = await self.api.submit(intent, [(cid, entry.request) for cid, entry in lines])
        except VeriloopError as exc:
            if not isinstance(exc, ModelTransportError):  # refused: no batch was made
                await self._journal(queue, {"event": "abandoned", "intent": intent})
            refused = Outcome("error", why=str(exc))
            self._settle(queue, intent, ours, lambda cid: refused)
            return
        await self._journal(queue, {"event": "submitted", "intent": intent, "batch": batch})
        self._spawn(queue, self._collect(queue, intent, batch, ours))

    async def _collect(self, queue: _Queue, intent: str, batch: str, lines: dict[str, _Line]) -> None:
        """Look at the batch until it ends, then hand its results to the waiting calls."""
        for line in lines.values():
            line.batch = batch
        try:
            while True:
                look = await self.api.look(batch)
                batch_status(batch, f"batch {batch}: {look.state}" + (f", {look.counts}" if look.counts else ""))
                if look.ended:
                    break
                await self._sleep(self.poll_seconds)
            if look.failure is not None:
                why = (f"the batch {batch} failed at the {self.api.name}: {look.failure}; fix what it names, then "
                       "re-run (its calls are sent again)")
                await self._journal(queue, {"event": "failed", "intent": intent, "why": look.failure[:500]})
                self._settle(queue, intent, lines, lambda cid: Outcome("error", why=why))
                return
            outcomes = await self.api.results(batch, look)
        except VeriloopError as exc:
            failed = Outcome("error", why=str(exc))
            self._settle(queue, intent, lines, lambda cid: failed)
            return
        finally:
            batch_status(batch, None)
        queue.arrived[intent] = None
        self._settle(queue, intent, lines, lambda cid: outcomes.get(cid, Outcome("retry", why="no result")))

    def _settle(self, queue: _Queue, intent: str, lines: dict[str, _Line],
                outcome: Callable[[str], Outcome]) -> None:
        for cid, line in lines.items():
            if not line.future.done():
                line.future.set_result(outcome(cid))

    # ------------------------------------------------------------------ the journal

    async def _journal(self, queue: _Queue, entry: dict[str, Any]) -> None:
        if queue.journal is not None:
            await asyncio.to_thread(queue.journal.append, entry)

    def _resume(self, queue: _Queue) -> None:
        """Wait for every batch the journal holds that was not collected."""
        assert queue.journal is not None
        intents = [it for it in queue.journal.intents(self.provider.prefix, self.identity) if it.ended is None]
        known = {it.batch for it in queue.journal.intents(self.provider.prefix, self.identity) if it.batch}
        loop = asyncio.get_running_loop()
        for it in intents:
            lines = {}
            for cid, (key, first, count) in it.calls.items():
                line = _Line(it.intent, key, first, count, loop.create_future(), it.batch)
                lines[cid] = line
                for i in range(first, first + count):
                    queue.waiting.setdefault((key, i), line)
            self._spawn(queue, self._resumed(queue, it, lines, known))

    async def _resumed(self, queue: _Queue, it: Intent, lines: dict[str, _Line], known: set[str]) -> None:
        batch = it.batch
        try:
            while batch is None:
                found = await self.api.find(it.intent, it.time, len(it.calls), known)
                if found == PENDING:
                    await self._sleep(self.poll_seconds)
                elif found is None:  # the kill came before the provider made it: its calls are queued afresh
                    await self._journal(queue, {"event": "abandoned", "intent": it.intent})
                    self._settle(queue, it.intent, lines, lambda cid: Outcome("retry", why="never submitted"))
                    return
                else:
                    batch = found
                    await self._journal(queue, {"event": "submitted", "intent": it.intent, "batch": batch})
        except VeriloopError as exc:
            failed = Outcome("error", why=str(exc))
            self._settle(queue, it.intent, lines, lambda cid: failed)
            return
        await self._collect(queue, it.intent, batch, lines)

    def _close(self, queue: _Queue, normally: bool) -> None:
        """The run ended: its waits are over, and after a normal end (every reply it used
        is committed to the call cache) every batch whose results arrived is collected (a
        sample no call asked for was in the cache already). After an error nothing is: a
        reply handed over may not be committed, so its batch is fetched again."""
        for task in list(queue.tasks):
            task.cancel()
        if queue.journal is None or not normally:
            return
        for intent in queue.arrived:
            try:
                queue.journal.append({"event": "collected", "intent": intent})
            except OSError:
                pass  # fetched again by the next run: nothing lost

    async def aclose(self) -> None:
        for queue in [*self._queues.values(), *([self._unscoped] if self._unscoped else [])]:
            for task in list(queue.tasks):
                task.cancel()
        await self.http.aclose()


def batch_model_of(provider: Provider, *, base_url: str | None, api_key: str | None, identity: str, backend: str,
                   poll_seconds: float | None = None, concurrency: int | None = None,
                   retry_budget: float | None = None) -> BatchModel:
    """The batch model the loader makes for `batch = true` (see the module docstring)."""
    url = base_url or os.environ.get("VERILOOP_BASE_URL") or next(
        (os.environ[v] for v in provider.base_url_variables if os.environ.get(v)), None) or provider.default_base_url
    if not url:
        raise VeriloopError(f"{provider.title} needs a base URL: give --base-url or base_url")
    return BatchModel(provider, base_url=url, api_key=api_key, identity=identity, backend=backend,
                      poll_seconds=poll_seconds, concurrency=concurrency, retry_budget=retry_budget)
