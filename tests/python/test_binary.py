"""Binary/ternary elementwise ops against NumPy (bf16 via ml_dtypes): dtypes,
broadcasting, non-contiguous and empty inputs, scalars, operators and errors."""
import ml_dtypes
import numpy as np
import pytest

import kiln

INT_DTYPES = ["uint8", "int8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
FLOAT_DTYPES = ["float16", "bfloat16", "float32", "float64"]


def np_dtype(name):
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def operands(dtype, rng, shape_a=(3, 4), shape_b=(4,), nonzero=False):
    """Small values valid for every dtype (non-negative for unsigned ones)."""
    signed = not dtype.startswith("uint")
    lo = -20 if signed else 0
    a = rng.integers(lo, 21, size=shape_a).astype(np.float64)
    b = rng.integers(lo, 21, size=shape_b).astype(np.float64)
    if nonzero:
        b[b == 0] = 3
    if dtype in FLOAT_DTYPES:
        a = a / 4
        b = b / 4
    return a.astype(np_dtype(dtype)), b.astype(np_dtype(dtype))


def check(got, want, rtol=0.0):
    got = np.asarray(got.numpy())
    want = np.asarray(want)
    assert got.shape == want.shape
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if want.dtype.kind in "biu" or rtol == 0:
        np.testing.assert_array_equal(got.astype(np.float64) if want.dtype == np_dtype("bfloat16") else got,
                                      want.astype(np.float64) if want.dtype == np_dtype("bfloat16") else want)
    else:
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=rtol)


def rounded(x, dtype):
    """The float32 computation result stored in `dtype` (narrow floats compute in float32)."""
    return np.asarray(x, dtype=np.float32).astype(np_dtype(dtype)) if dtype in ("float16", "bfloat16") else x


@pytest.mark.parametrize("dtype", INT_DTYPES + FLOAT_DTYPES)
def test_arith_matches_numpy(dtype, rng):
    a, b = operands(dtype, rng)
    ka, kb = kiln.tensor(a), kiln.tensor(b)
    wide = np.float32 if dtype in ("float16", "bfloat16") else None
    a32 = a.astype(wide) if wide else a
    b32 = b.astype(wide) if wide else b
    with np.errstate(over="ignore"):
        check(ka + kb, rounded(a32 + b32, dtype).astype(np_dtype(dtype)))
        check(ka - kb, rounded(a32 - b32, dtype).astype(np_dtype(dtype)))
        check(ka * kb, rounded(a32 * b32, dtype).astype(np_dtype(dtype)))
        check(kiln.maximum(ka, kb), np.maximum(a, b))
        check(kiln.minimum(ka, kb), np.minimum(a, b))
        check(kiln.add(ka, kb, alpha=2), rounded(a32 + 2 * b32, dtype).astype(np_dtype(dtype)), 1e-2)


