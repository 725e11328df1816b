"""kiln.linalg on NaN and inf input, the policy of include/kiln/linalg.h: the SVD, eigen and
least-squares ops raise kiln's RuntimeError and print nothing (LAPACK's xerbla writes to stdout,
and its SVD looped forever on inf), cholesky reports such a matrix not positive-definite, and the
LU/QR family gives NaN for a matrix holding a NaN (as NumPy; LAPACKE used to refuse it with
"illegal value", and OpenBLAS's sscal turned x * NaN into 0) and computes through inf as NumPy
does. Every case runs on the batched small kernel (n <= 16), and on LAPACK below and above the
n = 96 switch between threading across the batch and inside each call."""
import faulthandler
import re

import numpy as np
import pytest

import kiln.linalg as LA

# NumPy's references warn about the NaNs they are given.
pytestmark = pytest.mark.filterwarnings("ignore:(invalid value|overflow) encountered:RuntimeWarning")

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
SHAPES = [((), 4), ((3,), 16), ((), 40), ((2,), 100)]  # (batch, n)
VALUES = ["nan", "inf", "-inf", "all-nan"]


@pytest.fixture(autouse=True)
def hang_guard():
    # An infinite loop inside LAPACK cannot be interrupted from Python: end the run with
    # tracebacks instead of hanging it (inf input used to loop in gesdd).
    faulthandler.dump_traceback_later(600, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


def A_(t):
    return np.asarray(t)


def rand(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def spd(batch, n, dtype, seed=0):
    """Well-conditioned Hermitian positive-definite matrices."""
    x = rand(np.random.default_rng(seed), batch + (n, n), np.complex128 if np.dtype(dtype).kind == "c" else np.float64)
    return (x @ np.conj(np.swapaxes(x, -1, -2)) + n * np.eye(n)).astype(dtype)


def poison(a, value, at=(1, 0)):
    """A copy of a whose last matrix holds `value` at `at` (or is all NaN)."""
    a = a.copy()
    last = (-1,) * (a.ndim - 2)
    if value == "all-nan":
        a[last] = np.nan
    else:
        a[last + at] = {"nan": np.nan, "inf": np.inf, "-inf": -np.inf}[value]
    return a


def where(batch):
    return f" in batch element {int(np.prod(batch)) - 1}" if batch else ""


def shape_of(a):
    return f"{a.dtype.name} [{', '.join(map(str, a.shape))}]"


def nonfinite_msg(op, what, batch, shown):
    return re.escape(f"[linalg.{op}] {what} contains non-finite values (NaN or inf){where(batch)} ({shape_of(shown)})")


def assert_silent(capfd):
    out, err = capfd.readouterr()
    assert out == "" and err == "", (out, err)


# ------------------------------------------------------------------ ops that raise

RAISING = {
    "svd": ("svd", lambda a: LA.svd(a)),
    "svd_reduced": ("svd", lambda a: LA.svd(a, full_matrices=False)),
    "svdvals": ("svdvals", LA.svdvals),
    "pinv": ("pinv", LA.pinv),
    "pinv_hermitian": ("pinv", lambda a: LA.pinv(a, hermitian=True)),
    "matrix_rank": ("matrix_rank", LA.matrix_rank),
    "matrix_rank_hermitian": ("matrix_rank", lambda a: LA.matrix_rank(a, hermitian=True)),
    "matrix_norm_2": ("matrix_norm", lambda a: LA.matrix_norm(a, 2)),
    "matrix_norm_-2": ("matrix_norm", lambda a: LA.matrix_norm(a, -2)),
    "norm_nuc": ("matrix_norm", lambda a: LA.norm(a, "nuc", dim=(-2, -1))),
    "eigh": ("eigh", LA.eigh),
    "eigh_upper": ("eigh", lambda a: LA.eigh(a, UPLO="U")),
    "eigvalsh": ("eigvalsh", LA.eigvalsh),
}


@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize("batch,n", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", list(RAISING))
def test_raises_kiln_error_and_prints_nothing(name, dtype, batch, n, value, capfd):
    op, fn = RAISING[name]
    at = (0, 1) if name == "eigh_upper" else (1, 0)  # in the triangle eigh reads
    a = poison(spd(batch, n, dtype), value, at)
    with pytest.raises(RuntimeError, match="^" + nonfinite_msg(op, "the input", batch, a) + "$"):
        fn(a)
    assert_silent(capfd)
    fn(spd(batch, n, dtype))  # the finite matrices still work


@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize("batch,n", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("driver", ["gelsy", "gels", "gelsd", "gelss"])
def test_lstsq_raises_for_nonfinite_a_or_b(driver, dtype, batch, n, value, capfd):
    a = spd(batch, n, dtype)
    b = rand(np.random.default_rng(1), batch + (n, 2), dtype)
    bad_a = poison(a, value)
    with pytest.raises(RuntimeError, match="^" + nonfinite_msg("lstsq", "A", batch, bad_a) + "$"):
        LA.lstsq(bad_a, b, driver=driver)
    bad_b = poison(b, value)
    with pytest.raises(RuntimeError, match="^" + nonfinite_msg("lstsq", "B", batch, bad_b) + "$"):
        LA.lstsq(a, bad_b, driver=driver)
    assert_silent(capfd)


@pytest.mark.parametrize("dtype", DTYPES)
def test_hermitian_ops_ignore_the_unread_triangle(dtype):
    # LAPACK reads one triangle (and for complex, not the imaginary part of the diagonal):
    # non-finite values elsewhere change nothing, as in NumPy.
    a = spd((2,), 20, dtype)
    for uplo, at in (("L", (0, 5)), ("U", (5, 0))):
        bad = poison(a, "nan", at)
        if np.dtype(dtype).kind == "c":
            bad[0, 3, 3] += complex(0, np.nan)
        np.testing.assert_array_equal(A_(LA.eigvalsh(bad, UPLO=uplo)), A_(LA.eigvalsh(a, UPLO=uplo)))
        np.testing.assert_allclose(A_(LA.eigvalsh(bad, UPLO=uplo)), np.linalg.eigvalsh(bad, UPLO=uplo),
                                   rtol=1e-4, atol=0)
        upper = uplo == "U"
        np.testing.assert_array_equal(A_(LA.cholesky(bad, upper=upper)), A_(LA.cholesky(a, upper=upper)))


# ------------------------------------------------------------------ cholesky


@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize("batch,n", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_nonfinite_is_not_positive_definite(upper, dtype, batch, n, value, capfd):
    # The smallest leading minor holding the value is of order 3 (all-NaN: order 1).
    a = poison(spd(batch, n, dtype), value, (1, 2) if upper else (2, 1))
    k = 1 if value == "all-nan" else 3
    info = A_(LA.cholesky_ex(a, upper=upper).info)
    expected = np.zeros(batch, np.int32)
    expected[(-1,) * len(batch)] = k
    np.testing.assert_array_equal(info, expected)
    msg = (f"[linalg.cholesky] the matrix{where(batch)} is not positive-definite: its leading minor of order {k} "
           f"contains non-finite values (NaN or inf) (info {k}; input {shape_of(a)})")
    with pytest.raises(RuntimeError, match="^" + re.escape(msg) + "$"):
        LA.cholesky(a, upper=upper)
    with pytest.raises(RuntimeError, match="^" + re.escape(msg) + "$"):
        LA.cholesky_ex(a, upper=upper, check_errors=True)
    assert_silent(capfd)


# ------------------------------------------------------------------ the LU / QR family


@pytest.mark.parametrize("value", ["nan", "all-nan"])
@pytest.mark.parametrize("batch,n", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_inv_solve_det_of_a_nan_matrix_are_nan(dtype, batch, n, value, capfd):
    a = rand(np.random.default_rng(3), batch + (n, n), dtype)
    bad = poison(a, value)
    last = (-1,) * len(batch)
    b = rand(np.random.default_rng(4), batch + (n, 3), dtype)
    ref_inv = np.linalg.inv(bad)  # NumPy: NaN over the whole inverse of a dense matrix with a NaN
    assert np.isnan(ref_inv[last]).all()
    for r in (A_(LA.inv(bad)), A_(LA.inv_ex(bad, check_errors=True).inverse)):
        np.testing.assert_array_equal(np.isnan(r), np.isnan(ref_inv))  # the other matrices: no NaN
    assert not A_(LA.inv_ex(bad).info).any()
    x = A_(LA.solve(bad, b))
    assert np.isnan(x[last]).all()
    assert not A_(LA.solve_ex(bad, b).info).any()
    np.testing.assert_array_equal(np.isnan(x), np.isnan(np.linalg.solve(bad, b)))
    d = A_(LA.det(bad))
    assert np.isnan(d[last]) and np.isnan(np.linalg.det(bad)[last])  # (a finite 100 x 100 det may overflow)
    sign, logabs = (A_(t) for t in LA.slogdet(bad))
    assert np.isnan(sign[last]) and np.isnan(logabs[last])
    np.testing.assert_array_equal(np.isnan(logabs), np.isnan(np.linalg.slogdet(bad)[1]))
    assert_silent(capfd)


@pytest.mark.parametrize("value", ["nan", "all-nan"])
@pytest.mark.parametrize("batch,n", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_lu_and_qr_of_a_nan_matrix_are_nan(dtype, batch, n, value, capfd):
    a = rand(np.random.default_rng(5), batch + (n, n), dtype)
    bad = poison(a, value)
    last = (-1,) * len(batch)
    f = LA.lu_factor_ex(bad)
    LU, piv, info = A_(f.LU), A_(f.pivots), A_(f.info)
    assert np.isnan(LU[last]).all() and not info.any()
    np.testing.assert_array_equal(piv[last], np.arange(1, n + 1))  # no row exchange
    np.testing.assert_array_equal(A_(LA.lu_factor(bad).LU), LU)
    P, L, U = (A_(t) for t in LA.lu(bad))
    np.testing.assert_array_equal(P[last], np.eye(n))
    assert np.isnan(np.tril(L[last], -1)[np.tril_indices(n, -1)]).all()
    np.testing.assert_array_equal(np.diagonal(L[last]), 1)
    assert np.isnan(U[last][np.triu_indices(n)]).all()
    Q, R = (A_(t) for t in LA.qr(bad))
    assert np.isnan(Q[last]).all() and np.isnan(R[last][np.triu_indices(n)]).all()
    np.testing.assert_array_equal(R[last][np.tril_indices(n, -1)], 0)
    if batch:  # the other matrices are untouched
        good = (slice(0, -1),)
        np.testing.assert_array_equal(LU[good], A_(LA.lu_factor(a[good]).LU))
        np.testing.assert_array_equal(A_(LA.inv(bad))[good], A_(LA.inv(a[good])))
    assert_silent(capfd)


@pytest.mark.parametrize("dtype", DTYPES)
def test_householder_product_with_nan(dtype):
    a = rand(np.random.default_rng(6), (2, 30, 20), dtype)
    tau = rand(np.random.default_rng(7), (2, 20), dtype)
    clean = A_(LA.householder_product(a, tau))
    bad = a.copy()
    bad[1, 0, 3] = np.nan  # above the diagonal: not read
    np.testing.assert_array_equal(A_(LA.householder_product(bad, tau)), clean)
    bad[1, 7, 3] = np.nan  # a Householder vector
    r = A_(LA.householder_product(bad, tau))
    assert np.isnan(r[1]).all()
    np.testing.assert_array_equal(r[0], clean[0])
    bad_tau = tau.copy()
    bad_tau[0, 5] = np.nan
    r = A_(LA.householder_product(a, bad_tau))
    assert np.isnan(r[0]).all()
    np.testing.assert_array_equal(r[1], clean[1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [2, 20])  # the small kernel and LAPACK
def test_nan_matrix_with_a_zero_pivot_is_nan_not_singular(dtype, n):
    # A zero first column would stop LU at U[0, 0] == 0; the NaN decides: NaN, info 0, on both paths.
    a = np.eye(n, dtype=dtype)
    a[:, 0] = 0
    a[-1, -1] = np.nan
    r = LA.inv_ex(a)
    assert np.isnan(A_(r.inverse)).all() and int(A_(r.info)) == 0
    assert np.isnan(A_(LA.inv(a))).all()
    assert np.isnan(A_(LA.solve(a, np.ones(n, dtype)))).all()


@pytest.mark.parametrize("value", ["inf", "-inf"])
@pytest.mark.parametrize("batch,n", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_inf_goes_through_the_arithmetic_as_numpy(dtype, batch, n, value):
    a = (rand(np.random.default_rng(8), batch + (n, n), dtype) + 3 * np.sqrt(n) * np.eye(n)).astype(dtype)
    a = poison(a, value)  # well conditioned: the two LUs agree closely where finite
    b = rand(np.random.default_rng(9), batch + (n, 2), dtype)
    tol = dict(rtol=1e-3, atol=1e-4) if dtype in (np.float32, np.complex64) else dict(rtol=1e-9, atol=1e-10)
    with np.errstate(all="ignore"):
        pairs = [(A_(LA.inv(a)), np.linalg.inv(a)), (A_(LA.solve(a, b)), np.linalg.solve(a, b))]
        if np.dtype(dtype).kind == "f":  # complex products of inf differ by convention (C99 Annex G or not)
            pairs.append((A_(LA.det(a)), np.linalg.det(a)))
    for r, e in pairs:
        np.testing.assert_allclose(r, e, **tol)  # NaN and inf in the same places, the rest close


def test_inv_of_inf_is_zero_and_slogdet_sign_follows_det():
    assert A_(LA.inv(np.array([[np.inf]]))).tolist() == [[0.0]]
    for a in (np.array([[np.inf, 1.0], [2.0, 3.0]]), np.array([[2.0, 1.0], [-np.inf, 3.0]])):
        sign, logabs = (float(A_(t)) for t in LA.slogdet(a))
        d = float(A_(LA.det(a)))
        assert np.isinf(d) and sign == np.sign(d) and logabs == np.inf
        assert sign == np.linalg.slogdet(a)[0]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [4, 40])
def test_solve_triangular_and_lu_solve_propagate_nan(dtype, n):
    rng = np.random.default_rng(10)
    a = (np.tril(rand(rng, (n, n), dtype)) + 4 * np.eye(n)).astype(dtype)
    b = rand(rng, (n, 9), dtype)
    b[1, 0] = np.nan
    x = A_(LA.solve_triangular(a, b, upper=False))
    assert np.isnan(x[1:, 0]).all() and not np.isnan(x[:, 1:]).any() and not np.isnan(x[0, 0])
    lu, piv = LA.lu_factor(a)
    y = A_(LA.lu_solve(lu, piv, b))
    assert np.isnan(y[:, 0]).any() and not np.isnan(y[:, 1:]).any()


# ------------------------------------------------------------------ finite extremes


@pytest.mark.parametrize("dtype", DTYPES)
def test_finite_extremes_never_reach_xerbla(dtype, capfd):
    # LAPACK scales matrices near overflow or underflow itself: finite input never makes it
    # reject an argument (which xerbla would print) and never raises.
    fi = np.finfo(dtype)
    rng = np.random.default_rng(11)
    for n in (4, 40):
        for scale in (fi.max, fi.max / 4, fi.tiny, fi.smallest_subnormal):
            a = (rng.uniform(-1, 1, (n, n)) * scale).astype(dtype)
            a[0, 0] = scale
            b = a[:, :2].copy()
            LA.svd(a), LA.svdvals(a), LA.eigh(a), LA.pinv(a), LA.matrix_norm(a, 2), LA.qr(a)
            LA.inv_ex(a), LA.cholesky_ex(a), LA.slogdet(a), LA.lu_factor_ex(a)
            for driver in ("gelsy", "gelsd", "gelss"):
                LA.lstsq(a, b, driver=driver)
    assert_silent(capfd)
