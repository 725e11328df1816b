"""The added unary ops (acos ... sinh, erf, erfc, erfinv, lgamma, digamma, log10,
sinc, deg2rad, rad2deg, i0, logit, frac, square, sgn, signbit, isposinf, isneginf,
isreal, positive, nan_to_num, fix, the arc* aliases and kiln.special entries)
against NumPy/SciPy in float64 (and torch when installed), over float dtypes
incl. bfloat16, integer/bool promotion, special values, empty, 0-dim and
non-contiguous inputs, out= and in-place forms, and errors."""
import ml_dtypes
import numpy as np
import pytest
import scipy.special as sp

import kiln

BF16 = ml_dtypes.bfloat16
FLOAT_DTYPES = [np.float32, np.float64, BF16, np.float16]
# rtol: a few ulp of float32/float64; one ulp of the narrow types (computed
# wider, rounded once); atol for results near zero.
TOL = {
    np.dtype(np.float32): (4e-6, 1e-6),
    np.dtype(np.float64): (1e-13, 1e-14),
    np.dtype(BF16): (2**-7, 2**-7),
    np.dtype(np.float16): (2**-10, 2**-10),
}


def digamma_ref(x):
    # SciPy gives NaN at -0 and -inf at +0 only since 1.x; torch: digamma(+-0) = -+inf.
    y = sp.digamma(x)
    return np.where(x == 0, np.copysign(np.inf, -np.where(x == 0, np.copysign(1.0, x), 1.0)), y)


