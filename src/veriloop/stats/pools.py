"""Pool metrics: pass@k, maj@k, best-of-k and first@k from the rounds a strategy recorded.

A trajectory with two or more rounds is read as a pool of answers to its instance: the k
samples of self-consistency or best-of-n, the attempts of sampling or of a loop, or the n
recorded responses of an imported run. From one recorded pool per instance, with no new
model call, these curves over k say what k answers are worth:

- **pass@k**: the chance that k of the pool's answers include a right one, by the
  unbiased estimator 1 - C(n - c, k) / C(n, k) (n answers, c right; Chen et al. 2021),
  computed in its numerically stable product form;
- **maj@k**: the chance that a majority vote over k of them is right;
- **best-of-k**: the chance that the answer the in-loop verifier ranks highest among k of
  them is right (accepted before rejected, then by score; as the best-of-n strategy ranks);
- **first@k**: whether one of the first k rounds is right (a trajectory that ended
  sooner keeps what it had).

Invariants:
- pass@k, maj@k and best-of-k are each the mean over every k-subset of an instance's pool
  (pass@k's estimator is that mean in closed form; best-of-k has one too; maj@k is
  enumerated while an instance has at most `MAJ_SUBSETS` k-subsets, and otherwise
  estimated from `MAJ_SUBSETS` random ones drawn by a numpy generator seeded with k, so
  the figures never change between runs). A subset keeps the pool's order: ties in a vote
  or a ranking go to the earliest answer. At k = n each is what the pool's own strategy
  would output (best-of-n's pick, self-consistency's vote up to answer equivalence), and
  at k = 1 pass@1 = maj@1 = the pool's share of right answers.
- They are computed only for a group whose pools are all the same size n >= 2, over
  k = 1..n with each instance's own pool. Pools of unequal size were cut by the loop
  (a verifier accepted, a budget ran out), so what they hold depends on their answers:
  sampling stopped by a sound verifier holds exactly one right answer in every solved
  pool, whatever the model's rate. Such a group has first@k only, over k = 1..the
  largest pool, which is what cutting does not bias: for independent samples stopped at
  the first right one (a sound verifier), first@k estimates pass@k without bias; with an
  unsound one, a pool cut at a wrong accepted answer counts as unsolved beyond it.
- A loop's rounds are not independent samples: each answers the feedback on the last.
  On a loop, pass@k reads as "an oracle picking the right answer among k of its attempts"
  and first@k as "solved within the first k attempts, had an oracle stopped the loop".
- Votes group answers by their recorded text with whitespace normalised (the domain's
  own equivalence, e.g. 0.5 = 1/2, is not in the records); an answer the domain could
  not read (None) never wins unless every answer of the subset is None, when the subset
  answers with its first (and is scored as that round was). A round without a verdict
  ranks below every verified one.
- Intervals are 95% over instances: Wilson's (metrics.wilson_interval) where every
  instance's value is 0 or 1 (a plain proportion: first@k always, pass@k at k = n), otherwise a
  percentile bootstrap of the mean over instances (scipy.stats.bootstrap, `RESAMPLES`
  resamples, seeded), and Wilson's again where a bootstrap has nothing to resample (one
  instance, or all with the same value); a mean of values in [0, 1] varies no more than a
  proportion with that mean, so that fallback errs wide.
- numpy (and scipy) are imported when a pool is computed, not with the module: every run's
  results files import it, most runs have no pool, and numpy costs a command 0.1 s of CPU.
"""

from __future__ import annotations

import functools
import itertools
import math
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

from ..errors import VeriloopError
from ..records import RoundRecord, Trajectory
from .frontier import FrontierCurve, tokens
from .metrics import wilson_interval

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

Metric = Literal["pass@k", "maj@k", "best-of-k", "first@k"]
IID_METRICS: tuple[Metric, ...] = ("pass@k", "maj@k", "best-of-k")
MAJ_SUBSETS = 2000  # k-subsets enumerated (or, past that many, drawn) per instance for maj@k
RESAMPLES = 2000  # bootstrap resamples of the instances
SEED = 0