@pytest.mark.parametrize("dtype", INT_DTYPES + ["float32", "float64"])
def test_division_family_matches_python(dtype, rng):
    a, b = operands(dtype, rng, nonzero=True)
    ka, kb = kiln.tensor(a), kiln.tensor(b)
    check(ka // kb, np.floor_divide(a, b))
    check(ka % kb, np.remainder(a, b), 1e-6)
    check(kiln.fmod(ka, kb), np.fmod(a, b), 1e-6)
    check(kiln.div(ka, kb, rounding_mode="trunc"), np.trunc(a / b).astype(a.dtype) if a.dtype.kind == "f"
          else (np.trunc(a.astype(np.float64) / b.astype(np.float64))).astype(a.dtype))
    want_true = (a / b).astype(np.float32) if a.dtype.kind in "iu" else a / b
    check(ka / kb, want_true, 1e-6)


def test_python_floor_semantics():
    a = kiln.tensor([-7, 7, -7, 7])
    b = kiln.tensor([2, 2, -2, -2])
    assert (a // b).tolist() == [-4, 3, 3, -4]
    assert (a % b).tolist() == [1, 1, -1, -1]
    assert kiln.fmod(a, b).tolist() == [-1, 1, -1, 1]
    assert (-7 // kiln.tensor([2])).tolist() == [-4]
    assert (kiln.tensor([-7.0]) % 2).tolist() == [1.0]


def test_scalar_promotion_like_torch():
    u8 = kiln.tensor(np.array([250, 5], dtype=np.uint8))
    assert (u8 + 10).dtype == kiln.uint8
    assert (u8 + 10).tolist() == [4, 15]
    assert (u8 + 1.5).dtype == kiln.float32
    i32 = kiln.tensor(np.array([1, 2], dtype=np.int32))
    assert (i32 + kiln.tensor(5)).dtype == kiln.int32  # 0-dim int64 does not widen
    assert (i32 + kiln.tensor(5.0, dtype=kiln.float64)).dtype == kiln.float64
    assert (i32 / 2).dtype == kiln.float32
    assert (kiln.tensor([True]) + 1).dtype == kiln.int64
    assert (kiln.tensor([1.0], dtype=kiln.float16) * 2.5).dtype == kiln.float16
    assert (i32 * 1j).dtype == kiln.complex64


def test_bf16_against_ml_dtypes(rng):
    a = rng.standard_normal(1001).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal(1001).astype(ml_dtypes.bfloat16)
    ka, kb = kiln.tensor(a), kiln.tensor(b)
    for got, want in [(ka + kb, a + b), (ka * kb, a * b), (ka - kb, a - b), (ka / kb, a / b)]:
        np.testing.assert_array_equal(got.numpy().astype(np.float32), want.astype(np.float32))


def test_large_f32_matches_numpy(rng):
    a = rng.standard_normal(200_003).astype(np.float32)
    b = rng.standard_normal(200_003).astype(np.float32) + 3
    ka, kb = kiln.tensor(a), kiln.tensor(b)
    np.testing.assert_array_equal((ka + kb).numpy(), a + b)
    np.testing.assert_array_equal((ka / kb).numpy(), a / b)
    np.testing.assert_array_equal((ka * np.float32(0.5)).numpy(), a * np.float32(0.5))
    np.testing.assert_array_equal((1 - ka).numpy(), np.float32(1) - a)


def test_broadcast_noncontiguous_empty(rng):
    a = rng.standard_normal((4, 6)).astype(np.float32)
    ka = kiln.tensor(a)
    col = rng.standard_normal((6, 1)).astype(np.float32)
    np.testing.assert_array_equal((ka.T + kiln.tensor(col)).numpy(), a.T + col)
    ev, od = kiln.from_numpy(a[:, ::2]), kiln.from_numpy(a[:, 1::2])  # zero-copy strided views
    assert not ev.is_contiguous()
    np.testing.assert_array_equal((ev * od).numpy(), a[:, ::2] * a[:, 1::2])
    e = kiln.tensor(np.zeros((0, 3), np.float32))
    assert (e + kiln.tensor([1.0, 2.0, 3.0])).shape == (0, 3)
    with pytest.raises(ValueError):
        kiln.tensor([1, 2, 3]) + kiln.tensor([1, 2])
    # NumPy arrays as operands, on either side.
    np.testing.assert_array_equal((ka + a).numpy(), a + a)
    r = a + ka
    assert isinstance(r, kiln.Tensor)


@pytest.mark.parametrize("dtype", INT_DTYPES + FLOAT_DTYPES + ["bool"])
def test_comparisons(dtype, rng):
    if dtype == "bool":
        a, b = rng.integers(0, 2, (3, 4)).astype(bool), rng.integers(0, 2, 4).astype(bool)
    else:
        a, b = operands(dtype, rng)
    ka, kb = kiln.tensor(a), kiln.tensor(b)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    for got, want in [(ka == kb, a64 == b64), (ka != kb, a64 != b64), (ka < kb, a64 < b64),
                      (ka <= kb, a64 <= b64), (ka > kb, a64 > b64), (ka >= kb, a64 >= b64)]:
        check(got, want)


def test_unsigned_and_mixed_comparisons_exact():
    u64 = kiln.tensor(np.array([2**64 - 1, 0], dtype=np.uint64))
    neg = kiln.tensor(np.array([-1, -1], dtype=np.int64))
    assert (u64 > neg).tolist() == [True, True]
    assert (u64 > -1).tolist() == [True, True]
    u8 = kiln.tensor(np.array([0, 255], dtype=np.uint8))
    assert (u8 > -1).tolist() == [True, True]
    assert (u8 == 511).tolist() == [False, False]
    assert (-1 < u8).tolist() == [True, True]


def test_logical_and_bitwise(rng):
    a = np.array([0, 1.5, -2, 0], np.float32)
    b = np.array([0, 0, 3, 7], np.int32)
    ka, kb = kiln.tensor(a), kiln.tensor(b)
    check(kiln.logical_and(ka, kb), np.logical_and(a, b))
    check(kiln.logical_or(ka, kb), np.logical_or(a, b))
    check(kiln.logical_xor(ka, kb), np.logical_xor(a, b))
    for dtype in INT_DTYPES:
        x, y = operands(dtype, rng)
        kx, ky = kiln.tensor(x), kiln.tensor(y)
        check(kx & ky, x & y)
        check(kx | ky, x | y)
        check(kx ^ ky, x ^ y)
        s = (np.abs(y.astype(np.int64)) % 5).astype(x.dtype)
        check(kx << kiln.tensor(s), x << s)
        check(kx >> kiln.tensor(s), x >> s)
    m = kiln.tensor([True, False])
    assert (m & True).tolist() == [True, False]
    assert (m | kiln.tensor([False, True])).tolist() == [True, True]
    with pytest.raises(TypeError):
        ka & ka


def test_math_ops(rng):
    a = rng.uniform(0.5, 3, 50).astype(np.float32)
    b = rng.uniform(-2, 2, 50).astype(np.float32)
    ka, kb = kiln.tensor(a), kiln.tensor(b)
    np.testing.assert_allclose((ka ** kb).numpy(), a ** b, rtol=1e-6)
    np.testing.assert_allclose(kiln.atan2(kb, ka).numpy(), np.arctan2(b, a), rtol=1e-6)
    np.testing.assert_array_equal(kiln.copysign(ka, kb).numpy(), np.copysign(a, b))
    x = np.array([-1.5, 0.0, 2.0], np.float32)
    check(kiln.heaviside(kiln.tensor(x), kiln.tensor(np.float32(0.5))), np.heaviside(x, np.float32(0.5)))
    assert (2 ** kiln.tensor([3, 4])).tolist() == [8, 16]
    with pytest.raises(ValueError):
        kiln.tensor([2]) ** -1
    assert kiln.atan2(kiln.tensor([1]), kiln.tensor([1])).dtype == kiln.float32


def test_inplace_and_out():
    x = kiln.tensor([1, 2, 3])
    y = x
    x += 2
    assert y is x and x.tolist() == [3, 4, 5]
    with pytest.raises(TypeError):
        x += 0.5
    with pytest.raises(TypeError):
        x /= 2
    x //= 2
    assert x.tolist() == [1, 2, 2]
    f = kiln.tensor([1.0, 2.0])
    f.mul_(3).sub_(1, alpha=2)
    assert f.tolist() == [1.0, 4.0]
    out = kiln.empty(2, dtype=kiln.float64)
    r = kiln.add(f, f, out=out)
    assert r is out and out.tolist() == [2.0, 8.0]
    with pytest.raises(TypeError):
        kiln.add(f, f, out=kiln.empty(2, dtype=kiln.int32))
    with pytest.raises(ValueError):
        kiln.mul(f, f, out=kiln.empty(3))
    g = kiln.tensor([1.0, 5.0])
    g.clamp_(max=2)
    assert g.tolist() == [1.0, 2.0]


def test_where_clamp_lerp_addcmul(rng):
    c = np.array([True, False, True])
    a = np.array([1, 2, 3], np.int32)
    b = np.array([10, 20, 30], np.int64)
    check(kiln.where(kiln.tensor(c), kiln.tensor(a), kiln.tensor(b)), np.where(c, a, b))
    assert kiln.where(kiln.tensor(c), kiln.tensor(a), 0.5).dtype == kiln.float32
    assert kiln.where(kiln.tensor(c), 1.0, 0).dtype == kiln.float32
    x = rng.standard_normal(20).astype(np.float32)
    kx = kiln.tensor(x)
    np.testing.assert_array_equal(kiln.clamp(kx, -0.5, 0.5).numpy(), np.clip(x, -0.5, 0.5))
    np.testing.assert_array_equal(kx.clamp(min=0).numpy(), np.maximum(x, 0))
    lo = np.full(20, -0.1, np.float32)
    np.testing.assert_array_equal(kiln.clamp(kx, kiln.tensor(lo), 0.3).numpy(), np.clip(x, lo, 0.3))
    assert np.isnan(kiln.clamp(kiln.tensor([float("nan")]), 0, 1).numpy()[0])
    with pytest.raises(ValueError):
        kiln.clamp(kx)
    e = rng.standard_normal(20).astype(np.float32)
    np.testing.assert_allclose(kiln.lerp(kx, kiln.tensor(e), 0.3).numpy(), x + 0.3 * (e - x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(kx.lerp(kiln.tensor(e), kiln.tensor(np.full(20, 0.7, np.float32))).numpy(),
                               x + 0.7 * (e - x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(kiln.addcmul(kx, kx, kiln.tensor(e), value=0.5).numpy(), x + 0.5 * x * e, rtol=1e-6)


def test_errors():
    f8 = kiln.tensor([1.0, 2.0]).to(kiln.float8_e4m3fn)
    with pytest.raises(TypeError):
        f8 + f8
    with pytest.raises(TypeError):
        f8 * 2
    with pytest.raises(ValueError):
        kiln.tensor([1, 2]) // 0
    with pytest.raises(ValueError):
        kiln.remainder(kiln.tensor([1, 2]), kiln.tensor([1, 0]))
    with pytest.raises(TypeError):
        kiln.tensor([True]) - kiln.tensor([True])
    with pytest.raises(ValueError):
        kiln.div(kiln.tensor([1]), 2, rounding_mode="round")
    with pytest.raises(TypeError):
        kiln.add(1, 2)
    assert (kiln.tensor([1]) == None) is False  # noqa: E711
