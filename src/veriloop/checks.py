"""A check is a plain function: `check(instance, answer)` says whether an answer is right.

It may return
- a `bool` (no error text: feedback levels `first` and `all` can only say "wrong"),
- a `str`: the error to feed back ("" means correct),
- a list of such strings (every error; `first` feeds back the first, `all` all of them),
- a `Verdict`, for full control (score, malformed, error kinds),

and may be sync or async. `FunctionCheck` turns such a function into a verifier, so it is
accepted wherever a verifier name is (backprompt, sampling, best-of-n, selfcheck's gate).
`load_check` finds one from the command line (`pkg.module:fn`, `python:path/file.py:fn`).

A check runs under the loop's control:
- whatever it raises, `BaseException` included (`sys.exit`, `KeyboardInterrupt`,
  `GeneratorExit`), is a `CheckError` naming the check and the instance; only the loop's own
  cancellation (Ctrl-C, a budget, a sibling's error) passes through as cancellation. A
  module that raises while `load_check` imports it is one error naming the file.
- it has a time limit (`timeout`, default 60 s; `--check-timeout`, `check_timeout`): a check
  that has not returned by then is a `CheckError` naming the check, the instance and the limit.
- a sync check runs on a worker thread, so the loop keeps serving model calls, time limits
  and Ctrl-C while it runs. A thread, not a process: checks close over Python objects (the
  rows, a parser, a solver) that a process would have to pickle, and most take microseconds,
  which a process round trip would multiply. A thread cannot be killed, so one that overstays
  its limit, or is running when the run is cancelled, is abandoned: a daemon thread, never
  joined, so it cannot keep the process alive at exit. Sync checks run one at a time, in
  order, on one thread (as they ran before on the loop's thread), so a check need not be
  thread-safe; an abandoned thread is replaced for the checks after it. The cost of the
  choice: a check stuck inside C code that holds the GIL (a catastrophic regex) stalls the
  whole process, and a check cannot use what belongs to another thread (signal handlers,
  which only the main thread may set; a sqlite3 connection opened at import, unless opened
  with check_same_thread=False).
- an async check runs on the loop, as a task of its own, cancelled when it overstays; it must
  not block the loop, which can only take it back at an `await`, nor carry on after its
  cancellation (the loop waits for its tasks before it closes).
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib
import importlib.util
import inspect
import math
import queue
import signal
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import ValidationError

from .domains.base import FunctionChecked
from .errors import VeriloopError, invalid_options_text
from .records import Instance, Verdict, VerdictError

if TYPE_CHECKING:
    from .episode import Episode

CheckResult = bool | str | Sequence[str] | Verdict
CheckFunction = Callable[[Any, Any], CheckResult | Awaitable[CheckResult]]

# The error kind a check's own messages carry in a verdict.
CHECK_ERROR_KIND = "check"

# Seconds a check may take on one answer, unless its FunctionCheck or the call says otherwise.
DEFAULT_CHECK_TIMEOUT = 60.0

T = TypeVar("T")

# A time limit given to one call (evaluate/correct's check_timeout=), over each check's own:
# it reaches every check the call runs, including those of a Task the caller built.
_TIME_LIMIT_OVERRIDE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "veriloop_check_timeout", default=None
)


class CheckError(VeriloopError):
    """A user's check raised, returned something that is not a verdict, or overstayed.

    The message names the check and what went wrong: the exception it raised on an
    instance (any `BaseException`, `sys.exit` included), the value it returned, or the
    time limit it overstayed on an instance. It also reports a check that is not
    callable and a time limit that is not a positive number. A CheckError stops the run
    it happens in; `evaluate` keeps the trajectories that finished before it. It is a
    `VeriloopError`, so the command line prints its one line.

    Examples:
        ```python
        import veriloop

        def parse_and_check(prompt, answer):
            return int(answer) % 2 == 0  # int("eight") raises

        try:
            veriloop.correct(lambda messages: "eight", "Name an even number.", parse_and_check, cache=False)
        except veriloop.CheckError as error:
            assert "ValueError" in str(error)
            print(error)
        ```
    """


def function_name(fn: Callable[..., Any]) -> str:
    """`module:qualname` for a function, the class name for a callable object."""
    module = getattr(fn, "__module__", None) or "?"
    qualname = getattr(fn, "__qualname__", None) or type(fn).__qualname__
    return f"{module}:{qualname}"


def as_verdict(result: object, name: str) -> Verdict:
    """The verdict a check's return value stands for; CheckError for anything else."""
    if isinstance(result, Verdict):
        return result if result.verifier != "sound" else result.model_copy(update={"verifier": name})
    if isinstance(result, bool):
        return Verdict(ok=result, verifier=name)
    if isinstance(result, str):
        message = result.strip()
        errors = [VerdictError(kind=CHECK_ERROR_KIND, message=message)] if message else []
        return Verdict(ok=not errors, errors=errors, verifier=name)
    if isinstance(result, (list, tuple)) and all(isinstance(e, str) for e in result):
        errors = [VerdictError(kind=CHECK_ERROR_KIND, message=e.strip()) for e in result if e.strip()]
        return Verdict(ok=not errors, errors=errors, verifier=name)
    raise CheckError(
        f"check {name} returned {type(result).__name__} {_short(repr(result))}; return a bool, an error string "
        "('' when correct), a list of error strings, or a veriloop.Verdict"
    )


