"""Unary elementwise ops against NumPy/SciPy references (float64), over float dtypes
incl. bfloat16 (ml_dtypes), integer/bool promotion, non-contiguous, empty and 0-dim
inputs, frexp, Laguerre polynomials, and bad inputs."""
import math

import ml_dtypes
import numpy as np
import pytest
import scipy.special as sp

import kiln

BF16 = ml_dtypes.bfloat16
FLOAT_DTYPES = [np.float32, np.float64, BF16, np.float16]
# rtol ~ a few ulp for float32/float64; one ulp for the narrow types (computed in
# float32, rounded once); atol covers subnormal results.
TOL = {
    np.dtype(np.float32): (2e-6, 1e-44),
    np.dtype(np.float64): (1e-13, 1e-300),
    np.dtype(BF16): (2**-7, 1e-39),
    np.dtype(np.float16): (2**-10, 2**-24),
}
SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -3.0, 1e-40, 1e-30, 1e30, -1e30, np.inf, -np.inf, np.nan]


def sigmoid(x):
    with np.errstate(over="ignore"):
        return np.where(x >= 0, 1 / (1 + np.exp(-np.abs(x))), np.exp(-np.abs(x)) / (1 + np.exp(-np.abs(x))))


def gelu_tanh(x):
    u = math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)
    return x * sigmoid(2 * u)  # == 0.5 x (1 + tanh(u)), without cancellation


# name -> (kiln function, float64 reference, random input range)
FLOAT_OPS = {
    "exp": (kiln.exp, np.exp, 30),
    "exp2": (kiln.exp2, np.exp2, 30),
    "expm1": (kiln.expm1, np.expm1, 30),
    "log": (kiln.log, np.log, 1e3),
    "log2": (kiln.log2, np.log2, 1e3),
    "log1p": (kiln.log1p, np.log1p, 2),
    "sqrt": (kiln.sqrt, np.sqrt, 1e4),
    "rsqrt": (kiln.rsqrt, lambda x: 1 / np.sqrt(x), 1e4),
    "reciprocal": (kiln.reciprocal, lambda x: 1 / x, 1e3),
    "sin": (kiln.sin, np.sin, 50),
    "cos": (kiln.cos, np.cos, 50),
    "tan": (kiln.tan, np.tan, 5),
    "tanh": (kiln.tanh, np.tanh, 10),
    "sigmoid": (kiln.sigmoid, sigmoid, 30),
    "silu": (kiln.silu, lambda x: x * sigmoid(x), 30),
    "gelu": (kiln.gelu, lambda x: 0.5 * x * sp.erfc(-x / math.sqrt(2)), 8),
    "gelu_tanh": (lambda t: kiln.gelu(t, approximate="tanh"), gelu_tanh, 8),
}


def as_np(t):
    return np.asarray(t)


def inputs(dtype, rng, scale, n=1001):
    x = np.concatenate([np.array(SPECIALS), rng.uniform(-scale, scale, n)])
    with np.errstate(over="ignore"):
        return x.astype(dtype)


