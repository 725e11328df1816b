"""kiln.linalg against NumPy/SciPy, LAPACK-test-suite style: backward-error
residuals under fixed bounds (in units of n * eps) over random, ill-conditioned,
graded, rank-deficient, complex, batched and zero-size inputs; pivots equal to
SciPy's lu_factor; singular inputs reported with kiln's messages (the info torch reports)."""
import re

import numpy as np
import pytest
import scipy.linalg as sla

import kiln
import kiln.linalg as LA

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
EPS = {np.float32: np.finfo(np.float32).eps, np.float64: np.finfo(np.float64).eps,
       np.complex64: np.finfo(np.float32).eps, np.complex128: np.finfo(np.float64).eps}


def A_(t):
    return np.asarray(t)


def rand(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def with_cond(rng, n, cond, dtype, batch=()):
    """Matrices U diag(s) V^H with singular values from 1 down to 1/cond."""
    out = np.empty(batch + (n, n), dtype=np.complex128 if np.issubdtype(dtype, np.complexfloating) else np.float64)
    for idx in np.ndindex(*batch):
        u, _ = np.linalg.qr(rand(rng, (n, n), np.complex128 if np.iscomplexobj(out) else np.float64))
        v, _ = np.linalg.qr(rand(rng, (n, n), np.complex128 if np.iscomplexobj(out) else np.float64))
        s = np.logspace(0, -np.log10(cond), n)
        out[idx] = (u * s) @ v.conj().T
    return out.astype(dtype)


def nrm(x):
    return np.linalg.norm(np.asarray(x, dtype=np.complex128).reshape(-1, *x.shape[-2:]), axis=(-2, -1)).max() \
        if x.ndim >= 2 else np.linalg.norm(x)


def backward_inv(a, x):
    """max over the batch of ||A X - I|| / (||A|| ||X|| n eps)."""
    a64, x64 = a.astype(np.complex128), x.astype(np.complex128)
    n = a.shape[-1]
    r = a64 @ x64 - np.eye(n)
    worst = 0.0
    for idx in np.ndindex(*a.shape[:-2]):
        d = np.linalg.norm(a64[idx]) * np.linalg.norm(x64[idx]) * n * EPS[a.dtype.type]
        worst = max(worst, np.linalg.norm(r[idx]) / d)
    return worst


# ---------------------------------------------------------------- inv / solve


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 8, 16, 17, 40])
@pytest.mark.parametrize("batch", [(), (7,), (2, 3)])
def test_inv_backward_error(rng, dtype, n, batch):
    a = rand(rng, batch + (n, n), dtype)
    x = A_(LA.inv(a))
    assert x.shape == a.shape and x.dtype == a.dtype
    assert backward_inv(a, x) < 30


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [4, 16, 64])
def test_inv_ill_conditioned(rng, dtype, n):
    conds = [1e4, 1e6] if dtype == np.float32 else [1e6, 1e9, 1e12]
    for cond in conds:
        a = with_cond(rng, n, cond, dtype, batch=(5,))
        assert backward_inv(a, A_(LA.inv(a))) < 30 * (1 + np.log2(n))


def test_inv_large_batch_matches_numpy(rng):
    a = rand(rng, (1003, 4, 4), np.float32)  # not a multiple of any vector width
    x = A_(LA.inv(a))
    ref = np.linalg.inv(a.astype(np.float64))
    scale = np.linalg.norm(ref, axis=(-2, -1)) * np.linalg.cond(a.astype(np.float64))
    err = np.linalg.norm(x - ref, axis=(-2, -1)) / scale
    assert err.max() < 1e-5


def test_inv_noncontiguous_and_graded(rng):
    a = rand(rng, (6, 6, 3), np.float64).transpose(2, 0, 1)  # batch 3 of 6x6, strided
    assert backward_inv(a, A_(LA.inv(kiln.from_numpy(np.ascontiguousarray(a)).transpose(-2, -1)).transpose(-2, -1))) < 30
    d = np.diag(np.logspace(-3, 3, 6))
    g = d @ (rand(rng, (6, 6), np.float64) + 6 * np.eye(6)) @ d  # graded
    x = A_(LA.inv(g))
    assert np.allclose(x @ g, np.eye(6), atol=1e-8)