def logit_ref(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(x / (1 - x))


# name -> (float64 reference, input low, input high, special values)
EDGE = [0.0, -0.0, np.inf, -np.inf, np.nan]
FLOAT_OPS = {
    "acos": (np.arccos, -1, 1, EDGE + [1.0, -1.0, 1.5]),
    "asin": (np.arcsin, -1, 1, EDGE + [1.0, -1.0, -1.5]),
    "atan": (np.arctan, -20, 20, EDGE),
    "acosh": (np.arccosh, 1, 20, EDGE + [1.0, 0.5]),
    "asinh": (np.arcsinh, -20, 20, EDGE),
    "atanh": (np.arctanh, -1, 1, EDGE + [1.0, -1.0, 2.0]),
    "cosh": (np.cosh, -10, 10, EDGE),
    "sinh": (np.sinh, -10, 10, EDGE),
    "erf": (sp.erf, -4, 4, EDGE),
    "erfc": (sp.erfc, -3, 9, EDGE),
    "erfinv": (sp.erfinv, -1, 1, EDGE + [1.0, -1.0, 1.5, 0.999999]),
    "lgamma": (lambda x: np.where(np.isinf(x), np.inf, sp.gammaln(x)),  # torch: lgamma(-inf) = inf
                -5, 20, EDGE + [1.0, 2.0, -1.0, -2.0]),
    "digamma": (digamma_ref, -5, 20, EDGE + [1.0, -1.0, -2.0]),
    "log10": (np.log10, 0, 1e4, EDGE + [-1.0, 1.0, 10.0]),
    "sinc": (np.sinc, -8, 8, EDGE + [1.0, -2.0]),
    "deg2rad": (np.deg2rad, -720, 720, EDGE),
    "rad2deg": (np.rad2deg, -7, 7, EDGE),
    "i0": (lambda x: np.where(np.isinf(x), np.inf, sp.i0(x)), -10, 10, EDGE),  # torch: i0(+-inf) = inf
    "logit": (logit_ref, 0, 1, EDGE + [1.0, 0.5, -0.5]),
    "frac": (lambda x: np.where(np.isinf(x), np.nan, x - np.trunc(x)), -100, 100, EDGE + [2.5, -2.5]),
}


def inputs(dtype, lo, hi, specials, rng, n=257):
    x = rng.uniform(lo, hi, n)
    x[3 : 3 + len(specials)] = specials
    return x.astype(dtype)


def check(got, x, ref, dtype, what):
    got = np.asarray(got)
    assert got.dtype == np.dtype(dtype), what
    with np.errstate(all="ignore"):
        want = np.asarray(ref(np.asarray(x).astype(np.float64))).astype(dtype).astype(np.float64)
    rtol, atol = TOL[np.dtype(dtype)]
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", sorted(FLOAT_OPS))
def test_float_ops(name, dtype):
    rng = np.random.default_rng(7)
    ref, lo, hi, specials = FLOAT_OPS[name]
    fn = getattr(kiln, name)
    x = inputs(dtype, lo, hi, specials, rng)
    check(fn(kiln.from_numpy(x)), x, ref, dtype, name)
    # Tensor method, non-contiguous (strided slice, transpose), empty and 0-dim.
    check(getattr(kiln.from_numpy(x), name)(), x, ref, dtype, name + " method")
    xs = x[::3]
    check(fn(kiln.from_numpy(x)[::3]), xs, ref, dtype, name + " strided")
    x2 = x[:256].reshape(16, 16)
    check(fn(kiln.from_numpy(x2).t()), x2.T, ref, dtype, name + " transposed")
    assert np.asarray(fn(kiln.from_numpy(x[:0]))).shape == (0,)
    check(fn(kiln.from_numpy(x[5:6].reshape(()))), x[5:6].reshape(()), ref, dtype, name + " 0-dim")
    # In place: same object back, values as the functional form.
    t = kiln.from_numpy(x.copy())
    assert getattr(kiln, name + "_")(t) is t
    check(t, x, ref, dtype, name + "_")
    t = kiln.from_numpy(x.copy())
    assert getattr(t, name + "_")() is t
    # out=: the out object is returned and holds the result.
    out = kiln.empty(list(x.shape), dtype=kiln.from_numpy(x).dtype)
    assert fn(kiln.from_numpy(x), out=out) is out
    check(out, x, ref, dtype, name + " out=")


@pytest.mark.parametrize("name", sorted(FLOAT_OPS))
def test_integer_and_bool_inputs_give_float32(name):
    ref = FLOAT_OPS[name][0]
    fn = getattr(kiln, name)
    for dt in (np.int32, np.int64, np.uint8, np.bool_):
        if name == "frac":
            with pytest.raises(TypeError, match=r"\[frac\] unsupported dtype"):
                fn(kiln.from_numpy(np.array([1, 0], dtype=dt)))
            continue
        x = np.array([0, 1, 1, 0], dtype=dt) if dt == np.bool_ else np.array([0, 1, 2, 3], dtype=dt)
        got = fn(kiln.from_numpy(x))
        check(got, x, ref, np.float32, f"{name} {np.dtype(dt).name}")
        with pytest.raises(TypeError, match="can't be cast"):
            getattr(kiln, name + "_")(kiln.from_numpy(x.copy()))


COMPLEX_OPS = {"acos": np.arccos, "asin": np.arcsin, "atan": np.arctan, "acosh": np.arccosh,
               "asinh": np.arcsinh, "atanh": np.arctanh, "cosh": np.cosh, "sinh": np.sinh, "log10": np.log10}


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("name", sorted(COMPLEX_OPS))
def test_complex(name, dtype):
    rng = np.random.default_rng(3)
    z = (rng.uniform(-2, 2, 64) + 1j * rng.uniform(-2, 2, 64)).astype(dtype)
    got = np.asarray(getattr(kiln, name)(kiln.from_numpy(z)))
    assert got.dtype == dtype
    rtol = 1e-5 if dtype == np.complex64 else 1e-12
    np.testing.assert_allclose(got, COMPLEX_OPS[name](z.astype(np.complex128)), rtol=rtol, atol=rtol)


def test_complex_rejected_where_torch_does():
    z = kiln.from_numpy(np.array([1 + 1j], dtype=np.complex64))
    for name in ("erf", "erfinv", "digamma", "lgamma", "i0", "frac", "logit", "signbit", "isposinf", "nan_to_num"):
        with pytest.raises(TypeError, match=rf"\[{name}\] unsupported dtype complex64"):
            getattr(kiln, name)(z)
    with pytest.raises(TypeError, match="unsupported dtype float8_e4m3fn"):
        kiln.erf(kiln.from_numpy(np.array([1.0], np.float32)).to(kiln.float8_e4m3fn))


def test_aliases_and_special_namespace():
    x = np.linspace(-0.9, 0.9, 11)
    t = kiln.from_numpy(x)
    for alias, name in [("arccos", "acos"), ("arcsin", "asin"), ("arctan", "atan"), ("arcsinh", "asinh"),
                        ("arctanh", "atanh")]:
        np.testing.assert_array_equal(np.asarray(getattr(kiln, alias)(t)), np.asarray(getattr(kiln, name)(t)))
        np.testing.assert_array_equal(np.asarray(getattr(t, alias)()), np.asarray(getattr(kiln, name)(t)))
        u = kiln.from_numpy(x.copy())
        assert getattr(u, alias + "_")() is u
    np.testing.assert_allclose(np.asarray(kiln.arccosh(kiln.from_numpy(x + 2))), np.arccosh(x + 2), rtol=1e-13)
    # fix is trunc, as module function, method and in place.
    y = np.array([-2.5, -0.5, 0.5, 2.5])
    np.testing.assert_array_equal(np.asarray(kiln.from_numpy(y).fix()), np.trunc(y))
    u = kiln.from_numpy(y.copy())
    assert kiln.fix_(u) is u
    np.testing.assert_array_equal(np.asarray(u), np.trunc(y))
    import kiln.special as ks

    p = np.linspace(0.05, 0.95, 7)
    tp = kiln.from_numpy(p)
    np.testing.assert_allclose(np.asarray(ks.erf(tp)), sp.erf(p), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(ks.erfc(tp)), sp.erfc(p), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(ks.erfinv(tp)), sp.erfinv(p), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(ks.logit(tp)), sp.logit(p), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(np.asarray(ks.logit(tp, eps=0.2)), sp.logit(np.clip(p, 0.2, 0.8)), rtol=1e-13,
                               atol=1e-15)
    np.testing.assert_allclose(np.asarray(ks.i0(tp)), sp.i0(p), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(ks.sinc(tp)), np.sinc(p), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(ks.digamma(tp)), sp.digamma(p), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(ks.psi(tp)), sp.digamma(p), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(ks.gammaln(tp)), sp.gammaln(p), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(ks.expit(tp)), sp.expit(p), rtol=1e-13)


def test_logit_eps_clamps():
    x = np.array([-1.0, 0.0, 0.1, 0.5, 0.95, 1.0, 2.0, np.nan])
    got = np.asarray(kiln.logit(kiln.from_numpy(x), eps=0.25))
    np.testing.assert_allclose(got, sp.logit(np.clip(x, 0.25, 0.75)), rtol=1e-14, equal_nan=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_allclose(np.asarray(kiln.logit(kiln.from_numpy(x))), sp.logit(x), rtol=1e-14,
                                   equal_nan=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, BF16, np.float16, np.int32, np.int64, np.uint8,
                                   np.int8])
def test_square_sgn_keep_dtype(dtype):
    x = np.array([-3, -1, 0, 1, 2, 11], dtype=np.float64)
    if np.dtype(dtype).kind == "u":
        x = np.abs(x)
    x = x.astype(dtype)
    t = kiln.from_numpy(x)
    sq = np.asarray(kiln.square(t))
    assert sq.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(sq.astype(np.float64), (x.astype(np.float64) ** 2).astype(dtype).astype(np.float64))
    sg = np.asarray(kiln.sgn(t))
    assert sg.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(sg.astype(np.float64), np.sign(x.astype(np.float64)))
    u = kiln.from_numpy(x.copy())
    assert u.square_() is u and u.sgn_() is u


def test_square_wraps_and_bool():
    x = np.array([200, 16, -16], dtype=np.int16)
    np.testing.assert_array_equal(np.asarray(kiln.square(kiln.from_numpy(x))), x * x)  # wraps as NumPy
    b = np.asarray(kiln.square(kiln.from_numpy(np.array([True, False]))))
    assert b.dtype == np.int64 and list(b) == [1, 0]
    with pytest.raises(TypeError, match="can't be cast"):
        kiln.square_(kiln.from_numpy(np.array([True])))


def test_sgn_complex_and_sign_of_nan():
    z = np.array([3 + 4j, 0, -2j, 1e-30 + 0j], dtype=np.complex128)
    want = np.where(z == 0, 0, z / np.where(z == 0, 1, np.abs(z)))
    np.testing.assert_allclose(np.asarray(kiln.sgn(kiln.from_numpy(z))), want, rtol=1e-15)
    x = np.array([np.nan, -0.0, np.inf, -np.inf], dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(kiln.sgn(kiln.from_numpy(x))), [0, 0, 1, -1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, BF16, np.float16])
def test_predicates(dtype):
    x = np.array([0.0, -0.0, 1.0, -2.0, np.inf, -np.inf, np.nan, -np.nan], dtype=np.float64)
    xd = x.astype(dtype)
    t = kiln.from_numpy(xd)
    np.testing.assert_array_equal(np.asarray(kiln.signbit(t)), np.signbit(x))
    np.testing.assert_array_equal(np.asarray(t.signbit()), np.signbit(x))
    np.testing.assert_array_equal(np.asarray(kiln.isposinf(t)), np.isposinf(x))
    np.testing.assert_array_equal(np.asarray(kiln.isneginf(t)), np.isneginf(x))
    np.testing.assert_array_equal(np.asarray(kiln.isreal(t)), np.ones(8, bool))
    out = kiln.empty([8], dtype=kiln.bool)
    assert kiln.signbit(t, out=out) is out
    np.testing.assert_array_equal(np.asarray(out), np.signbit(x))
    # Non-contiguous and empty.
    np.testing.assert_array_equal(np.asarray(kiln.isposinf(t[::2])), np.isposinf(x[::2]))
    assert np.asarray(kiln.signbit(t[:0])).shape == (0,)


def test_predicates_of_integers_and_complex():
    i = kiln.from_numpy(np.array([-3, 0, 5], dtype=np.int64))
    np.testing.assert_array_equal(np.asarray(kiln.signbit(i)), [True, False, False])
    np.testing.assert_array_equal(np.asarray(kiln.isposinf(i)), [False] * 3)
    np.testing.assert_array_equal(np.asarray(kiln.isneginf(kiln.from_numpy(np.array([True])))), [False])
    z = np.array([1 + 0j, 1j, np.nan + 0j, 0j], dtype=np.complex64)
    np.testing.assert_array_equal(np.asarray(kiln.isreal(kiln.from_numpy(z))), np.isreal(z))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, BF16, np.float16])
