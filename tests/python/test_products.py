"""dot, vdot, inner, outer, mv, the addmm family, kron, tensordot,
matrix_power and linalg.multi_dot / vecdot / matmul against NumPy (and
torch when installed): values, dtypes, broadcasting, non-contiguous inputs,
errors, out= and gradients."""

import numpy as np
import pytest

import kiln

RNG = np.random.default_rng(4242)


def r(*shape, dtype=np.float64):
    return RNG.uniform(-2, 2, shape).astype(dtype)


def t(a):
    return kiln.tensor(a)


TOL = {np.float32: dict(rtol=1e-5, atol=1e-5), np.float64: dict(rtol=1e-12, atol=1e-12)}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_vector_products(dtype):
    a, b = r(7, dtype=dtype), r(7, dtype=dtype)
    np.testing.assert_allclose(kiln.dot(t(a), t(b)).numpy(), np.dot(a, b), **TOL[dtype])
    np.testing.assert_allclose(t(a).dot(t(b)).numpy(), np.dot(a, b), **TOL[dtype])
    np.testing.assert_allclose(kiln.vdot(t(a), t(b)).numpy(), np.vdot(a, b), **TOL[dtype])
    np.testing.assert_allclose(kiln.outer(t(a), t(b[:4])).numpy(), np.outer(a, b[:4]), **TOL[dtype])
    np.testing.assert_allclose(kiln.ger(t(a), t(b[:4])).numpy(), np.outer(a, b[:4]), **TOL[dtype])
    m = r(5, 7, dtype=dtype)
    np.testing.assert_allclose(kiln.mv(t(m), t(a)).numpy(), m @ a, **TOL[dtype])
    np.testing.assert_allclose(t(m.T.copy()).t().mv(t(a)).numpy(), m @ a, **TOL[dtype])  # transposed mat
    assert kiln.dot(t(a), t(b)).dtype == t(a).dtype and kiln.dot(t(a), t(b)).shape == ()


def test_complex_and_integer_dots():
    a = r(6) + 1j * r(6)
    b = r(6) + 1j * r(6)
    np.testing.assert_allclose(kiln.dot(t(a), t(b)).numpy(), np.dot(a, b), rtol=1e-12)
    np.testing.assert_allclose(kiln.vdot(t(a), t(b)).numpy(), np.vdot(a, b), rtol=1e-12)
    i, j = np.arange(5, dtype=np.int32), np.arange(5, 10, dtype=np.int32)
    d = kiln.dot(t(i), t(j))
    assert d.dtype == kiln.int32 and int(d.item()) == int(np.dot(i, j))
    x, y = r(2, 3, 6) + 1j * r(2, 3, 6), r(3, 6) + 1j * r(3, 6)
    np.testing.assert_allclose(kiln.linalg.vecdot(t(x), t(y)).numpy(), np.sum(np.conj(x) * y, -1), rtol=1e-12)
    np.testing.assert_allclose(kiln.linalg.vecdot(t(x.real), t(y.real), dim=1).numpy(),
                               np.sum(x.real * y.real, 1), rtol=1e-12)


def test_inner_and_tensordot():
    a, b = r(2, 3, 5), r(4, 5)
    np.testing.assert_allclose(kiln.inner(t(a), t(b)).numpy(), np.inner(a, b), rtol=1e-12)
    np.testing.assert_allclose(kiln.inner(t(a), t(np.array(2.5))).numpy(), a * 2.5, rtol=1e-12)
    x, y = r(3, 4, 5), r(4, 5, 6)
    np.testing.assert_allclose(kiln.tensordot(t(x), t(y)).numpy(), np.tensordot(x, y), rtol=1e-12)
    yt = y.transpose(1, 0, 2).copy()
    np.testing.assert_allclose(kiln.tensordot(t(x), t(yt), dims=([2], [0])).numpy(),
                               np.tensordot(x, yt, axes=([2], [0])), rtol=1e-12)
    np.testing.assert_allclose(kiln.tensordot(t(x), t(y), dims=([1, 2], [0, 1])).numpy(),
                               np.tensordot(x, y, axes=([1, 2], [0, 1])), rtol=1e-12)
    z = r(2)
    np.testing.assert_allclose(kiln.tensordot(t(x), t(z), dims=0).numpy(), np.tensordot(x, z, axes=0), rtol=1e-12)
    with pytest.raises(ValueError, match="contracted dimensions need to match"):
        kiln.tensordot(t(x), t(y), dims=([0], [0]))
    with pytest.raises(ValueError, match=r"\[inner\]"):
        kiln.inner(t(a), t(r(4, 4)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, -2.0), (0, 3)])
