"""Reductions and scans against NumPy float64 references."""
import math

import ml_dtypes
import numpy as np
import pytest

import kiln

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
DIMS = [None, (), 0, 1, -1, (0, 2), (2, 0), (-3, -1), (0, 1, 2)]
EPS = {"float16": 2**-10, "bfloat16": 2**-7, "float32": 2**-23, "float64": 2**-52}


def np_dtype(name):
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def make(shape, dtype, rng, lo=-2.0, hi=2.0):
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.startswith("int") or dtype.startswith("uint"):
        low = 0 if dtype.startswith("u") else -3
        return rng.integers(low, 4, shape).astype(dtype)
    return rng.uniform(lo, hi, shape).astype(np_dtype(dtype))


def layouts(a):
    """The same values as a contiguous, a transposed and a strided kiln tensor."""
    t = kiln.from_numpy(np.ascontiguousarray(a.transpose(2, 1, 0))).permute(2, 1, 0)
    big = np.zeros((a.shape[0], a.shape[1] * 2, a.shape[2] * 2), a.dtype)
    big[:, ::2, 1::2] = a
    s = kiln.from_numpy(big[:, ::2, 1::2])  # a zero-copy strided view
    return [("contiguous", kiln.tensor(a)), ("transposed", t), ("strided", s)]


def axis(dim):
    if dim is None or dim == ():
        return None
    return dim


def as64(t):
    return np.asarray(t.numpy()).astype(np.float64) if t.dtype != kiln.bool else t.numpy().astype(np.float64)


def check(got, ref, dtype_name, scale=1.0):
    ref = np.asarray(ref, dtype=np.float64)
    g = as64(got)
    assert g.shape == ref.shape, (g.shape, ref.shape)
    eps = EPS.get(dtype_name, 0.0)
    np.testing.assert_allclose(g, ref, rtol=4 * eps, atol=4 * eps * scale, equal_nan=True)


def kdt(name):
    return getattr(kiln, name)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("keepdim", [False, True])
def test_sum_prod(dtype, dim, keepdim, rng):
    a = make((3, 4, 5), dtype, rng)
    out_name = "int64" if dtype in ("bool",) or "int" in dtype else dtype
    ref = a.astype(np.float64).sum(axis=axis(dim), keepdims=keepdim)
    for _, x in layouts(a):
        s = kiln.sum(x, dim, keepdim)
        assert s.dtype == kdt(out_name)
        check(s, ref, out_name, scale=10)
        check(x.sum(dim=dim, keepdim=keepdim), ref, out_name, scale=10)
    p = make((3, 4, 5), dtype, rng, 0.7, 1.3)
    pref = p.astype(np.float64).prod(axis=axis(dim), keepdims=keepdim)
    check(kiln.prod(kiln.tensor(p), dim, keepdim), pref, out_name)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("dim", DIMS)
def test_mean_var_std(dtype, dim, rng):
    a = make((3, 4, 5), dtype, rng)
    a64 = a.astype(np.float64)
    for _, x in layouts(a):
        check(kiln.mean(x, dim, keepdim=True), a64.mean(axis=axis(dim), keepdims=True), dtype)
        for c in (0, 1, 2):
            rv = a64.var(axis=axis(dim), ddof=c)
            check(kiln.var(x, dim, correction=c), rv, dtype)
            check(x.std(dim, correction=c), np.sqrt(rv), dtype)
            v, m = kiln.var_mean(x, dim, correction=c)
            check(v, rv, dtype)
            check(m, a64.mean(axis=axis(dim)), dtype)
            s, m = kiln.std_mean(x, dim, correction=c, keepdim=True)
            check(s, np.sqrt(a64.var(axis=axis(dim), ddof=c, keepdims=True)), dtype)
    # legacy unbiased flag
    check(kiln.var(kiln.tensor(a), unbiased=False), a64.var(), dtype)


def test_mean_var_reject_integers(rng):
    x = kiln.tensor(make((4,), "int32", rng))
    with pytest.raises(TypeError):
        kiln.mean(x)
    with pytest.raises(TypeError):
        kiln.var(x)
    with pytest.raises(TypeError):
        kiln.std(kiln.tensor([True, False]))
    m = kiln.mean(x, dtype=kiln.float64)
    assert m.dtype == kiln.float64
    np.testing.assert_allclose(m.item(), x.numpy().astype(np.float64).mean())