def test_inv_zero_size():
    assert A_(LA.inv(np.zeros((0, 3, 3), np.float32))).shape == (0, 3, 3)
    assert A_(LA.inv(np.zeros((2, 0, 0), np.float64))).shape == (2, 0, 0)


@pytest.mark.parametrize("n", [2, 3, 4, 7, 16, 20])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
def test_inv_singular_info_matches_getrf(rng, n, dtype):
    for k in range(n):
        a = rand(rng, (n, n), dtype)
        a[:, k] = 0  # getrf meets an all-zero pivot column at step k
        r = LA.inv_ex(a)
        assert int(A_(r.info)) == k + 1
        msg = (f"[linalg.inv] the matrix is singular: U[{k}, {k}] of its LU factorization is zero "
               f"(info {k + 1}; input {np.dtype(dtype).name} [{n}, {n}])")
        with pytest.raises(RuntimeError, match="^" + re.escape(msg) + "$"):
            LA.inv(a)


def test_inv_singular_batched_message():
    a = np.stack([np.eye(3), np.zeros((3, 3))]).astype(np.float32)
    info = A_(LA.inv_ex(a).info)
    assert info.tolist() == [0, 1]
    with pytest.raises(RuntimeError, match=r"^\[linalg.inv\] the matrix in batch element 1 is singular: U\[0, 0\] "
                                           r"of its LU factorization is zero \(info 1; input float32 \[2, 3, 3\]\)$"):
        LA.inv(a)
    with pytest.raises(RuntimeError):
        LA.inv_ex(a, check_errors=True)
    # torch's [[1, 2], [2, 4]] example: the pivot swap makes element 2 the zero one
    assert int(A_(LA.inv_ex(np.array([[1.0, 2], [2, 4]], np.float32)).info)) == 2


def test_inv_bad_inputs():
    with pytest.raises(TypeError):
        LA.inv(np.eye(3, dtype=np.int32))
    with pytest.raises(ValueError, match="square"):
        LA.inv(np.zeros((2, 3), np.float32))
    with pytest.raises(ValueError):
        LA.inv(np.zeros(3, np.float32))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n,k", [(1, 1), (3, 1), (4, 4), (4, 20), (9, 3), (16, 16), (33, 5)])
def test_solve_residual(rng, dtype, n, k):
    a = rand(rng, (3, n, n), dtype)
    b = rand(rng, (3, n, k), dtype)
    x = A_(LA.solve(a, b))
    a64, x64, b64 = (v.astype(np.complex128) for v in (a, x, b))
    r = np.linalg.norm(a64 @ x64 - b64, axis=(-2, -1))
    bound = (np.linalg.norm(a64, axis=(-2, -1)) * np.linalg.norm(x64, axis=(-2, -1)) + np.linalg.norm(b64, axis=(-2, -1)))
    assert (r / (bound * n * EPS[dtype])).max() < 30


def test_solve_vector_broadcast_and_right(rng):
    a = rand(rng, (2, 1, 5, 5), np.float64)
    b = rand(rng, (3, 5, 2), np.float64)
    x = A_(LA.solve(a, b))
    assert x.shape == (2, 3, 5, 2)
    np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-9, atol=1e-9)
    v = rand(rng, (5,), np.float64)
    np.testing.assert_allclose(A_(LA.solve(a[0, 0], v)), np.linalg.solve(a[0, 0], v), rtol=1e-9)
    bv = rand(rng, (2, 1, 5), np.float64)  # A's shape without the last dim: a batch of vectors
    assert A_(LA.solve(a, bv)).shape == (2, 1, 5)
    c = rand(rng, (4, 5), np.float64)
    np.testing.assert_allclose(A_(LA.solve(a[0, 0], c, left=False)) @ a[0, 0], c, atol=1e-9)
    with pytest.raises(RuntimeError, match=r"^\[linalg.solve\] the matrix is singular: U\[0, 0\] of its LU "
                                           r"factorization is zero \(info 1; input float32 \[3, 3\]\)$"):
        LA.solve(np.zeros((3, 3), np.float32), np.ones(3, np.float32))
    with pytest.raises(RuntimeError, match=r"^\[linalg.solve\] the matrix in batch element 0 is singular"):
        LA.solve(np.zeros((3, 3), np.float32), np.ones((2, 3, 1), np.float32))  # B's batch names it
    for n in (3, 20):  # small and LAPACK paths
        assert int(A_(LA.solve_ex(np.zeros((n, n), np.float64), np.ones(n)).info)) == 1