class FunctionCheck:
    """A check function as a verifier.

    With it, a check function goes wherever a verifier name does: as the `check` of
    `correct`, or as the verifier of backprompt, sampling, best-of-n and selfcheck's gate.
    It runs the function under the rules of `veriloop.checks`: whatever the function
    raises, and a return value that is not a verdict, becomes a `CheckError`; a sync
    function runs on a worker thread, an async one on the loop.

    Args:
        fn: The check function, `fn(instance, answer)`, sync or async, returning a bool,
            an error string ('' when right), a list of error strings or a Verdict.
        name: Its label in strategy names and records (default None: the function's
            `module:qualname`).
        timeout: The seconds it may take on one answer (default 60; None: no limit),
            unless the call running it gives another (`check_time_limit`, the
            `check_timeout` of `correct` and `evaluate`).

    Raises:
        CheckError: When `fn` is not callable, or `timeout` is neither a positive number
            nor None.

    Examples:
        ```python
        import veriloop

        def even(prompt, answer):
            return "" if int(answer) % 2 == 0 else f"{answer} is odd"

        check = veriloop.FunctionCheck(even, name="even", timeout=5)
        replies = iter(["7", "8"])
        result = veriloop.correct(lambda messages: next(replies), "Name an even number.", check, cache=False)
        assert result.ok and result.trajectory.strategy.endswith("verifier=even")
        print(check, result.feedback)
        ```
    """

    def __init__(self, fn: CheckFunction, name: str | None = None,
                 timeout: float | None = DEFAULT_CHECK_TIMEOUT) -> None:
        if not callable(fn):
            raise CheckError(f"a check must be callable, not {type(fn).__name__}")
        self.fn = fn
        self.name = name or function_name(fn)
        self.timeout = valid_time_limit(timeout, "timeout")

    def __repr__(self) -> str:
        return f"FunctionCheck({self.name})"

    @property
    def time_limit(self) -> float | None:
        """The limit in force: the running call's override, else this check's own."""
        override = _TIME_LIMIT_OVERRIDE.get()
        return override if override is not None else self.timeout

    async def check(self, instance: Instance, user_instance: Any, answer: Any) -> Verdict:
        """Run the function on what the user sees of the instance and the answer."""
        limit = self.time_limit
        try:
            result = await self._outcome(user_instance, answer, limit)
        except _TimedOut:
            raise CheckError(
                f"check {self.name} did not return within {limit:g} s on instance {instance.id!r}; make it "
                "return sooner, or give it longer (--check-timeout, check_timeout=)"
            ) from None
        except VeriloopError:
            raise
        except ValidationError as exc:
            # Most often a Verdict built with a wrong value: name the field and what it takes.
            raise CheckError(
                f"check {self.name} built an invalid {exc.title} on instance {instance.id!r}: "
                + invalid_options_text(exc, exc.title, (), noun="field")
            ) from exc
        except asyncio.CancelledError as exc:
            if _being_cancelled():
                raise  # the loop's own cancellation: not the check's doing
            raise CheckError(f"check {self.name} raised on instance {instance.id!r}: {_raised(exc)}") from exc
        except BaseException as exc:  # sys.exit, KeyboardInterrupt, GeneratorExit too: the check's, not ours
            raise CheckError(f"check {self.name} raised on instance {instance.id!r}: {_raised(exc)}") from exc
        return as_verdict(result, self.name)

    async def _outcome(self, user_instance: Any, answer: Any, limit: float | None) -> Any:
        """What the function returns (awaited if it is awaitable), or what it raised, raised
        here; _TimedOut once it has taken `limit` seconds."""
        if _is_async_function(self.fn):
            coroutine: Any = self.fn(user_instance, answer)  # calling it only makes the coroutine
            return await _await_in_time(coroutine, limit)
        started = time.monotonic()
        result = await _run_on_check_thread(lambda: self.fn(user_instance, answer), limit)
        if inspect.isawaitable(result):  # a sync callable that hands back a coroutine
            left = None if limit is None else max(0.0, limit - (time.monotonic() - started))
            result = await _await_in_time(result, left)
        return result

    async def verify(self, episode: Episode, text: str, round: int) -> Verdict:
        domain, instance = episode.domain, episode.instance
        answer = domain.extract_answer(instance, text)
        user_instance = domain.user_instance(instance) if isinstance(domain, FunctionChecked) else instance
        return await self.check(instance, user_instance, text if answer is None else answer)


