"""The Wilson interval gives the figures of the formula veriloop wrote out before it called
statsmodels (kept here as the reference; test_stats_reference.py pins statsmodels' own),
a strategy's summary is counted from its trajectories, and a verifier's verdicts are
scored against ground truth."""

from __future__ import annotations

import math
import sys
from functools import cache

import pytest

from veriloop.records import CallRecord, RoundRecord, Trajectory
from veriloop.stats.metrics import Z95, score_judgements, summarise, wilson_interval


@cache
def z_975() -> float:
    # scipy.stats is imported here, not at the top: its import cost every xdist worker 0.6 s
    # of collection.
    from scipy.stats import norm

    return float(norm.isf(0.025))


def reference_wilson(successes: int, n: int, z: float | None = None) -> tuple[float, float]:
    """The hand-written interval veriloop used before statsmodels (its z was 1.959964)."""
    z = z_975() if z is None else z
    if n == 0:
        return (0.0, 0.0)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


GRID = [(k, n) for n in (*range(1, 41), 50, 99, 100, 500, 1000, 10_000) for k in sorted({0, 1, n // 3, n // 2, n - 1, n})]


@pytest.mark.parametrize(("k", "n"), GRID)
def test_wilson_is_the_old_formula(k, n):
    low, high = wilson_interval(k, n)
    ref_low, ref_high = reference_wilson(k, n)
    assert abs(low - ref_low) <= 1e-12 and abs(high - ref_high) <= 1e-12
    assert 0.0 <= low <= k / n <= high <= 1.0
    # Exactly 0 at 0/n and 1 at n/n, where floating point misses by one unit in the old
    # formula as in statsmodels' (2.8e-17 at 0/7, 1 - 1.1e-16 at 20/20).
    assert (low == 0.0) == (k == 0) and (high == 1.0) == (k == n)


def test_the_old_rounded_z_moved_the_bounds_by_under_1e_8():
    # The old code's z = 1.959964 was norm.isf(0.025) rounded: the bounds differ by less
    # than 1e-8, invisible in every printed figure (percentages, two or three decimals).
    worst = max(abs(x - y) for k, n in GRID for x, y in zip(wilson_interval(k, n), reference_wilson(k, n, 1.959964)))
    assert 0 < worst < 1e-8


def test_wilson_edges():
    assert wilson_interval(0, 0) == (0.0, 0.0)
    assert wilson_interval(0, 10)[0] == 0.0 and wilson_interval(10, 10)[1] == 1.0
    assert wilson_interval(0, 10)[1] == pytest.approx(0.27753279986288, abs=1e-12)
    assert wilson_interval(2, 10) == (pytest.approx(0.0566821, abs=1e-7), pytest.approx(0.5098375, abs=1e-7))
    assert all(type(x) is float for x in wilson_interval(3, 7))
    # Another level: the 99% interval is wider.
    lo99, hi99 = wilson_interval(3, 10, alpha=0.01)
    lo95, hi95 = wilson_interval(3, 10)
    assert lo99 < lo95 < hi95 < hi99



def test_the_95_percent_z_is_scipys_to_the_last_bit():
    from scipy.special import ndtri

    assert Z95 == -float(ndtri(0.05 / 2)) == z_975()


def test_a_95_percent_interval_needs_no_scipy(monkeypatch):
    # A `veriloop run` prints one per strategy: importing scipy for it cost 0.3 s of CPU.
    # None in sys.modules makes `import scipy.special` raise ImportError.
    expected = reference_interval(3, 10, z_975())  # scipy's z, asked before scipy is hidden
    monkeypatch.setitem(sys.modules, "scipy.special", None)
    assert wilson_interval(3, 10) == expected
    with pytest.raises(ImportError):
        wilson_interval(3, 10, alpha=0.01)


def reference_interval(successes: int, n: int, z: float) -> tuple[float, float]:
    """statsmodels' steps with scipy's z, as metrics.py writes them."""
    z2 = z**2
    p = successes / n
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n**2)) / denom
    return (centre - half, centre + half)

def test_summarise_counts_from_trajectories():
    def traj(i: int, correct: bool, rounds: int, stop: str) -> Trajectory:
        calls = [CallRecord(role="generate", round=r, messages=[], response="x", finish_reason="stop", prompt_tokens=10,
                            completion_tokens=2, seconds=0.1, cached=r == 1) for r in range(1, rounds + 1)]
        return Trajectory(strategy="s", domain="d", model="m", instance_id=f"i{i}", seed=0, correct=correct,
                          calls=calls, rounds=[RoundRecord(round=r, text="x", answer="x", correct=correct) for r in range(1, rounds + 1)],
                          stop_reason=stop, seconds=0.25)

    s = summarise("s", [traj(1, True, 1, "accepted"), traj(2, False, 3, "max_rounds"), traj(3, True, 2, "accepted")])
    assert (s.n, s.correct, s.accuracy, s.mean_rounds) == (3, 2, 2 / 3, 2.0)
    assert s.accuracy_ci95 == wilson_interval(2, 3)
    assert (s.model_calls, s.cache_hits, s.prompt_tokens, s.completion_tokens) == (6, 3, 60, 12)
    assert (s.seconds, s.stop_reasons) == (0.75, {"accepted": 2, "max_rounds": 1})
    empty = summarise("s", [])
    assert (empty.n, empty.accuracy, empty.accuracy_ci95, empty.mean_rounds) == (0, 0.0, (0.0, 0.0), 0.0)


def test_score_judgements_counts_false_accepts_among_wrong_and_false_rejects_among_right():
    # (accepted, correct): 1 false accept of 3 wrong, 1 false reject of 2 right.
    s = score_judgements([(True, False), (False, False), (False, False), (True, True), (False, True)], unreadable=1)
    assert (s.n, s.accuracy, s.false_positives, s.negatives, s.false_negatives, s.positives, s.unreadable) == (
        5, 0.6, 1, 3, 1, 2, 1)
    assert (s.false_positive_rate, s.false_negative_rate) == (1 / 3, 0.5)
    assert (s.fpr_ci95, s.fnr_ci95, s.accuracy_ci95) == (wilson_interval(1, 3), wilson_interval(1, 2), wilson_interval(3, 5))
    only_right = score_judgements([(True, True)])
    assert (only_right.false_positive_rate, only_right.fpr_ci95, only_right.false_negative_rate) == (None, None, 0.0)
