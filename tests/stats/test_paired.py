"""Paired comparison of two strategies, checked against the libraries' own results on the
same hand-written data: statsmodels' exact McNemar (its p-values pinned, as printed by
statsmodels 0.15.0, which is no longer installed; test_stats_reference.py has many more),
scipy's binomial test (the exact McNemar test is the two-sided binomial test of the
discordant pairs at one half) and scipy.stats.bootstrap called here directly with the
same seed; the difference and the discordant counts are worked out by hand in the
comments."""

from __future__ import annotations

import inspect
import math
import warnings

import numpy as np
import pytest

from veriloop.errors import VeriloopError
from veriloop.records import Trajectory
from veriloop.stats.paired import (
    BATCH,
    PairedComparison,
    compare_trajectories,
    difference_text,
    matched,
    p_text,
    paired_comparison,
    pairwise,
)

T, F = True, False
# 12 instances: both right on 3, only a on 1 (instance 3), only b on 6, neither on 2.
A = [T, T, T, T, F, F, F, F, F, F, F, F]
B = [T, T, T, F, T, T, T, T, T, T, F, F]

# scipy.stats is imported in the tests that call it: at the top it cost every xdist worker
# 0.6 s of collection.


def test_counts_and_difference_by_hand():
    c = paired_comparison(A, B)
    assert (c.a, c.b, c.n) == ("a", "b", 12)
    assert (c.a_correct, c.b_correct, c.a_only, c.b_only) == (4, 9, 1, 6)
    assert c.a_accuracy == 4 / 12 and c.b_accuracy == 9 / 12
    assert c.difference == 5 / 12  # b - a = (b_only - a_only) / n


def test_exact_mcnemar_is_statsmodels_and_the_binomial_test():
    c = paired_comparison(A, B)
    # 2 * P(X <= 1), X ~ Binomial(7, 1/2) = 2 * (1 + 7) / 128
    assert c.p_value == 0.125  # statsmodels' mcnemar([[3, 1], [6, 2]], exact=True).pvalue too
    from scipy.stats import binomtest

    assert c.p_value == pytest.approx(binomtest(6, 7, 0.5).pvalue, abs=1e-15)


# The last figure of each: statsmodels 0.15.0's mcnemar(table, exact=True).pvalue on the
# comparison's table [[both right, a only], [b only, both wrong]].
@pytest.mark.parametrize(("a", "b", "statsmodels"), [
    ([T, F, T, F, T], [F, T, F, T, T], 1.0),  # 2 a-only, 2 b-only: p = 1
    ([T] * 9 + [F] * 11, [F] * 2 + [T] * 18, 0.0224609375),  # 2 a-only, 11 b-only
    ([F] * 30 + [T] * 10, [T] * 25 + [F] * 5 + [T] * 10, 5.960464477539063e-08),  # 0 a-only, 25 b-only: 2 / 2^25
])
def test_mcnemar_on_more_data(a, b, statsmodels):
    from scipy.stats import binomtest

    c = paired_comparison(a, b)
    assert c.p_value == statsmodels
    assert c.p_value == pytest.approx(binomtest(c.b_only, c.a_only + c.b_only, 0.5).pvalue, abs=1e-12)


def scipy_paired(a, b, seed, resamples=10_000, batch=BATCH):
    """scipy's paired bootstrap of the difference in accuracy, called directly."""
    from scipy.stats import bootstrap

    result = bootstrap(
        (np.array(a, dtype=float), np.array(b, dtype=float)), lambda x, y, axis: y.mean(axis=axis) - x.mean(axis=axis),
        paired=True, vectorized=True, n_resamples=resamples, batch=batch, method="percentile", confidence_level=0.95,
        random_state=np.random.default_rng(seed),
    )
    return (float(result.confidence_interval.low), float(result.confidence_interval.high))


def scipy_differences(a, b, seed, resamples=10_000):
    """scipy's bootstrap of the per-instance differences b_i - a_i (what paired.py calls)."""
    from scipy.stats import bootstrap

    d = np.array(b, dtype=float) - np.array(a, dtype=float)
    result = bootstrap((d,), lambda x, axis: x.mean(axis=axis), vectorized=True, n_resamples=resamples,
                       batch=BATCH, method="percentile", confidence_level=0.95, random_state=np.random.default_rng(seed))
    return (float(result.confidence_interval.low), float(result.confidence_interval.high))


def approx_pair(interval):
    return (pytest.approx(interval[0], abs=1e-12), pytest.approx(interval[1], abs=1e-12))


@pytest.mark.parametrize("seed", [0, 7])
@pytest.mark.parametrize(("a", "b"), [(A, B), ([T, F] * 20, [T, T, F, T] * 10),
                                      ([F] * 30 + [T] * 10, [T] * 25 + [F] * 5 + [T] * 10)])
def test_bootstrap_interval_is_scipys_paired_bootstrap_with_the_same_seed(a, b, seed):
    c = paired_comparison(a, b, seed=seed)
    # Resampling the pairs draws the same instances as resampling their differences: the
    # same interval as scipy's paired=True, up to the rounding of a mean of differences.
    assert c.difference_ci95 == approx_pair(scipy_paired(a, b, seed))
    assert c.difference_ci95 == scipy_differences(a, b, seed)
    assert (c.resamples, c.bootstrap_seed) == (10_000, seed)


def test_bootstrap_interval_pinned_and_deterministic():
    first = paired_comparison(A, B, resamples=2000, seed=3)
    assert first == paired_comparison(A, B, resamples=2000, seed=3)
    assert first.difference_ci95 == approx_pair(scipy_paired(A, B, 3, resamples=2000))
    # Resampled differences of 12 instances are multiples of 1/12: from 0 to 9 of them here,
    # so the interval holds 0 as McNemar's p = 0.125 says.
    assert paired_comparison(A, B).difference_ci95 == (0.0, 0.75)
    assert first.difference_ci95 == (pytest.approx(1 / 12), 0.75)