def valid_time_limit(seconds: object, option: str) -> float | None:
    """A check's time limit as given: positive seconds, or None for no limit."""
    if seconds is None:
        return None
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0 or math.isnan(seconds):
        raise CheckError(f"{option} must be a positive number of seconds (or None for no limit), not {seconds!r}")
    return float(seconds)


@contextmanager
def check_time_limit(seconds: float | None) -> Iterator[None]:
    """Inside the block (and the tasks and threads it starts), every check has this time
    limit instead of its own; None leaves each check its own."""
    token = _TIME_LIMIT_OVERRIDE.set(valid_time_limit(seconds, "check_timeout"))
    try:
        yield
    finally:
        _TIME_LIMIT_OVERRIDE.reset(token)


class _TimedOut(Exception):
    """A check overstayed its limit (a class of our own: a check may raise TimeoutError itself)."""


def _raised(exc: BaseException) -> str:
    text = _short(str(exc))
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _being_cancelled() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _is_async_function(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)


async def _await_in_time(awaitable: Awaitable[Any], limit: float | None) -> Any:
    """The awaitable's result, awaited on this loop as a task of its own, which is cancelled
    once `limit` passes (and not waited for: the run's error need not wait for its end)."""

    async def settled() -> tuple[Any, BaseException | None]:
        # Inside the task: a SystemExit or KeyboardInterrupt escaping a task's step would
        # stop the whole loop, so it is caught here and raised again in the caller.
        try:
            return await awaitable, None
        except asyncio.CancelledError as exc:
            if _being_cancelled():
                raise
            return None, exc
        except BaseException as exc:
            return None, exc

    task = asyncio.ensure_future(settled())
    try:
        done, _ = await asyncio.wait({task}, timeout=limit)
    finally:
        if not task.done():
            task.cancel()
    if not done:
        raise _TimedOut
    value, error = task.result()
    if error is not None:
        raise error
    return value


# --------------------------------------------------------------------------- the check thread


class _Job:
    """One call of a sync check, run on the check thread; its outcome goes back to the loop
    that waits for it."""

    def __init__(self, call: Callable[[], Any], limit: float | None, loop: asyncio.AbstractEventLoop) -> None:
        self.call, self.limit, self.loop = call, limit, loop
        self.started: asyncio.Future[None] = loop.create_future()
        self.done: asyncio.Future[tuple[Any, BaseException | None]] = loop.create_future()
        self.thread: _CheckThread | None = None  # the one that took it
        self.dropped = False  # its caller went away before it started: skip it

    def run(self, thread: _CheckThread) -> None:
        self.thread = thread
        self._tell(self.started, None)
        try:
            outcome: tuple[Any, BaseException | None] = (self.call(), None)
        except BaseException as exc:  # carried back to be a CheckError, whatever it is
            outcome = (None, exc)
        self._tell(self.done, outcome)

    def _tell(self, future: asyncio.Future[Any], value: Any) -> None:
        def settle() -> None:
            if not future.done():
                future.set_result(value)

        try:
            self.loop.call_soon_threadsafe(settle)
        except RuntimeError:  # that loop is closed: nobody waits for this any more
            pass


