"""A call cache that wraps any backend.

Key: backend, model identity, messages and every sampling parameter; each of the k samples
of one call is its own row (key, sample index), so k samples at temperature 1 are k
entries and a re-run replays exactly the same k. Rows are committed on a writer thread,
the calls that finish while one commit is being synced together in the next (see
veriloop.groupcommit), so the event loop never waits on the disk; a call's put returns
once its rows are committed, so a crash loses at most the calls in flight, and exceptions
(transport errors) are never stored.

A row that cannot be read back (not JSON, or not a completion: a damaged file or another
version's format) is a miss: the sample is asked again and its new row replaces the bad
one, so a cache never stops a run. A row an older version stored with lone surrogates in
its text is replayed with them replaced, as a fresh reply would be (see Completion).
A key never fails to compute: text that reaches it unstorable is hashed as it is
(surrogatepass), which leaves the key of every storable text unchanged.

Single flight: a sample (key, sample index) that a call is generating is not asked again
by another call on the same event loop; that call waits for the answer instead. The table
of samples in flight (`Flights`) belongs to the CallCache, one per running event loop
(its futures belong to that loop), so every CachedModel sharing the cache shares it, and
the Ray driver's claims (veriloop.cluster.driver) go into it too. Invariants:
- a call claims a sample only when neither the cache nor a flight has it, and generates
  only what it claimed;
- a claim ends exactly once: settled with the reply once that reply is committed (so a
  waiter's answer is one the cache replays from then on), or released when the claiming
  call is cancelled or fails (its exception stays its own), a failure marked as such;
- a waiter gets the claimant's reply as a cache hit (`cached`, counted in `hits`, not in
  `backend_calls`); a released waiter looks again (the cache, the flights) and asks
  itself if no one has it, so it never hangs and never answers with another call's error;
- a waiter waits at most once for a sample whose claim failed: the identical request
  would most likely fail again (a refusal, an overflowing context, a server that was down
  for a whole retry budget), so after a failure every waiter asks again at once, one of
  them claiming the sample and the others making it without a claim, rather than in turn
  (16 identical calls failing one after another took 16 requests' time, not 2). Those
  others' replies are committed as any call's (the last one made stays in the cache, as
  with single flight off); a cancelled claim has its waiters take turns as before;
- a CachedModel call never waits while it holds an unsettled claim (it generates what it
  claimed first), nor for a claim of a call it is made within (a cached model wrapped,
  through a wrapper that keeps its identity, in another on the same cache), so waits
  never form a cycle.
`VERILOOP_SINGLE_FLIGHT=0` in the environment of the process that makes the CallCache
turns single flight off (every call asks for what the cache lacks, as before it existed):
a private switch for the baseline of bench/single_flight.py, not a setting.
"""

from __future__ import annotations

import asyncio
import contextvars
import enum
import hashlib
import json
import os
import sqlite3
import threading
import weakref
from collections.abc import Awaitable, Callable, Collection, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..errors import VeriloopError
from ..groupcommit import GroupCommit
from ..records import Message
from .base import Completion, GenParams, Model

SINGLE_FLIGHT_ENV = "VERILOOP_SINGLE_FLIGHT"  # "0": off (the bench's baseline; see the module docstring)
# The CachedModel calls the running code is made within (their claims' owners): a call
# never waits for those, which wait for it.
_ENCLOSING: contextvars.ContextVar[frozenset[object]] = contextvars.ContextVar("veriloop_cached_calls",
                                                                               default=frozenset())


def call_key(backend: str, identity: str, messages: list[Message], params: GenParams) -> str:
    payload = {"backend": backend, "identity": identity, "messages": messages, "params": params.identity()}
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass")
    return hashlib.sha256(blob).hexdigest()


class Released(enum.Enum):
    """How a claim ended without a reply: its call was cancelled (or its worker is gone),
    or its call failed."""

    RELEASED = "released"
    FAILED = "failed"


Flight = asyncio.Future[Completion | Released]