def test_nan_to_num(dtype):
    x = np.array([np.nan, np.inf, -np.inf, 1.5, -0.0], dtype=dtype)
    t = kiln.from_numpy(x)
    got = np.asarray(kiln.nan_to_num(t))
    want = np.nan_to_num(x.astype(np.float64), posinf=float(np.finfo(dtype).max),
                         neginf=float(np.finfo(dtype).min)).astype(dtype)
    np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))
    got = np.asarray(t.nan_to_num(nan=2.0, posinf=9.0, neginf=-9.0))
    np.testing.assert_array_equal(got.astype(np.float64), [2.0, 9.0, -9.0, 1.5, -0.0])
    u = kiln.from_numpy(x.copy())
    assert kiln.nan_to_num_(u, nan=1.0) is u
    assert np.asarray(u).astype(np.float64)[0] == 1.0
    out = kiln.empty([5], dtype=t.dtype)
    assert kiln.nan_to_num(t, out=out) is out
    np.testing.assert_array_equal(np.asarray(out).astype(np.float64), want.astype(np.float64))


def test_nan_to_num_integers_copy():
    x = np.array([1, -2, 3], dtype=np.int32)
    t = kiln.from_numpy(x)
    r = kiln.nan_to_num(t)
    np.testing.assert_array_equal(np.asarray(r), x)
    assert r is not t


