"""kiln dtypes: the dtype objects, narrow-float conversions bit-identical to ml_dtypes,
and torch's promotion rules."""
import ml_dtypes
import numpy as np
import pytest

import kiln

# NumPy warns when a reference cast overflows to inf/NaN; that is the case under test.
pytestmark = pytest.mark.filterwarnings("ignore:.*encountered in cast:RuntimeWarning")

NARROW = {
    kiln.float16: np.dtype(np.float16),
    kiln.bfloat16: np.dtype(ml_dtypes.bfloat16),
    kiln.float8_e4m3fn: np.dtype(ml_dtypes.float8_e4m3fn),
    kiln.float8_e5m2: np.dtype(ml_dtypes.float8_e5m2),
}
BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32}

ALL = [
    kiln.bool, kiln.uint8, kiln.int8, kiln.uint16, kiln.int16, kiln.uint32, kiln.int32,
    kiln.uint64, kiln.int64, kiln.float16, kiln.bfloat16, kiln.float32, kiln.float64,
    kiln.float8_e4m3fn, kiln.float8_e5m2, kiln.complex64, kiln.complex128,
]


# ---- dtype objects ---------------------------------------------------------------


@pytest.mark.parametrize("d", ALL)
def test_dtype_object(d):
    assert repr(d) == "kiln." + d.name
    assert d.itemsize == d.to_numpy().itemsize
    assert d == getattr(kiln, d.name) and hash(d) == hash(getattr(kiln, d.name))
    assert d.is_complex == (d.to_numpy().kind == "c")
    assert d.is_floating_point == (d.name.startswith(("float", "bfloat")))
    assert kiln.zeros(1, dtype=d).dtype == d
    assert kiln.zeros(1, dtype=d.name).dtype == d
    assert kiln.zeros(1, dtype=d.to_numpy()).dtype == d


def test_dtype_aliases_and_inputs():
    assert kiln.half == kiln.float16 and kiln.float == kiln.float32 and kiln.double == kiln.float64
    assert kiln.long == kiln.int64 and kiln.int == kiln.int32 and kiln.short == kiln.int16
    assert kiln.cfloat == kiln.complex64 and kiln.cdouble == kiln.complex128
    assert kiln.float32 != kiln.float64
    assert (kiln.float32 == "float32") is False
    assert isinstance(kiln.float32, kiln.dtype)
    assert kiln.zeros(1, dtype=float).dtype == kiln.float64  # Python types, as torch
    assert kiln.zeros(1, dtype=int).dtype == kiln.int64
    assert kiln.zeros(1, dtype=bool).dtype == kiln.bool
    assert kiln.zeros(1, dtype=np.float16).dtype == kiln.float16
    assert kiln.zeros(1, dtype=ml_dtypes.bfloat16).dtype == kiln.bfloat16
    assert kiln.zeros(1, dtype="f8").dtype == kiln.float64
    assert kiln.zeros(1, dtype="half").dtype == kiln.float16
    with pytest.raises(TypeError):
        kiln.zeros(1, dtype=np.dtype("U3"))


# ---- narrow-float conversions vs ml_dtypes ------------------------------------------