# ---------------------------------------------------------------- triangular


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n,m", [(1, 1), (5, 3), (16, 8), (32, 64), (64, 64), (64, 9), (70, 12), (16, 3)])
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular(rng, dtype, n, m, upper, unit):
    a = rand(rng, (2, n, n), dtype) / n + 2 * np.eye(n, dtype=dtype)  # well conditioned triangle
    tri = np.triu(a) if upper else np.tril(a)
    diag = np.eye(n, dtype=bool)
    if unit:
        tri[:, diag] = 1
    # The other triangle (and, when unit, the diagonal) must not be read.
    other = np.tril(np.ones((n, n), bool), -1) if upper else np.triu(np.ones((n, n), bool), 1)
    poisoned = tri.copy()
    poisoned[:, other] = np.nan
    if unit:
        poisoned[:, diag] = np.nan
    b = rand(rng, (2, n, m), dtype)
    x = A_(LA.solve_triangular(poisoned, b, upper=upper, unitriangular=unit))
    ref = np.linalg.solve(tri.astype(np.complex128), b.astype(np.complex128))
    tol = 1e-4 if EPS[dtype] > 1e-10 else 1e-10
    np.testing.assert_allclose(x, ref, rtol=tol, atol=tol)
    bl = rand(rng, (2, m, n), dtype)  # right: X A = B
    xr = A_(LA.solve_triangular(poisoned, bl, upper=upper, left=False, unitriangular=unit))
    refr = np.swapaxes(np.linalg.solve(np.swapaxes(tri, -1, -2).astype(np.complex128),
                                       np.swapaxes(bl, -1, -2).astype(np.complex128)), -1, -2)
    np.testing.assert_allclose(xr, refr, rtol=tol, atol=tol)


def test_solve_triangular_gated_deltanet_shape(rng):
    # 32 x 64x64 lower unit-triangular with 64 right-hand sides, broadcast A
    a = np.tril(rng.standard_normal((32, 64, 64)).astype(np.float32) * 0.1, -1) + np.eye(64, dtype=np.float32)
    b = rng.standard_normal((32, 64, 64)).astype(np.float32)
    x = A_(LA.solve_triangular(a, b, upper=False, unitriangular=True))
    ref = sla.solve_triangular(a[3].astype(np.float64), b[3].astype(np.float64), lower=True, unit_diagonal=True)
    np.testing.assert_allclose(x[3], ref, rtol=1e-3, atol=1e-3)
    x2 = A_(LA.solve_triangular(a[:1], b, upper=False, unitriangular=True))  # broadcast batch of A
    np.testing.assert_allclose(x2[5], sla.solve_triangular(a[0].astype(np.float64), b[5].astype(np.float64), lower=True,
                                                           unit_diagonal=True), rtol=1e-3, atol=1e-3)
    with pytest.raises(ValueError):
        LA.solve_triangular(a, b[:, :5], upper=False)


# ---------------------------------------------------------------- LU


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (4, 4), (7, 7), (30, 30), (6, 4), (4, 6), (65, 65)])
def test_lu_factor_matches_scipy(rng, dtype, shape):
    a = rand(rng, shape, dtype)
    lu, piv = LA.lu_factor(a)
    lu, piv = A_(lu), A_(piv)
    assert piv.dtype == np.int32
    if shape[0] == shape[1]:
        slu, spiv = sla.lu_factor(a)
        np.testing.assert_array_equal(piv, spiv + 1)  # 1-based in torch, 0-based in SciPy
        tol = 1e-4 if EPS[dtype] > 1e-10 else 1e-12
        np.testing.assert_allclose(lu, slu, rtol=tol, atol=tol * np.abs(slu).max())
    P, L, U = (A_(t) for t in LA.lu(a))
    r = np.linalg.norm(P.astype(np.complex128) @ L @ U - a) / (np.linalg.norm(a) * max(shape) * EPS[dtype])
    assert r < 30


