"""kiln.special's Bessel, Airy, ndtri, zeta, polygamma and incomplete gamma
functions against scipy.special over their domains, in float64, each held to
the error bound stated in its table row (measured on this implementation: the
worst error seen stays below it). The oscillating functions are held to an
absolute bound relative to max(|want|, 1): near their zeros any floating-point
method loses relative accuracy, SciPy's too. Plus dtypes, edge values, out=,
the torch-namespace names and the derivatives."""

import numpy as np
import pytest
import scipy.special as sp

import kiln

RNG = np.random.default_rng(2718)
EPS = np.finfo(np.float64).eps


def err_ulps(got, want, floor=0.0):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    with np.errstate(invalid="ignore", divide="ignore"):
        e = np.abs(got - want) / (np.maximum(np.abs(want), floor) * EPS)
    return np.where(same, 0.0, e)


def t(a):
    return kiln.tensor(a)


WIDE = np.concatenate([np.linspace(-60, 60, 4001), RNG.uniform(-1e3, 1e3, 500), [0.0, 1e-300, -1e-10, 1e5]])
POS = np.concatenate([np.linspace(1e-3, 60, 4001), RNG.uniform(0, 1e3, 500), [1e-300, 700.0, 701.0, 1e4]])

# name, kiln function, SciPy reference, inputs, floor, bound in ulps
CASES = [
    ("bessel_j0", kiln.special.bessel_j0, sp.j0, WIDE, 1.0, 64),
    ("bessel_j1", kiln.special.bessel_j1, sp.j1, WIDE, 1.0, 64),
    ("bessel_y0", kiln.special.bessel_y0, sp.y0, POS, 1.0, 64),
    ("bessel_y1", kiln.special.bessel_y1, sp.y1, POS, 1.0, 64),
    # kiln's K family is within 3.1 ulps of mpmath, SciPy's within 5.6 (scripts/special-accuracy).
    ("modified_bessel_k0", kiln.special.modified_bessel_k0, sp.k0, POS, 0.0, 8),
    ("modified_bessel_k1", kiln.special.modified_bessel_k1, sp.k1, POS, 0.0, 8),
    ("scaled_modified_bessel_k0", kiln.special.scaled_modified_bessel_k0, sp.k0e, POS, 0.0, 8),
    ("scaled_modified_bessel_k1", kiln.special.scaled_modified_bessel_k1, sp.k1e, POS, 0.0, 8),
    ("i0e", kiln.special.i0e, sp.i0e, WIDE, 0.0, 8),
    # SciPy's own i1e is ~10 ulps off near x = 8 (scripts/special-accuracy: kiln's is 1.9).
    ("i1e", kiln.special.i1e, sp.i1e, WIDE, 0.0, 16),
    ("i1", kiln.special.i1, sp.i1, np.linspace(-700, 700, 4001), 0.0, 8),
    ("modified_bessel_i1", kiln.special.modified_bessel_i1, sp.i1, np.linspace(-50, 50, 1001), 0.0, 8),
    ("modified_bessel_i0", kiln.special.modified_bessel_i0, sp.i0, np.linspace(-700, 700, 4001), 0.0, 8),
    ("i0", kiln.i0, sp.i0, np.linspace(-700, 700, 4001), 0.0, 8),
    ("airy_ai", kiln.special.airy_ai, lambda x: sp.airy(x)[0], np.linspace(-40, 40, 4001), 1.0, 256),
]


@pytest.mark.parametrize("name,fn,ref,x,floor,bound", CASES, ids=[c[0] for c in CASES])
def test_matches_scipy_within_its_bound(name, fn, ref, x, floor, bound):
    got = fn(t(x)).numpy()
    want = ref(x)
    # Subnormal results (K past x ~ 705) are compared absolutely.
    tiny = np.abs(want) < 1e-300
    assert (np.abs(got[tiny]) < 1e-300).all(), name
    got, want, x = got[~tiny], want[~tiny], x[~tiny]
    e = err_ulps(got, want, floor)
    assert e.max() <= bound, f"{name}: {e.max():.3g} ulps at x = {x[np.argmax(e)]!r}"