class _CheckThread:
    """A daemon thread running the jobs put to it, in order; `deadline` is when the one it
    runs has overstayed."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self.deadline: float | None = None
        self.abandoned = False
        threading.Thread(target=self._serve, name="veriloop-check", daemon=True).start()

    def _serve(self) -> None:
        while not self.abandoned:
            job = self.jobs.get()
            if job is None:
                return
            if job.dropped:
                continue
            self.deadline = None if job.limit is None else time.monotonic() + job.limit
            job.run(self)
            self.deadline = None


class _CheckLane:
    """Where sync checks run: one at a time, on the current check thread. A thread stuck in
    a check is abandoned and the checks queued behind it move to a new one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._thread: _CheckThread | None = None

    def submit(self, job: _Job) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = _CheckThread()
            self._thread.jobs.put(job)

    def seconds_until_overdue(self) -> float | None:
        """How long the running check has left (None: no check with a limit is running)."""
        thread = self._thread
        deadline = None if thread is None else thread.deadline
        return None if deadline is None else max(0.0, deadline - time.monotonic())

    def abandon(self, thread: _CheckThread | None) -> None:
        """Leave `thread` to its check; the ones queued behind it go to a new thread."""
        with self._lock:
            if thread is None or thread is not self._thread:
                return  # already replaced
            self._thread = fresh = _CheckThread()
            thread.abandoned = True
            while True:
                try:
                    job = thread.jobs.get_nowait()
                except queue.Empty:
                    break
                if job is not None:
                    fresh.jobs.put(job)
            thread.jobs.put(None)  # if it ever comes back, it stops

    def abandon_if_overdue(self) -> None:
        """The running check's own caller abandons it when its limit passes; this does it
        for a caller whose loop is blocked and cannot (see Task.verify)."""
        thread = self._thread
        if thread is not None and thread.deadline is not None and time.monotonic() > thread.deadline:
            self.abandon(thread)


_LANE = _CheckLane()
# How often a check waiting for its turn looks whether the one before it has overstayed,
# when that one has no limit of its own to wait for.
_TURN_POLL_SECONDS = 1.0


async def _run_on_check_thread(call: Callable[[], T], limit: float | None) -> T:
    """call() on the check thread, after the checks queued before it; _TimedOut once it has
    run `limit` seconds (the thread is then abandoned to it)."""
    job = _Job(call, limit, asyncio.get_running_loop())
    _LANE.submit(job)
    try:
        while not job.started.done():
            left = _LANE.seconds_until_overdue()
            await asyncio.wait({job.started}, timeout=_TURN_POLL_SECONDS if left is None else left + 0.01)
            if not job.started.done():
                _LANE.abandon_if_overdue()
        done, _ = await asyncio.wait({job.done}, timeout=limit)
    except BaseException:  # cancelled while waiting: the check's outcome is nobody's any more
        job.dropped = True
        if job.started.done() and not job.done.done():
            _LANE.abandon(job.thread)
        raise
    if not done:
        _LANE.abandon(job.thread)
        raise _TimedOut
    value, error = job.done.result()
    if error is not None:
        raise error
    return value  # type: ignore[no-any-return]


def call_on_daemon_thread(fn: Callable[[], T]) -> T:
    """fn() on a daemon thread of its own (with this context), waited for here; for code
    that must block the thread it is called on (a sync check run from inside a loop). On
    the main thread Ctrl-C ends the wait at once with KeyboardInterrupt: the loop this
    blocks cannot run its own Ctrl-C handling. The thread is then left behind, never joined."""
    outcome: list[tuple[Any, BaseException | None]] = []
    finished = threading.Event()
    context = contextvars.copy_context()

    def target() -> None:
        try:
            outcome.append((context.run(fn), None))
        except BaseException as exc:
            outcome.append((None, exc))
        finally:
            finished.set()

    # Ctrl-C raises before the thread starts: pressed once the check runs (and, in a
    # busy check, holds the GIL against this thread), it would otherwise reach the handler
    # of the loop this wait blocks, and be lost.
    with _ctrl_c_raises():
        threading.Thread(target=target, name="veriloop-check-loop", daemon=True).start()
        finished.wait()
    value, error = outcome[0]
    if error is not None:
        raise error
    return value  # type: ignore[no-any-return]