def check(got, x, ref_fn, dtype, name):
    got = as_np(got)
    assert got.dtype == np.dtype(dtype), (name, got.dtype)
    xd = x.astype(np.float64)
    with np.errstate(all="ignore"):
        want = ref_fn(xd)
    rtol, atol = TOL[np.dtype(dtype)]
    extra_rtol = 0.0
    if name.startswith("gelu_tanh") and np.dtype(dtype) != np.float64:
        # float32 rounding of the argument u is amplified by |2u| in the tail.
        extra_rtol = 4e-7 * np.abs(2 * math.sqrt(2 / math.pi) * (xd + 0.044715 * xd**3))
    with np.errstate(over="ignore"):
        want = want.astype(dtype).astype(np.float64)
    g = got.astype(np.float64)
    same = (g == want) | (np.isnan(g) & np.isnan(want))
    with np.errstate(invalid="ignore"):
        near = np.abs(g - want) <= atol + (2 * rtol + extra_rtol) * np.abs(want)
    bad = ~(same | near)
    assert not bad.any(), f"{name} {np.dtype(dtype)}: x={xd[bad][:5]} got={g[bad][:5]} want={want[bad][:5]}"


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", list(FLOAT_OPS))
def test_float_ops(name, dtype, rng):
    fn, ref, scale = FLOAT_OPS[name]
    x = inputs(dtype, rng, scale)
    check(fn(kiln.from_numpy(x)), x, ref, dtype, name)
    # Non-contiguous: a strided slice (scalar loops) and a transpose (dense: the SIMD
    # kernels over its memory order, the result laid out as the input).
    xs = x[1::3]
    check(fn(kiln.from_numpy(xs)), xs, ref, dtype, name + " strided")
    x2 = x[: (x.size // 2) * 2].reshape(-1, 2)
    t = kiln.from_numpy(x2).t()
    check(fn(t), x2.T, ref, dtype, name + " transposed")
    # Tensor method and in-place forms.
    if name == "gelu_tanh":  # not a method name
        return
    y = kiln.from_numpy(x.copy())
    method = getattr(y, name)
    check(method(), x, ref, dtype, name + " method")
    if name != "gelu":
        out = getattr(kiln, name + "_")(y)
        assert out is y
        check(y, x, ref, dtype, name + " in-place")


@pytest.mark.parametrize("name", list(FLOAT_OPS))
def test_int_and_bool_inputs(name):
    fn, ref, _ = FLOAT_OPS[name]
    for dt in (np.int64, np.int32, np.uint8, np.int8, np.bool_):
        x = np.array([0, 1, 2, 3, 7], dtype=dt)
        if name in ("silu", "gelu", "gelu_tanh"):
            with pytest.raises(TypeError):
                fn(kiln.from_numpy(x))
            continue
        got = fn(kiln.from_numpy(x))
        assert got.dtype == kiln.float32
        check(got, x.astype(np.float32), ref, np.float32, f"{name} from {np.dtype(dt).name}")
        with pytest.raises(TypeError):
            getattr(kiln, name + "_")(kiln.from_numpy(x.copy()))


@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "sigmoid", "reciprocal",
                                  "rsqrt"])
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex(name, dtype, rng):
    z = (rng.uniform(-2, 2, 50) + 1j * rng.uniform(-2, 2, 50)).astype(dtype)
    refs = {"sigmoid": lambda v: 1 / (1 + np.exp(-v)), "rsqrt": lambda v: 1 / np.sqrt(v),
            "reciprocal": lambda v: 1 / v}
    want = refs.get(name, getattr(np, name, None))(z.astype(np.complex128))
    got = as_np(FLOAT_OPS[name][0](kiln.from_numpy(z)))
    assert got.dtype == dtype
    tol = 1e-5 if dtype == np.complex64 else 1e-13
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_complex_abs_and_rejections():
    z = np.array([3 + 4j, -1j, 0], dtype=np.complex64)
    a = kiln.abs(kiln.from_numpy(z))
    assert a.dtype == kiln.float32
    np.testing.assert_allclose(as_np(a), [5, 1, 0])
    for fn in (kiln.sign, kiln.exp2, kiln.log1p, kiln.silu, kiln.relu, kiln.floor, kiln.bitwise_not):
        with pytest.raises(TypeError):
            fn(kiln.from_numpy(z))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_sign_abs_neg_relu_rounding(dtype):
    x = np.array([0.0, -0.0, 1.5, -1.5, 2.5, -2.5, 0.5, -0.5, 3.49, -3.51, 7, np.inf, -np.inf, np.nan], dtype=dtype)
    t = kiln.from_numpy(x)
    def eq(got, want):  # compared in float64 (ml_dtypes' NaN does not compare as NaN)
        got = as_np(got)
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got.astype(np.float64), np.asarray(want, dtype=dtype).astype(np.float64))

    eq(kiln.neg(t), -x)
    eq(-t, -x)
    eq(abs(t), np.abs(x))
    eq(kiln.sign(t), np.where(np.isnan(x), 0, np.sign(x)))  # torch: sign(NaN) = 0
    eq(kiln.relu(t), np.where(x > 0, x, np.where(np.isnan(x), x, 0)))
    eq(kiln.floor(t), np.floor(x))
    eq(kiln.ceil(t), np.ceil(x))
    eq(kiln.trunc(t), np.trunc(x))
    eq(kiln.round(t), np.round(x))  # half to even
    eq(round(t), np.round(x))
    assert np.array_equal(np.signbit(as_np(kiln.round(t))), np.signbit(np.round(x)))


