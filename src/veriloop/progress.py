"""Progress of long work on stderr, for the command line and for `veriloop.evaluate`.

A job reports its own unit (trajectories, judged candidates, checked steps) with a known
total, which gives the estimate of the time left. One unit can take minutes on a CPU, so
the model calls are counted beside it: the doors to the model (`Episode.call`, SelfCheck's
direct calls) call `count_calls`, which reaches the reporter that is open in the running
task through a context variable, without the jobs passing it down. A server client reports
its retries the same way (`server_retried`, `server_settled`): while any call waits on a
struggling server the status says so ("waiting for the server: 2 retries, 1 stalled"), and
without a live bar a line says it when the waiting starts and every 10 s while it lasts."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextvars import ContextVar, Token
from typing import Self

from rich.console import Console
from rich.progress import BarColumn, Progress, ProgressBar, ProgressColumn, Task, TextColumn
from rich.text import Text

err = Console(stderr=True)

_open: ContextVar[ProgressReporter | None] = ContextVar("veriloop_progress", default=None)


def count_calls(n: int = 1) -> None:
    """Tell the progress display open in this task (if any) that `n` model samples came back."""
    reporter = _open.get()
    if reporter is not None:
        reporter.calls_done(n)


def server_retried(first: bool, stalled: bool) -> None:
    """Tell the progress display open in this task that a server call faulted and is
    retried (`first`: its first retry; `stalled`: abandoned for slowness)."""
    reporter = _open.get()
    if reporter is not None:
        reporter.server_retry(first, stalled)


def server_settled() -> None:
    """Tell the progress display that a call which was retried has its answer, or gave up."""
    reporter = _open.get()
    if reporter is not None:
        reporter.server_settle()


def model_notice(text: str) -> None:
    """Say on the progress display open in this task what a model changed from what a call
    asked (e.g. a reasoning model that cannot be greedy). The model says each notice once."""
    reporter = _open.get()
    if reporter is not None:
        reporter.console.print(f"note: {text}", highlight=False, markup=False)


def batch_status(batch: str, status: str | None) -> None:
    """Tell the progress display open in this task how a submitted batch stands (None:
    it is no longer waited for)."""
    reporter = _open.get()
    if reporter is not None:
        reporter.batch_state(batch, status)


WAITING_LINE_SECONDS = 10.0  # without a live bar, the waiting line is repeated at most this often


def clock(seconds: float) -> str:
    """A duration as h:mm:ss."""
    whole = round(seconds)
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


def eta_seconds(done: int, total: int | None, first_done: int, seconds: float) -> float | None:
    """Time left if the units still to do go at the pace of those done in `seconds` since
    `first_done` units were done (work resumed from disk took no time, so it is left out);
    None until one unit has been done here."""
    if total is None or done <= first_done:
        return None
    return max(0.0, seconds * (total - done) / (done - first_done))


def _count(n: int) -> str:
    """A count in few characters: 950, 12.3k, 4.1M."""
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.1f}M"


class _StatusColumn(ProgressColumn):
    """Units done, model calls, time spent and time left, from the reporter's own counts."""

    def __init__(self, reporter: ProgressReporter) -> None:
        super().__init__()
        self.reporter = reporter

    def render(self, task: Task) -> Text:
        return Text(self.reporter.status())


class _FlexBar(BarColumn):
    """A bar as wide as the description and the counts leave of the line (at most 40), so
    the whole line fits an 80-column terminal."""

    def __init__(self, reporter: ProgressReporter) -> None:
        super().__init__(bar_width=40)
        self.reporter = reporter

    def render(self, task: Task) -> ProgressBar:
        used = len(task.description) + len(self.reporter.status()) + 2  # one space either side of the bar
        self.bar_width = max(1, min(40, self.reporter.console.width - used))
        return super().render(task)


