"""Gradients of kiln.linalg against NumPy: closed forms where they are short
(d det = det * inv(A)^T, d inv, solve, eigvalsh, svdvals) and float64 central
differences for the decompositions, through functions of their outputs that
do not depend on the sign (gauge) of the singular or eigen vectors."""
import numpy as np
import pytest

import kiln
import kiln.linalg as LA

RNG = np.random.default_rng(36)


def leaf(a):
    t = kiln.from_numpy(np.array(a, dtype=np.float64, order="C"))
    t.requires_grad_()
    return t


def T(a):
    return kiln.from_numpy(np.array(a, dtype=np.float64, order="C"))


def grads(outs, xs, gouts):
    gs = kiln.autograd.grad(list(outs), list(xs), [T(g) for g in gouts], allow_unused=True)
    return [None if g is None else np.asarray(g) for g in gs]


def central(f, a, h=1e-6):
    """Central differences of the scalar f at every element of a."""
    g = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        ap, am = a.copy(), a.copy()
        ap[i] += h
        am[i] -= h
        g[i] = (f(ap) - f(am)) / (2 * h)
    return g


def well_conditioned(n, batch=()):
    return RNG.standard_normal(batch + (n, n)) + n * np.eye(n)


def spd(n):
    m = RNG.standard_normal((n, n))
    return m @ m.T + n * np.eye(n)


def mT(a):
    return np.swapaxes(a, -1, -2)


# ---- closed forms --------------------------------------------------------------


def test_det_gradient_is_det_times_inverse_transpose():
    a = well_conditioned(4, (2,))
    a[1, 0] *= -1  # one negative determinant
    x = leaf(a)
    g = np.array([0.7, -1.3])
    (ga,) = grads([LA.det(x)], [x], [g])
    want = (g * np.linalg.det(a))[:, None, None] * mT(np.linalg.inv(a))
    np.testing.assert_allclose(ga, want, rtol=1e-10, atol=1e-12)


def test_slogdet_gradient_is_inverse_transpose_and_sign_carries_none():
    a = well_conditioned(5)
    a[0] *= -1
    x = leaf(a)
    sign, logabs = LA.slogdet(x)
    assert np.asarray(sign) == -1.0
    (ga,) = grads([logabs], [x], [np.array(2.0)])
    np.testing.assert_allclose(ga, 2.0 * mT(np.linalg.inv(a)), rtol=1e-10, atol=1e-12)
    sign, _ = LA.slogdet(x)
    (gs,) = grads([sign], [x], [np.array(1.0)])
    assert gs is None or not np.any(gs)


def test_inv_gradient():
    a = well_conditioned(4)
    w = RNG.standard_normal((4, 4))
    x = leaf(a)
    (ga,) = grads([LA.inv(x)], [x], [w])
    ai = np.linalg.inv(a)
    np.testing.assert_allclose(ga, -ai.T @ w @ ai.T, rtol=1e-10, atol=1e-12)


def test_solve_matrix_broadcast_and_vector():
    a = well_conditioned(3)
    b = RNG.standard_normal((2, 3, 4))  # A broadcast over B's batch
    w = RNG.standard_normal((2, 3, 4))
    xa, xb = leaf(a), leaf(b)
    ga, gb = grads([LA.solve(xa, xb)], [xa, xb], [w])
    X = np.linalg.solve(a, b)
    want_b = np.linalg.solve(a.T, w)
    np.testing.assert_allclose(gb, want_b, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ga, -(want_b @ mT(X)).sum(0), rtol=1e-10, atol=1e-12)
    # B a vector
    v, wv = RNG.standard_normal(3), RNG.standard_normal(3)
    xa, xv = leaf(a), leaf(v)
    ga, gv = grads([LA.solve(xa, xv)], [xa, xv], [wv])
    want_v = np.linalg.solve(a.T, wv)
    np.testing.assert_allclose(gv, want_v, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ga, -np.outer(want_v, np.linalg.solve(a, v)), rtol=1e-10, atol=1e-12)


