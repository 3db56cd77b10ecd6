"""What a batch model needs to know of the run it serves: the run directory (where its
journal goes) and whether every trajectory of the run is waiting on a model (so the
calls queued so far are all the run can make now, and the batch can go).

The runner opens a `run_scope` while it holds a run directory and gives each of its
slots (the tasks that run trajectories one after another) a token (`slot`); a model
call marks its slot waiting while it waits (`waiting`). Context variables carry both,
so no model is told anything through its wrappers (cache, meters, caps), and a model
used outside a run (`veriloop.correct`, a report) sees no scope.

Invariants: a slot counts from before its first trajectory starts until its last one
has ended, so the scope never reads "all waiting" while a slot is yet to make its first
call; every change wakes the listeners (the batch queues), which look again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path


class RunScope:
    """One run directory being filled: its live slots and how many calls each has waiting."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self._slots: dict[object, int] = {}  # slot -> calls it has waiting on a model
        self.listeners: set[Callable[[], None]] = set()
        # Called once when the run ends, with whether it ended normally (every trajectory
        # it started is on disk, every reply it used committed to the call cache).
        self.closers: list[Callable[[bool], None]] = []

    def join(self) -> object:
        """A new slot's token; it counts as busy until it leaves."""
        token = object()
        self._slots[token] = 0
        return token

    def leave(self, token: object) -> None:
        if self._slots.pop(token, None) is not None:
            self._changed()

    def all_waiting(self) -> bool:
        """Whether the run has slots and every one of them waits on a model call."""
        return bool(self._slots) and all(count > 0 for count in self._slots.values())

    @contextmanager
    def waiting(self) -> Iterator[None]:
        """The calling slot waits on a model for the block's duration."""
        token = _SLOT.get()
        counted = token in self._slots
        if counted:
            self._slots[token] += 1
            self._changed()
        try:
            yield
        finally:
            if counted and token in self._slots:
                self._slots[token] -= 1

    def _changed(self) -> None:
        for listener in list(self.listeners):
            listener()


_SCOPE: ContextVar[RunScope | None] = ContextVar("veriloop_run_scope", default=None)
_SLOT: ContextVar[object | None] = ContextVar("veriloop_run_slot", default=None)


def current_scope() -> RunScope | None:
    """The run the running code serves, if any."""
    return _SCOPE.get()


@contextmanager
def run_scope(run_dir: Path) -> Iterator[RunScope]:
    """The run in `run_dir` for the block (the caller holds the directory)."""
    scope = RunScope(run_dir)
    reset = _SCOPE.set(scope)
    normally = False
    try:
        yield scope
        normally = True
    finally:
        _SCOPE.reset(reset)
        for closer in scope.closers:
            closer(normally)


def enter_slot(token: object) -> None:
    """Name the running task's slot (call it first thing in the slot's own task)."""
    _SLOT.set(token)