@pytest.mark.parametrize("dtype", DTYPES)
def test_max_min_arg(dtype, rng):
    a = make((3, 4, 5), dtype, rng)  # small integers: many ties
    a64 = a.astype(np.float64)
    for _, x in layouts(a):
        assert kiln.max(x).item() == a.max()
        assert kiln.min(x).item() == a.min()
        assert kiln.argmax(x).item() == a64.argmax()
        assert kiln.argmin(x).item() == a64.argmin()
        for d in (0, 1, 2, -1):
            for keepdim in (False, True):
                r = kiln.max(x, d, keepdim)
                assert type(r).__name__ == "max"
                values, indices = r
                np.testing.assert_array_equal(as64(values), a64.max(axis=d, keepdims=keepdim))
                np.testing.assert_array_equal(indices.numpy(), a64.argmax(axis=d, keepdims=keepdim))
                r = x.min(dim=d, keepdim=keepdim)
                np.testing.assert_array_equal(as64(r.values), a64.min(axis=d, keepdims=keepdim))
                np.testing.assert_array_equal(r.indices.numpy(), a64.argmin(axis=d, keepdims=keepdim))
                np.testing.assert_array_equal(kiln.argmax(x, d, keepdim).numpy(), a64.argmax(axis=d, keepdims=keepdim))
        for dim in DIMS:
            np.testing.assert_array_equal(as64(kiln.amax(x, dim)), a64.max(axis=axis(dim)))
            np.testing.assert_array_equal(as64(x.amin(dim, keepdim=True)), a64.min(axis=axis(dim), keepdims=True))
    assert kiln.max(kiln.tensor(a)).dtype == kdt(dtype)


def test_nan_propagates_with_first_index():
    a = np.array([[1, 5, np.nan, 7, np.nan], [0, -np.inf, 2, np.inf, 2]], np.float32)
    x = kiln.tensor(a)
    assert math.isnan(kiln.max(x).item())
    assert kiln.argmax(x).item() == 2 and kiln.argmin(x).item() == 2
    v, i = kiln.max(x, 1)
    np.testing.assert_array_equal(v.numpy(), [np.nan, np.inf])
    np.testing.assert_array_equal(i.numpy(), [2, 3])
    np.testing.assert_array_equal(kiln.argmin(x, 1).numpy(), [2, 1])
    np.testing.assert_array_equal(kiln.amax(x, 0).numpy(), np.max(a, axis=0))


@pytest.mark.parametrize("dtype", FLOATS)
def test_logsumexp(dtype, rng):
    a = make((3, 4, 5), dtype, rng)
    a64 = a.astype(np.float64)
    for dim in DIMS:
        ref = np.log(np.exp(a64).sum(axis=axis(dim)))
        for _, x in layouts(a):
            check(kiln.logsumexp(x, dim), ref, dtype)
    b = np.array([[-np.inf, -np.inf], [1000, 1000], [np.inf, 1], [np.nan, 1]], np.float32)
    got = kiln.logsumexp(kiln.tensor(b), 1).numpy()
    np.testing.assert_allclose(got, [-np.inf, 1000 + math.log(2), np.inf, np.nan], rtol=1e-6)
    assert kiln.logsumexp(kiln.tensor([1, 2, 3]), 0).dtype == kiln.float32


