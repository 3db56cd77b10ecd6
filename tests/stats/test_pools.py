"""Pool metrics (stats.pools): pass@k against hand-computed values and a brute-force
mean over every k-subset; maj@k, best-of-k and first@k on hand-made pools whose every
subset is worked out in the comments; the curves' intervals against scipy's bootstrap
run on the same values and statsmodels' Wilson interval of the same values (pinned: the
figures statsmodels 0.15.0 printed); and the pool sections an experiment's results files
and a run's summary.json gain.
"""

from __future__ import annotations

import csv
import itertools
import json
import random
from collections import Counter
from fractions import Fraction
from math import comb
from pathlib import Path

import numpy as np
import pytest

import veriloop
from veriloop.errors import VeriloopError
from veriloop.models.base import Completion, GenParams
from veriloop.records import CallRecord, RoundRecord, Trajectory, Verdict
from veriloop.stats import pools
from veriloop.stats.pools import (
    MAJ_SUBSETS,
    answer_key,
    best_of_k,
    experiment_pools,
    first_k,
    frontier_curves,
    frontier_note,
    maj_at_k,
    pass_at_k,
    pools_markdown,
    run_pools,
    shown_ks,
    strategy_pools,
)

# ---------------------------------------------------------------------------- pass@k


@pytest.mark.parametrize(("n", "c", "k", "expected"), [
    (5, 2, 1, Fraction(2, 5)),  # c / n
    (5, 2, 2, Fraction(7, 10)),  # 1 - C(3,2)/C(5,2) = 1 - 3/10
    (5, 2, 3, Fraction(9, 10)),  # 1 - C(3,3)/C(5,3) = 1 - 1/10
    (5, 2, 4, Fraction(1)),  # only 3 wrong answers: every 4 hold a right one
    (5, 2, 5, Fraction(1)),
    (10, 3, 4, Fraction(5, 6)),  # 1 - C(7,4)/C(10,4) = 1 - 35/210
    (15, 1, 5, Fraction(1, 3)),  # 1 - C(14,5)/C(15,5) = 5/15
    (5, 0, 1, Fraction(0)), (5, 0, 5, Fraction(0)),  # c = 0
    (5, 5, 1, Fraction(1)), (1, 1, 1, Fraction(1)), (1, 0, 1, Fraction(0)),  # c = n, k = n = 1
])
def test_pass_at_k_is_the_hand_computed_estimate(n: int, c: int, k: int, expected: Fraction) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(float(expected), abs=1e-15)


def test_pass_at_k_is_the_mean_over_every_k_subset_of_random_pools() -> None:
    rng = random.Random(7)
    for _ in range(40):
        n = rng.randint(1, 9)
        correct = [rng.random() < 0.4 for _ in range(n)]
        for k in range(1, n + 1):
            brute = Fraction(sum(any(correct[i] for i in s) for s in itertools.combinations(range(n), k)), comb(n, k))
            assert pass_at_k(n, sum(correct), k) == pytest.approx(float(brute), abs=1e-12)


def test_pass_at_k_stays_exact_where_the_binomials_are_huge() -> None:
    # C(2000, 1000) has 600 digits; the product form never forms it.
    exact = 1 - Fraction(comb(1990, 1000), comb(2000, 1000))
    assert pass_at_k(2000, 10, 1000) == pytest.approx(float(exact), rel=1e-12)
    assert pass_at_k(1000, 1, 1) == pytest.approx(0.001, rel=1e-12)


@pytest.mark.parametrize(("n", "c", "k", "message"), [
    (5, 2, 6, "k = 6 is outside 1..5"),
    (5, 2, 0, "k = 0 is outside 1..5"),
    (0, 0, 1, "k = 1 is outside 1..0"),  # an empty pool has no pass@k
    (5, 6, 1, "c = 6 right answers is outside 0..5"),
])
def test_pass_at_k_refuses_what_a_pool_cannot_give(n: int, c: int, k: int, message: str) -> None:
    with pytest.raises(VeriloopError, match=message):
        pass_at_k(n, c, k)


# ---------------------------------------------------------------------------- maj@k

# Five answers: 7 is right, 5 is wrong, one reply could not be read.
ANSWERS = ["7", "5", "7", None, "5"]
RIGHT = [True, False, True, False, False]