def test_solve_right():
    a, b, w = well_conditioned(3), RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))
    xa, xb = leaf(a), leaf(b)
    ga, gb = grads([LA.solve(xa, xb, left=False)], [xa, xb], [w])
    X = b @ np.linalg.inv(a)
    want_b = w @ np.linalg.inv(a).T
    np.testing.assert_allclose(gb, want_b, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ga, -X.T @ want_b, rtol=1e-10, atol=1e-12)


def test_eigvalsh_gradient_folded_onto_the_lower_triangle():
    a = spd(4)
    g = RNG.standard_normal(4)
    x = leaf(a)
    (ga,) = grads([LA.eigvalsh(x)], [x], [g])
    _, v = np.linalg.eigh(a)
    G = v @ np.diag(g) @ v.T  # symmetric gradient
    want = np.tril(2 * G) - np.diag(np.diag(G))  # only the lower triangle is read
    np.testing.assert_allclose(ga, want, rtol=1e-9, atol=1e-11)


def test_svdvals_gradient():
    a = RNG.standard_normal((5, 3))
    g = RNG.standard_normal(3)
    x = leaf(a)
    (ga,) = grads([LA.svdvals(x)], [x], [g])
    u, _, vh = np.linalg.svd(a, full_matrices=False)
    np.testing.assert_allclose(ga, u @ np.diag(g) @ vh, rtol=1e-9, atol=1e-11)


# ---- central differences -------------------------------------------------------


def check(fn, arrays, weights, rtol=1e-5, atol=1e-7):
    """fn(*tensors) -> list of output tensors; compares autograd of
    sum_i weight_i(outputs) against central differences of the same."""
    xs = [leaf(a) for a in arrays]
    outs = fn(*xs)
    values = [np.asarray(o) for o in outs]
    gouts = [w(v)[1] for w, v in zip(weights, values)]
    got = grads(outs, xs, gouts)

    def scalar(i, ai):
        args = [T(a) for a in arrays]
        args[i] = T(ai)
        with kiln.no_grad():
            vs = [np.asarray(o) for o in fn(*args)]
        return sum(w(v)[0] for w, v in zip(weights, vs))

    for i, a in enumerate(arrays):
        want = central(lambda ai: scalar(i, ai), a)
        np.testing.assert_allclose(got[i], want, rtol=rtol, atol=atol)


def linear(shape):
    """sum(W * out) and its gradient W."""
    w = RNG.standard_normal(shape)
    return lambda v: (float((w * v).sum()), w)


def abs_linear(shape):
    """sum(W * |out|): blind to the sign of a singular or eigen vector."""
    w = RNG.standard_normal(shape)
    return lambda v: (float((w * np.abs(v)).sum()), w * np.sign(v))


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular(upper, left, unit):
    a = well_conditioned(3)
    b = RNG.standard_normal((3, 2) if left else (2, 3))
    check(lambda x, y: [LA.solve_triangular(x, y, upper=upper, left=left, unitriangular=unit)], [a, b],
          [linear(b.shape)])


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(upper):
    check(lambda x: [LA.cholesky(x, upper=upper)], [spd(4)], [linear((4, 4))])


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_values_and_vectors(uplo):
    a = RNG.standard_normal((4, 4))
    a = a + a.T  # distinct eigenvalues (almost surely)
    check(lambda x: list(LA.eigh(x, UPLO=uplo)), [a], [linear((4,)), abs_linear((4, 4))])


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)])
def test_svd_reduced(shape):
    k = min(shape)
    check(lambda x: list(LA.svd(x, full_matrices=False)), [RNG.standard_normal(shape)],
          [abs_linear((shape[0], k)), linear((k,)), abs_linear((k, shape[1]))])


