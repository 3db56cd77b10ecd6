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
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import VeriloopError
from ..groupcommit import GroupCommit
from ..records import Message
from .base import Completion, GenParams, Model


def call_key(backend: str, identity: str, messages: list[Message], params: GenParams) -> str:
    payload = {"backend": backend, "identity": identity, "messages": messages, "params": params.identity()}
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass")
    return hashlib.sha256(blob).hexdigest()


class CallCache:
    """A SQLite file of completions keyed by call (see `call_key`) and sample index.

    It is safe to share between runs: give one to `veriloop.model(..., cache=...)` to
    have several models (or runs) use it. Writes go through one writer thread (group
    commit): `aput` (or `put`, without an event loop) returns once the rows are committed.
    `get` reads on its own connection and sees every put that has returned. `close` (or
    `aclose`) waits for the pending commits and closes the file.

    Args:
        path: The SQLite file; it and its folder are created when missing.

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

    def __init__(self, path: Path) -> None:
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
    for any model with an identity, unless asked for no cache.

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
        wanted = range(params.sample_offset, params.sample_offset + params.n)
        found = self.cache.get(key, wanted)
        for c in found.values():
            c.cached = True
        self.stats.hits += len(found)

        async def store(start: int, fresh: list[Completion]) -> None:
            await self.cache.aput(key, start, fresh)
            self.stats.backend_calls += len(fresh)

        await generate_missing(self.inner, messages, params, found, store)
        return [found[i] for i in wanted]

    async def aclose(self) -> None:
        await self.inner.aclose()
        if self.owns_cache:
            await self.cache.aclose()


async def generate_missing(
    inner: Model, messages: list[Message], params: GenParams, found: dict[int, Completion],
    store: Callable[[int, list[Completion]], Awaitable[None]],
) -> None:
    """Ask `inner` for the samples of `params` missing from `found` (by sample index), one
    call per run of consecutive indices; add them to `found`, and `store(first index,
    completions)` each run before asking for the next (a crash keeps what was made)."""
    wanted = range(params.sample_offset, params.sample_offset + params.n)
    for start, length in _missing_runs(wanted, found):
        fresh = await inner.generate(messages, params.with_(n=length, sample_offset=start))
        if len(fresh) != length:
            raise VeriloopError(
                f"model {inner.name!r} returned {len(fresh)} completions when asked for {length} (params.n); "
                "a model must return exactly params.n completions"
            )
        await store(start, fresh)
        found.update({start + i: c for i, c in enumerate(fresh)})


def _missing_runs(wanted: range, found: dict[int, Completion]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for i in wanted:
        if i in found:
            continue
        if runs and runs[-1][0] + runs[-1][1] == i:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((i, 1))
    return runs
