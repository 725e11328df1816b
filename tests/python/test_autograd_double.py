"""Double backward (create_graph=True) against closed-form second derivatives
computed in NumPy: the gradient of <grad, w> with respect to the inputs and to
the incoming gradient v."""

import numpy as np
import pytest

import kiln
import kiln.nn.functional as F

RNG = np.random.default_rng(3636)


def leaf(a, dtype=None):
    t = kiln.tensor(np.ascontiguousarray(a))
    if dtype is not None:
        t = t.to(dtype)
    t.requires_grad_()
    return t


def grad_of_grad(y, xs, v, w):
    """g = grad(y, xs, v, create_graph) (one input), then grad(<g, w>, xs + [v])."""
    (g,) = kiln.autograd.grad(y, xs, v, create_graph=True)
    assert g.requires_grad
    s = (g * kiln.tensor(w).to(g.dtype)).sum()
    return g, kiln.autograd.grad(s, xs + [v], allow_unused=True)


def test_tanh_second_derivative():
    xn, vn, wn = RNG.uniform(-2, 2, 9), RNG.uniform(-1, 1, 9), RNG.uniform(-1, 1, 9)
    x, v = leaf(xn), leaf(vn)
    g, (gx, gv) = grad_of_grad(kiln.tanh(x), [x], v, wn)
    t = np.tanh(xn)
    np.testing.assert_allclose(g.numpy(), vn * (1 - t**2), rtol=1e-12)
    # d2/dx2 tanh = -2 tanh (1 - tanh^2)
    np.testing.assert_allclose(gx.numpy(), wn * vn * (-2 * t * (1 - t**2)), rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(gv.numpy(), wn * (1 - t**2), rtol=1e-12)


def test_softmax_hessian_vector_product():
    # f(x) = <softmax(x), a> over the last dim; its Hessian per row is
    # H_ij = s_i (d_ij - s_j)(a_i - c) - s_i s_j (a_j - c), c = <s, a>.
    xn, an, wn = RNG.standard_normal((3, 5)), RNG.standard_normal((3, 5)), RNG.standard_normal((3, 5))
    x, a = leaf(xn), leaf(an)
    g, (hw, ga) = grad_of_grad(kiln.softmax(x, -1), [x], a, wn)
    e = np.exp(xn - xn.max(-1, keepdims=True))
    s = e / e.sum(-1, keepdims=True)
    c = (s * an).sum(-1, keepdims=True)
    np.testing.assert_allclose(g.numpy(), s * (an - c), rtol=1e-12, atol=1e-15)
    want = np.empty_like(xn)
    for r in range(3):
        si, ai, cr = s[r], an[r], c[r]
        H = si[:, None] * (np.eye(5) - si[None, :]) * (ai - cr)[:, None] - np.outer(si, si) * (ai - cr)[None, :]
        want[r] = H.T @ wn[r]
    np.testing.assert_allclose(hw.numpy(), want, rtol=1e-10, atol=1e-14)
    # d<g, w>/da = J w with J = diag(s) - s s^T (symmetric)
    np.testing.assert_allclose(ga.numpy(), s * (wn - (s * wn).sum(-1, keepdims=True)), rtol=1e-10, atol=1e-15)


def test_cube_via_pow():
    xn = RNG.uniform(-2, 2, 7)
    x = leaf(xn)
    (g,) = kiln.autograd.grad(kiln.pow(x, 3), [x], kiln.ones(7, dtype=kiln.float64), create_graph=True)
    np.testing.assert_allclose(g.numpy(), 3 * xn**2, rtol=1e-12)
    (gg,) = kiln.autograd.grad(g, [x], kiln.ones(7, dtype=kiln.float64))
    np.testing.assert_allclose(gg.numpy(), 6 * xn, rtol=1e-12)


def test_pow_mixed_second_derivative():
    # d2(x^b)/(dx db) = x^(b-1) (1 + b log x)
    xn, bn = RNG.uniform(0.5, 2, 6), RNG.uniform(-1.5, 2.5, 6)
    x, b = leaf(xn), leaf(bn)
    (gx,) = kiln.autograd.grad(kiln.pow(x, b), [x], kiln.ones(6, dtype=kiln.float64), create_graph=True)
    (gb,) = kiln.autograd.grad(gx, [b], kiln.ones(6, dtype=kiln.float64))
    np.testing.assert_allclose(gb.numpy(), xn ** (bn - 1) * (1 + bn * np.log(xn)), rtol=1e-12)


def test_matmul_grad_of_grad_wrt_incoming_gradient():
    # y = A B, gA = v B^T: d<gA, w>/dv = w B, d<gA, w>/dB = w^T v, d/dA = 0.
    An, Bn = RNG.standard_normal((4, 3)), RNG.standard_normal((3, 5))
    vn, wn = RNG.standard_normal((4, 5)), RNG.standard_normal((4, 3))
    A, B, v = leaf(An), leaf(Bn), leaf(vn)
    (gA,) = kiln.autograd.grad(kiln.matmul(A, B), [A], v, create_graph=True)
    np.testing.assert_allclose(gA.numpy(), vn @ Bn.T, rtol=1e-12)
    s = (gA * kiln.tensor(wn)).sum()
    gv, gB, gAA = kiln.autograd.grad(s, [v, B, A], allow_unused=True)
    np.testing.assert_allclose(gv.numpy(), wn @ Bn, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(gB.numpy(), wn.T @ vn, rtol=1e-12, atol=1e-14)
    assert gAA is None or not np.any(gAA.numpy())


def test_linear_grad_of_grad_wrt_incoming_gradient():
    # y = x W^T, gx = v W: d<gx, a>/dv = a W^T, d<gx, a>/dW = v^T a (float32).
    xn = RNG.standard_normal((3, 8)).astype(np.float32)
    Wn = RNG.standard_normal((5, 8)).astype(np.float32)
    vn = RNG.standard_normal((3, 5)).astype(np.float32)
    an = RNG.standard_normal((3, 8)).astype(np.float32)
    x, W, v = leaf(xn), leaf(Wn), leaf(vn)
    (gx,) = kiln.autograd.grad(F.linear(x, W), [x], v, create_graph=True)
    s = (gx * kiln.tensor(an)).sum()
    gv, gW = kiln.autograd.grad(s, [v, W])
    x64, W64, v64, a64 = (t.astype(np.float64) for t in (xn, Wn, vn, an))
    np.testing.assert_allclose(gx.numpy(), v64 @ W64, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gv.numpy(), a64 @ W64.T, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(gW.numpy(), v64.T @ a64, rtol=1e-5, atol=1e-5)


def test_torch_agrees_on_the_softmax_hessian_vector_product():
    torch = pytest.importorskip("torch")
    xn, an, wn = RNG.standard_normal((2, 4)), RNG.standard_normal((2, 4)), RNG.standard_normal((2, 4))
    x, a = leaf(xn), leaf(an)
    _, (hw, _) = grad_of_grad(kiln.softmax(x, -1), [x], a, wn)
    tx = torch.tensor(xn, requires_grad=True)
    (tg,) = torch.autograd.grad(torch.softmax(tx, -1), tx, torch.tensor(an), create_graph=True)
    (thw,) = torch.autograd.grad((tg * torch.tensor(wn)).sum(), tx)
    np.testing.assert_allclose(hw.numpy(), thw.numpy(), rtol=1e-10, atol=1e-14)


def test_eigvalsh_second_derivative_along_a_direction():
    # lambda_i(A + tE)'' = 2 sum_{j != i} (v_i^T E v_j)^2 / (lambda_i - lambda_j)
    M, N = RNG.standard_normal((4, 4)), RNG.standard_normal((4, 4))
    A0, E = M + M.T, N + N.T
    c = RNG.standard_normal(4)
    t = leaf(np.array(0.0))
    lam = kiln.linalg.eigvalsh(kiln.tensor(A0) + t * kiln.tensor(E))
    (d1,) = kiln.autograd.grad(lam, [t], kiln.tensor(c), create_graph=True)
    (d2,) = kiln.autograd.grad(d1, [t])
    L, V = np.linalg.eigh(A0)
    P = V.T @ E @ V  # P_ij = v_i^T E v_j
    np.testing.assert_allclose(d1.numpy(), c @ np.diag(P), rtol=1e-10)
    gap = L[:, None] - L[None, :]
    np.fill_diagonal(gap, np.inf)
    np.testing.assert_allclose(d2.numpy(), c @ (2 * (P**2 / gap).sum(1)), rtol=1e-8)