class Flights:
    """The samples being generated on one event loop, by (key, sample index): who claimed
    each (its owner: any value a caller compares equal to itself only) and the future that
    its reply, or how it ended without one (`Released`), settles. Used from that loop only."""

    def __init__(self) -> None:
        self._table: dict[tuple[str, int], tuple[object, Flight]] = {}

    def __len__(self) -> int:
        return len(self._table)

    def flying(self, key: str, indices: Iterable[int], but: Collection[object] = ()) -> dict[int, Flight]:
        """The futures of those of `indices` that a call is generating now, by index; those
        of the owners in `but` left out."""
        return {i: flight[1] for i in indices
                if (flight := self._table.get((key, i))) is not None and flight[0] not in but}

    def in_flight(self, key: str, i: int) -> bool:
        return (key, i) in self._table

    def claim(self, key: str, indices: Iterable[int], owner: object) -> None:
        """Record `owner` as generating `indices`, none of which may be in flight."""
        loop = asyncio.get_running_loop()
        for i in indices:
            if (key, i) in self._table:
                raise VeriloopError(f"sample {i} of call {key[:12]} is claimed twice")
            self._table[(key, i)] = (owner, loop.create_future())

    def settle(self, key: str, first_index: int, completions: list[Completion], owner: object) -> None:
        """Hand `owner`'s replies (committed to the cache) to whoever waits for them: a
        copy of what the cache holds, which the claimant's later use of its own cannot change."""
        for offset, completion in enumerate(completions):
            self._end((key, first_index + offset), owner, Completion.from_json(completion.to_json()))

    def release(self, key: str, indices: Iterable[int], owner: object, failed: bool = False) -> None:
        """End `owner`'s claims on `indices` that are not settled: their waiters look again
        (`failed`: its call failed, and they will not wait for the sample again)."""
        for i in indices:
            self._end((key, i), owner, Released.FAILED if failed else Released.RELEASED)

    def release_owners(self, which: Callable[[object], bool]) -> int:
        """Release every claim whose owner `which` picks (a dead Ray worker's); how many."""
        ended = [(slot, owner) for slot, (owner, _) in self._table.items() if which(owner)]
        for slot, owner in ended:
            self._end(slot, owner, Released.RELEASED)
        return len(ended)

    def _end(self, slot: tuple[str, int], owner: object, completion: Completion | Released) -> None:
        flight = self._table.get(slot)
        if flight is None or flight[0] != owner:  # settled already, or someone else's claim since
            return
        del self._table[slot]
        flight[1].set_result(completion)

    @staticmethod
    async def wait(futures: dict[int, Flight]) -> tuple[dict[int, Completion], set[int]]:
        """The replies of the flights `futures` by index, once each has ended (a released
        one is left out), and the indices whose claim failed. Shielded: a waiter cancelled
        leaves the flight to the others."""
        replies, failed = {}, set()
        for i, future in futures.items():
            completion = await asyncio.shield(future)
            if isinstance(completion, Completion):
                replies[i] = completion
            elif completion is Released.FAILED:
                failed.add(i)
        return replies, failed


