"""veriloop's AUROC is the figure scikit-learn's roc_auc_score gave, ties included.

veriloop once called scikit-learn for the AUROC; it is not installed any more, so its
figures on a fixed set of inputs (hand-made ones: all tied, perfectly separated, reversed,
two answers, log-probabilities, 1e-300 next to 1e300; and seeded random ones of 5 to 3,000
answers, most rounded to 0 to 3 decimals so that ties are many) were computed once with
scikit-learn 1.9.1 and are written here as literals. veriloop divides the Mann-Whitney
count by positives x negatives once, where roc_auc_score adds up trapezoids: the two agree
to one unit in the last place (2.2e-16), most of the time to the bit, and veriloop's is
the exact fraction rounded once. With one class only
scikit-learn warns and gives nan (UndefinedMetricWarning: "Only one class is present in
y_true. ROC AUC score is not defined in that case."); veriloop gives None.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest
from helpers import pairwise_auroc
from hypothesis import given, settings
from hypothesis import strategies as st

from veriloop.errors import VeriloopError
from veriloop.studies.hallucination import auroc

ULP = 2.3e-16


def data(seed: int, n: int, decimals: int | None, shift: float) -> tuple[list[float], list[bool]]:
    """About 40% right answers, scored higher by `shift` on average, rounded to `decimals`
    (Python's random.random: the same numbers on every platform and version)."""
    r = random.Random(seed)
    labels = [r.random() < 0.4 for _ in range(n)]
    scores = [r.random() + shift * y for y in labels]
    return [round(s, decimals) for s in scores] if decimals is not None else scores, labels


# (seed, n, decimals, shift) -> scikit-learn 1.9.1's roc_auc_score(labels, scores) on data(seed, n, decimals, shift).
RANDOM: list[tuple[tuple[int, int, int | None, float], float]] = [
    ((0, 5, 1, 0.3), 0.875),
    ((1, 8, 1, 0.3), 0.5),
    ((2, 12, 0, 0.5), 0.875),
    ((3, 20, 1, 0.3), 0.9065934065934066),
    ((4, 30, 2, 0.2), 0.671875),
    ((5, 40, None, 0.2), 0.7802197802197802),
    ((6, 60, 1, 0.0), 0.48325358851674644),
    ((7, 100, 1, 0.3), 0.7205222358221134),
    ((8, 200, 2, 0.1), 0.6025575447570333),
    ((9, 500, 1, 0.4), 0.7995882622050846),
    ((10, 1000, 3, 0.05), 0.5450764006791171),
    ((11, 3000, 1, 0.2), 0.6579388946951207),
    ((12, 3000, None, 0.1), 0.6048668026881534),
    ((13, 25, 0, 0.0), 0.6396103896103895),
    ((14, 50, 1, -0.3), 0.19724025974025974),
]

# (scores, labels) -> scikit-learn 1.9.1's roc_auc_score(labels, scores).
HAND: list[tuple[tuple[list[float], list[bool]], float]] = [
    (([0.9, 0.5, 0.5, 0.1], [True, True, False, False]), 0.875),
    (([1.0, 1.0], [True, False]), 0.5),
    (([0.5, 0.5, 0.5, 0.5, 0.5, 0.5], [True, False, True, False, False, False]), 0.5),
    (([0.9, 0.8, 0.1], [True, True, False]), 1.0),
    (([0.1, 0.2, 0.9], [True, True, False]), 0.0),
    (([0.2, 0.1], [True, False]), 1.0),
    (([0.1, 0.2], [True, False]), 0.0),
    (([-12.5, -3.25, -3.25, -0.5, -7.0, -3.25], [False, True, False, True, False, True]), 0.888888888888889),
    (([0.9, 0.8, 0.4, 0.7, 0.3, 0.3, 0.2, 0.6, 0.1, 0.5], [True, True, True, False, False, False, False, False, False, False]), 0.8571428571428571),
    (([1e-300, 2e-300, 0.0, 1e+300], [False, True, False, True]), 1.0),
    (([0.3, 0.3, 0.3, 0.7, 0.7, 0.1, 0.1, 0.1, 0.1], [True, False, False, True, False, True, False, False, True]), 0.47500000000000003),
]


@pytest.mark.parametrize(("args", "expected"), RANDOM, ids=[f"seed{a[0]}-n{a[1]}" for a, _ in RANDOM])
def test_auroc_is_scikit_learns_on_seeded_data(args, expected):
    scores, labels = data(*args)
    got = auroc(scores, labels)
    assert got is not None and abs(got - expected) <= ULP
    assert got == pytest.approx(pairwise_auroc(scores, labels), abs=1e-12)


@pytest.mark.parametrize(("args", "expected"), HAND, ids=[str(i) for i in range(len(HAND))])
def test_auroc_is_scikit_learns_on_hand_made_data(args, expected):
    got = auroc(*args)
    assert got is not None and abs(got - expected) <= ULP
    assert type(got) is float


def exact(scores: list[float], labels: list[bool]) -> Fraction:
    pos = [s for s, y in zip(scores, labels) if y]
    neg = [s for s, y in zip(scores, labels) if not y]
    return Fraction(sum(2 * (p > n) + (p == n) for p in pos for n in neg), 2 * len(pos) * len(neg))


def test_veriloop_is_the_exact_fraction_rounded_once_where_scikit_learn_is_a_unit_off():
    cases = [data(*args) for args, _ in RANDOM] + [args for args, _ in HAND]
    expected = [e for _, e in RANDOM] + [e for _, e in HAND]
    got = [auroc(*case) for case in cases]
    assert got == [float(exact(*case)) for case in cases]
    # 23 of the 26 to the bit; 197/308, 8/9 and 19/40 (0.475, where scikit-learn has 0.47500000000000003) a unit off.
    differ = [i for i, (g, e) in enumerate(zip(got, expected)) if g != e]
    assert differ == [13, len(RANDOM) + 7, len(RANDOM) + 10]
    assert [exact(*cases[i]) for i in differ] == [Fraction(197, 308), Fraction(8, 9), Fraction(19, 40)]


@pytest.mark.parametrize(("scores", "labels"), [
    ([0.1, 0.2], [True, True]), ([0.1], [False]), ([0.3, 0.3, 0.3], [False, False, False]), ([], []),
])
def test_one_class_has_no_auroc(scores, labels):
    assert auroc(scores, labels) is None


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_confidence_that_is_not_a_number_is_refused_in_one_line(bad):
    # scikit-learn raised its own ValueError here ("Input contains NaN."), a traceback to
    # whoever summarised a damaged record file; the ranks would give nan without a word.
    with pytest.raises(VeriloopError, match=r"^AUROC needs finite confidences, got (nan|inf|-inf): .*remove") as e:
        auroc([0.2, bad, 0.1], [True, False, False])
    assert "\n" not in str(e.value)


@given(st.lists(st.tuples(st.floats(-1e6, 1e6), st.booleans()), min_size=2, max_size=60))
@settings(max_examples=200, deadline=None)  # the first example pays for importing scipy
def test_auroc_properties(pairs):
    scores, labels = [p[0] for p in pairs], [p[1] for p in pairs]
    got, expected = auroc(scores, labels), pairwise_auroc(scores, labels)
    assert (got is None) == (expected is None)
    if got is not None:
        assert got == pytest.approx(expected, abs=1e-12) and 0.0 <= got <= 1.0
        # Turning the scores round turns the ranking round.
        flipped = auroc([-s for s in scores], labels)
        assert flipped is not None and abs(got + flipped - 1.0) <= 1e-12