def test_maj_at_k_on_a_hand_made_pool() -> None:
    # k=1: each answer alone; the unreadable one answers with itself (wrong): 2/5.
    # k=2 (10 pairs), right: 01 (tie, 7 first) 02 03 (None never wins) 04 (tie) 23 24; wrong: 12 (tie, 5 first)
    # 13 14 34: 6/10.
    # k=3, right: 012 013 (tie) 023 024 034 (tie) 234 (tie); wrong: 014 123 124 134: 6/10.
    # k=4, right: 0123 0124 (2-2, 7 first) 0234; wrong: 0134 1234 (2-2, 5 first): 3/5.
    # k=5: 7 and 5 have two votes each, 7 first: right.
    assert [maj_at_k(ANSWERS, RIGHT, k) for k in range(1, 6)] == [
        pytest.approx(x, abs=1e-15) for x in (0.4, 0.6, 0.6, 0.6, 1.0)]


def test_an_unreadable_answer_wins_only_a_vote_without_a_readable_one() -> None:
    # k=2: pair 01 has no readable answer and answers with round 0 (wrong); 02 and 12 vote 3 (right).
    assert [maj_at_k([None, None, "3"], [False, False, True], k) for k in (1, 2, 3)] == [
        pytest.approx(1 / 3), pytest.approx(2 / 3), 1.0]
    assert maj_at_k([None, None], [False, False], 2) == 0.0
    # A round scored right although unreadable (a domain may score the whole text) keeps its score.
    assert maj_at_k([None, None], [True, False], 2) == 1.0


def test_votes_compare_answers_with_their_whitespace_normalised() -> None:
    assert answer_key("  (1 + 2)\n* 8 ") == "(1 + 2) * 8"
    assert answer_key(None) is None
    keys = [answer_key(a) for a in ["1 +  2", "3", "1 + 2"]]
    assert maj_at_k(keys, [True, False, True], 3) == 1.0


def brute_maj(answers: list[str | None], correct: list[bool], k: int) -> Fraction:
    """maj@k written plainly: every k-subset, a Counter of its readable answers."""
    right = 0
    for subset in itertools.combinations(range(len(answers)), k):
        votes = Counter(answers[i] for i in subset if answers[i] is not None)
        if not votes:
            right += correct[subset[0]]
            continue
        top = max(votes.values())
        right += correct[next(i for i in subset if answers[i] is not None and votes[answers[i]] == top)]
    return Fraction(right, comb(len(answers), k))


def brute_best(ranks: list[tuple[float, ...]], correct: list[bool], k: int) -> Fraction:
    right = 0
    for subset in itertools.combinations(range(len(ranks)), k):
        best = max(ranks[i] for i in subset)
        right += correct[next(i for i in subset if ranks[i] == best)]
    return Fraction(right, comb(len(ranks), k))


def test_maj_and_best_of_k_match_a_plain_enumeration_on_random_pools() -> None:
    rng = random.Random(11)
    for _ in range(60):
        n = rng.randint(1, 8)
        answers = [rng.choice(["a", "b", "c", None]) for _ in range(n)]
        correct = [a == "a" or (a is None and rng.random() < 0.2) for a in answers]
        ranks = [(float(rng.random() < 0.7), float(rng.random() < 0.5), rng.choice([0.0, 0.5, 1.0])) for _ in range(n)]
        for k in range(1, n + 1):
            assert maj_at_k(answers, correct, k) == pytest.approx(float(brute_maj(answers, correct, k)), abs=1e-12)
            assert best_of_k(ranks, correct, k) == pytest.approx(float(brute_best(ranks, correct, k)), abs=1e-12)


def test_maj_at_k_past_the_enumeration_limit_is_a_seeded_estimate() -> None:
    # C(16, 8) = 12870 pairs > MAJ_SUBSETS: the mean over MAJ_SUBSETS random 8-subsets.
    answers = ["a"] * 6 + ["b"] * 5 + ["c"] * 3 + [None] * 2
    correct = [a == "a" for a in answers]
    random.Random(3).shuffle(order := list(range(16)))
    answers, correct = [answers[i] for i in order], [correct[i] for i in order]
    assert comb(16, 8) > MAJ_SUBSETS
    estimate = maj_at_k(answers, correct, 8)
    exact = float(brute_maj(answers, correct, 8))
    assert estimate == maj_at_k(answers, correct, 8)  # the same subsets every time
    # 2000 draws of a proportion near 0.6: a standard error of 0.011.
    assert abs(estimate - exact) < 0.035
    assert (round(exact, 4), round(estimate, 4)) == (0.5932, 0.5875)


