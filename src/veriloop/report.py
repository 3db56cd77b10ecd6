"""Terminal tables for run summaries."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from .experiment.metrics import StrategySummary


def summary_table(summaries: list[StrategySummary], title: str, labels: dict[str, str] | None = None) -> Table:
    """One row per strategy; `labels` maps canonical names to what the user typed."""
    labels = labels or {}
    table = Table(title=title, title_justify="left")
    table.add_column("strategy", no_wrap=True)
    table.add_column("accuracy", justify="right")
    table.add_column("95% CI", justify="right")
    table.add_column("mean rounds", justify="right")
    table.add_column("model calls", justify="right")
    table.add_column("cache hits", justify="right")
    table.add_column("tokens (prompt+completion)", justify="right")
    table.add_column("seconds", justify="right")
    for s in summaries:
        lo, hi = s.accuracy_ci95
        table.add_row(
            labels.get(s.strategy, s.strategy),
            f"{s.correct}/{s.n} = {s.accuracy:.0%}",
            f"{lo:.0%}-{hi:.0%}",
            f"{s.mean_rounds:.2f}",
            str(s.model_calls),
            str(s.cache_hits),
            f"{s.prompt_tokens + s.completion_tokens} ({s.prompt_tokens}+{s.completion_tokens})",
            f"{s.seconds:.1f}",
        )
    return table


def print_summary(
    console: Console, summaries: list[StrategySummary], title: str, labels: dict[str, str] | None = None
) -> None:
    console.print(summary_table(summaries, title, labels))
