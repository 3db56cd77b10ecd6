"""Equal-budget comparison of self-correction strategies.

A strategy that spends four times the tokens of another is not better for being more
accurate: it may only be buying more samples. So strategies run on the same instances
with the same model are compared at matched budgets: each is stopped, instance by
instance, once it has spent the tokens another strategy spends on average, and scored
on what it would have answered then. Alongside that table, the accuracy-vs-tokens plane
and its Pareto front show which strategies are worth their cost at all.

Everything is computed from recorded trajectories: no model is called again.

The table is in tokens by default; given a price per call (`cost`: each call's dollars at
the price of the model that answered it, experiment.executor.price_of), the same
comparison is made at matched dollar budgets, where a cached prompt token, a cheaper
judge or a dearer completion weigh what they cost.

A strategy whose rounds form pools of answers (stats.pools) may add its pool curves
(pass@k, maj@k, best-of-k, first@k) to a panel: each a line over k placed at k times the
tokens of one sample, in the strategy's colour, without its intervals (four bands per
strategy would hide the points; the pool tables and the viewer give them). They show what
k samples would buy, and are not strategies: the Pareto front is the strategies' points
alone.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from ..extras import require
from ..records import CallRecord, RoundRecord, Trajectory
from ..selfcheck.scoring import vote
from .metrics import wilson_interval

if TYPE_CHECKING:
    from matplotlib.axes import Axes

# What one call spends in a comparison's unit (tokens, or dollars).
CallCost = Callable[[CallRecord], float]

# ---------------------------------------------------------------------------- tokens


def _paying_rounds(t: Trajectory) -> list[int]:
    """The round each call of `t` pays for, aligned with `t.calls`.

    Usually a call's own `round`. The exception is a batched generation: self-consistency,
    best-of-n, SelfCheck and rejection sampling draw their k samples in one call recorded
    as k call records, all in round 1 with sample indices 0..k-1, while sample i becomes
    round i+1. Charging all k samples to round 1 would make truncating such a strategy
    after its first samples impossible, so the generate records of one round that carry
    several distinct sample indices are spread over consecutive rounds in sample order.
    Generate records of one round sharing a sample index (ReAct's interleaved turns for a
    single answer) stay in their round.
    """
    indices: dict[int, set[int]] = {}
    for c in t.calls:
        if c.role == "generate":
            indices.setdefault(c.round, set()).add(c.sample_index)
    offset = {r: {s: i for i, s in enumerate(sorted(ss))} for r, ss in indices.items()}
    return [c.round + offset[c.round][c.sample_index] if c.role == "generate" else c.round for c in t.calls]


def tokens(t: Trajectory) -> int:
    """Prompt plus completion tokens of every call of the trajectory: what it cost.

    Prompt tokens count because a loop that re-sends its history pays for it again each
    round; counting completions alone would flatter backprompting against sampling.
    """
    return sum(c.prompt_tokens + c.completion_tokens for c in t.calls)


def tokens_through(t: Trajectory, round: int) -> int:
    """Tokens spent up to and including round `round`: every call paying for a round
    <= `round` (see `_paying_rounds` for how batched samples are charged).

    A round's own verification and critique are included: the loop spends them before it
    can decide whether to go on, so a budget that covers round r covers them too.
    """
    return sum(
        c.prompt_tokens + c.completion_tokens for c, r in zip(t.calls, _paying_rounds(t), strict=True) if r <= round
    )


# ---------------------------------------------------------------------------- truncation

OutputRule = Literal["last", "vote", "best-verdict", "any-correct", "first-accepted"]

# How each built-in strategy turns its rounds into one output. Known by name rather than
# guessed from the records, because a vote's winner is often the last sample too.
_RULES: dict[str, OutputRule] = {
    "standard": "last",
    "sampling": "last",  # stops at the first accepted sample: any earlier stop ends on an unaccepted one
    "backprompt": "last",
    "cascade": "last",  # stops at the first accepted answer, like sampling
    "critic": "last",
    "react": "last",
    "self-consistency": "vote",
    "selfcheck": "vote",  # weighted by its checks' confidences when it ran them
    "best-of-n": "best-verdict",
    "rejection-sampling": "any-correct",
}

# Verdicts SelfCheck derives from its own checks; any other rejection on a SelfCheck
# round comes from its gate, which keeps that solution out of the vote.
_SELFCHECK_VERIFIERS = frozenset({"selfcheck", "global-check"})


def output_rule(t: Trajectory) -> OutputRule:
    """How the strategy of `t` picks its output from its rounds, which decides what it
    would have answered had it been stopped early.

    - "last": the latest round is the output (standard, sampling, backprompt, CRITIC, ReAct);
    - "vote": a (weighted) majority over the rounds' answers (self-consistency, SelfCheck);
    - "best-verdict": the round the verifier ranks highest (best-of-n);
    - "any-correct": an oracle keeps the best sample by the task's metric, so it is right
      whenever any sample is (rejection sampling; exact where the metric is correctness).

    - "first-accepted": the first round its verifier accepted, else the latest: a loop
      stopped by its verifier whose record holds attempts drawn after that one (an import
      of a sound verifier's loop or pool keeps every recorded attempt; see `answered_round`).

    A strategy not listed here (one a user registered) is judged from its records: if its
    final text is its last round's, "last"; otherwise it chose among its rounds, and
    "vote" is the assumption that reproduces the commonest such choice.
    """
    if answered_round(t) is not None:
        return "first-accepted"
    kind = t.strategy.split(":", 1)[0]
    if kind in _RULES:
        return _RULES[kind]
    if not t.rounds or t.final_text is None or t.final_text == t.rounds[-1].text:
        return "last"
    return "vote"


def answered_round(t: Trajectory) -> int | None:
    """The index of the round a loop stopped by its verifier answered with, when attempts
    were recorded after it (the rounds of a veriloop run end where its loop stopped; an
    import of a loop or pool stopped by a sound verifier keeps what its source drew after
    the stop); None for every other trajectory."""
    if t.stop_reason != "verifier_accepted" or t.final_text is None:
        return None
    for i, r in enumerate(t.rounds):
        if r.verdict is not None and r.verdict.ok:
            return i if i < len(t.rounds) - 1 and r.text == t.final_text else None
    return None


def output_round(t: Trajectory, rounds: Sequence[RoundRecord]) -> RoundRecord:
    """What a loop that had only `rounds` (a prefix of t's) would have answered with, when
    its output is its latest round or, for "first-accepted", its first accepted one."""
    if answered_round(t) is not None:
        return next((r for r in rounds if r.verdict is not None and r.verdict.ok), rounds[-1])
    return rounds[-1]


def _revote(t: Trajectory, rounds: list[RoundRecord]) -> bool:
    """Whether a vote over `rounds` alone would have been right.

    Answers are grouped by their extracted text with whitespace normalised: the domain's
    own equivalence (e.g. 0.5 = 1/2) is not in the records, which is why a trajectory that
    fits its budget whole keeps its recorded verdict instead of being re-voted. A round
    without an answer does not vote; ties go to the answer seen first.
    """
    confidence = {c.round: c.confidence for c in t.step_checks}
    selfcheck = t.strategy.split(":", 1)[0] == "selfcheck"
    keys: list[str | None] = []
    for r in rounds:
        v = r.verdict
        gated = selfcheck and v is not None and not v.ok and v.verifier not in _SELFCHECK_VERIFIERS
        keys.append(None if r.answer is None or gated else " ".join(r.answer.split()))
    heads = list(dict.fromkeys(k for k in keys if k is not None))
    clusters = [None if k is None else heads.index(k) for k in keys]
    result = vote(clusters, [confidence.get(r.round, 1.0) for r in rounds])
    if result.cluster is None:
        return False
    return any(r.correct for r, c in zip(rounds, clusters, strict=True) if c == result.cluster)


def call_tokens(c: CallRecord) -> float:
    return c.prompt_tokens + c.completion_tokens


def correct_within(t: Trajectory, budget: float, cost: CallCost | None = None) -> bool:
    """Whether the strategy would have ended right on this instance had it been stopped
    once it could not afford another round within `budget` tokens (or what `cost` counts
    of each call, such as its dollars).

    If the whole trajectory fits, its own verdict stands. Otherwise the loop is cut after
    the last round whose cumulative tokens fit, and the output is what the strategy
    would have made of the rounds it had (see `output_rule`): the latest round, a re-vote,
    the verifier's best, or any correct sample for an oracle. No round fits: wrong, since
    the strategy had nothing to answer with.
    """
    cost = cost or call_tokens
    if sum(cost(c) for c in t.calls) <= budget:
        return t.correct
    paid = _paying_rounds(t)
    spent: dict[int, float] = {}
    for c, r in zip(t.calls, paid, strict=True):
        spent[r] = spent.get(r, 0) + cost(c)

    def through(round: int) -> float:
        return sum(v for r, v in spent.items() if r <= round)

    fitting = [r for r in t.rounds if through(r.round) <= budget]
    if not fitting:
        return False
    rule = output_rule(t)
    if rule in ("last", "first-accepted"):
        return output_round(t, fitting).correct
    if rule == "any-correct":
        return any(r.correct for r in fitting)
    if rule == "best-verdict":
        def rank(r: RoundRecord) -> tuple[bool, float]:
            if r.verdict is None:
                return (False, 0.0)
            score = r.verdict.score if r.verdict.score is not None else float(r.verdict.ok)
            return (r.verdict.ok, score)

        # max() keeps the first of equals: the earliest round wins ties, as best-of-n does.
        return max(fitting, key=rank).correct
    return _revote(t, fitting)


# ---------------------------------------------------------------------------- the table


def mean_tokens(trajectories: Sequence[Trajectory], cost: CallCost | None = None) -> float:
    """Mean tokens per instance (or what `cost` counts): the budget a strategy is matched
    at. 0 for no trajectories."""
    if not trajectories:
        return 0.0
    if cost is None:
        return sum(tokens(t) for t in trajectories) / len(trajectories)
    return sum(cost(c) for t in trajectories for c in t.calls) / len(trajectories)


def _whole_tokens(x: float) -> int:
    # Trajectories spend whole tokens, so a budget of 120.4 admits exactly what 120 does.
    # Rounding the mean (half up) to the budget itself means a column's header states
    # exactly the budget its cells were computed at.
    return math.floor(x + 0.5)


def _whole_dollars(x: float) -> float:
    # Shown to 4 significant digits and computed at what is shown, as tokens are; rounded
    # up, so a strategy's own mean never falls below the budget its column states.
    if x <= 0:
        return 0.0
    scale = 10.0 ** (math.floor(math.log10(x)) - 3)
    return float(f"{math.ceil(x / scale - 1e-9) * scale:.4g}")


def matched_budgets(groups: Mapping[str, Sequence[Trajectory]], cost: CallCost | None = None) -> list[float]:
    """The budgets of the comparison: each strategy's mean tokens per instance, in whole
    tokens (with `cost`, mean dollars to 4 significant digits), ascending and without
    repeats. Strategies without trajectories set none."""
    whole = _whole_tokens if cost is None else _whole_dollars
    return sorted({whole(mean_tokens(ts, cost)) for ts in groups.values() if ts})


def _check_same_instances(groups: Mapping[str, Sequence[Trajectory]]) -> None:
    # A matched budget compares strategies on the same problems; with different instance
    # sets the difference in accuracy could be the problems', so that is refused.
    sets = {label: Counter(t.instance_id for t in ts) for label, ts in groups.items() if ts}
    if len({tuple(sorted(s.items())) for s in sets.values()}) > 1:
        first, *rest = sets.items()
        other = next((label, s) for label, s in rest if s != first[1])
        raise ValueError(
            f"strategies {first[0]!r} and {other[0]!r} ran on different instances; "
            "a matched-budget comparison needs the same instances for every strategy"
        )


def _accuracy_cell(correct: int, n: int) -> str:
    return f"{correct}/{n} = {100 * correct / n:.0f}%" if n else "-"


def _budget_text(budget: float, dollars: bool) -> str:
    return f"${budget:.4g}" if dollars else str(budget)


def matched_budget_table(groups: Mapping[str, Sequence[Trajectory]],
                         cost: CallCost | None = None) -> tuple[list[str], list[list[str]]]:
    """Headers and rows comparing strategies of ONE domain and model at matched budgets.

    `groups` maps strategy labels, in display order, to their trajectories on the same
    instances. The first data column is each strategy as it ran (accuracy @ its mean
    tokens per instance); then one column per budget of `matched_budgets`, whose cells are
    the accuracy with every instance stopped at that many tokens (`correct_within`). The
    reading: a strategy beats another only if it is more accurate at the other's budget.
    A strategy without trajectories shows "-" throughout. With `cost` (a call's dollars)
    the budgets are dollars per instance.
    """
    _check_same_instances(groups)
    budgets = matched_budgets(groups, cost)
    dollars = cost is not None
    whole = _whole_dollars if dollars else _whole_tokens
    headers = ["strategy", f"own: accuracy @ {'usd' if dollars else 'tokens'}/instance",
               *[f"@ {_budget_text(b, dollars)}" + ("" if dollars else " tok") for b in budgets]]
    rows: list[list[str]] = []
    for label, ts in groups.items():
        n = len(ts)
        own = (f"{_accuracy_cell(sum(t.correct for t in ts), n)} @ {_budget_text(whole(mean_tokens(ts, cost)), dollars)}"
               if n else "-")
        cells = [_accuracy_cell(sum(correct_within(t, b, cost) for t in ts), n) for b in budgets]
        rows.append([label, own, *cells])
    return headers, rows


def matched_budget_markdown(title: str, groups: Mapping[str, Sequence[Trajectory]],
                            cost: CallCost | None = None) -> str:
    """The matched-budget table as markdown under a `### title` line, with the one
    sentence a reader needs to read a cell; with `cost`, at matched dollar budgets."""
    headers, rows = matched_budget_table(groups, cost)

    def line(cells: list[str]) -> str:
        # A "|" inside a strategy label would split its cell.
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    explanation = (
        "Each `@ N tok` cell is the strategy's accuracy when every instance is stopped once it has spent N tokens "
        "(prompt + completion; N is one strategy's mean per instance), answering with what it had by then "
        "(voting strategies re-vote over the samples that fit; no round within N counts as wrong)."
    ) if cost is None else (
        "Each `@ $D` cell is the strategy's accuracy when every instance is stopped once its calls have cost D US "
        "dollars (each call at the price of the model that answered it, cached prompt tokens at the cached-input "
        "rate; D is one strategy's mean per instance), answering with what it had by then (voting strategies "
        "re-vote over the samples that fit; no round within D counts as wrong)."
    )
    out = [f"### {title}", "", explanation, "", line(headers), "|" + "---|" * len(headers)]
    out += [line(r) for r in rows]
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------- the frontier


@dataclass(frozen=True)
class FrontierPoint:
    """One strategy in the accuracy-vs-cost plane. Accuracy and its 95% interval are
    fractions in [0, 1] (plotted as %); tokens are the mean per instance."""

    label: str
    tokens_per_instance: float
    accuracy: float
    ci_low: float
    ci_high: float

    def __post_init__(self) -> None:
        # A percentage passed for a fraction would plot off the axes without complaint.
        for name in ("accuracy", "ci_low", "ci_high"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} is a fraction in [0, 1], got {value}")
        if not self.tokens_per_instance >= 0.0:
            raise ValueError(f"tokens_per_instance cannot be negative, got {self.tokens_per_instance}")


@dataclass(frozen=True)
class FrontierCurve:
    """A strategy's pool metric over k (stats.pools) in the accuracy-vs-cost plane:
    `tokens[i]` is what k = i + 1 samples cost; `values` and the interval are fractions
    (the interval is kept for callers; the plot draws the line alone)."""

    label: str
    metric: str
    tokens: list[float]
    values: list[float]
    ci_low: list[float]
    ci_high: list[float]


@dataclass(frozen=True)
class FrontierPanel:
    """One subplot of `plot_frontier`: usually one (domain, model). `curves`: pool curves
    drawn with the points; `note`: one line under the plot (e.g. what was left out)."""

    title: str
    points: list[FrontierPoint]
    curves: list[FrontierCurve] = field(default_factory=list)
    note: str = ""


def frontier_points(groups: Mapping[str, Sequence[Trajectory]]) -> list[FrontierPoint]:
    """One point per strategy with trajectories: mean tokens per instance, accuracy and
    its 95% Wilson interval (sane at 0/n and n/n, which small runs often hit)."""
    out = []
    for label, ts in groups.items():
        if not ts:
            continue
        correct = sum(t.correct for t in ts)
        low, high = wilson_interval(correct, len(ts))
        out.append(FrontierPoint(label, mean_tokens(ts), correct / len(ts), low, high))
    return out


PointT = TypeVar("PointT", FrontierPoint, tuple[str, float, float])


def _xy(p: FrontierPoint | tuple[str, float, float]) -> tuple[float, float]:
    if isinstance(p, FrontierPoint):
        return (p.tokens_per_instance, p.accuracy)
    return (p[1], p[2])


def pareto_front(points: Sequence[PointT]) -> list[PointT]:
    """The points no other point dominates, ordered by tokens (then as given).

    A point is dominated when another costs no more and is no less accurate, and is
    strictly better in one of the two: nothing is lost by choosing the other. Identical
    points do not dominate each other, so both stay on the front.
    """
    coords = [_xy(p) for p in points]

    def dominated(i: int) -> bool:
        x, y = coords[i]
        return any(ox <= x and oy >= y and (ox < x or oy > y) for ox, oy in coords)

    front = [i for i in range(len(points)) if not dominated(i)]
    return [points[i] for i in sorted(front, key=lambda i: coords[i][0])]


_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "<", ">"]
# One line style per pool metric (the Pareto front is the black dashed line).
_CURVE_STYLES: dict[str, Any] = {
    "pass@k": ":", "maj@k": "-.", "best-of-k": (0, (6, 2)), "first@k": "-",
}


def plot_frontier(path: Path, panels: list[FrontierPanel]) -> None:
    """Accuracy against mean tokens per instance, one subplot per panel (at most three
    per row), with each strategy's 95% interval and the Pareto front.

    A strategy keeps its colour and marker in every panel, so one legend below the plots
    names them all and text never sits on the points. The x axis turns logarithmic when
    costs span more than a factor of 20 (a single answer next to fifteen samples), where
    a linear axis would crush the cheap strategies into its left edge.
    """
    if not panels:
        # An empty figure would pass for a result; the caller has nothing to compare.
        raise ValueError("plot_frontier needs at least one panel")
    require("plots", f"drawing {path.name}")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    labels = list(dict.fromkeys([*(p.label for panel in panels for p in panel.points),
                                 *(c.label for panel in panels for c in panel.curves)]))
    style = {label: (f"C{i % 10}", _MARKERS[i % len(_MARKERS)]) for i, label in enumerate(labels)}
    ncols = min(3, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.6 * ncols, 3.7 * nrows + 0.4), squeeze=False,
                             layout="constrained")
    flat = [ax for row in axes for ax in row]
    for ax, panel in zip(flat, panels):
        _draw_panel(ax, panel, style)
    for ax in flat[len(panels):]:
        # The unused cells of the last row.
        ax.set_axis_off()
    handles: list[Line2D] = [
        Line2D([], [], color=style[label][0], marker=style[label][1], linestyle="none", markersize=7, label=label)
        for label in labels
    ]
    handles.append(Line2D([], [], color="black", linestyle="--", linewidth=1, marker="o", markersize=11,
                          markerfacecolor="none", label="Pareto front"))
    metrics = list(dict.fromkeys(c.metric for panel in panels for c in panel.curves))
    handles += [Line2D([], [], color="grey", linestyle=_CURVE_STYLES.get(m, "-"), linewidth=1.4,
                       label=f"{m} (pool, over k)") for m in metrics]
    longest = max(len(str(h.get_label())) for h in handles)
    # About 0.065 inch per character at font size 8, plus the marker: as many legend
    # columns as fit across the figure.
    columns = max(1, min(len(handles), int(4.6 * ncols / (0.065 * longest + 0.6))))
    fig.legend(handles=handles, loc="outside lower center", ncol=columns, fontsize=8, frameon=False)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _draw_panel(ax: Axes, panel: FrontierPanel, style: dict[str, tuple[str, str]]) -> None:
    from matplotlib.ticker import MaxNLocator

    ax.set_title(panel.title, fontsize=10)
    # The note goes under the axis label, where constrained layout makes room for it.
    note = f"\n{panel.note}" if panel.note else ""
    ax.set_xlabel(f"mean tokens per instance (prompt + completion){note}", fontsize=8)
    ax.set_ylabel("accuracy (%), bars: 95% CI", fontsize=8)
    ax.set_ylim(-2, 102)
    ax.grid(alpha=0.3)
    for curve in panel.curves:
        # Under the points: a curve at k = n usually ends on its own strategy's point.
        colour = style[curve.label][0]
        ax.plot(curve.tokens, [100 * v for v in curve.values], color=colour,
                linestyle=_CURVE_STYLES.get(curve.metric, "-"), linewidth=1.4, marker=".", markersize=3, zorder=1)
    if not panel.points:
        ax.text(0.5, 0.5, "no strategies", transform=ax.transAxes, ha="center", va="center", color="grey")
        return
    # Strategies with identical cost and accuracy would hide one another, so each one
    # drawn on a spot already taken is drawn smaller, inside the earlier ones.
    same_spot = Counter((p.tokens_per_instance, p.accuracy) for p in panel.points)
    drawn: Counter[tuple[float, float]] = Counter()
    for p in panel.points:
        colour, marker = style[p.label]
        spot = (p.tokens_per_instance, p.accuracy)
        size = 7 + 3 * (same_spot[spot] - 1 - drawn[spot])
        drawn[spot] += 1
        y = 100 * p.accuracy
        # Clipped at 0: the interval's float rounding can leave the estimate a hair outside.
        below, above = max(0.0, y - 100 * p.ci_low), max(0.0, 100 * p.ci_high - y)
        ax.errorbar([p.tokens_per_instance], [y], yerr=[[below], [above]], fmt=marker, color=colour, markersize=size,
                    capsize=3, elinewidth=1, zorder=3)
    front = pareto_front(panel.points)
    xs = [p.tokens_per_instance for p in front]
    ys = [100 * p.accuracy for p in front]
    # A staircase: past a front point's cost, its accuracy is what can be had until the
    # next front point is affordable.
    ax.step(xs, ys, where="post", color="black", linestyle="--", linewidth=1, zorder=2)
    rings = [(7 + 3 * (same_spot[(p.tokens_per_instance, p.accuracy)] - 1) + 6) ** 2 for p in front]
    ax.scatter(xs, ys, s=rings, facecolors="none", edgecolors="black", linewidths=1.1, zorder=4)
    all_x = [p.tokens_per_instance for p in panel.points] + [x for c in panel.curves for x in c.tokens]
    low, high = min(all_x), max(all_x)
    if low > 0 and high / low > 20:
        ax.set_xscale("log")
        ax.set_xlabel(f"mean tokens per instance (prompt + completion, log scale){note}", fontsize=8)
        return
    # Tokens are never negative, so the axis starts just left of 0. With every strategy
    # at 0 tokens (a stub model, answers recorded without usage) the range is [0, 1]
    # rather than matplotlib's degenerate one centred on 0.
    right = 1.06 * high if high > 0 else 1.0
    ax.set_xlim(left=-0.04 * right, right=right)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