# ---------------------------------------------------------------------------- best-of-k and first@k


def test_best_of_k_on_a_hand_made_pool() -> None:
    # Sorted best first: r2 (accepted, 1.0: right), r3 (accepted, 0.5: wrong), r1 (rejected, 0.9:
    # wrong), r4 (no verdict: right). r2 is the best of every subset holding it: C(3, k-1)/C(4, k);
    # r4 only of the subset {r4}.
    ranks = [(1, 0, 0.9), (1, 1, 1.0), (1, 1, 0.5), (0, 0, 0.0)]
    right = [False, True, False, True]
    assert [best_of_k(ranks, right, k) for k in range(1, 5)] == [0.5, 0.5, 0.75, 1.0]
    # Equal ranks: the earliest wins. Pairs: 01 -> 0 (wrong), 02 -> 0, 12 -> 1 (right).
    assert [best_of_k([(1, 1, 1.0), (1, 1, 1.0), (1, 0, 0.0)], [False, True, False], k) for k in (1, 2, 3)] == [
        pytest.approx(1 / 3), pytest.approx(1 / 3), 0.0]


def test_first_k_is_one_of_the_first_k_rounds() -> None:
    assert [first_k([False, False, True], k) for k in (1, 2, 3, 5)] == [False, False, True, True]
    assert first_k([], 1) is False
    with pytest.raises(VeriloopError, match="k = 0"):
        first_k([True], 0)


# ---------------------------------------------------------------------------- curves


def verdict(ok: bool, score: float | None = None) -> Verdict:
    return Verdict(ok=ok, score=score)


