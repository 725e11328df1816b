"""The random-sampling methods and functions (kiln/_random_methods.py): each
draw's distribution against SciPy's by a Kolmogorov-Smirnov or chi-squared test
at a fixed seed (p > 1e-4, so a correct sampler fails about once in 10^4
seeds, and the seed is fixed), reproducibility under kiln.manual_seed, and the
argument checks."""

import numpy as np
import pytest
from scipy import stats

import kiln

N = 20000


def draw(method, *args, dtype=kiln.float64, **kwargs):
    kiln.manual_seed(1234)
    x = kiln.empty(N, dtype=dtype)
    assert getattr(x, method)(*args, **kwargs) is x
    return x.numpy()


@pytest.mark.parametrize("method,args,dist", [
    ("normal_", (2.0, 3.0), stats.norm(2.0, 3.0)),
    ("uniform_", (-1.0, 3.0), stats.uniform(-1.0, 4.0)),
    ("exponential_", (2.0,), stats.expon(scale=0.5)),
    ("log_normal_", (0.5, 0.75), stats.lognorm(0.75, scale=np.exp(0.5))),
    ("cauchy_", (1.0, 2.0), stats.cauchy(1.0, 2.0)),
])
def test_continuous_draws_follow_their_distribution(method, args, dist):
    x = draw(method, *args)
    assert stats.kstest(x, dist.cdf).pvalue > 1e-4


def test_discrete_draws_follow_their_distribution():
    x = draw("bernoulli_", 0.3)
    assert set(np.unique(x)) <= {0.0, 1.0}
    assert stats.binomtest(int(x.sum()), N, 0.3).pvalue > 1e-4
    g = draw("geometric_", 0.25).astype(int)
    ks = np.arange(1, 30)
    observed = np.array([(g == k).sum() for k in ks] + [(g >= 30).sum()])
    expected = np.append(stats.geom(0.25).pmf(ks), stats.geom(0.25).sf(29)) * N
    assert stats.chisquare(observed, expected).pvalue > 1e-4
    r = draw("random_", 3, 9, dtype=kiln.int64)
    assert r.min() == 3 and r.max() == 8
    assert stats.chisquare(np.bincount(r)[3:]).pvalue > 1e-4
    assert draw("random_", 5, dtype=kiln.int32).max() == 4


@pytest.mark.parametrize("rate", [0.5, 4.0, 10.0, 37.5, 1e4])
def test_poisson_follows_its_distribution(rate):
    kiln.manual_seed(7)
    x = kiln.poisson(kiln.full([N], rate, dtype=kiln.float64)).numpy().astype(int)
    dist = stats.poisson(rate)
    lo, hi = int(dist.ppf(0.001)), int(dist.ppf(0.999))
    edges = np.unique(np.linspace(lo, hi, 30).astype(int))
    observed = np.histogram(x, bins=np.concatenate([[-0.5], edges + 0.5, [np.inf]]))[0]  # counts of x <= edge
    cdf = np.concatenate([[0.0], dist.cdf(edges), [1.0]])
    expected = np.diff(cdf) * N
    keep = expected > 5
    assert stats.chisquare(observed[keep], expected[keep] * observed[keep].sum() / expected[keep].sum()).pvalue > 1e-4


def test_multinomial_with_and_without_replacement():
    kiln.manual_seed(3)
    w = np.array([[1.0, 2.0, 0.0, 7.0], [5.0, 5.0, 5.0, 5.0]])
    s = kiln.multinomial(kiln.tensor(w), N, replacement=True).numpy()
    for row, ws in zip(s, w):
        counts = np.bincount(row, minlength=4)
        assert counts[ws == 0].sum() == 0
        p = ws[ws > 0] / ws.sum()
        assert stats.chisquare(counts[ws > 0], p * N).pvalue > 1e-4
    firsts = np.array([kiln.multinomial(kiln.tensor(w[0]), 3).numpy() for _ in range(2000)])
    assert all(len(set(r)) == 3 and 2 not in r for r in firsts)  # distinct, never the zero weight
    # The first pick of a draw without replacement follows the weights.
    p = np.array([1.0, 2.0, 7.0]) / 10
    assert stats.chisquare([np.sum(firsts[:, 0] == k) for k in (0, 1, 3)], p * 2000).pvalue > 1e-4
    with pytest.raises(ValueError, match="not enough"):
        kiln.multinomial(kiln.tensor(w[0]), 4)
    with pytest.raises(ValueError, match="element < 0"):
        kiln.multinomial(kiln.tensor(np.array([1.0, -1.0])), 1)


def test_functions_and_reproducibility():
    kiln.manual_seed(11)
    a = kiln.normal(kiln.zeros(5, dtype=kiln.float64), 2.0).numpy()
    kiln.manual_seed(11)
    b = kiln.normal(kiln.zeros(5, dtype=kiln.float64), 2.0).numpy()
    np.testing.assert_array_equal(a, b)
    assert kiln.normal(0.0, 1.0, (2, 3)).shape == (2, 3)
    assert kiln.normal(kiln.zeros(2, 1), kiln.ones(3)).shape == (2, 3)
    g = kiln.Generator().manual_seed(5)
    x = kiln.empty(4).uniform_(generator=g).numpy()
    g.manual_seed(5)
    np.testing.assert_array_equal(kiln.empty(4).uniform_(generator=g).numpy(), x)
    p = kiln.randperm(50).numpy()
    assert sorted(p.tolist()) == list(range(50)) and p.dtype == np.int64
    bern = kiln.bernoulli(kiln.tensor(np.array([0.0, 1.0, 0.0, 1.0]))).numpy()
    np.testing.assert_array_equal(bern, [0.0, 1.0, 0.0, 1.0])


def test_argument_checks():
    x = kiln.empty(3)
    with pytest.raises(ValueError):
        x.normal_(0.0, -1.0)
    with pytest.raises(ValueError):
        x.uniform_(2.0, 1.0)
    with pytest.raises(ValueError):
        x.exponential_(0.0)
    with pytest.raises(ValueError):
        x.geometric_(1.5)
    with pytest.raises(TypeError):
        kiln.empty(3, dtype=kiln.int64).normal_()
    with pytest.raises(ValueError):
        x.random_(5, 2)
    with pytest.raises(ValueError):
        kiln.poisson(kiln.tensor(np.array([-1.0])))


@pytest.mark.parametrize("n,p", [(5, 0.3), (20, 0.9), (1000, 0.5), (100000, 0.02)])
def test_binomial_follows_its_distribution(n, p):
    kiln.manual_seed(21)
    x = kiln.binomial(kiln.full([N], float(n)), kiln.full([N], p)).numpy().astype(int)
    dist = stats.binom(n, p)
    lo, hi = int(dist.ppf(0.001)), int(dist.ppf(0.999))
    edges = np.unique(np.linspace(lo, hi, 25).astype(int))
    observed = np.histogram(x, bins=np.concatenate([[-0.5], edges + 0.5, [np.inf]]))[0]
    expected = np.diff(np.concatenate([[0.0], dist.cdf(edges), [1.0]])) * N
    keep = expected > 5
    assert stats.chisquare(observed[keep], expected[keep] * observed[keep].sum() / expected[keep].sum()).pvalue > 1e-4
    edge = kiln.binomial(kiln.tensor(np.array([0.0, 7.0, 7.0])), kiln.tensor(np.array([0.5, 0.0, 1.0]))).numpy()
    np.testing.assert_array_equal(edge, [0.0, 0.0, 7.0])
