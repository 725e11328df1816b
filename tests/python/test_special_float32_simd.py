"""float32 lgamma, digamma and i0: the SIMD kernels (contiguous float32 / bfloat16 /
float16, computed in float64 lanes) against SciPy's float64 values rounded to
float32, over the whole float range: both tails, the reflection (x < 0) and its
poles, the zeros of lgamma (1, 2, -2.457...) and digamma's root (1.4616...), where
a short series or an unshifted recurrence loses many ulps, and i0's three
Chebyshev ranges and its overflow. Strided inputs run the scalar body; both must
agree."""
import ml_dtypes
import numpy as np
import pytest
import scipy.special as sp

import kiln

F32_TINY = np.float64(np.finfo(np.float32).tiny)


def ulps(got, want):
    """|got - want| in float32 ulps of want (want: float64, finite in float32)."""
    spacing = np.spacing(np.abs(want.astype(np.float32))).astype(np.float64)
    return np.abs(got.astype(np.float64) - want) / np.maximum(spacing, np.spacing(np.float32(F32_TINY)))


def points():
    rng = np.random.default_rng(7)
    n = 1 << 15
    parts = [
        rng.standard_normal(n) * 3,
        rng.uniform(-60, 60, n),
        np.exp(rng.uniform(-85, 85, n)) * rng.choice([-1, 1], n),  # every magnitude, both signs
        1 + rng.uniform(-0.05, 0.05, n),  # lgamma's zeros, inside and outside the series window
        2 + rng.uniform(-0.05, 0.05, n),
        -2.4570247 + rng.uniform(-1e-4, 1e-4, 1024),  # a zero of lgamma for x < 0
        1.4616321 + np.arange(-512, 512) * 1.2e-7,  # digamma's root, float32 by float32
        -3 + np.linspace(-1e-5, 1e-5, 1024),  # beside a pole
        [1.0, 2.0, 3.0, 0.5, -0.5, 1e-30, 1e-37, 1e-45, 4e36, 4.2e36, -1e7 + 0.5, 8.0, 7.999999],
        np.linspace(-95, 95, 4001),  # i0's ranges (4, 8) and its overflow past 91.9
    ]
    return np.concatenate([np.asarray(p, np.float64) for p in parts]).astype(np.float32)


REFS = {
    "lgamma": (kiln.lgamma, sp.gammaln),
    "digamma": (kiln.digamma, sp.digamma),
    "i0": (kiln.i0, lambda x: np.where(np.isinf(x), np.inf, sp.i0(x))),  # torch: i0(+-inf) = inf
}


@pytest.mark.parametrize("name", sorted(REFS))
def test_float32_within_one_ulp_of_scipy(name):
    op, ref = REFS[name]
    x = points()
    got = op(kiln.tensor(x)).numpy()
    with np.errstate(over="ignore", invalid="ignore"):
        want = ref(x.astype(np.float64))
        fits = np.isfinite(want.astype(np.float32))
    assert fits.sum() > 100000
    u = ulps(got[fits], want[fits])
    assert u.max() <= 1.0, (name, x[fits][u.argmax()], got[fits][u.argmax()], want[fits][u.argmax()])
    assert u.mean() < 0.3  # correctly rounded nearly everywhere
    # beyond float32's range the result is an infinity of the reference's sign
    np.testing.assert_array_equal(got[~fits], np.sign(want[~fits]) * np.inf)


@pytest.mark.parametrize("name", sorted(REFS))
def test_strided_scalar_body_agrees(name):
    op, _ = REFS[name]
    x = points()
    contiguous = op(kiln.tensor(x)).numpy()
    strided = op(kiln.tensor(np.stack([x, x], 1))[:, 0]).numpy()
    fin = np.isfinite(contiguous)
    np.testing.assert_array_equal(np.isfinite(strided), fin)
    assert ulps(contiguous[fin], strided[fin].astype(np.float64)).max() <= 1.0


# (x, lgamma, digamma, i0): torch's values at the poles and infinities, and the tails
SPECIAL = [
    (np.nan, np.nan, np.nan, np.nan),
    (np.inf, np.inf, np.inf, np.inf),
    (-np.inf, np.inf, np.nan, np.inf),
    (0.0, np.inf, -np.inf, 1.0),
    (-0.0, np.inf, np.inf, 1.0),
    (-1.0, np.inf, np.nan, 1.2660658777520082),
    (-2.0, np.inf, np.nan, 2.2795853023360673),
    (-1e30, np.inf, np.nan, np.inf),
    (5e36, np.inf, 84.50250125360132, np.inf),
    (1e-30, -np.log(1e-30), -1e30, 1.0),
    (-1e-30, -np.log(1e-30), 1e30, 1.0),
    (91.0, 318.1526396202093, 4.505354937946983, 1.3892714060989622e38),
    (-92.0, np.inf, np.nan, np.inf),
]


@pytest.mark.parametrize("x,lgamma,digamma,i0", SPECIAL, ids=lambda v: repr(v))
@pytest.mark.parametrize("name", sorted(REFS))
def test_special_values_in_every_lane(name, x, lgamma, digamma, i0):
    """Each special value alone among ordinary ones, at every lane position and
    in the tail, so the vector body must hand it over itself."""
    op, _ = REFS[name]
    want = {"lgamma": lgamma, "digamma": digamma, "i0": i0}[name]
    for pos in range(37):
        v = np.full(37, 2.5, np.float32)
        v[pos] = x
        got = op(kiln.tensor(v)).numpy()
        if np.isnan(want):
            assert np.isnan(got[pos]), (pos, got[pos])
        else:
            assert got[pos] == pytest.approx(want, rel=1e-6), (pos, got[pos])
        assert got[(pos + 1) % 37] == op(kiln.tensor(np.float32(2.5))).item()


@pytest.mark.parametrize("dtype", [ml_dtypes.bfloat16, np.float16], ids=["bfloat16", "float16"])
@pytest.mark.parametrize("name", sorted(REFS))
def test_narrow_floats_round_once(name, dtype):
    op, ref = REFS[name]
    x = np.random.default_rng(3).uniform(-8, 12, 4099).astype(dtype)  # odd length: the padded tail
    got = op(kiln.tensor(x)).numpy()
    assert got.dtype == np.dtype(dtype)
    want = ref(x.astype(np.float64)).astype(np.float32)
    expected = want.astype(dtype)  # one rounding of the float32 result
    np.testing.assert_array_equal(got[np.isfinite(want)], expected[np.isfinite(want)])