def test_positive():
    t = kiln.from_numpy(np.array([1.0, -2.0]))
    assert kiln.positive(t) is t and t.positive() is t
    with pytest.raises(TypeError, match=r"\[positive\]"):
        kiln.positive(kiln.from_numpy(np.array([True])))


def test_out_errors():
    t = kiln.from_numpy(np.array([0.5, 0.25], dtype=np.float32))
    with pytest.raises(ValueError, match=r"\[erf\] out= has shape \[3\], expected \[2\]"):
        kiln.erf(t, out=kiln.empty([3]))
    with pytest.raises(TypeError, match=r"\[erf\] result type float32 can't be cast"):
        kiln.erf(t, out=kiln.empty([2], dtype=kiln.int64))
    with pytest.raises(TypeError, match="out="):
        kiln.erf(t, out=np.zeros(2))



@pytest.mark.parametrize("name", sorted(FLOAT_OPS) + ["square", "sgn", "signbit", "isposinf", "isneginf",
                                                     "nan_to_num"])
def test_against_torch(name):
    torch = pytest.importorskip("torch")
    ref, lo, hi, specials = FLOAT_OPS.get(name, (None, -5, 5, EDGE))
    x = inputs(np.float32, lo, hi, specials, np.random.default_rng(11))
    got = np.asarray(getattr(kiln, name)(kiln.from_numpy(x)))
    want = getattr(torch, name)(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=4e-6, atol=1e-6, equal_nan=True)