def test_round_decimals():
    x = np.array([1.2345, -1.2355, 1234.5, 0.125, np.nan])
    t = kiln.from_numpy(x)
    np.testing.assert_array_equal(as_np(kiln.round(t, decimals=2)), np.round(x, 2))
    np.testing.assert_array_equal(as_np(kiln.round(t, decimals=-2)), np.rint(x / 100) * 100)
    np.testing.assert_array_equal(as_np(t.round(decimals=1)), np.rint(x * 10) / 10)
    with pytest.raises(TypeError):
        kiln.round(kiln.arange(3), decimals=1)


def test_integer_dtypes_and_errors():
    i8 = kiln.from_numpy(np.array([-128, -1, 0, 1, 127], dtype=np.int8))
    assert kiln.neg(i8).dtype == kiln.int8
    np.testing.assert_array_equal(as_np(kiln.neg(i8)), np.array([-128, 1, 0, -1, -127], dtype=np.int8))
    np.testing.assert_array_equal(as_np(kiln.abs(i8)), np.abs(np.array([-128, -1, 0, 1, 127], dtype=np.int8)))
    np.testing.assert_array_equal(as_np(kiln.sign(i8)), [-1, -1, 0, 1, 1])
    np.testing.assert_array_equal(as_np(kiln.floor(i8)), as_np(i8))
    np.testing.assert_array_equal(as_np(~i8), ~np.array([-128, -1, 0, 1, 127], dtype=np.int8))
    b = kiln.from_numpy(np.array([True, False]))
    with pytest.raises(TypeError):
        -b
    with pytest.raises(TypeError):
        kiln.relu(b)
    with pytest.raises(TypeError):
        kiln.floor(b)
    np.testing.assert_array_equal(as_np(~b), [False, True])
    np.testing.assert_array_equal(as_np(kiln.logical_not(kiln.arange(3))), [True, False, False])
    with pytest.raises(TypeError):
        kiln.bitwise_not(kiln.zeros(2))
    with pytest.raises(ValueError):
        kiln.gelu(kiln.zeros(2), approximate="fast")
    f8 = kiln.zeros(3, dtype=kiln.float8_e4m3fn)
    for fn in (kiln.exp, kiln.log, kiln.sin, kiln.sigmoid, kiln.sign, kiln.relu, kiln.floor, kiln.frexp):
        with pytest.raises(TypeError, match="float8_e4m3fn"):
            fn(f8)
    assert kiln.isnan(f8).dtype == kiln.bool
    assert kiln.neg(f8).dtype == kiln.float8_e4m3fn


@pytest.mark.parametrize("dtype", FLOAT_DTYPES + [np.int32, np.bool_], ids=lambda d: np.dtype(d).name)
def test_predicates(dtype):
    x = np.array(SPECIALS).astype(dtype) if np.dtype(dtype).kind == "f" else np.array([0, 1, 1, 0], dtype=dtype)
    t = kiln.from_numpy(x)
    for name in ("isnan", "isinf", "isfinite", "logical_not"):
        got = getattr(kiln, name)(t)
        assert got.dtype == kiln.bool
        np.testing.assert_array_equal(as_np(got), getattr(np, name)(x), err_msg=name)