def test_lu_complex_pivot_is_icamax():
    # |3| > |2+2i| but |re|+|im| = 3 < 4: LAPACK (and kiln) pick row 2.
    a = np.array([[3, 1], [2 + 2j, 1]], np.complex64)
    piv = A_(LA.lu_factor(a).pivots)
    assert piv.tolist() == [2, 2]
    assert piv.tolist() == (sla.lu_factor(a)[1] + 1).tolist()
    rng = np.random.default_rng(7)
    a = rand(rng, (5, 40, 40), np.complex64)
    piv = A_(LA.lu_factor(a).pivots)
    for i in range(5):
        np.testing.assert_array_equal(piv[i], sla.lu_factor(a[i])[1] + 1)


def test_lu_factor_singular_and_ex():
    z = np.zeros((2, 2), np.float32)
    r = LA.lu_factor_ex(z)
    assert int(A_(r.info)) == 1
    with pytest.raises(RuntimeError, match=r"^\[linalg.lu_factor\] the matrix is singular: U\[0, 0\] of its LU "
                                           r"factorization is zero \(info 1; input float32 \[2, 2\]\); lu_solve would "
                                           r"divide by it, linalg.lu_factor_ex returns the factors without raising$"):
        LA.lu_factor(z)
    with pytest.raises(NotImplementedError):
        LA.lu_factor(np.eye(2, dtype=np.float32), pivot=False)
    e = LA.lu_factor(np.zeros((2, 0, 0), np.float32))
    assert A_(e.LU).shape == (2, 0, 0) and A_(e.pivots).shape == (2, 0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
def test_lu_solve(rng, dtype, left, adjoint):
    a = rand(rng, (3, 6, 6), dtype)
    b = rand(rng, (3, 6, 2) if left else (3, 2, 6), dtype)
    lu, piv = LA.lu_factor(a)
    x = A_(LA.lu_solve(lu, piv, b, left=left, adjoint=adjoint)).astype(np.complex128)
    op = np.conj(np.swapaxes(a, -1, -2)) if adjoint else a
    got = op @ x if left else x @ op
    tol = 1e-3 if EPS[dtype] > 1e-10 else 1e-10
    np.testing.assert_allclose(got, b, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", DTYPES)
def test_det_slogdet(rng, dtype):
    a = rand(rng, (4, 5, 5), dtype)
    tol = 1e-4 if EPS[dtype] > 1e-10 else 1e-12
    np.testing.assert_allclose(A_(LA.det(a)), np.linalg.det(a.astype(np.complex128)), rtol=tol)
    s, l = LA.slogdet(a)
    rs, rl = np.linalg.slogdet(a.astype(np.complex128))
    np.testing.assert_allclose(A_(s), rs, rtol=tol, atol=tol)
    np.testing.assert_allclose(A_(l), rl, rtol=tol, atol=tol)
    assert A_(l).dtype == np.dtype(dtype).type(0).real.dtype
    z = np.zeros((3, 3), dtype)
    assert A_(LA.det(z)) == 0
    s, l = LA.slogdet(z)
    assert A_(s) == 0 and A_(l) == -np.inf
    big = np.eye(200, dtype=np.float64) * 10  # det overflows; slogdet does not
    assert np.isclose(A_(LA.slogdet(big).logabsdet), 200 * np.log(10))
    assert A_(LA.det(np.zeros((0, 0), dtype))) == 1


def test_lu_solve_rejects_out_of_range_pivots():
    # getrs swaps rows of B by the pivots: one outside [1, n] read and wrote past B (heap corruption).
    lu, piv = LA.lu_factor(np.array([[4.0, 1.0], [2.0, 3.0]]))
    b = np.ones((2, 1))
    for bad in ([0, 2], [1, 3], [-5, 2]):
        with pytest.raises(ValueError, match=r"^\[linalg.lu_solve\] pivots must lie in \[1, 2\]"):
            LA.lu_solve(lu, np.array(bad, np.int32), b)


# ---------------------------------------------------------------- QR


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (0, 3), (3, 0), (2, 40, 7), (1, 1)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr(rng, dtype, shape, mode):
    a = rand(rng, shape, dtype)
    Q, R = LA.qr(a, mode=mode)
    R = A_(R)
    m, n = shape[-2:]
    k = min(m, n)
    assert np.allclose(np.tril(R, -1), 0)
    if mode == "r":
        assert A_(Q).size == 0 and R.shape[-2:] == (k, n)
        return
    Q = A_(Q).astype(np.complex128)
    assert Q.shape[-2:] == ((m, m) if mode == "complete" else (m, k))
    eye = np.eye(Q.shape[-1])
    e = EPS[dtype] * max(m, n, 1)
    assert np.abs(np.conj(np.swapaxes(Q, -1, -2)) @ Q - eye).max(initial=0) < 30 * e
    if a.size:
        assert np.linalg.norm(Q @ R - a) / np.linalg.norm(a) < 30 * e


def test_householder_product(rng):
    a = rng.standard_normal((7, 4))
    qr, tau, _, _ = sla.lapack.dgeqrf(a)
    ref = sla.lapack.dorgqr(qr, tau)[0]
    np.testing.assert_allclose(A_(LA.householder_product(qr, tau)), ref, atol=1e-12)
    with pytest.raises(ValueError):
        LA.householder_product(np.zeros((3, 4)), np.zeros(2))


# ---------------------------------------------------------------- SVD


def check_svd(a, full, tol_units=50):
    U, S, Vh = (A_(t) for t in LA.svd(a, full_matrices=full))
    m, n = a.shape[-2:]
    k = min(m, n)
    e = EPS[a.dtype.type] * max(m, n, 1)
    assert U.shape[-2:] == ((m, m) if full else (m, k)) and Vh.shape[-2:] == ((n, n) if full else (k, n))
    U64, V64 = U.astype(np.complex128), Vh.astype(np.complex128)
    assert np.abs(np.conj(np.swapaxes(U64, -1, -2)) @ U64 - np.eye(U.shape[-1])).max(initial=0) < tol_units * e
    assert np.abs(V64 @ np.conj(np.swapaxes(V64, -1, -2)) - np.eye(Vh.shape[-2])).max(initial=0) < tol_units * e
    rec = (U64[..., :, :k] * S[..., None, :]) @ V64[..., :k, :]
    scale = max(np.abs(S).max() if S.size else 0, np.finfo(np.float64).tiny)
    assert np.abs(rec - a).max(initial=0) / scale < tol_units * e
    assert np.all(np.diff(S, axis=-1) <= 0)
    return S


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (5, 5), (2, 3, 30, 9), (1, 1)])
@pytest.mark.parametrize("full", [True, False])
def test_svd_random(rng, dtype, shape, full):
    a = rand(rng, shape, dtype)
    S = check_svd(a, full)
    np.testing.assert_allclose(S, np.linalg.svd(a.astype(np.complex128), compute_uv=False),
                               rtol=1e-4 if EPS[dtype] > 1e-10 else 1e-12)
    np.testing.assert_allclose(A_(LA.svdvals(a)), S, rtol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
@pytest.mark.parametrize("scale", [1e-30, 1e30, 1.0])
def test_svd_extremes(rng, dtype, scale):
    n = 12
    base = with_cond(rng, n, 1e3, np.float64)
    a = (base * scale).astype(dtype)
    S = check_svd(a, True)
    ref = np.linalg.svd(base, compute_uv=False) * scale
    np.testing.assert_allclose(S, ref, rtol=1e-3 if EPS[dtype] > 1e-10 else 1e-10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
def test_svd_rank_deficient_and_zero(rng, dtype):
    x = rand(rng, (9, 3), dtype)
    a = (x @ rand(rng, (3, 7), dtype)).astype(dtype)  # rank 3
    S = check_svd(a, True)
    assert S[3:].max() < 1e-4 * S[0]
    z = np.zeros((6, 4), dtype)
    S = check_svd(z, True)
    assert np.all(S == 0)
    e = LA.svd(np.zeros((3, 0), dtype))
    assert np.allclose(A_(e.U), np.eye(3)) and A_(e.S).shape == (0,) and A_(e.Vh).shape == (0, 0)


def test_svd_graded(rng):
    d = np.logspace(-12, 12, 10)
    a = (d[:, None] * rng.standard_normal((10, 10))) * d[None, :]
    check_svd(a, True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
def test_pinv_and_rank(rng, dtype):
    a = (rand(rng, (3, 8, 2), dtype) @ rand(rng, (3, 2, 5), dtype)).astype(dtype)  # rank 2
    p = A_(LA.pinv(a))
    ref = np.linalg.pinv(a.astype(np.complex128), rcond=1e-5)
    np.testing.assert_allclose(p, ref, rtol=1e-3, atol=1e-3 * np.abs(ref).max())
    assert A_(LA.matrix_rank(a)).tolist() == [2, 2, 2]
    h = a[0] @ np.conj(a[0].T)  # Hermitian PSD rank 2
    np.testing.assert_allclose(A_(LA.pinv(h, hermitian=True)), np.linalg.pinv(h.astype(np.complex128), hermitian=True,
                                                                              rcond=1e-5),
                               rtol=1e-2, atol=1e-3 * np.abs(np.linalg.pinv(h, hermitian=True)).max())
    assert int(A_(LA.matrix_rank(h, hermitian=True))) == 2
    assert int(A_(LA.matrix_rank(a[0], atol=1e30))) == 0
    assert A_(LA.pinv(np.zeros((0, 3), dtype))).shape == (3, 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
@pytest.mark.parametrize("driver", ["gels", "gelsy", "gelsd", "gelss"])
def test_lstsq_full_rank(rng, dtype, driver):
    a = rand(rng, (2, 12, 5), dtype)
    b = rand(rng, (2, 12, 3), dtype)
    r = LA.lstsq(a, b, driver=driver)
    ref = np.stack([np.linalg.lstsq(a[i].astype(np.complex128), b[i].astype(np.complex128), rcond=None)[0]
                    for i in range(2)])
    tol = 1e-3 if EPS[dtype] > 1e-10 else 1e-10
    np.testing.assert_allclose(A_(r.solution), ref, rtol=tol, atol=tol)
    if driver != "gels":
        assert A_(r.rank).tolist() == [5, 5]
    if driver in ("gelsd", "gelss"):
        np.testing.assert_allclose(A_(r.singular_values), np.linalg.svd(a.astype(np.complex128), compute_uv=False),
                                   rtol=tol)
    if driver in ("gels", "gelsd", "gelss"):
        res = np.linalg.norm((a.astype(np.complex128) @ ref) - b, axis=-2) ** 2
        np.testing.assert_allclose(A_(r.residuals), res, rtol=1e-3)


@pytest.mark.parametrize("driver", ["gelsy", "gelsd", "gelss"])
def test_lstsq_rank_deficient_min_norm(rng, driver):
    a = rng.standard_normal((10, 3)) @ rng.standard_normal((3, 6))  # rank 3, wide solution space
    b = rng.standard_normal((10, 2))
    r = LA.lstsq(a, b, driver=driver)
    ref = np.linalg.lstsq(a, b, rcond=None)[0]
    np.testing.assert_allclose(A_(r.solution), ref, atol=1e-8)
    assert int(A_(r.rank)) == 3
    v = LA.lstsq(a, b[:, 0], driver=driver).solution
    assert A_(v).shape == (6,)


def test_lstsq_gels_rank_deficient_raises(rng):
    a = rng.standard_normal((4, 3))
    a[:, 1] = 0  # R gets an exact zero at (2, 2): gels reports info 2, as torch
    with pytest.raises(RuntimeError, match=r"^\[linalg.lstsq\] the matrix does not have full rank: R\[1, 1\] of its "
                                           r"QR factorization is zero \(info 2; input float64 \[4, 3\]\); driver 'gels' "
                                           r"needs full rank, 'gelsy', 'gelsd' and 'gelss' do not$"):
        LA.lstsq(a, np.ones((4, 1)), driver="gels")
    # An all-zero A is scaled away by LAPACK: solution 0, no error (as torch).
    assert np.all(A_(LA.lstsq(np.zeros((4, 3)), np.ones((4, 1)), driver="gels").solution) == 0)
    with pytest.raises(ValueError):
        LA.lstsq(a, np.ones((4, 1)), driver="nope")


# ---------------------------------------------------------------- Hermitian


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(rng, dtype, upper):
    x = rand(rng, (3, 7, 7), dtype)
    a = (x @ np.conj(np.swapaxes(x, -1, -2)) + 7 * np.eye(7)).astype(dtype)
    L = A_(LA.cholesky(a, upper=upper)).astype(np.complex128)
    rec = np.conj(np.swapaxes(L, -1, -2)) @ L if upper else L @ np.conj(np.swapaxes(L, -1, -2))
    assert np.linalg.norm(rec - a) / np.linalg.norm(a) < 100 * EPS[dtype] * 7
    assert np.allclose(np.tril(L, -1) if upper else np.triu(L, 1), 0)
    bad = a.copy()
    bad[1, 2, 2] = -100
    msg = (f"[linalg.cholesky] the matrix in batch element 1 is not positive-definite: its leading minor of "
           f"order 3 is not (info 3; input {np.dtype(dtype).name} [3, 7, 7])")
    with pytest.raises(RuntimeError, match="^" + re.escape(msg) + "$"):
        LA.cholesky(bad)
    assert A_(LA.cholesky_ex(bad).info).tolist() == [0, 3, 0]


@pytest.mark.parametrize("dtype", DTYPES)
def test_eigh(rng, dtype):
    x = rand(rng, (2, 9, 9), dtype)
    a = (x + np.conj(np.swapaxes(x, -1, -2))).astype(dtype)
    w, v = (A_(t) for t in LA.eigh(a))
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a.astype(np.complex128)), rtol=1e-4, atol=1e-4)
    v = v.astype(np.complex128)
    assert np.abs(a @ v - v * w[..., None, :]).max() < 1e-3
    np.testing.assert_allclose(A_(LA.eigvalsh(a, UPLO="U")), w, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------- norms, cross


@pytest.mark.parametrize("ord", ["fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64])
def test_matrix_norm(rng, ord, dtype):
    a = rand(rng, (3, 4, 5), dtype)
    ref = np.linalg.norm(a.astype(np.complex128), ord=ord, axis=(-2, -1))
    np.testing.assert_allclose(A_(LA.matrix_norm(a, ord=ord)), ref, rtol=1e-5)
    k = A_(LA.matrix_norm(a, ord=ord, dim=(0, 2), keepdim=True))
    np.testing.assert_allclose(k, np.linalg.norm(a.astype(np.complex128), ord=ord, axis=(0, 2), keepdims=True),
                               rtol=1e-5)


def test_vector_norm_and_cross(rng):
    x = rng.standard_normal((4, 6)).astype(np.float32)
    for o in (2, 1, np.inf, 0, 3.5):
        np.testing.assert_allclose(A_(LA.vector_norm(x, ord=o, dim=1)), np.linalg.norm(x, ord=o, axis=1), rtol=1e-5)
    a = rng.standard_normal((5, 3))
    b = rng.standard_normal((1, 3))
    np.testing.assert_allclose(A_(LA.cross(a, b)), np.cross(a, b), rtol=1e-12)
    np.testing.assert_allclose(A_(LA.cross(a.T.copy(), np.broadcast_to(b.T, (3, 5)).copy(), dim=0)),
                               np.cross(a, b).T, rtol=1e-12)
    with pytest.raises(ValueError):
        LA.cross(np.zeros((2, 4)), np.zeros((2, 4)))


def test_norm_dispatch(rng):
    a = rng.standard_normal((3, 4))
    np.testing.assert_allclose(A_(LA.norm(a)), np.linalg.norm(a), rtol=1e-12)
    for o in ("fro", "nuc", 2, 1, -np.inf):
        np.testing.assert_allclose(A_(LA.norm(a, ord=o)), np.linalg.norm(a, ord=o), rtol=1e-12)
    np.testing.assert_allclose(A_(LA.norm(a, ord=3, dim=1)), np.linalg.norm(a, ord=3, axis=1), rtol=1e-12)
    with pytest.raises(ValueError):
        LA.norm(np.zeros((2, 2, 2)), ord=2)


def test_openblas_uses_simd_kernels():
    # kiln/_blas_env.py sets OPENBLAS_CORETYPE from the CPU flags before _C loads
    # OpenBLAS, so a masked CPU model does not leave LAPACK on SSE3 kernels.
    from kiln import _blas_env
    if _blas_env._choose() is None:
        pytest.skip("CPU without AVX2")
    assert kiln._C._openblas_core() not in ("Prescott", "Core2", "Penryn", "Nehalem", "Katmai", "Unknown")