def assert_same_bits(got, want):
    """Bit-identical, except that NaNs only need to be NaN (payloads and signs differ between libraries)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    u = BITS[got.dtype.itemsize]
    g_nan = np.isnan(got.astype(np.float32))
    w_nan = np.isnan(want.astype(np.float32))
    np.testing.assert_array_equal(g_nan, w_nan)
    gb, wb = got.view(u)[~w_nan], want.view(u)[~w_nan]
    bad = np.nonzero(gb != wb)[0]
    assert bad.size == 0, f"{bad.size} mismatches, e.g. got {gb[bad[:5]]} want {wb[bad[:5]]}"


def float32_patterns(n=200_000):
    rng = np.random.default_rng(0)
    random_bits = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    special = np.array(
        [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1.0, -1.0, 0.5, 3.0,
         np.finfo(np.float32).max, np.finfo(np.float32).tiny, np.finfo(np.float32).smallest_subnormal,
         448.0, 464.0, 480.0, 449.0, 57344.0, 61440.0, 65504.0, 65520.0, 2.0**-9, 2.0**-10, 2.0**-16,
         2.0**-17, 1.5 * 2.0**-17, 2.0**-24, 2.0**-25, 1.5 * 2.0**-25, 2.0**-133, 3.0e38],
        dtype=np.float32,
    )
    # Every narrow value and the midpoints around it: the rounding ties.
    mids = []
    for nd in NARROW.values():
        codes = np.arange(2 ** (8 * nd.itemsize), dtype=BITS[nd.itemsize])
        v = codes.view(nd).astype(np.float32)
        v = np.sort(v[np.isfinite(v)])
        mids.append(v)
        mids.append(((v[:-1].astype(np.float64) + v[1:]) / 2).astype(np.float32))
    base = np.concatenate([random_bits.view(np.float32), special, special * -1, *mids])
    return np.ascontiguousarray(base)


@pytest.mark.parametrize("d", list(NARROW), ids=lambda d: d.name)
def test_float32_to_narrow_matches_ml_dtypes(d):
    x = float32_patterns()
    got = kiln.from_numpy(x).to(d).numpy()
    assert_same_bits(got, x.astype(NARROW[d]))
    # The strided (non-SIMD) path gives the same bits.
    xs = x[: (x.size // 2) * 2].reshape(-1, 2)
    got_t = kiln.from_numpy(xs).t().to(d).numpy()
    assert_same_bits(np.ascontiguousarray(got_t), xs.T.astype(NARROW[d]))


@pytest.mark.parametrize("d", list(NARROW), ids=lambda d: d.name)
def test_narrow_to_float32_all_codes(d):
    nd = NARROW[d]
    codes = np.arange(2 ** (8 * nd.itemsize), dtype=BITS[nd.itemsize]).view(nd)
    got = kiln.from_numpy(codes).to(kiln.float32).numpy()
    assert_same_bits(got, codes.astype(np.float32))
    got64 = kiln.from_numpy(codes).to(kiln.float64).numpy()
    want64 = codes.astype(np.float32).astype(np.float64)
    np.testing.assert_array_equal(np.isnan(got64), np.isnan(want64))
    np.testing.assert_array_equal(got64[~np.isnan(want64)], want64[~np.isnan(want64)])


@pytest.mark.parametrize("src", list(NARROW), ids=lambda d: d.name)
@pytest.mark.parametrize("dst", list(NARROW), ids=lambda d: d.name)
def test_narrow_to_narrow_all_codes(src, dst):
    if src == dst:
        pytest.skip("identity")
    nd = NARROW[src]
    codes = np.arange(2 ** (8 * nd.itemsize), dtype=BITS[nd.itemsize]).view(nd)
    got = kiln.from_numpy(codes).to(dst).numpy()
    # Every narrow value is exact in float32, so going through float32 is the exact reference.
    assert_same_bits(got, codes.astype(np.float32).astype(NARROW[dst]))


@pytest.mark.parametrize("d", list(NARROW), ids=lambda d: d.name)
def test_narrow_roundtrip_through_numpy_and_tensor(d):
    x = np.array([0.0, 1.0, -2.0, 0.125, 240.0], np.float32)
    t = kiln.tensor(x, dtype=d)
    assert t.numpy().dtype == NARROW[d]
    np.testing.assert_array_equal(t.numpy().astype(np.float32), x.astype(NARROW[d]).astype(np.float32))
    assert t.tolist() == x.astype(NARROW[d]).astype(np.float64).tolist()


def test_e4m3fn_overflow_is_nan_and_e5m2_is_inf():
    x = np.array([500.0, -1e6, np.inf], np.float32)
    assert np.isnan(kiln.from_numpy(x).to(kiln.float8_e4m3fn).numpy().astype(np.float32)).all()
    y = np.array([61440.0, -1e6, np.inf], np.float32)  # 61440 ties up past 57344, the max
    assert np.isinf(kiln.from_numpy(y).to(kiln.float8_e5m2).numpy().astype(np.float32)).all()


# ---- promotion ---------------------------------------------------------------------

# (a, b, torch.promote_types(a, b))
PROMOTE = [
    ("bool", "bool", "bool"), ("bool", "uint8", "uint8"), ("bool", "float32", "float32"),
    ("uint8", "int8", "int16"), ("uint8", "int16", "int16"), ("uint8", "int32", "int32"),
    ("uint8", "int64", "int64"), ("int8", "int16", "int16"), ("int16", "int64", "int64"),
    ("int32", "float16", "float16"), ("int64", "bfloat16", "bfloat16"), ("int64", "float32", "float32"),
    ("float16", "bfloat16", "float32"), ("bfloat16", "float32", "float32"), ("float16", "float64", "float64"),
    ("float32", "float64", "float64"), ("float32", "complex64", "complex64"),
    ("float64", "complex64", "complex128"), ("float16", "complex64", "complex64"),
    ("int64", "complex64", "complex64"), ("bool", "complex128", "complex128"),
    ("complex64", "complex128", "complex128"), ("float8_e4m3fn", "float8_e4m3fn", "float8_e4m3fn"),
    ("float8_e5m2", "float8_e5m2", "float8_e5m2"),
]


@pytest.mark.parametrize("a, b, want", PROMOTE)
def test_promote_types(a, b, want):
    A, B = getattr(kiln, a), getattr(kiln, b)
    assert kiln.promote_types(A, B) == getattr(kiln, want)
    assert kiln.promote_types(B, A) == getattr(kiln, want)


@pytest.mark.parametrize("other", ["float8_e5m2", "float32", "bfloat16", "float16", "int8", "bool", "complex64"])
def test_fp8_mixing_raises(other):
    with pytest.raises(TypeError, match="float8"):
        kiln.promote_types(kiln.float8_e4m3fn, getattr(kiln, other))
    if other != "float8_e5m2":
        with pytest.raises(TypeError):
            kiln.promote_types(getattr(kiln, other), kiln.float8_e5m2)


def T(dtype, ndim=1):
    return kiln.zeros(*([2] * ndim), dtype=dtype)


@pytest.mark.parametrize(
    "a, b, want",
    [
        (T(kiln.int32), 2.5, kiln.float32),
        (T(kiln.int32), 2, kiln.int32),
        (T(kiln.uint8), -1, kiln.uint8),
        (T(kiln.uint8), True, kiln.uint8),
        (T(kiln.bool), 1, kiln.int64),
        (T(kiln.bool), True, kiln.bool),
        (T(kiln.float16), 1.0, kiln.float16),
        (T(kiln.bfloat16), 1, kiln.bfloat16),
        (T(kiln.int32), 1j, kiln.complex64),
        (T(kiln.float64), 1j, kiln.complex128),
        (T(kiln.float32), T(kiln.float64, 0), kiln.float32),  # 0-dim only raises the category
        (T(kiln.int32), T(kiln.float64, 0), kiln.float64),
        (T(kiln.int8), T(kiln.int64, 0), kiln.int8),
        (T(kiln.float16), T(kiln.float32), kiln.float32),
        (T(kiln.int64, 0), 2.0, kiln.float32),
        (1, 2.0, kiln.float32),
        (1, 2, kiln.int64),
    ],
)
def test_result_type(a, b, want):
    assert kiln.result_type(a, b) == want
    assert kiln.result_type(b, a) == want


def test_result_type_fp8_raises():
    with pytest.raises(TypeError):
        kiln.result_type(T(kiln.float8_e4m3fn), T(kiln.float32))


@pytest.mark.parametrize(
    "a, b, want",
    [
        ("float32", "int32", False), ("int32", "float32", True), ("complex64", "float64", False),
        ("float64", "complex64", True), ("int32", "bool", False), ("bool", "int8", True),
        ("int64", "uint8", True), ("float64", "float16", True),
    ],
)
def test_can_cast(a, b, want):
    assert kiln.can_cast(getattr(kiln, a), getattr(kiln, b)) is want