def scipy_bootstrap_has_rng() -> bool:
    from scipy.stats import bootstrap

    return "rng" in inspect.signature(bootstrap).parameters


# A string condition is evaluated as the test is set up, not as the module is collected.
@pytest.mark.skipif("not scipy_bootstrap_has_rng()", reason="scipy before 1.15 has no rng")
@pytest.mark.parametrize("seed", [0, 7])
def test_random_state_is_rngs_old_name_with_the_same_draws(seed):
    # paired.py and pools.py pass random_state, the only name scipy 1.11 knows; since 1.15
    # it is rng's old name, and gives the intervals rng gives, without a warning.
    from scipy.stats import bootstrap

    d = np.array(B, dtype=float) - np.array(A, dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        old, new = (bootstrap((d,), np.mean, n_resamples=2000, method="percentile", **{key: np.random.default_rng(seed)})
                    .confidence_interval for key in ("random_state", "rng"))
    assert (old.low, old.high) == (new.low, new.high)
    assert paired_comparison(A, B, resamples=2000, seed=seed).difference_ci95 == (float(new.low), float(new.high))


def test_batch_size_does_not_change_the_interval():
    # BATCH bounds memory only: scipy with another batch size draws the same resamples.
    a, b = [T, F] * 20, [T, T, F, T] * 10
    assert scipy_paired(a, b, 0) == scipy_paired(a, b, 0, batch=None) == scipy_paired(a, b, 0, batch=123)


def no_nan(c: PairedComparison) -> bool:
    return not any(isinstance(v, float) and math.isnan(v) for v in [*c.model_dump().values(), *(c.difference_ci95 or ())])


@pytest.mark.parametrize(("a", "b", "expected"), [
    ([], [], dict(n=0, difference=0.0, p_value=1.0, difference_ci95=None, a_accuracy=0.0)),
    ([T, F, T], [T, F, T], dict(n=3, difference=0.0, p_value=1.0, difference_ci95=(0.0, 0.0))),
    ([F, F, F], [F, F, F], dict(n=3, difference=0.0, p_value=1.0, difference_ci95=(0.0, 0.0))),
    # Every instance discordant the same way: every resample's difference is +1 (or -1).
    ([F] * 4, [T] * 4, dict(n=4, difference=1.0, p_value=0.125, difference_ci95=(1.0, 1.0))),
    ([T] * 4, [F] * 4, dict(n=4, difference=-1.0, p_value=0.125, difference_ci95=(-1.0, -1.0))),
    ([T], [F], dict(n=1, difference=-1.0, p_value=1.0, difference_ci95=(-1.0, -1.0))),
])
def test_degenerate_cases_are_documented_figures_not_nan_or_warnings(a, b, expected):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        c = paired_comparison(a, b)
    assert {k: getattr(c, k) for k in expected} == expected
    assert no_nan(c)


def test_one_discordant_pair_among_concordant_ones_goes_to_scipy():
    a, b = [T, T, F, F, F], [T, T, F, F, T]
    c = paired_comparison(a, b)
    assert (c.a_only, c.b_only, c.p_value) == (0, 1, 1.0)
    assert c.difference_ci95 == scipy_differences(a, b, 0) == (0.0, pytest.approx(0.6))
    assert c.difference_ci95 == approx_pair(scipy_paired(a, b, 0))


def test_unequal_lengths_are_refused_in_one_line():
    with pytest.raises(VeriloopError, match=r"got 2 and 3; pass the instances both finished") as e:
        paired_comparison([T, F], [T, F, T])
    assert "\n" not in str(e.value)


def traj(strategy: str, instance: str, correct: bool, seed: int = 0) -> Trajectory:
    return Trajectory(strategy=strategy, domain="d", model="m", instance_id=instance, seed=seed, correct=correct)


def test_trajectories_are_paired_by_instance_and_seed():
    a = [traj("s", "i1", T), traj("s", "i2", F), traj("s", "i3", T), traj("s", "i4", F, seed=1)]
    # b in another order, without i3, and its i4 has another seed: neither is paired.
    b = [traj("t", "i2", T), traj("t", "i1", T), traj("t", "i4", T, seed=2)]
    assert matched(a, b) == ([T, F], [T, T])
    c = compare_trajectories("s", a, "t", b)
    assert (c.a, c.b, c.n, c.a_only, c.b_only, c.difference) == ("s", "t", 2, 0, 1, 0.5)


def test_pairwise_compares_each_later_strategy_with_each_earlier_one():
    groups = {
        "standard": [traj("standard", "i1", F), traj("standard", "i2", F)],
        "sampling": [traj("sampling", "i1", T), traj("sampling", "i2", F)],
        "backprompt": [traj("backprompt", "i1", T), traj("backprompt", "i2", T)],
    }
    got = [(c.a, c.b, c.difference) for c in pairwise(groups)]
    assert got == [("standard", "sampling", 0.5), ("standard", "backprompt", 1.0), ("sampling", "backprompt", 0.5)]


def test_texts():
    c = paired_comparison(A, B)
    assert difference_text(c) == "+42 points (+0 to +75)"
    assert difference_text(c, unit="") == "+42 (+0 to +75)"
    assert difference_text(paired_comparison([T, T], [T, T])) == "+0 points (+0 to +0)"
    assert difference_text(paired_comparison([T] * 3, [F] * 3)) == "-100 points (-100 to -100)"
    assert difference_text(paired_comparison([], [])) == "-"
    assert [p_text(p) for p in (1.0, 0.125, 0.0004)] == ["1.000", "0.125", "<0.001"]
