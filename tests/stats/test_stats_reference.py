"""The statistics veriloop computes with scipy alone are the figures statsmodels gave.

veriloop once called statsmodels for the Wilson interval (proportion_confint, method
"wilson") and the exact McNemar test (mcnemar(table, exact=True)). Neither is installed
any more, so their figures for a fixed set of inputs (0/n, n/n, n of 1, 2 and 3, n up to a
million, three levels, the fractional counts pools.py passes, tied and very unequal
discordant counts) were computed once with statsmodels 0.15.0 and are written here as
literals. The same formulas in the same order of operations give them to the last bit
(the Wilson bounds on scipy 1.11 too; the p-values there to 3e-15 relative, scipy's own
binomial tail having changed since); the one intended difference is that a bound
statsmodels leaves a unit in the last place off 0 or 1 at 0/n or n/n is exactly 0 or 1.
Properties check the rest of the input space.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from veriloop.stats.metrics import wilson_interval
from veriloop.stats.paired import exact_mcnemar, paired_comparison

# (successes, n, alpha) -> statsmodels 0.15.0's proportion_confint(successes, n, alpha=alpha, method="wilson"),
# printed with repr (so every bit), on scipy 1.17.1 and numpy 2.4.6. The fractional counts at the
# end are what pools.py asks for: the interval of a mean of 1/3 over one instance, and so on.
WILSON: list[tuple[tuple[float, int, float], tuple[float, float]]] = [
    ((0, 1, 0.05), (0.0, 0.7934506856227627)),
    ((1, 1, 0.05), (0.2065493143772374, 1.0)),
    ((0, 2, 0.05), (0.0, 0.657619772493347)),
    ((1, 2, 0.05), (0.09453120573423068, 0.9054687942657693)),
    ((2, 2, 0.05), (0.342380227506653, 1.0)),
    ((0, 3, 0.05), (0.0, 0.5614970317550455)),
    ((1, 3, 0.05), (0.06149194472039626, 0.7923403991979523)),
    ((2, 3, 0.05), (0.2076596008020477, 0.9385080552796037)),
    ((3, 3, 0.05), (0.43850296824495444, 1.0)),
    ((0, 7, 0.05), (2.7755575615628914e-17, 0.3543304350666875)),
    ((7, 7, 0.05), (0.6456695649333125, 0.9999999999999999)),
    ((2, 10, 0.05), (0.056682151454375246, 0.5098375284633583)),
    ((3, 10, 0.05), (0.10779126740630104, 0.6032218525388546)),
    ((0, 20, 0.05), (0.0, 0.1611251580528194)),
    ((20, 20, 0.05), (0.8388748419471804, 0.9999999999999999)),
    ((1, 37, 0.05), (0.004786974451940429, 0.1382406986373052)),
    ((36, 37, 0.05), (0.8617593013626947, 0.9952130255480593)),
    ((50, 99, 0.05), (0.40823170284258525, 0.6014920020860226)),
    ((0, 1000, 0.05), (2.168404344971009e-19, 0.003826758485555125)),
    ((1, 1000, 0.05), (0.00017654637062607765, 0.005642558597957937)),
    ((999, 1000, 0.05), (0.9943574414020421, 0.9998234536293739)),
    ((1000, 1000, 0.05), (0.996173241514445, 1.0)),
    ((333, 1000, 0.05), (0.3044779033483562, 0.3628002339858192)),
    ((12345, 100000, 0.05), (0.12142561775452175, 0.12550331116056454)),
    ((0, 1000000, 0.05), (4.235164736271502e-22, 3.841444063944944e-06)),
    ((1, 1000000, 0.05), (1.7652457674537176e-07, 5.664911804311445e-06)),
    ((500000, 1000000, 0.05), (0.4990200198900048, 0.5009799801099952)),
    ((1000000, 1000000, 0.05), (0.9999961585559362, 1.0)),
    ((0, 1, 0.01), (0.0, 0.8690224567198142)),
    ((1, 1, 0.01), (0.13097754328018574, 0.9999999999999999)),
    ((0, 2, 0.01), (0.0, 0.7683817082692724)),
    ((1, 2, 0.01), (0.06171307677810173, 0.9382869232218982)),
    ((2, 2, 0.01), (0.23161829173072762, 1.0)),
    ((0, 3, 0.01), (0.0, 0.6886318427452531)),
    ((1, 3, 0.01), (0.04042662929608465, 0.855783984952333)),
    ((2, 3, 0.01), (0.144216015047667, 0.9595733707039154)),
    ((3, 3, 0.01), (0.311368157254747, 1.0)),
    ((0, 7, 0.01), (0.0, 0.4866114349942544)),
    ((7, 7, 0.01), (0.5133885650057457, 1.0)),
    ((2, 10, 0.01), (0.04013115250461641, 0.5991813034783284)),
    ((3, 10, 0.01), (0.07956631652306578, 0.6799753207988974)),
    ((0, 20, 0.01), (0.0, 0.24910540109875348)),
    ((20, 20, 0.01), (0.7508945989012465, 1.0)),
    ((1, 37, 0.01), (0.003181113916060352, 0.19470858615530703)),
    ((36, 37, 0.01), (0.8052914138446932, 0.9968188860839398)),
    ((50, 99, 0.01), (0.37942995421556297, 0.6300366144296166)),
    ((0, 1000, 0.01), (0.0, 0.00659116490340683)),
    ((1, 1000, 0.01), (0.00011741635361832078, 0.008460566219981695)),
    ((999, 1000, 0.01), (0.9915394337800183, 0.9998825836463816)),
    ((1000, 1000, 0.01), (0.9934088350965931, 0.9999999999999998)),
    ((333, 1000, 0.01), (0.2958230310037164, 0.37237841807402156)),
    ((12345, 100000, 0.01), (0.12079547166976655, 0.12615449242146998)),
    ((0, 1000000, 0.01), (0.0, 6.634852579460388e-06)),
    ((1, 1000000, 0.01), (1.1740547499963195e-07, 8.517433834755595e-06)),
    ((500000, 1000000, 0.01), (0.49871208962079455, 0.5012879103792054)),
    ((1000000, 1000000, 0.01), (0.9999933651474204, 1.0)),
    ((0, 1, 0.1), (0.0, 0.730134051215946)),
    ((1, 1, 0.1), (0.269865948784054, 1.0)),
    ((0, 2, 0.1), (0.0, 0.5749693909936539)),
    ((1, 2, 0.1), (0.1208663194222736, 0.8791336805777263)),
    ((2, 2, 0.1), (0.4250306090063462, 1.0)),
    ((0, 3, 0.1), (0.0, 0.47419557415751296)),
    ((1, 3, 0.1), (0.07826572633372836, 0.746466131718776)),
    ((2, 3, 0.1), (0.253533868281224, 0.9217342736662715)),
    ((3, 3, 0.1), (0.525804425842487, 1.0)),
    ((0, 7, 0.1), (0.0, 0.27876269545254223)),
    ((7, 7, 0.1), (0.7212373045474578, 1.0)),
    ((2, 10, 0.1), (0.06855798773753202, 0.45920719431251217)),
    ((3, 10, 0.1), (0.12687658390319784, 0.558300204130165)),
    ((0, 20, 0.1), (0.0, 0.11915783736096455)),
    ((20, 20, 0.1), (0.8808421626390355, 1.0)),
    ((1, 37, 0.1), (0.006052795573242113, 0.11245819923370756)),
    ((36, 37, 0.1), (0.8875418007662926, 0.993947204426758)),
    ((50, 99, 0.1), (0.4233700179512039, 0.5864622878016419)),
    ((0, 1000, 0.1), (0.0, 0.002698243239760524)),
    ((1, 1000, 0.1), (0.00022312384391207085, 0.004469722909368932)),
    ((999, 1000, 0.1), (0.9955302770906311, 0.9997768761560879)),
    ((1000, 1000, 0.1), (0.9973017567602394, 0.9999999999999998)),
    ((333, 1000, 0.1), (0.30896566123508146, 0.3579355520069986)),
    ((12345, 100000, 0.1), (0.12174913637174536, 0.12517123852475576)),
    ((0, 1000000, 0.1), (0.0, 2.7055361341498373e-06)),
    ((1, 1000000, 0.1), (2.230922523521047e-07, 4.482438470725465e-06)),
    ((500000, 1000000, 0.1), (0.4991775742990777, 0.5008224257009223)),
    ((1000000, 1000000, 0.1), (0.9999972944638658, 1.0)),
    ((0.3333333333333333, 1, 0.05), (0.02533624364650111, 0.9058139848944199)),
    ((1.3333333333333333, 4, 0.05), (0.0750831396700039, 0.7548804724815285)),
    ((2.4000000000000004, 6, 0.05), (0.13048223747888715, 0.7475846201015459)),
]

# (a_only, b_only) -> (statistic, pvalue) of statsmodels 0.15.0's
# mcnemar([[7, a_only], [b_only, 4]], exact=True) (the concordant cells do not enter it).
MCNEMAR: list[tuple[tuple[int, int], tuple[float, float]]] = [
    ((0, 1), (0.0, 1.0)),
    ((1, 0), (0.0, 1.0)),
    ((1, 1), (1.0, 1.0)),
    ((0, 2), (0.0, 0.5)),
    ((0, 5), (0.0, 0.0625)),
    ((3, 3), (3.0, 1.0)),
    ((1, 6), (1.0, 0.125)),
    ((2, 11), (2.0, 0.0224609375)),
    ((6, 1), (1.0, 0.125)),
    ((5, 20), (5.0, 0.004077315330505371)),
    ((10, 25), (10.0, 0.016673847800120715)),
    ((25, 10), (10.0, 0.016673847800120715)),
    ((50, 60), (50.0, 0.3909274566995058)),
    ((17, 40), (17.0, 0.0032015437674503813)),
    ((100, 141), (100.0, 0.009831541178608736)),
    ((500, 560), (500.0, 0.06990955946026937)),
    ((0, 2000), (0.0, 0.0)),
    ((1000, 1000), (1000.0, 1.0)),
    ((1000, 1101), (1000.0, 0.02911063368590902)),
    ((5000, 5200), (5000.0, 0.04878796312682234)),
]


@pytest.mark.parametrize(("args", "expected"), WILSON, ids=[f"{k:g}/{n}@{a}" for (k, n, a), _ in WILSON])
def test_wilson_is_statsmodels_to_the_last_bit(args, expected):
    successes, n, alpha = args
    low, high = wilson_interval(successes, n, alpha=alpha)
    # statsmodels misses 0 at 0/7 by 2.8e-17 and 1 at 7/7 by 1.1e-16; veriloop says 0 and 1.
    assert (low, high) == (0.0 if successes == 0 else expected[0], 1.0 if successes == n else expected[1])
    assert abs(low - expected[0]) <= 2.3e-16 and abs(high - expected[1]) <= 2.3e-16
    assert type(low) is float and type(high) is float


def test_wilson_of_nothing_is_zero_where_statsmodels_gives_nan():
    # proportion_confint(0, 0, method="wilson") is (nan, nan) with four divide warnings.
    assert wilson_interval(0, 0) == (0.0, 0.0)
    assert wilson_interval(0, 0, alpha=0.01) == (0.0, 0.0)


@given(st.integers(1, 10**7).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
       st.sampled_from([0.001, 0.01, 0.05, 0.1, 0.32]))
@settings(max_examples=300, deadline=None)  # the first example pays for importing scipy
def test_wilson_properties(kn, alpha):
    k, n = kn
    low, high = wilson_interval(k, n, alpha=alpha)
    assert 0.0 <= low <= k / n <= high <= 1.0
    assert (low == 0.0) == (k == 0) and (high == 1.0) == (k == n)
    # Failures are successes seen the other way round: the interval mirrors.
    mirror_low, mirror_high = wilson_interval(n - k, n, alpha=alpha)
    assert abs(low - (1 - mirror_high)) <= 1e-12 and abs(high - (1 - mirror_low)) <= 1e-12
    # A higher level (a smaller alpha) is a wider interval, holding the 95% one.
    if alpha < 0.05:
        assert low <= wilson_interval(k, n)[0] and wilson_interval(k, n)[1] <= high
    else:
        assert wilson_interval(k, n)[0] <= low and high <= wilson_interval(k, n)[1]


@pytest.mark.parametrize(("counts", "expected"), MCNEMAR, ids=[f"{a}-{b}" for (a, b), _ in MCNEMAR])
def test_exact_mcnemar_is_statsmodels_to_the_last_bit(counts, expected):
    a_only, b_only = counts
    statistic, p_value = expected
    # To the last bit on the scipy the lock file pins (1.17.1), as statsmodels calls the same
    # binom.cdf; scipy 1.11's binomial tail (an older Boost) differs by up to 3e-15 relative.
    assert exact_mcnemar(a_only, b_only) == pytest.approx(p_value, rel=1e-13, abs=0)
    # veriloop reports the discordant counts, not statsmodels' statistic, which is their minimum.
    assert min(a_only, b_only) == statistic
    # The same through a paired comparison (5 instances both right, 2 both wrong).
    if a_only + b_only <= 200:  # the bootstrap of the larger ones adds seconds, not checks
        a = [True] * 5 + [False] * 2 + [True] * a_only + [False] * b_only
        b = [True] * 5 + [False] * 2 + [False] * a_only + [True] * b_only
        c = paired_comparison(a, b, resamples=100)
        assert (c.a_only, c.b_only, c.p_value) == (a_only, b_only, exact_mcnemar(a_only, b_only))


@given(st.integers(0, 400), st.integers(1, 400))
@settings(max_examples=300, deadline=None)
def test_exact_mcnemar_properties(a_only, b_only):
    p = exact_mcnemar(a_only, b_only)
    assert 0.0 < p <= 1.0
    assert p == exact_mcnemar(b_only, a_only)  # two-sided: which strategy is a does not matter
    assert exact_mcnemar(a_only, a_only or 1) == 1.0  # as many each way (or 0 and 1): no evidence
    # One more discordant pair on the side that already has more: the p-value can only fall.
    assert exact_mcnemar(min(a_only, b_only), max(a_only, b_only) + 1) <= p


@pytest.mark.parametrize("m", [1, 2, 5, 10, 50, 400])
def test_exact_mcnemar_with_every_discordant_pair_one_way_is_two_over_two_to_the_m(m):
    assert exact_mcnemar(0, m) == exact_mcnemar(m, 0) == min(1.0, 2.0 ** (1 - m))


LIGHT = ("veriloop", "veriloop.stats.metrics", "veriloop.stats.paired", "veriloop.experiment.results",
         "veriloop.stats.frontier", "veriloop.tables", "veriloop.recorded.rescore", "veriloop.studies.hallucination")


def test_the_statistics_modules_import_no_scipy_and_compute_without_statsmodels_or_sklearn():
    # The results table's modules import scipy when a figure is first computed, not with
    # themselves; and computing every figure loads neither statsmodels nor scikit-learn.
    program = (
        f"import importlib, sys\nfor m in {LIGHT!r}: importlib.import_module(m)\n"
        "print(sorted(m for m in ('scipy', 'numpy', 'statsmodels', 'sklearn') if m in sys.modules))\n"
        "from veriloop.stats.metrics import wilson_interval\n"
        "from veriloop.stats.paired import paired_comparison\n"
        "from veriloop.studies.hallucination import auroc, bootstrap_auroc_ci\n"
        "wilson_interval(3, 10); paired_comparison([True, False, False], [True, True, True], resamples=50)\n"
        "auroc([0.1, 0.4, 0.4], [False, True, False]); bootstrap_auroc_ci([0.1, 0.4, 0.4], [False, True, False])\n"
        "print(sorted(m for m in ('scipy', 'statsmodels', 'sklearn') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True,
                         timeout=120).stdout
    assert out.splitlines() == ["[]", "['scipy']"]