def test_empty_and_zero_dim():
    e = kiln.zeros(0, 3)
    for fn in (kiln.exp, kiln.neg, kiln.isnan, kiln.floor, kiln.sigmoid):
        assert tuple(fn(e).shape) == (0, 3)
    m, ex = kiln.frexp(e)
    assert tuple(ex.shape) == (0, 3)
    s = kiln.tensor(0.5)
    r = kiln.exp(s)
    assert r.dim() == 0
    assert abs(r.item() - math.exp(0.5)) < 1e-6


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_frexp(dtype):
    fi = ml_dtypes.finfo(dtype)
    tiny = float(fi.smallest_subnormal)
    sub = [tiny * k for k in (1, 2, 3, 5, 7, 100, 1000)] + [float(fi.smallest_normal), float(fi.max)]
    x = np.array(SPECIALS + sub + [-v for v in sub] + list(np.geomspace(tiny, float(fi.max), 200)), dtype=np.float64)
    x = x.astype(dtype)
    mant, expo = kiln.frexp(kiln.from_numpy(x))
    wm, we = np.frexp(x.astype(np.float64))  # exact for every narrower value
    assert as_np(mant).dtype == np.dtype(dtype)
    assert as_np(expo).dtype == np.int32
    np.testing.assert_array_equal(as_np(mant).astype(np.float64), wm)
    np.testing.assert_array_equal(np.signbit(as_np(mant).astype(np.float64)), np.signbit(wm))
    np.testing.assert_array_equal(as_np(expo), np.where(np.isfinite(x.astype(np.float64)), we, 0))
    r = kiln.frexp(kiln.from_numpy(x))
    assert r.mantissa is not None and r.exponent is not None
    # Tensor method, non-contiguous input.
    m2, e2 = kiln.from_numpy(x[::3]).frexp()
    np.testing.assert_array_equal(as_np(e2), as_np(expo)[::3])


def laguerre_ref(x, n):
    n = np.trunc(n)
    with np.errstate(invalid="ignore"):
        out = sp.eval_genlaguerre(np.maximum(n, 0).astype(np.int64), 0.0, x)
    out = np.where(n < 0, 0.0, out)
    return np.where(x == 0, np.where(n < 0, 0.0, 1.0), out)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_laguerre_broadcast(dtype):
    x = np.array([-3.0, -0.5, 0.0, 0.25, 1.0, 2.5, 7.0, 15.0], dtype=dtype).reshape(-1, 1)
    n = np.array([-2.0, -1, 0, 1, 2, 3, 5, 2.9, 10, 25], dtype=dtype)
    got = kiln.special.laguerre_polynomial_l(kiln.from_numpy(x), kiln.from_numpy(n))
    assert tuple(got.shape) == (8, 10)
    want = laguerre_ref(x.astype(np.float64), n.astype(np.float64))
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(as_np(got), want, rtol=rtol, atol=rtol * np.abs(want).max() * 1e-3)
    assert as_np(got).dtype == dtype


def test_laguerre_dtypes_scalars_errors():
    n = kiln.arange(-1, 5)  # int64
    x = kiln.tensor([0.5])  # float32
    r = kiln.special.laguerre_polynomial_l(x, n)
    assert r.dtype == kiln.float32
    np.testing.assert_allclose(as_np(r), laguerre_ref(np.full(6, 0.5), np.arange(-1, 5.0)), rtol=1e-6)
    ri = kiln.special.laguerre_polynomial_l(kiln.arange(3), 2)
    assert ri.dtype == kiln.float32
    np.testing.assert_allclose(as_np(ri), laguerre_ref(np.arange(3.0), np.full(3, 2.0)), rtol=1e-6)
    rs = kiln.special.laguerre_polynomial_l(1.5, kiln.arange(0, 4))
    np.testing.assert_allclose(as_np(rs), laguerre_ref(np.full(4, 1.5), np.arange(4.0)), rtol=1e-6)
    xb = np.array([0.5, 1.5], dtype=BF16)
    rb = kiln.special.laguerre_polynomial_l(kiln.from_numpy(xb), 3)
    assert as_np(rb).dtype == BF16
    np.testing.assert_allclose(as_np(rb).astype(np.float64), laguerre_ref(xb.astype(np.float64), np.full(2, 3.0)),
                               rtol=2**-7)
    with pytest.raises(ValueError):
        kiln.special.laguerre_polynomial_l(kiln.zeros(3), kiln.zeros(2))
    with pytest.raises(TypeError):
        kiln.special.laguerre_polynomial_l(1.0, 2)
    with pytest.raises(TypeError):
        kiln.special.laguerre_polynomial_l(kiln.zeros(2, dtype=kiln.complex64), 1)


def test_special_aliases():
    x = kiln.tensor([0.0, 1.0])
    np.testing.assert_allclose(as_np(kiln.special.expit(x)), sigmoid(np.array([0.0, 1.0])), rtol=1e-6)
    np.testing.assert_allclose(as_np(kiln.special.expm1(x)), np.expm1([0.0, 1.0]), rtol=1e-6)