@contextmanager
def _ctrl_c_raises() -> Iterator[None]:
    """Within the block, Ctrl-C raises KeyboardInterrupt at once (on the main thread, unless
    the process ignores Ctrl-C); the handler before it is restored after."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def is_check_function(obj: object) -> bool:
    """A plain callable that is not already a verifier (which has `verify`)."""
    return callable(obj) and not hasattr(obj, "verify")


# Modules loaded from a check's file: no other process can import them by name, so a Ray
# worker gets their functions by value (the driver registers them with Ray's pickler).
CHECK_FILES: set[str] = set()


def load_check(spec: str) -> Callable[..., Any]:
    """The check function a command-line spec names (what `--check` takes).

    A file is imported as a module named after its stem (if that name is free, else a
    name of its own), so the check's label in records names it too.

    Args:
        spec: `pkg.module:function`, to import the module by name, or
            `python:path/to/file.py:function`, to load a Python file. The part after the
            last colon may be a dotted path (`module:Class.method`).

    Returns:
        The function (any callable the spec names).

    Raises:
        VeriloopError: When the spec is not of either form, the file does not exist or
            cannot be loaded as Python, importing the module or file fails (whatever it
            raises, `sys.exit` included), the module has no such name, or what it names
            is not callable.

    Examples:
        ```python
        import veriloop

        with open("parity.py", "w") as f:
            print("def even(row, answer):", file=f)
            print("    return int(answer) % 2 == 0", file=f)

        even = veriloop.load_check("python:parity.py:even")
        assert even({}, "8") and not even({}, "7")
        same = veriloop.load_check("operator:eq")  # a module importable by name
        print(even.__name__, same("4", "4"))
        ```
    """
    if spec.startswith("python:"):
        location, sep, attr = spec.removeprefix("python:").rpartition(":")
        if not sep or not location or not attr:
            raise VeriloopError(f"--check {spec!r} should look like python:path/to/file.py:function")
        path = Path(location).expanduser()
        if not path.is_file():
            raise VeriloopError(f"--check {spec!r}: {path} is not a file")
        # A stable module name: the check's label (module:function) names it in records.
        module_name = path.stem if path.stem.isidentifier() else "user_check"
        loaded = sys.modules.get(module_name)
        if loaded is not None and Path(getattr(loaded, "__file__", "") or "").resolve() != path.resolve():
            module_name = f"veriloop_check_{module_name}"
        module_spec = importlib.util.spec_from_file_location(module_name, path)
        if module_spec is None or module_spec.loader is None:
            raise VeriloopError(f"--check {spec!r}: {path} cannot be loaded as a Python file")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[module_name] = module
        try:
            module_spec.loader.exec_module(module)
        except BaseException as exc:  # sys.exit() at import too: one line, not a silent exit
            del sys.modules[module_name]
            raise VeriloopError(f"--check {spec!r}: importing {path} failed: {_raised(exc)}") from None
        CHECK_FILES.add(module_name)
    else:
        module_path, sep, attr = spec.partition(":")
        if not sep or not module_path or not attr:
            raise VeriloopError(
                f"--check {spec!r} should look like package.module:function or python:path/to/file.py:function"
            )
        try:
            module = importlib.import_module(module_path)
        except BaseException as exc:
            raise VeriloopError(f"--check {spec!r}: cannot import {module_path}: {_raised(exc)}") from None
    fn: Any = module
    for part in attr.split("."):
        fn = getattr(fn, part, None)
        if fn is None:
            raise VeriloopError(f"--check {spec!r}: {module.__name__} has no {attr!r}")
    if not callable(fn):
        raise VeriloopError(f"--check {spec!r}: {attr} is a {type(fn).__name__}, not a function")
    return fn  # type: ignore[no-any-return]


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
