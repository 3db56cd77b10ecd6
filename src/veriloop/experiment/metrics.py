"""Summaries computed from trajectories (never from anything else).

Intervals come from statsmodels (imported when first needed: `veriloop --help` does not
pay for it), not from formulas of our own."""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel

from ..records import Trajectory


class StrategySummary(BaseModel):
    """One strategy over a run's instances (`veriloop.Summary`): accuracy against ground
    truth with its 95% Wilson interval, mean rounds, model calls and cache hits, tokens,
    seconds, and how many trajectories ended for each stop reason."""

    strategy: str
    n: int
    correct: int
    accuracy: float
    accuracy_ci95: tuple[float, float]
    mean_rounds: float
    model_calls: int
    cache_hits: int
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    stop_reasons: dict[str, int]


def wilson_interval(successes: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """The (1 - alpha) Wilson score interval of successes/n (statsmodels'
    proportion_confint, method "wilson"): sane at 0/n and n/n, unlike the normal
    approximation. (0.0, 0.0) when n is 0, where statsmodels would divide by zero."""
    if n == 0:
        return (0.0, 0.0)
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(successes, n, alpha=alpha, method="wilson")
    # At 0/n and n/n the bound is exactly 0 or 1; floating point can miss it by one unit
    # (2.8e-17 at 0/7, 1 - 1.1e-16 at 20/20), which a reader comparing with 1 would trip on.
    return (0.0 if successes == 0 else float(low), 1.0 if successes == n else float(high))


def summarise(strategy: str, trajectories: Iterable[Trajectory]) -> StrategySummary:
    ts = list(trajectories)
    n = len(ts)
    correct = sum(t.correct for t in ts)
    calls = [c for t in ts for c in t.calls]
    stops: dict[str, int] = {}
    for t in ts:
        stops[t.stop_reason] = stops.get(t.stop_reason, 0) + 1
    return StrategySummary(
        strategy=strategy,
        n=n,
        correct=correct,
        accuracy=correct / n if n else 0.0,
        accuracy_ci95=wilson_interval(correct, n),
        mean_rounds=sum(t.n_rounds for t in ts) / n if n else 0.0,
        model_calls=len(calls),
        cache_hits=sum(c.cached for c in calls),
        prompt_tokens=sum(c.prompt_tokens for c in calls),
        completion_tokens=sum(c.completion_tokens for c in calls),
        seconds=round(sum(t.seconds for t in ts), 3),
        stop_reasons=stops,
    )
