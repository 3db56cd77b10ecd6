"""The equal-budget comparison on hand-made trajectories: what a budget buys each kind of
strategy (the latest round, a re-vote, the verifier's best), the matched-budget table,
the Pareto front and the frontier figure.

Token counts are chosen so each budget falls just below, on, or above a round's
cumulative cost, and every expected result is worked out in the test's comments.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from scripted import play

from veriloop.domains import get_domain
from veriloop.records import CallRecord, Role, RoundRecord, Trajectory, Verdict
from veriloop.selfcheck.records import SolutionCheck
from veriloop.stats.frontier import (
    FrontierCurve,
    FrontierPanel,
    FrontierPoint,
    answered_round,
    correct_within,
    frontier_points,
    matched_budget_markdown,
    matched_budget_table,
    matched_budgets,
    mean_tokens,
    output_round,
    output_rule,
    pareto_front,
    plot_frontier,
    tokens,
    tokens_through,
)

BACKPROMPT = "backprompt:feedback=llm,max_rounds=3,verifier=llm"
SC = "self-consistency:k=5,temperature=1.0"


def call(round: int, prompt: int, completion: int, role: Role = "generate", sample: int = 0) -> CallRecord:
    return CallRecord(role=role, round=round, sample_index=sample, messages=[], response="", finish_reason="stop",
                      prompt_tokens=prompt, completion_tokens=completion, seconds=0.0, cached=False)


def rnd(round: int, answer: str | None, correct: bool, verdict: Verdict | None = None) -> RoundRecord:
    return RoundRecord(round=round, text=f"reply {round}: {answer}", answer=answer, verdict=verdict, correct=correct)


def trajectory(strategy: str, calls: list[CallRecord], rounds: list[RoundRecord], correct: bool,
               instance: str = "i1", final: int | None = None, checks: list[SolutionCheck] | None = None) -> Trajectory:
    """`final`: the index of the round whose text is the output (default: the last)."""
    out = rounds[-1 if final is None else final] if rounds else None
    return Trajectory(strategy=strategy, domain="d", model="m", instance_id=instance, seed=0, calls=calls,
                      rounds=rounds, step_checks=checks or [], final_text=out.text if out else None,
                      final_answer=out.answer if out else None, correct=correct)


def backprompt_trajectory() -> Trajectory:
    # Round 1 costs 120 + 40 = 160; round 2 another 220 + 40 (cumulative 420); round 3
    # another 320 (cumulative 740). Only round 2 was right, and the loop ran past it.
    calls = [call(1, 100, 20), call(1, 30, 10, "verify"), call(2, 200, 20), call(2, 30, 10, "verify"),
             call(3, 300, 20)]
    return trajectory(BACKPROMPT, calls, [rnd(1, "a", False), rnd(2, "b", True), rnd(3, "c", False)], correct=False)


def sc_trajectory(answers: list[str | None], correct_answer: str) -> Trajectory:
    # One batched call of len(answers) samples, as self-consistency records it: every
    # record in round 1, sample i costing 20 tokens and paying for round i + 1.
    calls = [call(1, 15, 5, sample=i) for i in range(len(answers))]
    rounds = [rnd(i + 1, a, a == correct_answer) for i, a in enumerate(answers)]
    # The full vote's verdict is recorded by the strategy; these tests set it by hand.
    full = max((a for a in answers if a is not None), key=[a for a in answers if a is not None].count)
    return trajectory(SC, calls, rounds, correct=full == correct_answer, final=answers.index(full))


# ------------------------------------------------------------------ tokens


def test_tokens_and_cumulative_tokens_per_round() -> None:
    t = backprompt_trajectory()
    assert tokens(t) == 740
    assert [tokens_through(t, r) for r in range(0, 5)] == [0, 160, 420, 740, 740]


def test_batched_samples_pay_for_one_round_each() -> None:
    t = sc_trajectory(["x", "y", "y", "x", "x"], "x")
    assert tokens(t) == 100
    assert [tokens_through(t, r) for r in range(1, 6)] == [20, 40, 60, 80, 100]


def test_real_records_of_self_consistency_and_sampling_charge_one_sample_per_round() -> None:
    # The scripted model answers every completion with 10 + 5 tokens; the sound verifier
    # of Game of 24 spends none.
    game24 = get_domain("game24")
    puzzle = game24.parse_instance({"instance": "1 1 4 6"})
    right, eight = "Answer: 1 + 4 * 6 - 1", "Answer: 6 / (1 - 1/4)"
    sc, _ = play("self-consistency:k=5", game24, puzzle, [right, eight, eight, right, right])
    assert [tokens_through(sc, r) for r in range(1, 6)] == [15, 30, 45, 60, 75]
    assert sc.correct is True
    # Three samples: 8 has two votes against one for the right answer.
    assert [correct_within(sc, b) for b in (14, 15, 30, 45, 60, 75)] == [False, True, True, False, True, True]
    sampling, _ = play("sampling:k=3", game24, puzzle, [eight, eight, right])
    assert [tokens_through(sampling, r) for r in range(1, 4)] == [15, 30, 45]
    assert [correct_within(sampling, b) for b in (14, 15, 44, 45)] == [False, False, False, True]


# ------------------------------------------------------------------ truncation


@pytest.mark.parametrize(
    ("budget", "expected"),
    [
        (0, False),  # nothing fits
        (159, False),  # one token short of round 1
        (160, False),  # round 1 fits, and it was wrong
        (419, False),  # still round 1
        (420, True),  # round 2, the right one
        (739, True),  # round 3 does not fit: stopped on round 2
        (740, False),  # the whole trajectory fits: its own (wrong) final answer
        (10_000, False),
    ],
)
def test_round_based_strategy_ends_on_the_last_round_that_fits(budget: int, expected: bool) -> None:
    assert correct_within(backprompt_trajectory(), budget) is expected


@pytest.mark.parametrize(
    ("budget", "expected"),
    [
        (19, False),  # no sample fits
        (20, True),  # x alone
        (40, True),  # x and y tie: the first seen, x, wins
        (59, True),
        (60, False),  # x, y, y: y wins, and y is wrong
        (79, False),
        (80, True),  # x, y, y, x: tie, x first
        (99, True),
        (100, True),  # all five: the recorded majority x
    ],
)
def test_self_consistency_revotes_over_the_samples_that_fit(budget: int, expected: bool) -> None:
    assert correct_within(sc_trajectory(["x", "y", "y", "x", "x"], "x"), budget) is expected


def test_a_sample_without_an_answer_does_not_vote() -> None:
    # Had a missing answer voted, the two of them would win at 60 tokens.
    t = sc_trajectory([None, None, "x", "y", "y"], "x")
    assert t.correct is False  # the full vote: y, two to one
    # Two samples, both without an answer: no vote, so wrong; three: x alone; four: x
    # and y tie, x first.
    assert [correct_within(t, b) for b in (40, 60, 80, 99, 100)] == [False, True, True, True, False]


def test_selfcheck_revote_is_weighted_by_confidence_and_respects_its_gate() -> None:
    # Samples y, x, y, y (x right), checked with confidences 0.3, 1.0, 0.3, 0.3; each
    # sample costs 20 to draw and 10 to check (cumulative 30, 60, 90, 120).
    answers = ["y", "x", "y", "y"]
    confidences = [0.3, 1.0, 0.3, 0.3]
    calls = [call(1, 15, 5, sample=i) for i in range(4)] + [call(r, 8, 2, "check") for r in range(1, 5)]
    checks = [SolutionCheck(round=r, checker="steps", steps_total=2, steps_checked=2, confidence=c)
              for r, c in enumerate(confidences, start=1)]
    rounds = [rnd(r, a, a == "x") for r, a in enumerate(answers, start=1)]
    t = trajectory("selfcheck:n=4", calls, rounds, correct=True, final=1, checks=checks)
    assert tokens(t) == 120
    # Three samples: x weighs 1.0 against y's 0.6, where a plain majority would pick y.
    assert [correct_within(t, b) for b in (29, 30, 60, 90, 119)] == [False, False, True, True, True]
    gated = rounds[:]
    gated[1] = rnd(2, "x", True, Verdict(ok=False, verifier="sound"))
    t_gated = trajectory("selfcheck:gate=sound,n=4", calls, gated, correct=False, checks=checks)
    # The gate rejected the only x: y wins whatever the weights.
    assert correct_within(t_gated, 90) is False


def test_best_of_n_keeps_the_verifiers_best_among_the_samples_that_fit() -> None:
    # Three samples (20 each, batched) each verified for 10: cumulative 30, 60, 90. The
    # verifier rejects sample 1 (score 0.3) and the right sample 2 (score 0.7), and
    # accepts the wrong sample 3, which is the recorded output.
    calls = [call(1, 15, 5, sample=i) for i in range(3)] + [call(r, 8, 2, "verify") for r in range(1, 4)]
    rounds = [rnd(1, "a", False, Verdict(ok=False, score=0.3)), rnd(2, "b", True, Verdict(ok=False, score=0.7)),
              rnd(3, "c", False, Verdict(ok=True, score=0.6))]
    t = trajectory("best-of-n:n=3,temperature=1.0,verifier=llm", calls, rounds, correct=False)
    assert [correct_within(t, b) for b in (29, 30, 60, 89, 90)] == [False, False, True, True, False]


def test_rejection_sampling_is_right_when_any_sample_that_fits_is() -> None:
    calls = [call(1, 15, 5, sample=i) for i in range(3)]
    rounds = [rnd(1, "a", False), rnd(2, "b", True), rnd(3, "c", False)]
    t = trajectory("rejection-sampling:n=3", calls, rounds, correct=True, final=1)
    assert [correct_within(t, b) for b in (20, 40, 59, 60)] == [False, True, True, True]


@pytest.mark.parametrize(
    ("strategy", "final", "rule"),
    [
        ("standard", None, "last"),
        ("sampling:k=3", None, "last"),
        (BACKPROMPT, None, "last"),
        ("critic:tools=true", None, "last"),
        ("react:max_interactions=7", None, "last"),
        (SC, 0, "vote"),
        (SC, None, "vote"),  # a vote whose winner happens to be the last sample
        ("selfcheck:n=5", 0, "vote"),
        ("best-of-n:n=3", 0, "best-verdict"),
        ("rejection-sampling:n=4", 0, "any-correct"),
        ("my-loop:x=1", None, "last"),  # unknown: the output is the last round
        ("my-loop:x=1", 0, "vote"),  # unknown: the output was chosen among the rounds
    ],
)
def test_output_rule(strategy: str, final: int | None, rule: str) -> None:
    t = trajectory(strategy, [call(1, 1, 1)], [rnd(1, "a", True), rnd(2, "b", False)], correct=True, final=final)
    assert output_rule(t) == rule


def imported_sampling() -> Trajectory:
    """An imported pool stopped by a sound verifier: its answer is round 2, the first
    accepted, and rounds 3-4 were drawn by its source after the stop."""
    ok, no = Verdict(ok=True), Verdict(ok=False)
    rounds = [rnd(1, "a", False, no), rnd(2, "b", True, ok), rnd(3, "c", False, no), rnd(4, "d", True, ok)]
    t = trajectory("sampling:k=4,temperature=1,verifier=sound", [call(i, 10, 10) for i in range(1, 5)], rounds,
                   correct=True, final=1)
    t.stop_reason = "verifier_accepted"
    return t


def test_an_imported_loop_with_attempts_after_its_stop_answers_with_its_first_accepted() -> None:
    t = imported_sampling()
    assert (answered_round(t), output_rule(t)) == (1, "first-accepted")
    assert [output_round(t, t.rounds[:n]).round for n in (1, 2, 3, 4)] == [1, 2, 2, 2]
    # Round 2 fits from 40 tokens on; round 3, wrong, never becomes the answer.
    assert [correct_within(t, b) for b in (19, 20, 39, 40, 60, 80)] == [False, False, False, True, True, True]


def test_a_loop_that_ended_where_its_verifier_accepted_keeps_its_rule() -> None:
    t = imported_sampling()
    t.rounds = t.rounds[:2]
    assert (answered_round(t), output_rule(t)) == (None, "last")
    t = imported_sampling()
    t.stop_reason = "recorded"  # an LLM+LLM import: its answer is its last attempt, whatever the sound verdicts
    t.final_text = t.rounds[-1].text
    assert (answered_round(t), output_rule(t)) == (None, "last")


def test_no_rounds_within_the_budget_is_wrong_even_for_a_trajectory_without_rounds() -> None:
    empty = trajectory("standard", [call(1, 50, 0)], [], correct=False)
    assert [correct_within(empty, b) for b in (0, 49, 50)] == [False, False, False]


# ------------------------------------------------------------------ the table


def three_instances() -> dict[str, list[Trajectory]]:
    # standard: 100 tokens on each of i1..i3, right on i1 and i3 (mean 100).
    standard = [trajectory("standard", [call(1, 80, 20)], [rnd(1, "a", ok)], correct=ok, instance=i)
                for i, ok in (("i1", True), ("i2", False), ("i3", True))]
    # backprompt, right everywhere in the end (mean (400 + 90 + 500) / 3 = 330):
    #   i1: round 1 at 150 wrong, round 2 at 400 right;
    #   i2: round 1 at 90 right;
    #   i3: round 1 at 120 wrong, round 2 at 260 right (rejected anyway), round 3 at 500 right.
    backprompt = [
        trajectory(BACKPROMPT, [call(1, 100, 50), call(2, 200, 50)], [rnd(1, "a", False), rnd(2, "b", True)],
                   correct=True, instance="i1"),
        trajectory(BACKPROMPT, [call(1, 80, 10)], [rnd(1, "b", True)], correct=True, instance="i2"),
        trajectory(BACKPROMPT, [call(1, 100, 20), call(2, 120, 20), call(3, 200, 40)],
                   [rnd(1, "a", False), rnd(2, "b", True), rnd(3, "b", True)], correct=True, instance="i3"),
    ]
    return {"standard": standard, BACKPROMPT: backprompt}


def test_matched_budget_table() -> None:
    groups = three_instances()
    assert [mean_tokens(ts) for ts in groups.values()] == [100.0, 330.0]
    headers, rows = matched_budget_table(groups)
    assert headers == ["strategy", "own: accuracy @ tokens/instance", "@ 100 tok", "@ 330 tok"]
    # backprompt @ 100: only i2 has a round that fits. @ 330: i1 stops on its wrong
    # round 1, i3 on its right round 2.
    assert rows == [
        ["standard", "2/3 = 67% @ 100", "2/3 = 67%", "2/3 = 67%"],
        [BACKPROMPT, "3/3 = 100% @ 330", "1/3 = 33%", "2/3 = 67%"],
    ]


def test_budgets_are_whole_tokens_without_repeats_and_empty_strategies_show_dashes() -> None:
    groups: dict[str, list[Trajectory]] = {
        **three_instances(),
        # Means 100.33 (rounds to the standard's 100) and 100.67 (101).
        "cheap": [trajectory("cheap", [call(1, 100, n)], [rnd(1, "a", True)], True, instance=i)
                  for i, n in (("i1", 0), ("i2", 0), ("i3", 1))],
        "dearer": [trajectory("dearer", [call(1, 100, n)], [rnd(1, "a", True)], True, instance=i)
                   for i, n in (("i1", 0), ("i2", 1), ("i3", 1))],
        "never run": [],
    }
    assert matched_budgets(groups) == [100, 101, 330]
    headers, rows = matched_budget_table(groups)
    assert headers[2:] == ["@ 100 tok", "@ 101 tok", "@ 330 tok"]
    assert rows[2] == ["cheap", "3/3 = 100% @ 100", "2/3 = 67%", "3/3 = 100%", "3/3 = 100%"]
    assert rows[4] == ["never run", "-", "-", "-", "-"]


def test_strategies_on_different_instances_are_refused() -> None:
    groups = three_instances()
    groups["standard"] = groups["standard"][:2]
    with pytest.raises(ValueError, match="ran on different instances"):
        matched_budget_table(groups)


def test_matched_budget_markdown() -> None:
    text = matched_budget_markdown("game24 / SmolLM2", three_instances())
    assert text == (
        "### game24 / SmolLM2\n"
        "\n"
        "Each `@ N tok` cell is the strategy's accuracy when every instance is stopped once it has spent N tokens "
        "(prompt + completion; N is one strategy's mean per instance), answering with what it had by then "
        "(voting strategies re-vote over the samples that fit; no round within N counts as wrong).\n"
        "\n"
        "| strategy | own: accuracy @ tokens/instance | @ 100 tok | @ 330 tok |\n"
        "|---|---|---|---|\n"
        "| standard | 2/3 = 67% @ 100 | 2/3 = 67% | 2/3 = 67% |\n"
        f"| {BACKPROMPT} | 3/3 = 100% @ 330 | 1/3 = 33% | 2/3 = 67% |\n"
    )


# ------------------------------------------------------------------ the frontier


def test_pareto_front_with_ties_and_dominated_points() -> None:
    points = [
        ("a", 100.0, 0.5),
        ("b", 200.0, 0.5),  # a costs less for the same accuracy
        ("c", 200.0, 0.7),
        ("d", 50.0, 0.2),
        ("e", 100.0, 0.5),  # identical to a: neither dominates the other
        ("f", 300.0, 0.6),  # c is cheaper and better
        ("g", 50.0, 0.1),  # d: same cost, better
        ("h", 400.0, 0.7),  # c: same accuracy, cheaper
    ]
    assert pareto_front(points) == [("d", 50.0, 0.2), ("a", 100.0, 0.5), ("e", 100.0, 0.5), ("c", 200.0, 0.7)]
    assert pareto_front([]) == []
    assert pareto_front([("only", 0.0, 0.0)]) == [("only", 0.0, 0.0)]


def test_pareto_front_of_frontier_points() -> None:
    p = [FrontierPoint("x", 10.0, 0.4, 0.2, 0.6), FrontierPoint("y", 20.0, 0.3, 0.1, 0.5),
         FrontierPoint("z", 5.0, 0.1, 0.0, 0.3)]
    assert pareto_front(p) == [p[2], p[0]]


def test_frontier_points_have_wilson_intervals() -> None:
    points = frontier_points({**three_instances(), "never run": []})
    assert [(p.label, p.tokens_per_instance, p.accuracy) for p in points] == [
        ("standard", 100.0, 2 / 3), (BACKPROMPT, 330.0, 1.0)]
    assert round(points[0].ci_low, 4) == 0.2077
    assert round(points[0].ci_high, 4) == 0.9385
    assert round(points[1].ci_low, 4) == 0.4385
    assert points[1].ci_high == 1.0


def test_a_percentage_is_not_taken_for_a_fraction() -> None:
    with pytest.raises(ValueError, match="accuracy is a fraction"):
        FrontierPoint("x", 10.0, 67.0, 0.5, 0.8)
    with pytest.raises(ValueError, match="cannot be negative"):
        FrontierPoint("x", -1.0, 0.5, 0.4, 0.6)


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def point(label: str, tokens: float, accuracy: float) -> FrontierPoint:
    return FrontierPoint(label, tokens, accuracy, max(0.0, accuracy - 0.15), min(1.0, accuracy + 0.15))


STRATEGIES = ["standard", "sampling:k=3", BACKPROMPT, "self-consistency:k=5,temperature=1.0", "best-of-n:n=5",
              "critic:max_corrections=3,tools=true", "selfcheck:n=5", "react:max_interactions=7"]


@pytest.mark.filterwarnings("error")  # a degenerate axis or a crowded legend must not even warn
@pytest.mark.parametrize(
    ("panels", "size"),
    [
        ([FrontierPanel("one point", [point("standard", 120.0, 0.4)])], (552, 492)),
        (
            [FrontierPanel(f"domain {d}", [point(s, 100.0 * (i + 1) * (d + 1), (i % 5) / 5) for i, s in
                                           enumerate(STRATEGIES)]) for d in range(4)],
            (1656, 936),
        ),
        ([FrontierPanel("all free", [point("standard", 0.0, 0.2), point("sampling:k=3", 0.0, 0.6)])], (552, 492)),
        ([FrontierPanel("identical", [point("standard", 80.0, 0.5), point("sampling:k=3", 80.0, 0.5)])], (552, 492)),
        ([FrontierPanel("wide costs", [point("standard", 50.0, 0.3), point(SC, 5000.0, 0.6)])], (552, 492)),
        ([FrontierPanel("nothing", []), FrontierPanel("zero", [point("standard", 0.0, 0.0)])], (1104, 492)),
    ],
    ids=["one-point", "four-panels", "all-at-zero-tokens", "identical-points", "log-axis", "empty-panel"],
)
def test_plot_frontier_writes_a_png(tmp_path: Path, panels: list[FrontierPanel], size: tuple[int, int]) -> None:
    path = tmp_path / "frontier.png"
    plot_frontier(path, panels)
    assert png_size(path) == size
    assert path.stat().st_size > 8_000


def test_plot_frontier_refuses_an_empty_figure(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least one panel"):
        plot_frontier(tmp_path / "frontier.png", [])
    assert not (tmp_path / "frontier.png").exists()


def test_pool_curves_are_drawn_in_their_strategys_colour_and_named_in_the_legend(tmp_path: Path, monkeypatch) -> None:
    import matplotlib.figure

    saved: list[matplotlib.figure.Figure] = []
    real = matplotlib.figure.Figure.savefig

    def keep(self: matplotlib.figure.Figure, *args, **kwargs) -> None:
        saved.append(self)
        real(self, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", keep)
    points = [FrontierPoint("a", 15.0, 0.5, 0.2, 0.8), FrontierPoint("b", 20.0, 0.5, 0.2, 0.8)]
    curve = FrontierCurve("b", "pass@k", [10.0, 20.0], [0.25, 0.5], [0.1, 0.2], [0.5, 0.8])
    wide = FrontierCurve("a", "maj@k", [1.0, 100.0], [0.0, 0.5], [0.0, 0.2], [0.3, 0.8])
    plot_frontier(tmp_path / "frontier.png", [FrontierPanel("t", points, [curve], "left out: c"),
                                              FrontierPanel("u", points, [wide])])
    [figure] = saved
    first, second = figure.axes[:2]
    [drawn] = [line for line in first.get_lines() if line.get_linestyle() == ":"]
    # "b" is the second strategy: matplotlib's second colour, C1.
    assert (list(drawn.get_xdata()), list(drawn.get_ydata()), drawn.get_color()) == ([10.0, 20.0], [25.0, 50.0], "C1")
    assert first.get_xlabel() == "mean tokens per instance (prompt + completion)\nleft out: c"
    # The curve's 1 to 100 tokens span more than a factor of 20: the axis turns logarithmic.
    assert (first.get_xscale(), second.get_xscale()) == ("linear", "log")
    names = [t.get_text() for legend in figure.legends for t in legend.get_texts()]
    assert names == ["a", "b", "Pareto front", "pass@k (pool, over k)", "maj@k (pool, over k)"]
