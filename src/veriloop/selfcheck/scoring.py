"""From step results to a solution's confidence, and from confidences to one answer."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

LAMBDA_CONTRADICT = 1.0
LAMBDA_UNRELATED = 0.3


def confidence(contradicted: int, unrelated: int, lambda_contradict: float = LAMBDA_CONTRADICT,
               lambda_unrelated: float = LAMBDA_UNRELATED) -> float:
    """w = 2 * sigmoid(-(lambda_contradict * #contradicted + lambda_unrelated * #unrelated)):
    1 for a solution with no doubtful step, falling towards 0 with each one; a
    contradiction weighs more than a step the check could not relate to."""
    if contradicted < 0 or unrelated < 0:
        raise ValueError("step counts cannot be negative")
    if lambda_contradict < 0 or lambda_unrelated < 0:
        raise ValueError("the lambdas must not be negative")
    x = lambda_contradict * contradicted + lambda_unrelated * unrelated
    return 2.0 / (1.0 + math.exp(x)) if x < 700 else 0.0


def answer_clusters(answers: Sequence[str | None], same: Callable[[str, str], bool]) -> list[int | None]:
    """A cluster number per answer (None for no answer): each answer joins the first
    earlier cluster whose first answer it equals under `same`, so clusters are numbered
    in order of first appearance."""
    heads: list[str] = []
    out: list[int | None] = []
    for answer in answers:
        if answer is None:
            out.append(None)
            continue
        for number, head in enumerate(heads):
            if answer == head or same(answer, head):
                out.append(number)
                break
        else:
            heads.append(answer)
            out.append(len(heads) - 1)
    return out


@dataclass(frozen=True)
class Vote:
    winner: int | None  # index of the solution that represents the winning answer
    cluster: int | None
    scores: dict[int, float]  # cluster -> summed weight


def vote(clusters: Sequence[int | None], weights: Sequence[float] | None = None) -> Vote:
    """Weighted voting over answer clusters: each cluster scores the sum of its
    solutions' weights (1 each without weights: majority voting). A tie goes to the
    cluster that appeared first, and within the winner the solution with the highest
    weight (then the earliest) represents it. No answers at all: no winner."""
    weights = [1.0] * len(clusters) if weights is None else list(weights)
    if len(weights) != len(clusters):
        raise ValueError("one weight per solution")
    scores: dict[int, float] = {}
    first_seen: dict[int, int] = {}
    for i, (c, w) in enumerate(zip(clusters, weights)):
        if c is None:
            continue
        scores[c] = scores.get(c, 0.0) + w
        first_seen.setdefault(c, i)
    if not scores:
        return Vote(None, None, {})
    best = max(scores.values())
    # Sums of floats: treat near-equal sums as ties so the order of addition cannot decide.
    tied = [c for c, s in scores.items() if math.isclose(s, best, rel_tol=1e-9, abs_tol=1e-12)]
    cluster = min(tied, key=lambda c: first_seen[c])
    members = [i for i, c in enumerate(clusters) if c == cluster]
    winner = max(members, key=lambda i: (weights[i], -i))
    return Vote(winner, cluster, scores)