@pytest.mark.parametrize("p", [2, 1, 0, 3, 0.5, math.inf, -math.inf, "fro"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float32", "float64"])
def test_norm(p, dtype, rng):
    a = make((3, 4, 5), dtype, rng)
    a64 = np.abs(a.astype(np.float64))
    q = 2 if p == "fro" else p
    for dim in DIMS:
        ax = axis(dim)
        if q == math.inf:
            ref = a64.max(axis=ax)
        elif q == -math.inf:
            ref = a64.min(axis=ax)
        elif q == 0:
            ref = (a64 != 0).sum(axis=ax)
        else:
            ref = (a64**q).sum(axis=ax) ** (1 / q)
        for _, x in layouts(a):
            check(kiln.norm(x, p, dim), ref, dtype, scale=10)
    with pytest.raises(TypeError):
        kiln.norm(kiln.tensor([1, 2]))


@pytest.mark.parametrize("dtype", DTYPES)
def test_cumsum_cumprod(dtype, rng):
    a = make((3, 4, 5), dtype, rng, 0.8, 1.2)
    out_name = "int64" if dtype == "bool" or "int" in dtype else dtype
    a64 = a.astype(np.float64)
    for _, x in layouts(a):
        for d in (0, 1, 2, -1):
            c = kiln.cumsum(x, d)
            assert c.dtype == kdt(out_name)
            check(c, np.cumsum(a64, axis=d), out_name, scale=10)
            check(x.cumprod(d), np.cumprod(a64, axis=d), out_name, scale=10)
    assert kiln.cumsum(kiln.tensor(a), 0, dtype=kiln.float64).dtype == kiln.float64


@pytest.mark.parametrize("dtype", DTYPES)
def test_all_any_count_nonzero(dtype, rng):
    a = make((3, 4, 5), dtype, rng)
    for dim in DIMS:
        ax = axis(dim)
        for _, x in layouts(a):
            r = kiln.all(x, dim)
            assert r.dtype == (kiln.uint8 if dtype == "uint8" else kiln.bool)
            np.testing.assert_array_equal(r.numpy().astype(bool), np.all(a, axis=ax))
            np.testing.assert_array_equal(x.any(dim, keepdim=True).numpy().astype(bool), np.any(a, axis=ax, keepdims=True))
            np.testing.assert_array_equal(kiln.count_nonzero(x, dim).numpy(), np.count_nonzero(a, axis=ax))


def test_empty():
    e = kiln.zeros(0, 3)
    np.testing.assert_array_equal(kiln.sum(e, 0).numpy(), [0, 0, 0])
    np.testing.assert_array_equal(kiln.prod(e, 0).numpy(), [1, 1, 1])
    assert math.isnan(kiln.mean(e).item())
    assert np.isnan(kiln.var(e, 0).numpy()).all()
    assert kiln.sum(e, 1).shape == (0,)
    assert kiln.all(e).item() is True and kiln.any(e).item() is False
    assert kiln.logsumexp(e).item() == -math.inf
    assert kiln.norm(e).item() == 0
    with pytest.raises(ValueError):
        kiln.max(e)
    with pytest.raises(ValueError):
        kiln.argmax(e)
    with pytest.raises(IndexError):
        kiln.max(e, 0)
    with pytest.raises(IndexError):
        kiln.amax(e)
    assert kiln.max(e, 1).values.shape == (0,)


def test_scalar_tensor():
    s = kiln.tensor(2.5)
    assert kiln.sum(s).item() == 2.5
    assert kiln.sum(s, 0).item() == 2.5
    assert kiln.argmax(s).item() == 0
    assert kiln.max(s, -1).indices.item() == 0


def test_errors():
    x = kiln.tensor(np.ones((2, 3), np.float32))
    with pytest.raises(IndexError):
        kiln.sum(x, 2)
    with pytest.raises(ValueError):
        kiln.sum(x, (0, -2))
    with pytest.raises(TypeError):
        kiln.sum(x.to(kiln.float8_e4m3fn))
    with pytest.raises(TypeError):
        kiln.max(kiln.tensor([1 + 2j]))
    with pytest.raises(TypeError):
        kiln.sum(x, "a")


def test_dtype_argument_and_integer_promotion(rng):
    a = make((4, 6), "int32", rng)
    x = kiln.tensor(a)
    s = kiln.sum(x, 1, dtype=kiln.float64)
    assert s.dtype == kiln.float64
    np.testing.assert_array_equal(s.numpy(), a.astype(np.float64).sum(1))
    big = kiln.full((4,), 2_000_000_000, dtype=kiln.int32)
    assert kiln.sum(big).item() == 8_000_000_000
    assert kiln.sum(kiln.tensor([True, True])).dtype == kiln.int64


def test_large_float32_sum_accuracy():
    n = 10_000_000
    x = kiln.full((n,), 0.1, dtype=kiln.float32)
    exact = float(np.float32(0.1)) * n
    assert abs(kiln.sum(x).item() - exact) <= exact * 6e-8
    a = np.random.default_rng(0).uniform(999, 1001, 2_000_003).astype(np.float32)
    v, m = kiln.var_mean(kiln.tensor(a))
    a64 = a.astype(np.float64)
    assert abs(v.item() - a64.var(ddof=1)) <= 1e-6 * a64.var(ddof=1)
    assert abs(m.item() - a64.mean()) <= 1e-4


@pytest.mark.parametrize("n", [1, 5, 15, 16, 17, 31, 33, 47, 64, 100, 1000, 4099])
def test_float32_amax_amin_every_length_and_nan_position(n):
    """float32 amax / amin over a contiguous run take the Highway kernel: every
    length (shorter than a vector, whole vectors, an overlapping tail), extreme
    values anywhere, and a NaN at any position wins."""
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    for pos in sorted({0, n // 2, n - 1}):
        y = x.copy()
        y[pos] = 1e30
        np.testing.assert_array_equal(kiln.amax(kiln.tensor(y)).numpy(), np.max(y))
        y[pos] = -np.inf
        np.testing.assert_array_equal(kiln.amin(kiln.tensor(y)).numpy(), np.min(y))
        y[pos] = np.nan
        assert np.isnan(kiln.amax(kiln.tensor(y)).item()) and np.isnan(kiln.amin(kiln.tensor(y)).item())
        assert np.isnan(kiln.max(kiln.tensor(y)).item())
    np.testing.assert_array_equal(kiln.amax(kiln.tensor(x)).numpy(), np.max(x))
    np.testing.assert_array_equal(kiln.amin(kiln.tensor(x)).numpy(), np.min(x))
    m = rng.standard_normal((3, n)).astype(np.float32)
    np.testing.assert_array_equal(kiln.amax(kiln.tensor(m), 1).numpy(), m.max(1))
    np.testing.assert_array_equal(kiln.amin(kiln.tensor(m), -1).numpy(), m.min(-1))