# ---- binary ops -------------------------------------------------------------------

def _logaddexp2(a, b):
    return np.logaddexp2(a, b)


# name -> (NumPy/SciPy reference in float64, low, high)
BINARY_FLOAT_OPS = {
    "hypot": (np.hypot, -5, 5),
    "logaddexp": (np.logaddexp, -20, 20),
    "logaddexp2": (_logaddexp2, -20, 20),
    "xlogy": (lambda a, b: np.where(np.isnan(b), np.nan, sp.xlogy(a, b)), 0, 5),
    "fmax": (np.fmax, -5, 5),
    "fmin": (np.fmin, -5, 5),
    "ldexp": (lambda a, b: a * np.exp2(b), -5, 5),
    "float_power": (np.float_power, 0.1, 3),
}
BEDGE = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0])


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", sorted(BINARY_FLOAT_OPS))
def test_binary_float_ops(name, dtype):
    ref, lo, hi = BINARY_FLOAT_OPS[name]
    rng = np.random.default_rng(5)
    a = rng.uniform(lo, hi, (6, 37))
    b = rng.uniform(lo, hi, (6, 37))
    if name != "float_power":
        a[0, :36] = np.repeat(BEDGE, 6)
        b[0, :36] = np.tile(BEDGE, 6)
    if name == "ldexp":
        b = np.round(b)
    a, b = a.astype(dtype), b.astype(dtype)
    rdt = np.float64 if name == "float_power" else dtype
    fn = getattr(kiln, name)
    ta, tb = kiln.from_numpy(a), kiln.from_numpy(b)
    with np.errstate(all="ignore"):
        want = lambda x, y: ref(np.asarray(x).astype(np.float64), np.asarray(y).astype(np.float64))
        check(fn(ta, tb), a, lambda _: want(a, b), rdt, name)
        # Broadcast [6, 1] x [1, 37], non-contiguous, a Python number, a method.
        check(fn(ta[:, :1], tb[:1, :]), a[:, :1], lambda _: want(a[:, :1], b[:1, :]), rdt, name + " broadcast")
        check(fn(ta.t(), tb.t()), a.T, lambda _: want(a.T, b.T), rdt, name + " transposed")
        check(getattr(ta, name)(2.0), a, lambda _: want(a, np.full_like(a, 2.0)), rdt, name + " scalar")
        check(fn(ta[:0], tb[:0]), a[:0], lambda _: want(a[:0], b[:0]), rdt, name + " empty")
        if rdt == dtype:
            t = kiln.from_numpy(a.copy())
            assert getattr(t, name + "_")(tb) is t
            check(t, a, lambda _: want(a, b), dtype, name + "_")
        out = kiln.empty([6, 37], dtype=kiln.from_numpy(np.zeros(1, rdt)).dtype)
        assert fn(ta, tb, out=out) is out
        check(out, a, lambda _: want(a, b), rdt, name + " out=")


