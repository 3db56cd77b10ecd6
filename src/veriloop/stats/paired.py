"""Paired comparison of two strategies on the instances both of them finished.

Two strategies that ran on the same instances are compared instance by instance, which
is far more sensitive than setting their two accuracies and intervals side by side: an
instance both solve, or both fail, says nothing about which strategy is better.

Invariants:
- Outcomes are paired by (instance_id, seed); an instance only one strategy finished is
  left out of both, so `n` counts the instances both finished.
- `difference` is b's accuracy minus a's, where a is the strategy listed first (in run or
  experiment order) and b the later one: positive when b solved more.
- `a_only` counts the instances a got right and b wrong, `b_only` the reverse (the
  discordant pairs); difference = (b_only - a_only) / n.
- `p_value` is the exact McNemar test: twice the binomial probability of at most
  min(a_only, b_only) of the discordant pairs at one half, capped at 1 (the two-sided
  binomial test of b_only among them). It is computed as statsmodels' mcnemar(table,
  exact=True) computes it, with scipy.stats.binom.cdf: its figure on the same scipy, to the last bit (pinned in
  tests/stats/test_stats_reference.py). It is 1.0 when no pair is discordant (n = 0
  included): no evidence of any difference.
- `difference_ci95` is the 95% paired bootstrap percentile interval of the difference:
  `resamples` resamples of the instances, drawn by numpy's default_rng(seed), so the same
  data and seed give the same interval. scipy.stats.bootstrap resamples the per-instance
  differences b_i - a_i, which is resampling the pairs: the same interval as its
  paired=True on (a, b) with the same seed (to rounding), in half the time. When
  every instance has the same difference (no discordant pair, or all discordant the same
  way) every resample has that difference, so the interval is that point, set without
  calling scipy. It is None when n = 0.
- No figure is ever nan: a results file holds numbers or nulls.

scipy and numpy are imported when a comparison is made, not with the module.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import combinations
from typing import Any

from pydantic import BaseModel

from ..errors import VeriloopError
from ..records import Trajectory

RESAMPLES = 10_000
# Resamples drawn at once: bounds the memory (batch x n outcomes per strategy) and does
# not change the figures (numpy's generator gives the same stream in any batch size).
BATCH = 1000


class PairedComparison(BaseModel):
    """Strategy b against strategy a on the instances both finished (see the module's invariants)."""

    a: str
    b: str
    n: int
    a_correct: int
    b_correct: int
    a_accuracy: float
    b_accuracy: float
    difference: float  # b's accuracy - a's
    a_only: int  # a right, b wrong
    b_only: int  # a wrong, b right
    p_value: float  # exact McNemar
    difference_ci95: tuple[float, float] | None  # paired bootstrap percentile interval; None when n = 0
    resamples: int
    bootstrap_seed: int  # numpy default_rng seed of the resamples


def _mean(d: Any, axis: int = -1) -> Any:
    return d.mean(axis=axis)


def exact_mcnemar(a_only: int, b_only: int) -> float:
    """The exact McNemar p-value of a_only and b_only discordant pairs (at least one)."""
    from scipy.stats import binom

    # binom.cdf rather than scipy.stats.binomtest: binomtest adds up the two tails itself
    # and differs from statsmodels' doubled tail by up to 1.3e-15 (24 of 3,599 tables to 59 + 59).
    return float(min(binom.cdf(min(a_only, b_only), a_only + b_only, 0.5) * 2, 1.0))


def paired_comparison(
    a: Sequence[bool], b: Sequence[bool], *, resamples: int = RESAMPLES, seed: int = 0,
    names: tuple[str, str] = ("a", "b"),
) -> PairedComparison:
    """Compare outcomes a[i] and b[i] of two strategies on the same instance i (see the
    module's invariants); `names` are the strategies' labels in the record."""
    if len(a) != len(b):
        raise VeriloopError(f"a paired comparison needs both strategies' outcome on each instance: got {len(a)} "
                            f"and {len(b)}; pass the instances both finished (see paired.matched)")
    n = len(a)
    a_correct, b_correct = sum(map(bool, a)), sum(map(bool, b))
    a_only = sum(bool(x) and not y for x, y in zip(a, b))
    b_only = sum(bool(y) and not x for x, y in zip(a, b))
    p_value = 1.0
    if a_only + b_only:
        p_value = exact_mcnemar(a_only, b_only)
    difference = (b_correct - a_correct) / n if n else 0.0
    interval: tuple[float, float] | None = None
    if n and (a_only + b_only == 0 or n in (a_only, b_only)):
        interval = (difference, difference)  # every instance has this difference, so every resample has it
    elif n:
        import numpy as np
        from scipy.stats import bootstrap

        d = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
        # random_state, not rng: scipy 1.11 (the oldest veriloop supports) has no rng, and
        # 1.15 on passes random_state to rng, so the same Generator draws the same resamples.
        result = bootstrap((d,), _mean, vectorized=True, n_resamples=resamples, batch=BATCH, method="percentile",
                           confidence_level=0.95, random_state=np.random.default_rng(seed))
        interval = (float(result.confidence_interval.low), float(result.confidence_interval.high))
    return PairedComparison(
        a=names[0], b=names[1], n=n, a_correct=a_correct, b_correct=b_correct,
        a_accuracy=a_correct / n if n else 0.0, b_accuracy=b_correct / n if n else 0.0, difference=difference,
        a_only=a_only, b_only=b_only, p_value=p_value, difference_ci95=interval, resamples=resamples, bootstrap_seed=seed,
    )


def matched(a: Sequence[Trajectory], b: Sequence[Trajectory]) -> tuple[list[bool], list[bool]]:
    """The two strategies' outcomes on the instances both finished, paired by
    (instance_id, seed), in a's order."""
    by_key = {(t.instance_id, t.seed): t.correct for t in b}
    pairs = [(t.correct, by_key[(t.instance_id, t.seed)]) for t in a if (t.instance_id, t.seed) in by_key]
    return [x for x, _ in pairs], [y for _, y in pairs]


def compare_trajectories(
    a_name: str, a: Sequence[Trajectory], b_name: str, b: Sequence[Trajectory], *, resamples: int = RESAMPLES,
    seed: int = 0,
) -> PairedComparison:
    """Strategy b against strategy a on the instances both finished."""
    xs, ys = matched(a, b)
    return paired_comparison(xs, ys, resamples=resamples, seed=seed, names=(a_name, b_name))


def pairwise(
    groups: Mapping[str, Sequence[Trajectory]], *, resamples: int = RESAMPLES, seed: int = 0,
) -> list[PairedComparison]:
    """Every pair of strategies in `groups` (label -> trajectories), each later one
    against each earlier one, in the mapping's order."""
    return [compare_trajectories(a, groups[a], b, groups[b], resamples=resamples, seed=seed)
            for a, b in combinations(groups, 2)]


def run_paired(strategies: Sequence[str], instance_ids: Iterable[str], seed: int,
               trajectories: Iterable[Trajectory]) -> list[PairedComparison]:
    """summary.json's `paired`: each pair of the run's strategies (in their order), over
    the run's instances at its seed that both finished."""
    wanted = set(instance_ids)
    groups: dict[str, list[Trajectory]] = {s: [] for s in strategies}
    for t in trajectories:
        if t.seed == seed and t.instance_id in wanted and t.strategy in groups:
            groups[t.strategy].append(t)
    return pairwise(groups)


def difference_text(c: PairedComparison, unit: str = " points") -> str:
    """The difference in accuracy points and its interval, "+20 points (+0 to +50)" ("-"
    when n = 0); the interval's level is for the heading to say."""
    if c.difference_ci95 is None:
        return "-"
    low, high = c.difference_ci95
    return f"{_points(c.difference)}{unit} ({_points(low)} to {_points(high)})"


def _points(x: float) -> str:
    return f"{round(100 * x):+d}"  # an int, so a tiny negative shows as +0, not -0


def p_text(p: float) -> str:
    return "<0.001" if p < 0.001 else f"{p:.3f}"
