"""AUROC and its bootstrap interval: the AUROC is the Mann-Whitney count veriloop wrote out
before it called scikit-learn (helpers.pairwise_auroc, the reference), ties included; each
bootstrap resample's AUROC is that count on the resample, and the intervals are the ones
scikit-learn's roc_auc_score gave on every resample (pinned: scikit-learn 1.9.1 is no
longer installed; test_auroc_reference.py pins its AUROCs)."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import pairwise_auroc

from veriloop.studies.hallucination import auroc, bootstrap_auroc_ci


def tied_data(seed: int, n: int) -> tuple[list[float], list[bool]]:
    rng = np.random.default_rng(seed)
    labels = [bool(x) for x in rng.random(n) < 0.4]
    # One decimal: many ties, within and across the classes.
    scores = [float(x) for x in np.round(rng.random(n) + 0.3 * np.array(labels), 1)]
    return scores, labels


@pytest.mark.parametrize("seed", range(20))
def test_auroc_is_the_old_count_on_data_with_ties(seed):
    scores, labels = tied_data(seed, 5 + 3 * seed)
    assert len(set(scores)) < len(scores)
    expected = pairwise_auroc(scores, labels)
    got = auroc(scores, labels)
    assert (got is None) == (expected is None)
    assert got is None or abs(got - expected) <= 1e-12


def test_auroc_by_hand():
    # right 0.9, 0.5; wrong 0.5, 0.1: wins 0.9>0.5, 0.9>0.1, 0.5>0.1, tie 0.5=0.5 -> 3.5 / 4
    assert auroc([0.9, 0.5, 0.5, 0.1], [True, True, False, False]) == 0.875
    assert auroc([1.0, 1.0], [True, False]) == 0.5
    assert auroc([], []) is None and auroc([0.2, 0.3], [False, False]) is None


def counted_interval(scores, labels, resamples, seed):
    """The interval with the pairwise count on each resample (same draws, same percentiles)."""
    n = len(scores)
    idx = np.random.default_rng(seed).integers(0, n, size=(resamples, n))
    s, y = np.asarray(scores)[idx], np.asarray(labels)[idx]
    values = [pairwise_auroc(list(ss), list(yy)) for ss, yy in zip(s, y) if 0 < yy.sum() < n]
    return tuple(np.percentile(values, [2.5, 97.5])), len(values)


# The last two figures: the interval with scikit-learn 1.9.1's roc_auc_score called on each
# resample, as this test computed it before scikit-learn was dropped, and how many kept.
@pytest.mark.parametrize(("seed", "n", "sklearn", "kept"), [
    (0, 10, (0.2916666666666667, 1.0), 295),
    (1, 10, (0.5, 1.0), 300),
    (2, 25, (0.5625, 0.915017361111111), 300),
    (3, 40, (0.70613984375, 0.9423558897243107), 300),
])
def test_bootstrap_resamples_are_the_pairwise_count_and_scikit_learns_auroc(seed, n, sklearn, kept):
    scores, labels = tied_data(100 + seed, n)
    expected, counted = counted_interval(scores, labels, 300, seed)
    got = bootstrap_auroc_ci(scores, labels, resamples=300, seed=seed)
    assert counted == kept
    assert got == (pytest.approx(expected[0], abs=1e-12), pytest.approx(expected[1], abs=1e-12))
    assert got == (pytest.approx(sklearn[0], abs=1e-12), pytest.approx(sklearn[1], abs=1e-12))


def test_bootstrap_interval_pinned():
    # README's Table 5 shape: 10 questions, 3 answered right.
    scores = [0.9, 0.8, 0.4, 0.7, 0.3, 0.3, 0.2, 0.6, 0.1, 0.5]
    labels = [True, True, True, False, False, False, False, False, False, False]
    assert auroc(scores, labels) == pytest.approx(18 / 21)  # 0.9 and 0.8 beat all 7, 0.4 beats 4
    assert bootstrap_auroc_ci(scores, labels) == bootstrap_auroc_ci(scores, labels, seed=0)
    low, high = bootstrap_auroc_ci(scores, labels)
    # The old resampler (Python's random, seed 0) gave 0.444-1.0; over seeds 0-4 the lower
    # bound is 0.44-0.50 there and 0.38-0.52 here: 1000 resamples of 10 questions.
    assert (round(low, 4), high) == (0.5207, 1.0)


def test_bootstrap_edges():
    assert bootstrap_auroc_ci([], []) is None
    assert bootstrap_auroc_ci([0.1, 0.2, 0.3], [True, True, True]) is None  # one class: no resample has an AUROC
    # Perfect separation: every resample with both classes has AUROC 1.
    assert bootstrap_auroc_ci([0.9, 0.8, 0.2, 0.1], [True, True, False, False]) == (1.0, 1.0)
    # One right answer among 40, scored lowest: about 64% of the resamples hold it, each with AUROC 0.
    assert bootstrap_auroc_ci([float(i) for i in range(40)], [i == 0 for i in range(40)]) == (0.0, 0.0)