def test_svd_reconstruction_with_weighted_singular_values():
    # U diag(S^2) Vh: gauge-invariant, exercises every term of the formula.
    def fn(x):
        U, S, Vh = LA.svd(x, full_matrices=False)
        return [U, S, Vh]

    w = RNG.standard_normal((5, 3))

    def f(vals):
        U, S, Vh = vals
        return float((w * (U @ np.diag(S**2) @ Vh)).sum())

    a = RNG.standard_normal((5, 3))
    x = leaf(a)
    outs = fn(x)
    U, S, Vh = [np.asarray(o) for o in outs]
    gU = w @ (np.diag(S**2) @ Vh).T
    gS = 2 * S * np.einsum("ij,ik,kj->k", w, U, Vh)
    gVh = (U @ np.diag(S**2)).T @ w
    (ga,) = grads(outs, [x], [gU, gS, gVh])

    def scalar(ai):
        with kiln.no_grad():
            return f([np.asarray(o) for o in fn(T(ai))])

    np.testing.assert_allclose(ga, central(scalar, a), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)])
def test_qr_reduced(shape):
    k = min(shape)
    check(lambda x: list(LA.qr(x)), [RNG.standard_normal(shape)], [linear((shape[0], k)), linear((k, shape[1]))])


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4)])
def test_pinv(shape):
    check(lambda x: [LA.pinv(x)], [RNG.standard_normal(shape)], [linear(shape[::-1])])


def test_pinv_hermitian_reads_the_lower_triangle():
    check(lambda x: [LA.pinv(x, hermitian=True)], [spd(4) + np.triu(RNG.standard_normal((4, 4)), 1)],
          [linear((4, 4))])


@pytest.mark.parametrize("driver", ["gelsy", "gels", "gelsd", "gelss"])
def test_lstsq_solution_full_rank_tall(driver):
    a, b = RNG.standard_normal((6, 3)), RNG.standard_normal((6, 2))
    check(lambda x, y: [LA.lstsq(x, y, driver=driver).solution], [a, b], [linear((3, 2))])


def test_matches_torch_when_available():
    torch = pytest.importorskip("torch")
    a = well_conditioned(4)
    ta = torch.tensor(a, requires_grad=True)
    torch.linalg.det(ta).backward()
    x = leaf(a)
    LA.det(x).backward()
    np.testing.assert_allclose(np.asarray(x.grad), ta.grad.numpy(), rtol=1e-10)


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
def test_lu_factors(shape):
    k = min(shape)
    a = RNG.standard_normal(shape)
    check(lambda x: list(LA.lu(x))[1:], [a], [linear((shape[0], k)), linear((k, shape[1]))])


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
def test_lu_factor_packed(shape):
    check(lambda x: [LA.lu_factor(x)[0]], [RNG.standard_normal(shape)], [linear(shape)])


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
def test_lu_solve(left, adjoint):
    a = well_conditioned(3)
    b = RNG.standard_normal((3, 2) if left else (2, 3))

    def fn(x, y):
        LU, piv = LA.lu_factor(x)
        return [LA.lu_solve(LU, piv, y, left=left, adjoint=adjoint)]

    check(fn, [a, b], [linear(b.shape)])
    # the same against NumPy's solve of the system lu_solve solves
    xa, xb = leaf(a), leaf(b)
    w = RNG.standard_normal(b.shape)
    ga, gb = grads(fn(xa, xb), [xa, xb], [w])
    m = a.T if adjoint else a
    X = np.linalg.solve(m, b) if left else b @ np.linalg.inv(m)
    want_b = np.linalg.solve(m.T, w) if left else w @ np.linalg.inv(m).T
    np.testing.assert_allclose(gb, want_b, rtol=1e-9, atol=1e-11)
    gm = -want_b @ X.T if left else -X.T @ want_b
    np.testing.assert_allclose(ga, gm.T if adjoint else gm, rtol=1e-9, atol=1e-11)