class ProgressReporter:
    """A live bar on a terminal; elsewhere (a pipe, a CI log) a plain line at every 10%
    step, or nothing with `plain_lines=False`. `live` forces the bar on or off. Both show
    the units done, the model calls counted so far and the time left."""

    def __init__(
        self, description: str, live: bool | None = None, plain_lines: bool = True, *,
        console: Console | None = None, now: Callable[[], float] = time.perf_counter, counts_calls: bool = True,
    ) -> None:
        self.description = description
        self.console = console or err
        self.live = self.console.is_terminal if live is None else live
        self.plain_lines = plain_lines
        self.calls = 0
        self.tokens = 0  # counted by an experiment's metered models; shown once some are
        self.counts_calls = counts_calls  # off for work that calls no model (a pack's bytes)
        self.done = 0
        self.total: int | None = None
        # Calls waiting on a struggling server, and the retries and stalls since none was.
        self.waiting = self.retries = self.stalls = 0
        self._waiting_said: float | None = None
        self.batches: dict[str, str] = {}  # submitted batches waited for: id -> "batch ID: state, counts"
        self._now = now
        self._started = now()
        self._pace_from: tuple[int, float] | None = None  # units done and the time, at the stage's first report
        self._last_step = -1
        self._opened: list[Token[ProgressReporter | None]] = []
        self._bar = Progress(
            TextColumn("[progress.description]{task.description}"),
            _FlexBar(self),
            _StatusColumn(self),
            console=self.console,
        )
        self._task = self._bar.add_task(description, total=None)

    def __enter__(self) -> Self:
        self._opened.append(_open.set(self))
        if self.live:
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live:
            self._bar.stop()
        if self._opened:
            _open.reset(self._opened.pop())

    def calls_done(self, n: int = 1) -> None:
        """Count `n` model samples that came back (the live bar shows the count at once)."""
        self.calls += n

    def server_retry(self, first: bool, stalled: bool) -> None:
        """A server call faulted and is retried (see `server_retried`)."""
        self.waiting += first
        self.retries += 1
        self.stalls += stalled
        if self.live or not self.plain_lines:
            return
        now = self._now()
        if self._waiting_said is None or now - self._waiting_said >= WAITING_LINE_SECONDS:
            self._waiting_said = now
            self.console.print(f"{self.description}: {self.waiting_status()}", highlight=False)

    def server_settle(self) -> None:
        """A call that was retried is done (see `server_settled`)."""
        self.waiting = max(0, self.waiting - 1)
        if not self.waiting:
            self.retries = self.stalls = 0
            self._waiting_said = None

    def batch_state(self, batch: str, status: str | None) -> None:
        """A batch's state (see `batch_status`); without a live bar a line says each change."""
        if status is None:
            self.batches.pop(batch, None)
            return
        if self.batches.get(batch) != status and not self.live and self.plain_lines:
            self.console.print(f"{self.description}: {status}", highlight=False)
        self.batches[batch] = status

    def waiting_status(self) -> str:
        """`waiting for the server: 2 retries, 1 stalled` while calls wait on it, else ''."""
        if not self.waiting:
            return ""
        return f"waiting for the server: {self.retries} retr{'y' if self.retries == 1 else 'ies'}, {self.stalls} stalled"

    def tokens_done(self, n: int) -> None:
        """Count `n` tokens (prompt and completion) of the calls that came back."""
        self.tokens += n

    def eta(self) -> float | None:
        """Seconds left in this stage at the pace of its units so far (None: not known yet)."""
        if self._pace_from is None:
            return None
        first_done, since = self._pace_from
        return eta_seconds(self.done, self.total, first_done, self._now() - since)

    def status(self) -> str:
        """Units done, model calls, time spent and time left, as the bar and the plain lines
        show them: `12/45, 37 calls, 0:03:10, eta 0:08:40`."""
        left = self.eta()
        shown = f"{self.done}/{self.total}" if self.total is not None else str(self.done)
        calls = f"{self.calls} call{'' if self.calls == 1 else 's'}, " if self.counts_calls else ""
        if self.tokens:
            calls += f"{_count(self.tokens)} tok, "
        if self.waiting:
            calls = f"{self.waiting_status()}, {calls}"
        if self.batches:
            calls = f"{'; '.join(self.batches.values())}, {calls}"
        return f"{shown}, {calls}{clock(self._now() - self._started)}, eta {clock(left) if left is not None else '?'}"

    def update(self, done: int, total: int | None) -> None:
        """Work done so far out of total (None: not known yet)."""
        self.done, self.total = done, total
        if self._pace_from is None:
            self._pace_from = (done, self._now())
        if self.live:
            self._bar.update(self._task, completed=done, total=total)
            return
        if not self.plain_lines:
            return
        step = 10 * done // total if total else 0
        if step != self._last_step:
            self._last_step = step
            self.console.print(f"{self.description}: {self.status()}", highlight=False)

    def set_stage(self, description: str) -> None:
        """A new phase of a long job: the bar (or the plain lines) carry its name."""
        if description != self.description:
            self.description = description
            self._last_step = -1
            self._pace_from = None
            self._bar.update(self._task, description=description)

    def update_stage(self, stage: str, done: int, total: int | None) -> None:
        """Progress of a job made of named stages (a reproduction's tasks and tables)."""
        self.set_stage(stage)
        self.update(done, total)

    def log(self, message: str) -> None:
        """A line above the bar (or among the plain lines)."""
        self.console.print(message, highlight=False)