@pytest.mark.parametrize("name", ["hypot", "logaddexp", "logaddexp2", "nextafter"])
def test_binary_float_only_ops_reject_integers(name):
    i = kiln.from_numpy(np.array([1, 2], dtype=np.int64))
    with pytest.raises(TypeError, match=rf"\[{name}\]"):
        getattr(kiln, name)(i, i)


def test_binary_integer_promotion():
    i = kiln.from_numpy(np.array([0, 1, 2, 8], dtype=np.int64))
    x = np.asarray(kiln.xlogy(i, i))
    assert x.dtype == np.float32
    np.testing.assert_allclose(x, sp.xlogy([0, 1, 2, 8], [0, 1, 2, 8]), rtol=1e-6)
    ld = np.asarray(kiln.ldexp(kiln.from_numpy(np.array([1.5, -2.0])), kiln.from_numpy(np.array([3, -2]))))
    np.testing.assert_array_equal(ld, np.ldexp([1.5, -2.0], [3, -2]))
    fm = np.asarray(kiln.fmax(i, kiln.from_numpy(np.array([3, 0, 5, 1], dtype=np.int32))))
    assert fm.dtype == np.int64 and list(fm) == [3, 1, 5, 8]
    fp = np.asarray(kiln.float_power(i, 2))
    assert fp.dtype == np.float64 and list(fp) == [0, 1, 4, 64]
    fc = np.asarray(kiln.float_power(kiln.from_numpy(np.array([1j, 2 + 0j], np.complex64)), 2))
    assert fc.dtype == np.complex128
    np.testing.assert_allclose(fc, np.array([1j, 2 + 0j]) ** 2, atol=1e-15)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8])
def test_gcd_lcm(dtype):
    rng = np.random.default_rng(1)
    lo = 0 if np.dtype(dtype).kind == "u" else -60
    a = rng.integers(lo, 60, 100).astype(dtype)
    b = rng.integers(lo, 60, 100).astype(dtype)
    a[:3] = 0
    b[1] = 0
    np.testing.assert_array_equal(np.asarray(kiln.gcd(kiln.from_numpy(a), kiln.from_numpy(b))), np.gcd(a, b))
    if np.dtype(dtype).itemsize >= 4:
        np.testing.assert_array_equal(np.asarray(kiln.lcm(kiln.from_numpy(a), kiln.from_numpy(b))), np.lcm(a, b))
    t = kiln.from_numpy(a.copy())
    assert t.gcd_(kiln.from_numpy(b)) is t
    np.testing.assert_array_equal(np.asarray(t), np.gcd(a, b))
    with pytest.raises(TypeError, match=r"\[gcd\]"):
        kiln.gcd(kiln.from_numpy(np.array([1.0])), kiln.from_numpy(np.array([2.0])))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_nextafter(dtype):
    x = np.array([0.0, -0.0, 1.0, 1.0, -1.0, 2.0, np.inf, np.nan, 1.0, 0.0], dtype=dtype)
    y = np.array([1.0, -1.0, 2.0, 0.0, 0.0, 2.0, 0.0, 1.0, np.nan, -1.0], dtype=dtype)
    got = np.asarray(kiln.nextafter(kiln.from_numpy(x), kiln.from_numpy(y)))
    want = np.nextafter(x, y)  # NumPy and ml_dtypes step in the dtype itself
    np.testing.assert_array_equal(got.view(np.uint16 if x.itemsize == 2 else got.dtype)[~np.isnan(want.astype(float))],
                                  want.view(np.uint16 if x.itemsize == 2 else want.dtype)[~np.isnan(want.astype(float))])
    assert np.isnan(got.astype(float)[7]) and np.isnan(got.astype(float)[8])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int64, np.complex128])