def test_add_products(dtype, beta, alpha):
    tol = TOL[dtype]
    inp, m1, m2 = r(4, 1, dtype=dtype), r(4, 6, dtype=dtype), r(6, 3, dtype=dtype)
    got = kiln.addmm(t(inp), t(m1), t(m2), beta=beta, alpha=alpha)
    np.testing.assert_allclose(got.numpy(), beta * inp + alpha * (m1 @ m2), **tol)
    v = r(6, dtype=dtype)
    np.testing.assert_allclose(kiln.addmv(t(r(4, dtype=dtype) * 0 + 1), t(m1), t(v), beta=beta, alpha=alpha).numpy(),
                               beta + alpha * (m1 @ v), **tol)
    v1, v2 = r(4, dtype=dtype), r(3, dtype=dtype)
    base = r(4, 3, dtype=dtype)
    np.testing.assert_allclose(t(base).addr(t(v1), t(v2), beta=beta, alpha=alpha).numpy(),
                               beta * base + alpha * np.outer(v1, v2), **tol)
    b1, b2, bi = r(5, 4, 6, dtype=dtype), r(5, 6, 3, dtype=dtype), r(3, dtype=dtype)
    np.testing.assert_allclose(kiln.baddbmm(t(bi), t(b1), t(b2), beta=beta, alpha=alpha).numpy(),
                               beta * bi + alpha * (b1 @ b2), **tol)
    np.testing.assert_allclose(kiln.addbmm(t(bi), t(b1), t(b2), beta=beta, alpha=alpha).numpy(),
                               beta * bi + alpha * (b1 @ b2).sum(0), **tol)


def test_beta_zero_ignores_nan_and_inplace_forms():
    inp = np.full((3, 2), np.nan)
    m1, m2 = r(3, 4), r(4, 2)
    np.testing.assert_allclose(kiln.addmm(t(inp), t(m1), t(m2), beta=0).numpy(), m1 @ m2, rtol=1e-12)
    base = r(3, 2)
    x = t(base.copy())
    assert x.addmm_(t(m1), t(m2), alpha=2) is x
    np.testing.assert_allclose(x.numpy(), base + 2 * (m1 @ m2), rtol=1e-12)
    b1, b2 = r(2, 3, 4), r(2, 4, 2)
    y = t(base.copy())
    y.addbmm_(t(b1), t(b2))
    np.testing.assert_allclose(y.numpy(), base + (b1 @ b2).sum(0), rtol=1e-12)
    with pytest.raises(ValueError, match=r"\[addmm_\].*does not match"):
        t(r(1, 2)).addmm_(t(m1), t(m2))


