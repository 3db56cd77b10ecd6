"""One command per paper: run its conditions on any model and write its tables."""

from __future__ import annotations

from collections.abc import Callable


def staged(
    on_progress: Callable[[str, int, int], None] | None, stage: str
) -> Callable[[int, int], None] | None:
    """A (done, total) progress callback that reports under `stage`, or None."""
    if on_progress is None:
        return None
    report = on_progress
    return lambda done, total: report(stage, done, total)
