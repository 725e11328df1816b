"""float64 and integer sources reach the narrow floats rounded once, from the exact value.

Each path that narrows a Python float, a float64/complex128 array or an integer is checked: Tensor.to
(contiguous SIMD kernels and the strided loop), kiln.tensor from lists, kiln.full / fill_ / setitem /
masked_fill with a number. The oracle is exact: fractions.Fraction against the midpoints of each
format's values; ml_dtypes (which converts float64 directly, rounding once) is first checked against
it on the sweep and then used for the full-size vector comparisons.
"""
import bisect
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

import kiln

pytestmark = pytest.mark.filterwarnings("ignore:.*encountered in cast:RuntimeWarning")

NARROW = {
    kiln.bfloat16: np.dtype(ml_dtypes.bfloat16),
    kiln.float16: np.dtype(np.float16),
    kiln.float8_e4m3fn: np.dtype(ml_dtypes.float8_e4m3fn),
    kiln.float8_e5m2: np.dtype(ml_dtypes.float8_e5m2),
}
UINT = {1: np.uint8, 2: np.uint16}


def IDS(d):
    return d.name


class Oracle:
    """Round-once reference for one narrow format, from the table of its values."""

    def __init__(self, nd):
        half = 2 ** (8 * nd.itemsize - 1)
        with np.errstate(invalid="ignore"):  # the NaN codes
            v = np.arange(half, dtype=UINT[nd.itemsize]).view(nd).astype(np.float64)
        self.values = [Fraction(x) for x in v[np.isfinite(v)]]  # increasing magnitudes, from +0
        top = self.values[-1]
        ulp = Fraction(2) ** (int(np.floor(np.log2(float(top)))) - nd_man_bits(nd))
        # Past the largest finite value: inf, except for e4m3fn, which has none (NaN).
        self.over = np.nan if nd == np.dtype(ml_dtypes.float8_e4m3fn) else np.inf
        self.values.append(top + ulp)

    def __call__(self, x):
        """The correctly rounded value (as a float) of x: a float, int or Fraction."""
        if isinstance(x, float) and np.isnan(x):
            return np.nan
        if isinstance(x, float) and np.isinf(x):
            return float(np.copysign(self.over, x))
        neg = x < 0 or (isinstance(x, float) and np.signbit(x))
        a = Fraction(abs(x))
        k = bisect.bisect_right(self.values, a) - 1  # values[k] <= a
        if k >= len(self.values) - 1:
            r = self.over
        else:
            lo, hi = self.values[k], self.values[k + 1]
            mid = (lo + hi) / 2
            idx = k if a < mid else k + 1 if a > mid else (k if k % 2 == 0 else k + 1)
            r = self.over if idx == len(self.values) - 1 else float(self.values[idx])
        return -r if neg else r


def nd_man_bits(nd):
    return {2: 10 if nd == np.dtype(np.float16) else 7, 1: 3 if nd == np.dtype(ml_dtypes.float8_e4m3fn) else 2}[
        nd.itemsize
    ]


ORACLES = {d: Oracle(nd) for d, nd in NARROW.items()}