def test_kron_and_matrix_power():
    for sa, sb in [((2, 3), (4, 5)), ((3,), (2, 2)), ((2, 1, 3), (3, 2)), ((), (3,))]:
        a, b = r(*sa), r(*sb)
        np.testing.assert_allclose(kiln.kron(t(a), t(b)).numpy(), np.kron(a, b), rtol=1e-12)
    A = r(2, 4, 4) + 4 * np.eye(4)
    for n in [0, 1, 2, 5, -1, -3]:
        np.testing.assert_allclose(kiln.matrix_power(t(A), n).numpy(), np.linalg.matrix_power(A, n),
                                   rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(kiln.linalg.matrix_power(t(A), n).numpy(), np.linalg.matrix_power(A, n),
                                   rtol=1e-10, atol=1e-10)
    m1 = t(A).matrix_power(1)
    m1[0, 0, 0] = 100.0  # a copy, not A
    with pytest.raises(ValueError, match="square matrices"):
        kiln.matrix_power(t(r(3, 4)), 2)


def test_multi_dot_order_and_vectors():
    a, b, c, d = r(10, 100), r(100, 5), r(5, 50), r(50)
    np.testing.assert_allclose(kiln.linalg.multi_dot([t(a), t(b), t(c), t(d)]).numpy(),
                               np.linalg.multi_dot([a, b, c, d]), rtol=1e-11)
    v = r(10)
    np.testing.assert_allclose(kiln.linalg.multi_dot([t(v), t(a), t(b)]).numpy(), v @ a @ b, rtol=1e-11)
    np.testing.assert_allclose(kiln.linalg.multi_dot([t(v), t(v)]).numpy(), v @ v, rtol=1e-12)
    np.testing.assert_allclose(kiln.linalg.matmul(t(a), t(b)).numpy(), a @ b, rtol=1e-12)
    with pytest.raises(ValueError, match="at least 2 tensors"):
        kiln.linalg.multi_dot([t(a)])
    with pytest.raises(ValueError, match="cannot be multiplied"):
        kiln.linalg.multi_dot([t(a), t(c)])


def test_checks_and_out():
    a = r(4)
    with pytest.raises(TypeError, match="one dtype"):
        kiln.dot(t(a), t(a.astype(np.float32)))
    with pytest.raises(ValueError, match="1D tensors expected"):
        kiln.dot(t(r(2, 2)), t(a))
    with pytest.raises(ValueError, match="shapes cannot be multiplied"):
        kiln.addmm(t(r(2, 2)), t(r(2, 3)), t(r(4, 2)))
    with pytest.raises(ValueError, match="cannot be broadcast"):
        kiln.addmm(t(r(3, 2)), t(r(2, 3)), t(r(3, 2)))
    out = kiln.empty(4, 4, dtype=kiln.float64)
    assert kiln.outer(t(a), t(a), out=out) is out
    np.testing.assert_allclose(out.numpy(), np.outer(a, a), rtol=1e-12)
    with pytest.raises(ValueError, match="out has shape"):
        kiln.kron(t(a), t(a), out=kiln.empty(4, dtype=kiln.float64))


def numeric(f, xs, i, h=1e-6):
    x = xs[i]
    g = np.zeros_like(x)
    for k in range(x.size):
        for s in (1, -1):
            v = [y.copy() for y in xs]
            v[i].reshape(-1)[k] += s * h
            g.reshape(-1)[k] += s * float(f(*[t(y) for y in v]).sum().item()) / (2 * h)
    return g


CASES = [
    ("addmm", lambda i, a, b: kiln.addmm(i, a, b, beta=0.5, alpha=2.0), [(3, 1), (3, 4), (4, 2)]),
    ("addbmm", lambda i, a, b: kiln.addbmm(i, a, b, alpha=-1.0), [(2,), (3, 2, 4), (3, 4, 2)]),
    ("kron", lambda a, b: kiln.kron(a, b) ** 2, [(2, 3), (3, 2)]),
    ("tensordot", lambda a, b: kiln.tensordot(a, b, dims=([0, 2], [1, 0])) ** 2, [(3, 2, 4), (4, 3, 2)]),
    ("matrix_power", lambda a: kiln.matrix_power(a, 3), [(3, 3)]),
    ("multi_dot", lambda a, b, c: kiln.linalg.multi_dot([a, b, c]) ** 2, [(3,), (3, 4), (4, 2)]),
    ("mv", lambda a, b: kiln.mv(a, b) ** 2, [(3, 4), (4,)]),
]


@pytest.mark.parametrize("name,f,shapes", CASES, ids=[c[0] for c in CASES])
def test_gradients(name, f, shapes):
    xs = [r(*s) for s in shapes]
    ts = [kiln.tensor(x, requires_grad=True) for x in xs]
    f(*ts).sum().backward()
    for i, tt in enumerate(ts):
        np.testing.assert_allclose(tt.grad.numpy(), numeric(f, xs, i), rtol=1e-6, atol=1e-6)


def test_matches_torch_when_installed():
    torch = pytest.importorskip("torch")
    a, b, c = r(3, 4), r(4, 5), r(3, 5)
    np.testing.assert_allclose(kiln.addmm(t(c), t(a), t(b), beta=0.3, alpha=1.7).numpy(),
                               torch.addmm(torch.tensor(c), torch.tensor(a), torch.tensor(b), beta=0.3,
                                           alpha=1.7).numpy(), rtol=1e-12)
    x, y = r(2, 3), r(3, 2, 2)
    np.testing.assert_allclose(kiln.kron(t(x), t(y)).numpy(), torch.kron(torch.tensor(x), torch.tensor(y)).numpy(),
                               rtol=1e-12)