def pool(instance: str, rounds: list[tuple[str | None, bool, Verdict | None]], strategy: str = "best-of-n:n=3",
         tokens: int = 30) -> Trajectory:
    """A trajectory whose rounds are (answer, correct, verdict); each round one call of
    `tokens` tokens (2/3 prompt)."""
    return Trajectory(
        strategy=strategy, domain="d", model="m", instance_id=instance, seed=0,
        calls=[CallRecord(role="generate", round=1, sample_index=i, messages=[], response="", finish_reason="stop",
                          prompt_tokens=2 * tokens // 3, completion_tokens=tokens // 3, seconds=0.0, cached=False)
               for i in range(len(rounds))],
        rounds=[RoundRecord(round=i + 1, text=f"reply {a}", answer=a, verdict=v, correct=c)
                for i, (a, c, v) in enumerate(rounds)],
        correct=False,
    )


# Three instances of three samples each, verified with scores. Per instance, by k = 1, 2, 3:
# pass@k: (1/3, 2/3, 1), (2/3, 1, 1), (0, 0, 0)
# maj@k:  i1 "2","0","0" (2 right): 1/3, 2/3 (pairs 01 tie, 02 tie: "2" first), 0 ("0" wins)
#         i2 "4","4","1": 2/3, 1 (pair 12: tie, "4" first), 1;  i3: 0, 0, 0
# best-of-k: i1 ranks r3 (accepted 0.9) > r1 (accepted 0.8, right) > r2 (rejected): r1 is the best
#         only of {r1} and {r1, r2}: 1/3, 1/3, 0;  i2 every answer ranks alike (no score, rejected):
#         the earliest wins: 2/3, 1 (01 -> 0, 02 -> 0, 12 -> 1: all right), 1;  i3: 0, 0, 0
# first@k: i1 1, 1, 1; i2 1, 1, 1; i3 0, 0, 0
POOLS = [
    pool("i1", [("2", True, verdict(True, 0.8)), ("0", False, verdict(False, 0.2)), ("0", False, verdict(True, 0.9))]),
    pool("i2", [("4", True, verdict(False)), ("4", True, verdict(False)), ("1", False, verdict(False))]),
    pool("i3", [("5", False, verdict(False)), (None, False, verdict(False)), ("5", False, verdict(False))]),
]


def values(curve) -> list[Fraction]:
    return [Fraction(v).limit_denominator(100) for v in curve.values]


def test_the_curves_of_equal_pools_are_the_hand_computed_means() -> None:
    found = strategy_pools("best-of-n", POOLS)
    assert found is not None
    assert (found.n_instances, found.pool_size, found.smallest_pool, found.largest_pool) == (3, 3, 3, 3)
    assert found.tokens_per_sample == 30.0
    by = {c.metric: c for c in found.curves}
    assert list(by) == ["pass@k", "maj@k", "best-of-k", "first@k"]
    assert all((c.k, c.n_instances, c.pool_size) == ([1, 2, 3], 3, 3) for c in found.curves)
    third = Fraction(1, 3)
    assert values(by["pass@k"]) == [third, Fraction(5, 9), Fraction(2, 3)]
    assert values(by["maj@k"]) == [third, Fraction(5, 9), third]
    assert values(by["best-of-k"]) == [third, Fraction(4, 9), third]
    assert values(by["first@k"]) == [Fraction(2, 3)] * 3
    assert found.curve("pass@k") is by["pass@k"]


def test_intervals_are_scipys_bootstrap_or_wilsons_on_the_same_values() -> None:
    found = strategy_pools("best-of-n", POOLS)
    assert found is not None
    by = {c.metric: c for c in found.curves}
    # pass@k at k = 3 and first@k are 0 or 1 per instance: plain proportions, Wilson's interval
    # (statsmodels 0.15.0's proportion_confint(2, 3, alpha=0.05, method="wilson")).
    wilson = (0.2076596008020477, 0.9385080552796037)
    assert (by["pass@k"].ci_low[2], by["pass@k"].ci_high[2]) == pytest.approx(wilson, abs=1e-12)
    assert by["first@k"].ci_low == pytest.approx([wilson[0]] * 3) and by["first@k"].ci_high == pytest.approx(
        [wilson[1]] * 3)
    from scipy.stats import bootstrap  # here, not at the top: 0.6 s of every worker's collection

    # The fractional rows: scipy's percentile bootstrap over instances, 2000 resamples, seed 0, rows together.
    rows = np.array([[1 / 3, 2 / 3, 0.0], [2 / 3, 1.0, 0.0]])
    res = bootstrap((rows,), np.mean, axis=-1, vectorized=True, method="percentile", n_resamples=2000,
                    random_state=np.random.default_rng(0))
    assert by["pass@k"].ci_low[:2] == pytest.approx(list(res.confidence_interval.low), abs=1e-12)
    assert by["pass@k"].ci_high[:2] == pytest.approx(list(res.confidence_interval.high), abs=1e-12)
    for c in found.curves:
        assert all(lo <= v <= hi for lo, v, hi in zip(c.ci_low, c.values, c.ci_high))


def test_an_interval_with_nothing_to_resample_is_wilsons_of_the_mean() -> None:
    # One instance: pass@1 = 1/3 is a proportion of 1/3 success in 1 trial.
    found = strategy_pools("best-of-n", POOLS[:1])
    assert found is not None
    # statsmodels 0.15.0's proportion_confint(1 / 3, 1, alpha=0.05, method="wilson").
    low, high = 0.02533624364650111, 0.9058139848944199
    assert (found.curves[0].ci_low[0], found.curves[0].ci_high[0]) == pytest.approx((low, high), abs=1e-12)


def test_pools_of_unequal_size_give_first_k_only_over_the_largest_pool() -> None:
    # Sampling stopped at its first right sample: c = 1 in every solved pool whatever the
    # model's rate, so only first@k is computed. Solved at round 1, at round 3, never in 4.
    ts = [
        pool("i1", [("24", True, verdict(True))], "sampling:k=4"),
        pool("i2", [("1", False, verdict(False)), ("2", False, verdict(False)), ("24", True, verdict(True))],
             "sampling:k=4"),
        pool("i3", [(str(i), False, verdict(False)) for i in range(4)], "sampling:k=4"),
    ]
    found = strategy_pools("sampling", ts)
    assert found is not None
    assert (found.pool_size, found.smallest_pool, found.largest_pool) == (None, 1, 4)
    assert [c.metric for c in found.curves] == ["first@k"]
    assert values(found.curves[0]) == [Fraction(1, 3), Fraction(1, 3), Fraction(2, 3), Fraction(2, 3)]
    assert found.curves[0].pool_size == 4


def test_a_strategy_without_pools_has_none() -> None:
    one = pool("i1", [("24", True, verdict(True))], "standard")
    assert strategy_pools("standard", [one, one.model_copy(update={"instance_id": "i2"})]) is None
    assert strategy_pools("standard", []) is None
    empty = one.model_copy(update={"rounds": [], "calls": []})
    assert strategy_pools("standard", [empty]) is None


def test_best_of_k_at_n_is_the_best_of_n_strategys_own_pick() -> None:
    from scripted import play
    from view_runs import EIGHT, GAME24, PUZZLE, RIGHT

    # The sound verifier rejects 8 and accepts the right answer: best-of-n answers round 2.
    t, _ = play("best-of-n:n=3", GAME24, PUZZLE, [EIGHT, RIGHT, EIGHT])
    found = strategy_pools(t.strategy, [t])
    assert found is not None and t.correct
    by = {c.metric: c for c in found.curves}
    assert by["best-of-k"].values == [pytest.approx(1 / 3), pytest.approx(2 / 3), 1.0]
    assert by["pass@k"].values[-1] == 1.0 and by["maj@k"].values[-1] == 0.0  # 8 twice outvotes the right answer


# ---------------------------------------------------------------------------- reports


def test_the_table_shows_powers_of_two_and_the_pool_size() -> None:
    assert (shown_ks(1), shown_ks(2), shown_ks(5), shown_ks(15), shown_ks(16)) == (
        [], [1], [1, 2, 4], [1, 2, 4, 8], [1, 2, 4, 8])
    found = strategy_pools("best-of-n", POOLS)
    assert found is not None
    md = pools_markdown("d · m", [found])
    assert md.splitlines()[:4] == [
        "### d · m", "", "| strategy | metric | pool | k=1 | k=2 | k=n |", "|---|---|---|---|---|---|"]
    assert "| best-of-n | first@k | 3 × 3 | 67% (21%-94%) | 67% (21%-94%) | 67% (21%-94%) |" in md
    assert pools_markdown("d · m", []) == ""


def test_each_row_ends_at_its_own_largest_k() -> None:
    # A pool of 3 beside first@k over pools of 1 to 5: columns k=1, 2, 4 and k=n.
    short = strategy_pools("best-of-n", POOLS)
    ragged = strategy_pools("sampling", [
        pool("i1", [("24", True, verdict(True))], "sampling:k=5"),
        pool("i2", [(str(i), False, verdict(False)) for i in range(5)], "sampling:k=5"),
    ])
    assert short is not None and ragged is not None
    headers, rows = pools.pools_table([short, ragged])
    assert headers == ["strategy", "metric", "pool", "k=1", "k=2", "k=4", "k=n"]
    assert rows[0] == ["best-of-n", "pass@k", "3 × 3", "33% (0%-67%)", "56% (0%-100%)", "-", "67% (21%-94%)"]
    assert rows[-1] == ["sampling", "first@k", "2 × 1-5", "50% (9%-91%)", "50% (9%-91%)", "50% (9%-91%)",
                        "50% (9%-91%)"]


def test_frontier_curves_sit_at_k_samples_of_tokens_and_skip_pools_without_counts() -> None:
    found = strategy_pools("best-of-n", POOLS)
    free = strategy_pools("imported", [t.model_copy(update={"calls": []}) for t in POOLS])
    assert found is not None and free is not None and free.tokens_per_sample == 0.0
    curves = frontier_curves([found, free])
    assert [(c.label, c.metric, c.tokens) for c in curves] == [
        ("best-of-n", m, [30.0, 60.0, 90.0]) for m in ("pass@k", "maj@k", "best-of-k", "first@k")]
    assert frontier_note([found, free]) == (
        "pool curves not drawn (no token counts; see the pool tables): imported")
    assert frontier_note([found]) == ""


# ---------------------------------------------------------------------------- results files

QUESTIONS = [{"q": "1+1", "a": "2"}, {"q": "2+2", "a": "4"}, {"q": "3+3", "a": "6"}]
# Sample i of each question; the right sums are 2, 4 and 6.
SAMPLES = {"1+1": ["2", "0", "0"], "2+2": ["0", "4", "0"], "3+3": ["0", "0", "0"]}


def generator(messages: list[dict[str, str]], params: GenParams) -> Completion:
    return Completion(text=SAMPLES[messages[-1]["content"]][params.sample_offset], finish_reason="stop",
                      prompt_tokens=10, completion_tokens=5)


def test_an_experiments_results_and_its_cells_summaries_hold_the_pools(tmp_path: Path) -> None:
    data = tmp_path / "sums.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in QUESTIONS))
    check = tmp_path / "sums_check.py"
    check.write_text("def check(record, answer):\n    return answer.strip() == record['a']\n")
    spec = {
        "name": "sums", "strategies": ["standard", "self-consistency:k=3", "sampling:k=3"], "models": {"gen": {}},
        "tasks": [{"file": str(data), "prompt": "{q}", "check": f"python:{check}:check", "n": 3, "label": "sums"}],
    }
    model = veriloop.model(generator, name="gen", identity="pool-samples-v1", cache=False)
    veriloop.eval_experiment(spec, out=tmp_path / "exp", models={"gen": model}, cache=tmp_path / "c.sqlite",
                             progress=False)
    out = tmp_path / "exp"
    payload = json.loads((out / "results.json").read_text())
    # self-consistency's pools (c = 1, 1, 0 of 3), as worked out for POOLS' answers:
    # pass@k 2/9, 4/9, 2/3; maj@k 2/9, 1/3, 0; best-of-k (no verdicts: the earliest) 2/9, 1/3, 1/3.
    # sampling stopped at the right sum (1, 2 and 3 rounds): first@k 1/3, 2/3, 2/3 only.
    found = {(p["strategy"], c["metric"]): [round(v, 4) for v in c["values"]]
             for p in payload["pools"] for c in p["curves"]}
    assert found == {
        ("self-consistency:k=3", "pass@k"): [0.2222, 0.4444, 0.6667],
        ("self-consistency:k=3", "maj@k"): [0.2222, 0.3333, 0.0],
        ("self-consistency:k=3", "best-of-k"): [0.2222, 0.3333, 0.3333],
        ("self-consistency:k=3", "first@k"): [0.3333, 0.6667, 0.6667],
        ("sampling:k=3", "first@k"): [0.3333, 0.6667, 0.6667],
    }
    assert {(p["domain"], p["model"], p["seed"], p["tokens_per_sample"]) for p in payload["pools"]} == {
        ("sums", "gen", 0, 15.0)}
    md = (out / "results.md").read_text()
    assert "## Pool metrics" in md and "### sums · gen" in md.split("## Pool metrics")[1]
    assert "| self-consistency:k=3 | pass@k | 3 × 3 | 22% (" in md
    assert "| sampling:k=3 | first@k | 3 × 1-3 | 33% (6%-79%) | 67% (21%-94%) | 67% (21%-94%) |" in md
    assert "| strategy | metric | pool | k=1 | k=2 | k=n |" in md
    with open(out / "results.csv") as f:
        assert len(list(csv.DictReader(f))) == 3  # the cells' rows, unchanged
    summary = json.loads((out / "gen" / "sums" / "self-consistency_k=3-seed0" / "summary.json").read_text())
    [(strategy, entry)] = summary["pools"].items()
    assert strategy == "self-consistency:k=3,temperature=1"
    assert [round(v, 4) for v in entry["curves"][0]["values"]] == [0.2222, 0.4444, 0.6667]
    standard = json.loads((out / "gen" / "sums" / "standard-seed0" / "summary.json").read_text())
    assert standard["pools"] == {}


def test_run_pools_reads_the_runs_instances_at_its_seed() -> None:
    other_seed = POOLS[2].model_copy(update={"seed": 1})
    found = run_pools(["best-of-n:n=3", "standard"], ["i1", "i2"], 0, [*POOLS, other_seed])
    assert list(found) == ["best-of-n:n=3"]
    assert found["best-of-n:n=3"]["n_instances"] == 2 and "strategy" not in found["best-of-n:n=3"]


def test_experiment_pools_group_cells_by_domain_model_and_seed() -> None:
    grouped = experiment_pools([("d", "m", 0, "a", POOLS), ("d", "m", 0, "b", POOLS[:1]), ("d", "m", 1, "a", []),
                                ("e", "m", 0, "a", POOLS)])
    assert {key: [p.strategy for p in ps] for key, ps in grouped.items()} == {("d", "m", 0): ["a", "b"],
                                                                           ("e", "m", 0): ["a"]}
    assert pools.pools_json(grouped)[0]["domain"] == "d"