class CallCache:
    """A SQLite file of completions keyed by call (see `call_key`) and sample index.

    It is safe to share between runs: give one to `veriloop.model(..., cache=...)` to
    have several models (or runs) use it. Writes go through one writer thread (group
    commit): `aput` (or `put`, without an event loop) returns once the rows are committed.
    `get` reads on its own connection and sees every put that has returned. `close` (or
    `aclose`) waits for the pending commits and closes the file. Calls of the models that
    share it on one event loop share its samples in flight (`flights`): an identical call
    made while one is being answered waits for that answer instead of asking again.

    Args:
        path: The SQLite file (a path or a string); it and its folder are created when missing.

    Examples:
        ```python
        from pathlib import Path
        import veriloop
        from veriloop import CallCache

        cache = CallCache(Path("calls.sqlite"))
        asked = []
        def llm(messages):
            asked.append(messages)
            return "8"
        for _ in range(2):  # the second run replays the first one's answer
            model = veriloop.model(llm, identity="eight-v1", cache=cache)
            result = veriloop.correct(model, "Name an even number.", lambda prompt, answer: answer == "8")
        assert (len(asked), result.cached_calls) == (1, 1)
        cache.close()
        ```
    """

    def __init__(self, path: Path | str) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()  # the reading connection, for callers on several threads
        self._db = self._connect()
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS samples (key TEXT NOT NULL, idx INTEGER NOT NULL, completion TEXT NOT NULL,"
            " PRIMARY KEY (key, idx))"
        )
        self._db.commit()
        # Used by the writer thread only; WAL lets the reader go on while it commits.
        self._writer_db = self._connect()
        self._commits: GroupCommit[list[tuple[str, int, str]]] = GroupCommit(
            self._write, f"call cache {path.name}"
        )
        self._single_flight = os.environ.get(SINGLE_FLIGHT_ENV, "").strip() != "0"
        # One table per event loop, since futures belong to a loop; a loop that is gone
        # takes its table with it. The lock: several threads may each run a loop.
        self._flights: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Flights] = weakref.WeakKeyDictionary()
        self._flights_lock = threading.Lock()

    def flights(self) -> Flights:
        """The samples in flight on the running event loop (see `Flights`)."""
        if not self._single_flight:
            return Flights()  # a table no other call sees: every call asks for what it lacks
        loop = asyncio.get_running_loop()
        with self._flights_lock:
            table = self._flights.get(loop)
            if table is None:
                table = self._flights[loop] = Flights()
            return table

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=60, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        return db

    def get(self, key: str, indices: range) -> dict[int, Completion]:
        with self._lock:
            rows = self._db.execute(
                "SELECT idx, completion FROM samples WHERE key = ? AND idx >= ? AND idx < ?",
                (key, indices.start, indices.stop),
            ).fetchall()
        found = {}
        for idx, blob in rows:
            completion = _decoded(blob)
            if completion is not None:
                found[idx] = completion
        return found

    async def aput(self, key: str, first_index: int, completions: list[Completion]) -> None:
        """Store the samples of one call; return once they are committed (raise if the commit failed)."""
        await self._commits.submit(_rows(key, first_index, completions))

    def put(self, key: str, first_index: int, completions: list[Completion]) -> None:
        """`aput` for code that runs no event loop: blocks until committed."""
        self._commits.submit_wait(_rows(key, first_index, completions))

    def _write(self, batch: list[list[tuple[str, int, str]]]) -> None:
        try:
            with self._writer_db:  # one transaction, one commit (and one sync) for the batch
                self._writer_db.executemany(
                    "INSERT OR REPLACE INTO samples VALUES (?, ?, ?)", [row for rows in batch for row in rows]
                )
        except sqlite3.Error as exc:
            raise VeriloopError(f"cannot write the call cache {self.path}: {exc}") from exc

    def close(self) -> None:
        self._commits.close()
        self._writer_db.close()
        with self._lock:
            self._db.close()

    async def aclose(self) -> None:
        """`close` without blocking the event loop (it waits for the pending commits)."""
        await asyncio.to_thread(self.close)


def _decoded(blob: object) -> Completion | None:
    """The completion a row holds, or None when it holds none that can be read."""
    try:
        fields = json.loads(blob)  # type: ignore[arg-type]  # sqlite gives back whatever a row holds
        return Completion.from_json(fields) if isinstance(fields, dict) else None
    except (ValueError, TypeError, AttributeError, RecursionError, VeriloopError):
        return None


def _rows(key: str, first_index: int, completions: list[Completion]) -> list[tuple[str, int, str]]:
    return [(key, first_index + i, json.dumps(c.to_json())) for i, c in enumerate(completions)]


@dataclass
class CacheStats:
    backend_calls: int = 0  # samples actually generated by the backend
    hits: int = 0  # samples replayed from the cache


