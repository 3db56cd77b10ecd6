"""Group commit on a background thread: durable writes that never block an event loop.

Callers hand items to a `GroupCommit` and wait for their acknowledgement; one thread
commits whatever has accumulated as one batch (while it fsyncs one batch, the next one
gathers), then acknowledges every caller of that batch at once. An acknowledgement means
the batch's commit returned; an error in the commit reaches every caller of the batch.
The record files (runs.jsonl) and the call cache (models.cache) write through it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from .errors import VeriloopError

T = TypeVar("T")

# Who waits for an item: a coroutine on some event loop, or a blocked thread.
_Waiter = tuple[asyncio.AbstractEventLoop, asyncio.Future[None]] | concurrent.futures.Future[None]


class GroupCommit(Generic[T]):
    """Commits items in batches on a thread of its own (started with the first item).

    `commit(batch)` must write the whole batch durably or raise. With `stop_on_error`,
    the first failure is final: every later item fails with the same error without being
    committed (for an append-only file a failed batch may have left part of a line).
    `submit` may be awaited from any event loop, `submit_wait` called from any thread
    that runs no event loop."""

    def __init__(self, commit: Callable[[list[T]], None], name: str, stop_on_error: bool = False) -> None:
        self._commit = commit
        self._name = name
        self._stop_on_error = stop_on_error
        self._cond = threading.Condition()
        self._pending: list[tuple[T, _Waiter]] = []
        self._closing = False
        self._failed: BaseException | None = None
        self._thread: threading.Thread | None = None

    async def submit(self, item: T) -> None:
        """Return once `item` is committed; raise what its commit raised."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self._enqueue(item, (loop, done))
        await done

    def submit_wait(self, item: T) -> None:
        """`submit` for code that is not async: blocks the calling thread until committed."""
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._enqueue(item, done)
        done.result()

    def close(self) -> None:
        """Commit what is pending, then stop the thread (blocks; see `aclose`)."""
        with self._cond:
            self._closing = True
            self._cond.notify()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    async def aclose(self) -> None:
        """`close` without blocking the event loop."""
        await asyncio.to_thread(self.close)

    def _enqueue(self, item: T, waiter: _Waiter) -> None:
        with self._cond:
            if self._failed is not None and self._stop_on_error:
                raise self._failed
            if self._closing:
                raise VeriloopError(f"{self._name} is closed")
            self._pending.append((item, waiter))
            if self._thread is None:
                # A daemon, so a process that exits without closing it does not hang on
                # it; what was not acknowledged was never promised to be on disk.
                self._thread = threading.Thread(target=self._run, name=f"veriloop {self._name}", daemon=True)
                self._thread.start()
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._closing:
                    self._cond.wait()
                batch, self._pending = self._pending, []
                if not batch:
                    return  # closing, and everything handed over is committed
            error = self._failed if self._stop_on_error else None
            if error is None:
                try:
                    self._commit([item for item, _ in batch])
                except BaseException as exc:  # handed to every waiting caller: never lost, never a hang
                    error = exc
                    with self._cond:
                        self._failed = exc
            _acknowledge([waiter for _, waiter in batch], error)


def _acknowledge(waiters: list[_Waiter], error: BaseException | None) -> None:
    """Wake every waiter of a batch: one call into each event loop, not one per waiter."""
    by_loop: dict[asyncio.AbstractEventLoop, list[asyncio.Future[None]]] = {}
    for waiter in waiters:
        if isinstance(waiter, concurrent.futures.Future):
            if error is None:
                waiter.set_result(None)
            else:
                waiter.set_exception(error)
        else:
            by_loop.setdefault(waiter[0], []).append(waiter[1])
    for loop, futures in by_loop.items():
        try:
            loop.call_soon_threadsafe(_settle, futures, error)
        except RuntimeError:  # that loop is closed: nobody waits there any more
            pass


def _settle(futures: list[asyncio.Future[None]], error: BaseException | None) -> None:
    for done in futures:
        if done.done():  # its caller was cancelled; the item is committed all the same
            continue
        if error is None:
            done.set_result(None)
        else:
            done.set_exception(error)