def test_edges_follow_torch_and_scipy():
    inf, nan = np.inf, np.nan
    x = t(np.array([inf, -inf, 0.0, nan, -1.0]))
    rows = {
        "bessel_j0": [nan, nan, 1.0, nan, sp.j0(-1.0)],
        "bessel_y0": [nan, nan, -inf, nan, nan],
        "modified_bessel_k0": [0.0, nan, inf, nan, nan],
        "scaled_modified_bessel_k1": [0.0, nan, inf, nan, nan],
        "i0e": [0.0, 0.0, 1.0, nan, sp.i0e(-1.0)],
        "i1": [nan, nan, 0.0, nan, sp.i1(-1.0)],
        "airy_ai": [nan, nan, sp.airy(0.0)[0], nan, sp.airy(-1.0)[0]],
        "ndtri": [nan, nan, -inf, nan, nan],
    }
    for name, want in rows.items():
        np.testing.assert_allclose(getattr(kiln.special, name)(x).numpy(), want, rtol=1e-15, err_msg=name)


def test_ndtri_over_the_unit_interval():
    p = np.concatenate([RNG.uniform(0, 1, 4000), 10.0 ** -np.arange(1, 300, 3), 1 - 10.0 ** -np.arange(1, 16),
                        [0.5, 0.0, 1.0]])
    e = err_ulps(kiln.special.ndtri(t(p)).numpy(), sp.ndtri(p))
    assert e.max() <= 8, f"{e.max():.3g} ulps at p = {p[np.argmax(e)]!r}"


def test_zeta_and_polygamma():
    x, q = RNG.uniform(1.01, 40, 2000), RNG.uniform(0.05, 30, 2000)
    e = err_ulps(kiln.special.zeta(t(x), t(q)).numpy(), sp.zeta(x, q))
    assert e.max() <= 16, f"{e.max():.3g} ulps"
    # Poles, negative q with integer x, x < 1, scalars on either side.
    xs = np.array([2.0, 3.0, 4.0, 1.0, 0.5, 2.0, 2.0, 100.0])
    qs = np.array([-0.5, -1.5, -2.5, 1.0, 1.0, 0.0, -3.0, 0.5])
    np.testing.assert_allclose(kiln.special.zeta(t(xs), t(qs)).numpy(), sp.zeta(xs, qs), rtol=1e-13)
    np.testing.assert_allclose(kiln.special.zeta(2.0, t(q[:5])).numpy(), sp.zeta(2.0, q[:5]), rtol=1e-14)
    np.testing.assert_allclose(kiln.special.zeta(t(x[:5]), 1.0).numpy(), sp.zeta(x[:5], 1.0), rtol=1e-14)
    xv = np.concatenate([RNG.uniform(0.05, 30, 500), RNG.uniform(-5, -0.05, 200)])
    for n in (0, 1, 2, 5, 12):
        got = kiln.special.polygamma(n, t(xv)).numpy()
        want = sp.polygamma(n, xv)
        # Near a root of polygamma on the negative axis the result cancels:
        # relative to max(|want|, 1) there.
        e = err_ulps(got, want, floor=1.0)
        assert e.max() <= 2048, f"polygamma({n}) {e.max():.3g} ulps at {xv[np.argmax(e)]!r}"
        np.testing.assert_allclose(kiln.polygamma(n, t(xv[:5])).numpy(), want[:5], rtol=1e-12)
        np.testing.assert_allclose(t(xv[:5]).polygamma(n).numpy(), want[:5], rtol=1e-12)
    with pytest.raises(ValueError, match="negative n"):
        kiln.special.polygamma(-1, t(xv))


