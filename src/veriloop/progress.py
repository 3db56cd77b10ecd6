"""Progress of long work on stderr, for the command line and for `veriloop.evaluate`."""

from __future__ import annotations

import time
from typing import Self

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

err = Console(stderr=True)


class ProgressReporter:
    """A live bar on a terminal; elsewhere (a pipe, a CI log) a plain line at every 10%
    step, or nothing with `plain_lines=False`. `live` forces the bar on or off."""

    def __init__(self, description: str, live: bool | None = None, plain_lines: bool = True) -> None:
        self.description = description
        self.live = err.is_terminal if live is None else live
        self.plain_lines = plain_lines
        self._last_step = -1
        self._started = time.perf_counter()
        self._bar = Progress(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=err,
        )
        self._task = self._bar.add_task(description, total=None)

    def __enter__(self) -> Self:
        if self.live:
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live:
            self._bar.stop()

    def update(self, done: int, total: int | None) -> None:
        """Work done so far out of total (None: not known yet)."""
        if self.live:
            self._bar.update(self._task, completed=done, total=total)
            return
        if not self.plain_lines:
            return
        step = 10 * done // total if total else 0
        if step != self._last_step:
            self._last_step = step
            shown = f"{done}/{total}" if total else str(done)
            err.print(f"{self.description}: {shown} ({time.perf_counter() - self._started:.0f} s)", highlight=False)

    def set_stage(self, description: str) -> None:
        """A new phase of a long job: the bar (or the plain lines) carry its name."""
        if description != self.description:
            self.description = description
            self._last_step = -1
            self._bar.update(self._task, description=description)

    def update_stage(self, stage: str, done: int, total: int | None) -> None:
        """Progress of a job made of named stages (a reproduction's tasks and tables)."""
        self.set_stage(stage)
        self.update(done, total)

    def log(self, message: str) -> None:
        """A line above the bar (or among the plain lines)."""
        (self._bar.console if self.live else err).print(message, highlight=False)