def test_isclose_allclose_equal(dtype):
    a = np.array([1.0, 1.0 + 1e-7, 2.0, np.inf, -np.inf, np.nan, 0.0, 100.0])
    b = np.array([1.0, 1.0, 2.1, np.inf, np.inf, np.nan, 1e-9, 100.001])
    if np.dtype(dtype).kind in "iu":
        a, b = np.array([1, 2, 3, 100]), np.array([1, 3, 3, 101])
    a, b = a.astype(dtype), b.astype(dtype)
    ta, tb = kiln.from_numpy(a), kiln.from_numpy(b)
    for kw in ({}, {"rtol": 1e-3, "atol": 0.5}, {"equal_nan": True}):
        np.testing.assert_array_equal(np.asarray(kiln.isclose(ta, tb, **kw)), np.isclose(a, b, **kw), err_msg=str(kw))
        assert kiln.allclose(ta, tb, **kw) == np.allclose(a, b, **kw)
        np.testing.assert_array_equal(np.asarray(ta.isclose(tb, **kw)), np.isclose(a, b, **kw))
    assert kiln.allclose(ta, ta, equal_nan=True) and ta.allclose(ta, equal_nan=True)
    assert kiln.equal(ta, kiln.from_numpy(a.copy())) == (not np.isnan(a.astype(np.complex128)).any())
    assert not kiln.equal(ta, tb) and not ta.equal(tb)
    assert not kiln.equal(ta, ta[:2])
    # Broadcast and non-contiguous.
    np.testing.assert_array_equal(np.asarray(kiln.isclose(ta[::2], tb[:1])), np.isclose(a[::2], b[:1]))


def test_isclose_errors():
    f = kiln.from_numpy(np.array([1.0], np.float32))
    d = kiln.from_numpy(np.array([1.0], np.float64))
    with pytest.raises(TypeError, match=r"\[isclose\] expected both inputs to have the same dtype"):
        kiln.isclose(f, d)
    with pytest.raises(ValueError, match=r"\[isclose\] rtol and atol must be non-negative"):
        kiln.isclose(f, f, rtol=-1.0)
    with pytest.raises(ValueError, match="shape"):
        kiln.isclose(kiln.from_numpy(np.zeros(3)), kiln.from_numpy(np.zeros(2)))


def test_special_xlogy():
    import kiln.special as ks

    a, b = np.array([0.0, 1.0, 2.0]), np.array([0.0, 2.0, 0.5])
    np.testing.assert_allclose(np.asarray(ks.xlogy(kiln.from_numpy(a), kiln.from_numpy(b))), sp.xlogy(a, b))


@pytest.mark.parametrize("name", sorted(BINARY_FLOAT_OPS) + ["nextafter", "gcd"])
def test_binary_against_torch(name):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    if name == "gcd":
        a, b = rng.integers(-50, 50, 64), rng.integers(-50, 50, 64)
    else:
        lo, hi = BINARY_FLOAT_OPS.get(name, (None, -3, 3))[1:]
        a, b = rng.uniform(lo, hi, 64).astype(np.float32), rng.uniform(lo, hi, 64).astype(np.float32)
    got = np.asarray(getattr(kiln, name)(kiln.from_numpy(a), kiln.from_numpy(b)))
    want = getattr(torch, name)(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    np.testing.assert_allclose(got, want, rtol=4e-6, atol=1e-6, equal_nan=True)


def test_special_softmax_family_are_the_same_ops():
    import kiln.special as ks

    x = np.array([[1.0, 2.0, 3.0], [0.0, -1.0, 5.0]])
    t = kiln.from_numpy(x)
    np.testing.assert_allclose(np.asarray(ks.softmax(t, 1)), sp.softmax(x, axis=1), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(ks.log_softmax(t, 1)), sp.log_softmax(x, axis=1), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(ks.logsumexp(t, 1)), sp.logsumexp(x, axis=1), rtol=1e-13)