def same(got, want):
    """Elementwise: both NaN, or equal with the same sign (so -0.0 != 0.0)."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    both_nan = np.isnan(got) & np.isnan(want)
    return both_nan | ((got == want) & (np.signbit(got) == np.signbit(want)))


def assert_same(got, want, xs=None):
    ok = same(got, want)
    bad = np.nonzero(~ok)[0]
    where = "" if xs is None else f" at x = {[float.hex(float(np.asarray(xs)[i])) for i in bad[:4]]}"
    assert bad.size == 0, f"{bad.size} mismatches{where}: got {np.asarray(got)[bad[:4]]}, want {np.asarray(want)[bad[:4]]}"


def midpoint_sweep(nd, rng, per_pair_random=4):
    """float64s around every midpoint of the format (both signs), plus the far ranges and specials."""
    half = 2 ** (8 * nd.itemsize - 1)
    v = np.arange(half, dtype=UINT[nd.itemsize]).view(nd).astype(np.float64)
    v = v[np.isfinite(v)]
    top = v[-1] + 2.0 ** (np.floor(np.log2(v[-1])) - nd_man_bits(nd))
    lo = v
    hi = np.append(v[1:], top)
    mid = (lo + hi) / 2
    pts = [lo, np.nextafter(lo, np.inf), mid, mid * (1 + 2.0**-40), mid * (1 - 2.0**-40)]
    up, down = mid, mid
    for _ in range(2):
        up, down = np.nextafter(up, np.inf), np.nextafter(down, 0)
        pts += [up, down]
    blo, bhi = lo.view(np.int64), hi.view(np.int64)
    for _ in range(per_pair_random):
        pts.append((blo + (rng.random(lo.size) * (bhi - blo)).astype(np.int64)).view(np.float64))
    far = np.array([top, np.nextafter(top, np.inf), 2 * top, float(np.finfo(np.float32).max), 2.0**128, 1e300,
                    np.finfo(np.float64).max, np.inf, 0.0, 5e-324, 1e-300, 2.0**-150, 2.0**-149, 1.5 * 2.0**-149])
    x = np.concatenate(pts + [far])
    return np.concatenate([x, -x, [np.nan]])


# ---- the oracle and ml_dtypes as a reference ------------------------------------------------------------


def test_oracle_known_values():
    e4 = ORACLES[kiln.float8_e4m3fn]
    assert e4(1.0625 + 2**-40) == 1.125 and e4(1.0625) == 1.0 and e4(464.0) == 448.0
    assert np.isnan(e4(464 + 2**-30)) and np.isnan(e4(-np.inf))
    assert ORACLES[kiln.float8_e5m2](61440.0) == np.inf and ORACLES[kiln.float8_e5m2](61440 - 2**-30) == 57344.0
    assert ORACLES[kiln.float16](65519) == 65504.0 and ORACLES[kiln.float16](-65520) == -np.inf
    assert ORACLES[kiln.bfloat16](2**60 + 2**52 + 1) == 2.0**60 + 2.0**53
    assert ORACLES[kiln.bfloat16](2**60 + 2**52) == 2.0**60


@pytest.mark.parametrize("d", list(NARROW), ids=IDS)
def test_ml_dtypes_rounds_float64_once(d):
    """ml_dtypes (and NumPy for float16) round float64 directly: check it against the exact oracle
    on the midpoint sweep before trusting it below."""
    x = midpoint_sweep(NARROW[d], np.random.default_rng(1), per_pair_random=1)
    if x.size > 60_000:
        x = np.concatenate([x[:: x.size // 30_000], x[-40:]])  # keep the far ranges and specials
    want = np.array([ORACLES[d](float(v)) for v in x])
    assert_same(x.astype(NARROW[d]).astype(np.float64), want, x)


# ---- float64 sources --------------------------------------------------------------------------------------

# (dtype, x, correctly rounded value); float32(x) is a tie of the format that goes the other way.
DOUBLE_CASES = [
    (kiln.float8_e4m3fn, 1.0625 + 2**-40, 1.125),
    (kiln.float8_e4m3fn, -(1.0625 + 2**-40), -1.125),
    (kiln.float8_e4m3fn, 464 + 2**-30, np.nan),
    (kiln.float8_e4m3fn, 2**-10 + 2**-50, 2**-9),
    (kiln.float8_e4m3fn, 3 * 2**-10 - 2**-50, 2**-9),
    (kiln.float8_e5m2, 1.125 + 2**-40, 1.25),
    (kiln.float8_e5m2, 61440 - 2**-30, 57344.0),
    (kiln.float8_e5m2, 2**-17 + 2**-60, 2**-16),
    (kiln.float16, 1 + 2**-11 + 2**-40, 1 + 2**-10),
    (kiln.float16, 65520 - 2**-30, 65504.0),
    (kiln.float16, 2**-25 + 2**-70, 2**-24),
    (kiln.bfloat16, 1 + 2**-8 + 2**-30, 1 + 2**-7),
    (kiln.bfloat16, (2 - 2**-8) * 2.0**127 - 2.0**100, (2 - 2**-7) * 2.0**127),
    (kiln.bfloat16, 2.0**-134 + 2.0**-170, 2.0**-133),
    (kiln.bfloat16, 3 * 2.0**-134 - 2.0**-170, 2.0**-133),
]


def values(t):
    return np.asarray(t.to(kiln.float64).tolist(), np.float64)


@pytest.mark.parametrize("d, x, want", DOUBLE_CASES, ids=lambda v: v.name if isinstance(v, kiln.dtype) else None)
def test_double_rounds_once_on_every_path(d, x, want):
    assert same(ORACLES[d](x), want)
    n = 67  # SIMD body and tail
    a = np.full(n, x)
    paths = {
        "Tensor.to": kiln.from_numpy(a).to(d),
        "strided Tensor.to": kiln.from_numpy(np.stack([a, a], 1)).t()[0].to(d),
        "complex128 Tensor.to": kiln.from_numpy(a + 3j).to(d),
        "tensor(list)": kiln.tensor([x] * 3, dtype=d),
        "tensor(ndarray)": kiln.tensor(a, dtype=d),
    }
    # A fill value past the format's largest finite value is refused (torch's rule for a
    # Scalar stored into a dtype), even where the conversion would round it back down.
    fills = {
        "full": lambda: kiln.full((5,), x, dtype=d),
        "fill_": lambda: kiln.zeros(5, dtype=d).fill_(x),
        "masked_fill": lambda: kiln.zeros(5, dtype=d).masked_fill(kiln.ones(5, dtype=kiln.bool), x),
        "setitem": lambda: kiln.zeros(5, dtype=d).__setitem__(slice(1, 3), x),
    }
    if abs(x) > float(ml_dtypes.finfo(NARROW[d]).max):
        for name, fill in fills.items():
            with pytest.raises(OverflowError, match="without overflow"):
                fill()
    else:
        paths["full"] = fills["full"]()
        paths["fill_"] = fills["fill_"]()
        paths["masked_fill"] = fills["masked_fill"]()
        t = kiln.zeros(5, dtype=d)
        t[1:3] = x
        paths["setitem"] = t[1:3]
    for name, got in paths.items():
        assert got.dtype == d, name
        assert bool(same(values(got), want).all()), f"{name}: {values(got)[:3]}, want {want}"


def test_issue_example():
    x = 1.0625 + 2**-40
    assert kiln.full((1,), x, dtype=kiln.float8_e4m3fn).item() == 1.125
    assert kiln.tensor([x], dtype=kiln.float8_e4m3fn).item() == 1.125
    assert kiln.tensor([x], dtype=kiln.float64).to(kiln.float8_e4m3fn).item() == 1.125
    assert np.array([x]).astype(ml_dtypes.float8_e4m3fn).astype(float)[0] == 1.125


@pytest.mark.parametrize("d", list(NARROW), ids=IDS)
def test_float64_midpoint_sweep(d):
    x = midpoint_sweep(NARROW[d], np.random.default_rng(2))
    want = x.astype(NARROW[d])  # checked against the exact oracle above
    got = kiln.from_numpy(x).to(d).numpy()
    assert_same(got.astype(np.float64), want.astype(np.float64), x)
    # The strided (generic loop) path.
    xs = np.stack([x, x], 1)
    got_s = kiln.from_numpy(xs).t()[1].to(d).numpy()
    assert_same(got_s.astype(np.float64), want.astype(np.float64), x)
    # Python floats one by one (Scalar conversion), on a sample.
    sample = x[:: max(1, x.size // 4000)]
    got_l = kiln.tensor(sample.tolist(), dtype=d).numpy()
    assert_same(got_l.astype(np.float64), sample.astype(NARROW[d]).astype(np.float64), sample)


# ---- integer sources --------------------------------------------------------------------------------------


def int_cases(d):
    """Integers at and around the integer midpoints of d past 2^24 (where float32 rounds first) and past
    2^53 (where the double does), plus small ones and the extremes."""
    o = ORACLES[d]
    out = set(range(-300, 300)) | {65504, 65519, 65520, 61439, 61440, 464, 465, 2**24 + 2**16 + 1}
    for k in range(len(o.values) - 1):
        lo, hi = o.values[k], o.values[k + 1]
        if lo < 2**20 or hi > 2**64:
            continue
        mid = (lo + hi) / 2
        if mid.denominator == 1:
            m = int(mid)
            out |= {m - 1, m, m + 1, int(lo) + 1}
    out |= {2**63 - 1, -(2**63), 2**64 - 1, 2**63, 2**60 + 2**52 + 1, 2**60 + 2**53 + 2**52 - 1}
    return sorted(out)


@pytest.mark.parametrize("d", list(NARROW), ids=IDS)
def test_integers_round_once(d):
    o = ORACLES[d]
    vals = int_cases(d)
    i64 = [v for v in vals if -(2**63) <= v < 2**63]
    want64 = np.array([o(v) for v in i64])
    assert_same(values(kiln.from_numpy(np.array(i64, np.int64)).to(d)), want64)
    assert_same(values(kiln.tensor(i64, dtype=d)), want64)  # Python ints, one by one
    u64 = [v for v in vals if 2**63 <= v < 2**64]  # above int64: the uint64 Scalar
    assert_same(values(kiln.tensor(u64, dtype=d)), np.array([o(v) for v in u64]))
    assert_same(values(kiln.from_numpy(np.array(u64, np.uint64)).to(d)), np.array([o(v) for v in u64]))
    i32 = [v for v in i64 if -(2**31) <= v < 2**31]
    assert_same(values(kiln.from_numpy(np.array(i32, np.int32)).to(d)), np.array([o(v) for v in i32]))
    for v in (2**60 + 2**52 + 1, -(2**24 + 2**16 + 1), 2**63 + 2**55 + 1, 65519):
        if abs(v) > float(ml_dtypes.finfo(NARROW[d]).max):  # a fill value past the range is refused
            with pytest.raises(OverflowError, match="without overflow"):
                kiln.full((1,), v, dtype=d)
        else:
            assert same(kiln.full((1,), v, dtype=d).item(), o(v)), v


def test_integer_examples():
    assert kiln.tensor([16842753], dtype=kiln.int32).to(kiln.bfloat16).item() == 2**24 + 2**17
    assert kiln.tensor([2**60 + 2**52 + 1], dtype=kiln.bfloat16).item() == 2**60 + 2**53
    assert kiln.tensor([2**63 + 2**55 + 1], dtype=kiln.bfloat16).item() == 2**63 + 2**56
    assert kiln.tensor([65520], dtype=kiln.int64).to(kiln.float16).item() == np.inf


def test_integer_scalar_to_float32_rounds_once():
    # 2^60 + 2^36 + 1 is 2^60 + 2^37 in float32; through the double (2^60 + 2^36, a tie) it was 2^60.
    v = 2**60 + 2**36 + 1
    want = 2**60 + 2**37
    assert kiln.full((1,), v, dtype=kiln.float32).item() == want
    assert kiln.tensor([v], dtype=kiln.float32).item() == want
    assert kiln.tensor([v], dtype=kiln.complex64).item() == want
    assert kiln.tensor([v]).to(kiln.float32).item() == want
    u = 2**63 + 2**39 + 1  # above int64: the uint64 Scalar
    assert kiln.tensor([u], dtype=kiln.float32).item() == 2**63 + 2**40