class CachedModel:
    """A Model that answers from the cache and asks the wrapped backend only for misses.

    It has the wrapped model's backend, identity, name and preferred concurrency; replies
    replayed from the cache are marked `cached`. `stats` counts the samples the backend
    generated (`backend_calls`) and those replayed (`hits`). `veriloop.model` builds one
    for any model with an identity, unless asked for no cache. A sample that another call
    through the same cache is generating at the time is not asked again: the call waits
    for it and gets it as a hit, as if it had been read from the cache (single flight).

    Args:
        inner: The model to ask for the samples the cache lacks.
        cache: The call cache to read and fill.
        owns_cache: Whether closing this model also closes the cache; False when the cache
            is shared and closed by its owner.

    Examples:
        ```python
        import asyncio
        from pathlib import Path
        from veriloop import CachedModel, CallCache, FunctionModel, GenParams

        model = CachedModel(FunctionModel(lambda messages: "8", identity="eight-v1"), CallCache(Path("calls.sqlite")))
        messages = [{"role": "user", "content": "Name an even number."}]

        async def twice():
            first, again = await model.generate(messages, GenParams()), await model.generate(messages, GenParams())
            await model.aclose()
            return first[0], again[0]

        first, again = asyncio.run(twice())
        assert (first.cached, again.cached, model.stats.backend_calls, model.stats.hits) == (False, True, 1, 1)
        ```
    """

    def __init__(self, inner: Model, cache: CallCache, owns_cache: bool = True) -> None:
        self.inner = inner
        self.cache = cache
        self.owns_cache = owns_cache  # False: the cache is shared, and closed by its owner
        self.stats = CacheStats()
        self.backend = inner.backend
        self.identity = inner.identity
        self.name = inner.name
        self.preferred_concurrency = inner.preferred_concurrency

    async def generate(self, messages: list[Message], params: GenParams) -> list[Completion]:
        key = call_key(self.backend, self.identity, messages, params)
        flights = self.cache.flights()
        owner = object()  # this call, as its claims name it
        enclosing = _ENCLOSING.get()
        within = _ENCLOSING.set(enclosing | {owner})  # for the calls the inner model makes
        try:
            return await self._generate(messages, params, key, flights, owner, enclosing)
        finally:
            _ENCLOSING.reset(within)

    async def _generate(self, messages: list[Message], params: GenParams, key: str, flights: Flights,
                        owner: object, enclosing: frozenset[object]) -> list[Completion]:
        wanted = range(params.sample_offset, params.sample_offset + params.n)
        found: dict[int, Completion] = {}
        failed: set[int] = set()  # samples whose claim failed while this call waited: not waited for again
        while True:
            # The cache first, then the flights, with no await between them: a sample
            # is either committed, or in flight, or free to claim.
            hits = {i: c for i, c in self.cache.get(key, wanted).items() if i not in found}
            for c in hits.values():
                c.cached = True
            self.stats.hits += len(hits)
            found.update(hits)
            missing = [i for i in wanted if i not in found]
            # What an enclosing call claimed is made here, for it: neither waited for nor claimed;
            # so is a sample that failed once and another waiter of that failure claimed since.
            waits = flights.flying(key, [i for i in missing if i not in failed], but=enclosing)
            claimed = [i for i in missing if not flights.in_flight(key, i)]
            flights.claim(key, claimed, owner)

            async def store(start: int, fresh: list[Completion]) -> None:
                await self.cache.aput(key, start, fresh)
                self.stats.backend_calls += len(fresh)
                flights.settle(key, start, fresh, owner)

            failing = True
            try:
                await generate_missing(self.inner, messages, params, found, store, elsewhere=waits)
                failing = False
            except asyncio.CancelledError:
                failing = False
                raise
            finally:
                # What a failure or a cancellation left unsettled.
                flights.release(key, claimed, owner, failed=failing)
            # Only now, holding no claim, wait for the other calls' samples.
            replies, failed_now = await Flights.wait(waits)
            failed |= failed_now
            replayed = {i: _replayed(c) for i, c in replies.items()}
            self.stats.hits += len(replayed)
            found.update(replayed)
            if len(found) == len(wanted):
                return [found[i] for i in wanted]
            # A claimant failed or was cancelled: look again, and ask for what no one has
            # (and, after a failure, for what another of its waiters now claims).

    async def aclose(self) -> None:
        await self.inner.aclose()
        if self.owns_cache:
            await self.cache.aclose()


async def generate_missing(
    inner: Model, messages: list[Message], params: GenParams, found: dict[int, Completion],
    store: Callable[[int, list[Completion]], Awaitable[None]], elsewhere: Collection[int] = (),
) -> None:
    """Ask `inner` for the samples of `params` missing from `found` (by sample index), one
    call per run of consecutive indices; add them to `found`, and `store(first index,
    completions)` each run before asking for the next (a crash keeps what was made).
    Indices in `elsewhere` (another call is generating them) are not asked for."""
    wanted = range(params.sample_offset, params.sample_offset + params.n)
    for start, length in _missing_runs(wanted, found, elsewhere):
        fresh = await inner.generate(messages, params.with_(n=length, sample_offset=start))
        if len(fresh) != length:
            raise VeriloopError(
                f"model {inner.name!r} returned {len(fresh)} completions when asked for {length} (params.n); "
                "a model must return exactly params.n completions"
            )
        await store(start, fresh)
        found.update({start + i: c for i, c in enumerate(fresh)})


def _replayed(completion: Completion) -> Completion:
    """Another call's reply as this call gets it: its own copy, marked as the cache marks a hit."""
    replayed = Completion.from_json(completion.to_json())
    replayed.cached = True
    return replayed


def _missing_runs(wanted: range, found: dict[int, Completion], elsewhere: Collection[int] = ()) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for i in wanted:
        if i in found or i in elsewhere:
            continue
        if runs and runs[-1][0] + runs[-1][1] == i:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((i, 1))
    return runs