def test_incomplete_gamma():
    a, x = RNG.uniform(0.01, 60, 4000), RNG.uniform(0, 100, 4000)
    for fn, ref in ((kiln.special.gammainc, sp.gammainc), (kiln.special.gammaincc, sp.gammaincc)):
        got, want = fn(t(a), t(x)).numpy(), ref(a, x)
        e = err_ulps(got, want)[want > 1e-290]
        # x^a e^-x / Gamma(a) has condition number ~a in a and x: for a up to
        # 60 the error grows to a few hundred ulps (SciPy's uses the same
        # prefactor form below its large-a branch).
        assert np.median(e) <= 4 and e.max() <= 1024, f"{ref.__name__}: median {np.median(e):.2g}, max {e.max():.3g}"
    ea, ex = np.array([0.0, 0.0, 1.0, 1.0, np.inf, 2.0, -1.0]), np.array([0.0, 1.0, 0.0, np.inf, 1.0, np.nan, 1.0])
    np.testing.assert_array_equal(kiln.special.gammainc(t(ea), t(ex)).numpy(), sp.gammainc(ea, ex))
    np.testing.assert_array_equal(kiln.special.gammaincc(t(ea), t(ex)).numpy(), sp.gammaincc(ea, ex))
    np.testing.assert_allclose(kiln.igamma(t(a[:9]), t(x[:9])).numpy(), sp.gammainc(a[:9], x[:9]), rtol=1e-12)
    np.testing.assert_allclose(t(a[:9]).igammac(t(x[:9])).numpy(), sp.gammaincc(a[:9], x[:9]), rtol=1e-12)
    y = t(a[:9].copy())
    assert y.igamma_(t(x[:9])) is y
    np.testing.assert_allclose(y.numpy(), sp.gammainc(a[:9], x[:9]), rtol=1e-12)


def test_dtypes_out_and_errors():
    x32 = t(np.array([0.5, 1.5], dtype=np.float32))
    assert kiln.special.bessel_j0(x32).dtype == kiln.float32
    np.testing.assert_allclose(kiln.special.bessel_j0(x32).numpy(), sp.j0([0.5, 1.5]), rtol=1e-6)
    assert kiln.special.i1(t(np.array([1, 2]))).dtype == kiln.float32  # integers compute in float32
    assert kiln.special.i1e(kiln.ones(3, dtype=kiln.bfloat16)).dtype == kiln.bfloat16
    assert kiln.special.zeta(t(np.array([2.0], dtype=np.float32)), 1.0).dtype == kiln.float32
    out = kiln.empty(2, dtype=kiln.float64)
    assert kiln.special.airy_ai(t(np.array([0.0, 1.0])), out=out) is out
    np.testing.assert_allclose(out.numpy(), sp.airy([0.0, 1.0])[0], rtol=1e-15)
    with pytest.raises(TypeError, match="unsupported dtype"):
        kiln.special.bessel_j0(t(np.array([1 + 1j])))
    with pytest.raises(TypeError, match="two numbers"):
        kiln.special.zeta(2.0, 1.0)
    with pytest.raises(TypeError, match="can't be cast"):
        t(np.array([1, 2])).igamma_(t(np.array([1.0, 1.0])))


def fd(f, xn, h=1e-6):
    return (f(t(xn + h)).numpy() - f(t(xn - h)).numpy()) / (2 * h)


@pytest.mark.parametrize("name,f", [("i0e", kiln.special.i0e), ("i1", kiln.special.i1), ("i1e", kiln.special.i1e),
                                    ("polygamma2", lambda x: kiln.special.polygamma(2, x)),
                                    ("digamma", kiln.digamma), ("i0", kiln.i0)])
def test_derivatives_and_second_derivatives(name, f):
    xn = RNG.uniform(0.3, 4, 7) * RNG.choice([-1, 1], 7) if name not in ("polygamma2", "digamma") else \
        RNG.uniform(0.3, 4, 7)
    x = kiln.tensor(xn, requires_grad=True)
    (g,) = kiln.autograd.grad(f(x).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), fd(f, xn), rtol=1e-6, atol=1e-8)
    # digamma and i0 now differentiate twice (through polygamma(1) and i1).
    (h,) = kiln.autograd.grad(g.sum(), x)

    def first(v):
        tv = kiln.tensor(v, requires_grad=True)
        (gv,) = kiln.autograd.grad(f(tv).sum(), tv)
        return gv

    np.testing.assert_allclose(h.numpy(), fd(first, xn), rtol=1e-5, atol=1e-7)


def test_no_derivative_yet_raises():
    x = kiln.tensor(np.array([1.0, 2.0]), requires_grad=True)
    with pytest.raises(NotImplementedError, match="no derivative"):
        kiln.special.bessel_j0(x)