# ---------------------------------------------------------------------------- one pool


def _check_k(n: int, k: int) -> None:
    if not 1 <= k <= n:
        raise VeriloopError(f"k = {k} is outside 1..{n}: a pool of {n} answers gives pass@k, maj@k and best-of-k "
                            f"for k from 1 to {n} only")


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimate of pass@k from n answers of which c are right: 1 - C(n-c, k)
    / C(n, k), as the product of (1 - k / i) over i = n-c+1..n, which neither overflows
    nor loses precision for large n."""
    import numpy as np

    _check_k(n, k)
    if not 0 <= c <= n:
        raise VeriloopError(f"c = {c} right answers is outside 0..{n}: count the right answers of the pool")
    if n - c < k:
        return 1.0  # every k-subset holds a right answer
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def answer_key(answer: str | None) -> str | None:
    """What a vote compares: the recorded answer with its whitespace normalised."""
    return None if answer is None else " ".join(answer.split())


@functools.lru_cache(maxsize=256)
def _subsets(n: int, k: int) -> NDArray[np.intp]:
    """Every k-subset of range(n), ascending, or `MAJ_SUBSETS` random ones when there are
    more (each row ascending, so the pool's order decides ties). The same for every pool
    of n answers, so made once (read-only: callers index it, never write it)."""
    import numpy as np

    if math.comb(n, k) <= MAJ_SUBSETS:
        out = np.array(list(itertools.combinations(range(n), k)), dtype=np.intp).reshape(-1, k)
    else:
        rng = np.random.default_rng(k)
        out = np.sort(rng.permuted(np.tile(np.arange(n, dtype=np.intp), (MAJ_SUBSETS, 1)), axis=1)[:, :k], axis=1)
    out.flags.writeable = False
    return out


def maj_at_k(answers: Sequence[str | None], correct: Sequence[bool], k: int) -> float:
    """The mean over the pool's k-subsets of whether a majority vote over the subset is
    right. A vote counts equal answers (`answers` are vote keys, None: unreadable); the
    most votes win, ties going to the answer the subset shows first, and the winner is
    scored as its first round in the subset was."""
    import numpy as np

    n = len(answers)
    if len(correct) != n:
        raise ValueError("one correctness per answer")
    _check_k(n, k)
    if not any(correct) or all(correct):
        # Whatever every vote picks is wrong (right): the mean is exactly 0.0 (1.0).
        return float(bool(correct[0]))
    heads = list(dict.fromkeys(a for a in answers if a is not None))
    # An unreadable answer is cluster len(heads): one column past the readable ones, dropped.
    clusters = np.array([len(heads) if a is None else heads.index(a) for a in answers], dtype=np.intp)
    right = np.asarray(correct, dtype=bool)
    subsets = _subsets(n, k)
    if not heads:
        return float(right[subsets[:, 0]].mean())
    # Counted by scattering (subset, cluster) cells, not by a (subset, position, cluster)
    # comparison: that cube cost an import of GPT-4's Game of 24 pools (2000 subsets x 15
    # positions x up to 15 answers, 2500 times) 9 of its 14 s.
    count, width = len(subsets), len(heads) + 1
    rows = np.arange(count)
    members = clusters[subsets]
    votes = np.bincount((rows[:, None] * width + members).ravel(), minlength=count * width).reshape(count, width)
    votes[:, -1] = 0  # unreadable answers get no vote
    # Each position holds its cluster's votes; the first position holding the most is the
    # winner's first appearance (more votes win, equal votes go to the earlier answer). A
    # subset with no readable answer is all zeros: it answers with its first round.
    chosen = subsets[rows, votes[rows[:, None], members].argmax(axis=1)]
    return float(right[chosen].mean())


def _rank(r: RoundRecord) -> tuple[bool, bool, float]:
    # Verified rounds first; among them best-of-n's own order (accepted, then score).
    # Imported here: the strategies cost a report or a summary 70 ms to import otherwise.
    from ..strategies.best_of_n import rank

    return (False, False, 0.0) if r.verdict is None else (True, *rank(r.verdict))


def best_of_k(ranks: Sequence[tuple[float, ...]], correct: Sequence[bool], k: int) -> float:
    """The mean over the pool's k-subsets of whether the subset's best-ranked answer is
    right (higher rank wins, ties: the earliest). In closed form: with the answers sorted
    best first, the one at place j (0-based) is a subset's best exactly when the subset
    holds it and none of the j before it, C(n-1-j, k-1) of the C(n, k) subsets."""
    n = len(ranks)
    if len(correct) != n:
        raise ValueError("one correctness per answer")
    _check_k(n, k)
    order = sorted(range(n), key=lambda i: ranks[i], reverse=True)  # stable: equals keep the pool's order
    return sum(math.comb(n - 1 - j, k - 1) for j, i in enumerate(order) if correct[i]) / math.comb(n, k)


def first_k(correct: Sequence[bool], k: int) -> bool:
    """Whether one of the first k rounds is right (all of them, when there are fewer)."""
    if k < 1:
        raise VeriloopError(f"k = {k}: first@k counts the first k >= 1 rounds")
    return any(correct[:k])


def pool_value(metric: Metric, rounds: Sequence[RoundRecord], k: int) -> float:
    """One instance's value of `metric` at k, from its rounds in order."""
    return pool_values(metric, rounds, [k])[0]


def pool_values(metric: Metric, rounds: Sequence[RoundRecord], ks: Iterable[int]) -> list[float]:
    """One instance's values of `metric` at each k of `ks` (`pool_value`'s), reading the
    rounds once for all of them."""
    correct = [r.correct for r in rounds]
    if metric == "first@k":
        return [float(first_k(correct, k)) for k in ks]
    if metric == "pass@k":
        c = sum(correct)
        return [pass_at_k(len(rounds), c, k) for k in ks]
    if metric == "maj@k":
        keys = [answer_key(r.answer) for r in rounds]
        return [maj_at_k(keys, correct, k) for k in ks]
    ranks = [_rank(r) for r in rounds]
    return [best_of_k(ranks, correct, k) for k in ks]


# ---------------------------------------------------------------------------- curves


class PoolCurve(BaseModel):
    """One metric over k = 1..pool_size, averaged over `n_instances` instances, with
    each point's 95% interval over instances (see the module docstring for which)."""

    metric: Metric
    k: list[int]
    values: list[float]
    ci_low: list[float]
    ci_high: list[float]
    n_instances: int
    pool_size: int


class StrategyPools(BaseModel):
    """A strategy's pool curves on one set of instances. `pool_size`: the size every pool
    shares (None when they differ: first@k only); `tokens_per_sample`: the mean tokens of
    one round, its verification included (0: the records hold no token counts)."""

    strategy: str
    n_instances: int
    pool_size: int | None
    smallest_pool: int
    largest_pool: int
    tokens_per_sample: float
    curves: list[PoolCurve]

    def curve(self, metric: Metric) -> PoolCurve | None:
        return next((c for c in self.curves if c.metric == metric), None)


def _intervals(values: NDArray[np.float64]) -> tuple[list[float], list[float]]:
    """95% intervals of each row's mean (rows: k, columns: instances)."""
    import numpy as np

    n = values.shape[1]
    means = values.mean(axis=1)
    low, high = np.empty(len(values)), np.empty(len(values))
    binary = np.all((values == 0) | (values == 1), axis=1)
    flat = np.all(values == values[:, :1], axis=1)
    plain = binary | flat | (n < 2)
    for i in np.flatnonzero(plain):
        # A fractional mean (a flat row of 0.4s) is a proportion with n trials at most as variable.
        low[i], high[i] = wilson_interval(float(means[i] * n), n)  # type: ignore[arg-type]
    rest = np.flatnonzero(~plain)
    if len(rest):
        # Imported here: most pools score each instance 0 or 1 and never bootstrap, and
        # scipy.stats costs a command about a second of CPU.
        from scipy.stats import bootstrap

        # random_state, not rng: scipy 1.11 has no rng (paired.py says more).
        res = bootstrap((values[rest],), np.mean, axis=-1, vectorized=True, method="percentile",
                        n_resamples=RESAMPLES, random_state=np.random.default_rng(SEED))
        low[rest], high[rest] = res.confidence_interval.low, res.confidence_interval.high
    # Rounding in the resampled means may leave the estimate a hair outside its interval.
    return [float(min(lo, m)) for lo, m in zip(low, means)], [float(max(hi, m)) for hi, m in zip(high, means)]


def _curve(metric: Metric, pools: Sequence[Sequence[RoundRecord]], ks: range) -> PoolCurve:
    import numpy as np

    by_pool = [pool_values(metric, rounds, ks) for rounds in pools]
    # Rows k, columns instances, laid out as a list of rows would be: a mean's rounding follows the layout.
    values = np.array([[row[i] for row in by_pool] for i in range(len(ks))], dtype=np.float64)
    low, high = _intervals(values)
    return PoolCurve(metric=metric, k=list(ks), values=[float(v) for v in values.mean(axis=1)], ci_low=low,
                     ci_high=high, n_instances=len(pools), pool_size=ks.stop - 1)


def strategy_pools(strategy: str, trajectories: Iterable[Trajectory]) -> StrategyPools | None:
    """The pool curves of one strategy's trajectories on distinct instances (one each):
    pass@k, maj@k, best-of-k and first@k when every pool has the same size n >= 2,
    first@k alone when sizes differ; None when no trajectory has two rounds."""
    ts = list(trajectories)
    sizes = [t.n_rounds for t in ts]
    if not ts or max(sizes) < 2:
        return None
    pools = [t.rounds for t in ts]
    same = min(sizes) == max(sizes)
    curves = [_curve(m, pools, range(1, sizes[0] + 1)) for m in IID_METRICS] if same else []
    curves.append(_curve("first@k", pools, range(1, max(sizes) + 1)))
    rounds = sum(sizes)
    return StrategyPools(
        strategy=strategy, n_instances=len(ts), pool_size=sizes[0] if same else None, smallest_pool=min(sizes),
        largest_pool=max(sizes), tokens_per_sample=sum(tokens(t) for t in ts) / rounds if rounds else 0.0,
        curves=curves,
    )


# ---------------------------------------------------------------------------- reports

METRICS: tuple[Metric, ...] = ("pass@k", "maj@k", "best-of-k", "first@k")


def shown_ks(n: int) -> list[int]:
    """The k a table shows before its last column (k = each curve's own largest): 1, 2,
    4, 8, ... below n, the largest k of the table's curves."""
    return [2**i for i in range(n.bit_length()) if 2**i < n]


def _cell(curve: PoolCurve, k: int) -> str:
    if k > curve.pool_size:
        return "-"
    i = k - 1
    return f"{curve.values[i]:.0%} ({curve.ci_low[i]:.0%}-{curve.ci_high[i]:.0%})"


def pools_table(pools: Sequence[StrategyPools]) -> tuple[list[str], list[list[str]]]:
    """Headers and rows: one row per strategy and metric, one column per shown k and a
    last one at the curve's own largest k (the pool's size, or for first@k the largest pool)."""
    largest = max((c.pool_size for p in pools for c in p.curves), default=1)
    ks = shown_ks(largest)
    headers = ["strategy", "metric", "pool", *[f"k={k}" for k in ks], "k=n"]
    rows = []
    for p in pools:
        size = str(p.pool_size) if p.pool_size is not None else f"{p.smallest_pool}-{p.largest_pool}"
        for metric in METRICS:
            curve = p.curve(metric)
            if curve is not None:
                rows.append([p.strategy, metric, f"{p.n_instances} × {size}", *[_cell(curve, k) for k in ks],
                             _cell(curve, curve.pool_size)])
    return headers, rows


POOLS_EXPLAINED = (
    "From each strategy's recorded rounds, read as a pool of answers per instance (no new model call): "
    "pass@k (some of k answers is right; unbiased estimator), maj@k (a majority vote over k is right) and best-of-k "
    "(the verifier's best of k is right), each the mean over every k answers of the pool, where all pools have the "
    "same size; first@k (one of the first k rounds is right) for every strategy with pools. A loop's rounds answer "
    "its feedback, so on a loop these read as an oracle choosing among its attempts. Cells: value (95% interval "
    "over instances: Wilson's where every instance scores 0 or 1, else a percentile bootstrap, which cannot reach "
    "past the instances it resamples and is narrow with few of them); pool: instances × answers per instance; "
    "k=n: at the pool's size (first@k: the largest pool)."
)


def pools_markdown(title: str, pools: Sequence[StrategyPools]) -> str:
    """The pool table under a `### title` line (empty when no strategy has pools)."""
    if not pools:
        return ""
    headers, rows = pools_table(pools)

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    out = [f"### {title}", "", line(headers), "|" + "---|" * len(headers), *(line(r) for r in rows)]
    return "\n".join(out) + "\n"


def frontier_curves(pools: Iterable[StrategyPools]) -> list[FrontierCurve]:
    """Each strategy's curves placed at k × its mean tokens of one sample, for the
    frontier plot; strategies whose records hold no token counts are left out (their
    curves are over k alone, in the tables and the viewer)."""
    return [
        FrontierCurve(p.strategy, c.metric, [k * p.tokens_per_sample for k in c.k], c.values, c.ci_low, c.ci_high)
        for p in pools if p.tokens_per_sample > 0 for c in p.curves
    ]


def frontier_note(pools: Iterable[StrategyPools]) -> str:
    """The frontier panel's line naming the pools it leaves out, or ""."""
    left_out = [p.strategy for p in pools if p.tokens_per_sample <= 0]
    if not left_out:
        return ""
    return textwrap.fill("pool curves not drawn (no token counts; see the pool tables): " + ", ".join(left_out), 72)


# ---------------------------------------------------------------------------- results files

GroupKey = tuple[str, str, int]  # (domain, model, seed), as experiment.results groups its cells


def experiment_pools(cells: Iterable[tuple[str, str, int, str, Sequence[Trajectory]]]) -> dict[GroupKey, list[StrategyPools]]:
    """By (domain, model, seed), in cell order, the pools of each cell (domain, model,
    seed, strategy, its trajectories) that has any."""
    out: dict[GroupKey, list[StrategyPools]] = {}
    for domain, model, seed, strategy, ts in cells:
        found = strategy_pools(strategy, ts)
        if found is not None:
            out.setdefault((domain, model, seed), []).append(found)
    return out


def pools_json(pools: Mapping[GroupKey, Sequence[StrategyPools]]) -> list[dict[str, object]]:
    """results.json's `pools`: one entry per cell with pools, its full curves."""
    return [{"domain": d, "model": m, "seed": s, **p.model_dump()} for (d, m, s), ps in pools.items() for p in ps]


def pools_section(tables: Sequence[str]) -> list[str]:
    """results.md's pool section around the groups' tables (nothing without pools)."""
    return ["", "## Pool metrics", "", POOLS_EXPLAINED, "", *tables] if tables else []


def run_pools(strategies: Iterable[str], instance_ids: Iterable[str], seed: int,
              trajectories: Iterable[Trajectory]) -> dict[str, dict[str, object]]:
    """summary.json's `pools`: by strategy (those with pools), its curves over the run's
    instances at its seed."""
    wanted = set(instance_ids)
    by_strategy: dict[str, list[Trajectory]] = {}
    for t in trajectories:
        if t.seed == seed and t.instance_id in wanted:
            by_strategy.setdefault(t.strategy, []).append(t)
    out = {}
    for strategy in strategies:
        found = strategy_pools(strategy, by_strategy.get(strategy, []))
        if found is not None:
            out[strategy] = found.model_dump(exclude={"strategy"})
    return out
