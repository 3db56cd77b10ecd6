"""Summaries computed from trajectories (never from anything else).

Invariants:
- The Wilson interval is statsmodels' proportion_confint(method="wilson") to the last bit:
  the same formula in the same order of operations, with z = -ndtri(alpha / 2), which is
  what scipy.stats.norm.isf computes (tests/stats/test_stats_reference.py pins
  statsmodels 0.15.0's figures). scipy.stats.binomtest(...).proportion_ci(method="wilson")
  is not used: it rounds differently (up to 3e-16) and takes whole counts only, while
  pools.py asks for the interval of a fractional mean.
- The 95% interval (alpha 0.05, every caller's) takes z from Z95, the float
  -ndtri(0.025) gives (tests/stats/test_metrics.py checks it against scipy), so the
  summary table of every `veriloop run` costs no scipy import (0.3 s of CPU). Another
  alpha imports scipy when its interval is computed, never with the module.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from pydantic import BaseModel

from ..records import Trajectory

Z95 = 1.9599639845400545
"""-scipy.special.ndtri(0.05 / 2) to the last bit: z of the 95% Wilson interval."""


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


def wilson_interval(successes: float, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """The (1 - alpha) Wilson score interval of successes/n (statsmodels'
    proportion_confint, method "wilson", to the last bit): sane at 0/n and n/n, unlike the
    normal approximation. (0.0, 0.0) when n is 0, where the formula would divide by zero."""
    if n == 0:
        return (0.0, 0.0)
    if alpha == 0.05:
        z = Z95
    else:
        from scipy.special import ndtri  # scipy.special, not scipy.stats: a third of the import time

        z = -float(ndtri(alpha / 2))
    # Each step as statsmodels writes it, so that every bound rounds as its does.
    z2 = z**2
    p = successes / n
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n**2)) / denom
    low, high = min(max(centre - half, 0.0), 1.0), min(max(centre + half, 0.0), 1.0)
    # At 0/n and n/n the bound is exactly 0 or 1; floating point can miss it by one unit
    # (2.8e-17 at 0/7, 1 - 1.1e-16 at 20/20), which a reader comparing with 1 would trip on.
    return (0.0 if successes == 0 else low, 1.0 if successes == n else high)


class VerifierScore(BaseModel):
    """A verifier's verdicts against ground truth: accuracy, and the false positive
    (false accept) and false negative (false reject) rates, each with its Wilson 95%
    interval (None where no wrong, or no right, answer was judged)."""

    n: int
    accuracy: float
    accuracy_ci95: tuple[float, float]
    false_positive_rate: float | None  # judged correct among wrong candidates
    fpr_ci95: tuple[float, float] | None
    false_negative_rate: float | None  # judged wrong among correct candidates
    fnr_ci95: tuple[float, float] | None
    false_positives: int
    negatives: int
    false_negatives: int
    positives: int
    unreadable: int


def score_judgements(judgements: Iterable[tuple[bool, bool]], unreadable: int = 0) -> VerifierScore:
    """Score (accepted, truly correct) pairs; `unreadable` counts judgements left out
    because the verdict could not be read (reported, not scored)."""
    pairs = list(judgements)
    right = sum(accepted == truth for accepted, truth in pairs)
    negatives = sum(not truth for _, truth in pairs)
    positives = len(pairs) - negatives
    fp = sum(accepted and not truth for accepted, truth in pairs)
    fn = sum(truth and not accepted for accepted, truth in pairs)

    def rate(k: int, n: int) -> tuple[float | None, tuple[float, float] | None]:
        return (k / n, wilson_interval(k, n)) if n else (None, None)

    fpr, fpr_ci = rate(fp, negatives)
    fnr, fnr_ci = rate(fn, positives)
    return VerifierScore(
        n=len(pairs), accuracy=right / len(pairs) if pairs else 0.0, accuracy_ci95=wilson_interval(right, len(pairs)),
        false_positive_rate=fpr, fpr_ci95=fpr_ci, false_negative_rate=fnr, fnr_ci95=fnr_ci,
        false_positives=fp, negatives=negatives, false_negatives=fn, positives=positives, unreadable=unreadable,
    )


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
