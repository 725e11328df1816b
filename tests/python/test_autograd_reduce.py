"""Gradients of the reductions, scans and softmax against closed-form NumPy derivatives."""
import numpy as np
import pytest

import kiln


def leaf(a):
    t = kiln.tensor(np.asarray(a, dtype=np.float64))
    t.requires_grad_()
    return t


def weights(shape, seed=0):
    return np.asarray(np.random.default_rng(seed).uniform(-1.0, 1.0, shape))


def grad_of(fn, a, seed=0):
    """x.grad of sum(fn(x) * w) for a random w of fn(x)'s shape, with w."""
    x = leaf(a)
    y = fn(x)
    w = weights(tuple(y.shape), seed)
    y.backward(kiln.tensor(w))
    return x.grad.numpy(), w


@pytest.mark.parametrize("dim,keepdim", [(None, False), (1, False), ((0, 2), False), ((0, 2), True), (-1, True)])
def test_sum_and_mean_over_dims(rng, dim, keepdim):
    a = rng.uniform(-2, 2, (2, 3, 4))
    axis = dim if dim is None or isinstance(dim, tuple) else (dim,)
    n = a.size if axis is None else np.prod([a.shape[d] for d in axis])
    for fn, scale in ((kiln.sum, 1.0), (kiln.mean, 1.0 / n)):
        g, w = grad_of(lambda x: fn(x, dim, keepdim), a)
        wk = w if keepdim or axis is None else np.expand_dims(w, tuple(d % 3 for d in axis))
        np.testing.assert_allclose(g, np.broadcast_to(wk, a.shape) * scale, rtol=1e-12)


def test_sum_dtype_gradient_has_input_dtype(rng):
    x = kiln.tensor(rng.uniform(-1, 1, (3, 2)).astype(np.float32))
    x.requires_grad_()
    kiln.sum(x, 0, dtype=kiln.float64).backward(kiln.tensor(np.array([2.0, -1.0])))
    assert x.grad.dtype == kiln.float32
    np.testing.assert_array_equal(x.grad.numpy(), np.tile([2.0, -1.0], (3, 1)).astype(np.float32))


@pytest.mark.parametrize("correction", [0, 1, 2])
def test_var_and_std_correction(rng, correction):
    a = rng.uniform(-2, 2, (3, 5))
    n = a.shape[1]
    centered = a - a.mean(axis=1, keepdims=True)
    g, w = grad_of(lambda x: kiln.var(x, 1, correction=correction), a)
    np.testing.assert_allclose(g, w[:, None] * 2 * centered / (n - correction), rtol=1e-10)
    g, w = grad_of(lambda x: kiln.std(x, 1, correction=correction), a)
    std = np.sqrt((centered**2).sum(axis=1) / (n - correction))
    np.testing.assert_allclose(g, w[:, None] * centered / ((n - correction) * std[:, None]), rtol=1e-10)


def test_var_mean_both_outputs(rng):
    a = rng.uniform(-2, 2, (4, 3))
    x = leaf(a)
    v, m = kiln.var_mean(x, 0)
    (kiln.sum(v) + kiln.sum(m * 3.0)).backward()
    expect = 2 * (a - a.mean(axis=0)) / (a.shape[0] - 1) + 3.0 / a.shape[0]
    np.testing.assert_allclose(x.grad.numpy(), expect, rtol=1e-10)


def test_max_ties_split_evenly():
    a = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    x = leaf(a)
    kiln.max(x).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0.5, 0.5], [0, 0, 0]])
    g, w = grad_of(lambda x: kiln.amax(x, 1), a)
    np.testing.assert_allclose(g, [[0, w[0] / 2, w[0] / 2], [w[1] / 3] * 3])
    # max with a dim: everything to the returned (first) index
    g, w = grad_of(lambda x: kiln.max(x, 1).values, a)
    np.testing.assert_array_equal(g, [[0, w[0], 0], [w[1], 0, 0]])


@pytest.mark.parametrize(
    "row",
    [[2.0, -3.0, 0.5, 4.0], [2.0, 0.0, 0.5, 4.0], [0.0, -3.0, 0.0, 4.0]],
    ids=["no_zero", "one_zero", "two_zeros"],
)
def test_prod_with_zeros(row):
    a = np.array(row)
    x = leaf(a)
    kiln.prod(x).backward()
    others = np.array([np.prod(np.delete(a, i)) for i in range(a.size)])  # closed form: product of the others
    np.testing.assert_allclose(x.grad.numpy(), others, rtol=1e-12)


def test_prod_with_zeros_along_dim():
    a = np.array([[2.0, 0.0, 3.0], [0.0, 0.0, 5.0], [1.0, 2.0, 3.0]])
    g, w = grad_of(lambda x: kiln.prod(x, 1), a)
    others = np.array([[np.prod(np.delete(r, i)) for i in range(r.size)] for r in a])
    np.testing.assert_allclose(g, w[:, None] * others, rtol=1e-12)


@pytest.mark.parametrize("log", [False, True])
def test_softmax(rng, log):
    a = rng.uniform(-3, 3, (3, 5))
    p = np.exp(a - a.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    g, w = grad_of(lambda x: kiln.log_softmax(x, 1) if log else kiln.softmax(x, 1), a)
    if log:
        expect = w - p * w.sum(axis=1, keepdims=True)
    else:
        expect = p * (w - (w * p).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(g, expect, rtol=1e-10, atol=1e-14)


def test_cumsum_and_cumprod(rng):
    a = rng.uniform(-2, 2, (3, 4))
    g, w = grad_of(lambda x: kiln.cumsum(x, 1), a)
    np.testing.assert_allclose(g, np.flip(np.cumsum(np.flip(w, 1), 1), 1), rtol=1e-12)
    b = np.array([[2.0, 0.0, 3.0, 0.0], [1.5, -2.0, 0.5, 3.0]])
    g, w = grad_of(lambda x: kiln.cumprod(x, 1), b)
    # d/dx_k sum_i w_i prod_{j<=i} x_j = sum_{i>=k} w_i prod_{j<=i, j!=k} x_j
    expect = np.zeros_like(b)
    for r in range(b.shape[0]):
        for k in range(b.shape[1]):
            expect[r, k] = sum(w[r, i] * np.prod(np.delete(b[r, : i + 1], k)) for i in range(k, b.shape[1]))
    np.testing.assert_allclose(g, expect, rtol=1e-12)


def test_sort_scatters_back(rng):
    a = rng.permutation(12).astype(np.float64).reshape(3, 4)
    g, w = grad_of(lambda x: kiln.sort(x, 1).values, a)
    np.testing.assert_array_equal(np.take_along_axis(g, np.argsort(a, 1), 1), w)


def test_matches_torch(rng):
    torch = pytest.importorskip("torch")
    a = rng.uniform(-2, 2, (3, 4))
    for name in ("softmax", "log_softmax", "cumsum"):
        g, w = grad_of(lambda x: getattr(kiln, name)(x, 1), a)
        t = torch.tensor(a, requires_grad=True)
        getattr(torch, name)(t, 1).backward(torch.tensor(w))
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("p", [2, 1, 3.0, 0.5, float("inf"), float("-inf"), 0])
def test_norm_closed_form(p):
    a = np.array([[0.5, -2.0, 1.5, 0.25], [-1.0, 0.75, -0.5, 3.0]])
    g, w = grad_of(lambda x: kiln.norm(x, p, 1), a)
    n = np.linalg.norm(a, ord=p, axis=1, keepdims=True)
    if p == 0:
        expect = np.zeros_like(a)
    elif np.isinf(p):
        expect = np.sign(a) * (np.abs(a) == n)  # no ties here
    else:
        expect = np.sign(a) * np.abs(a) ** (p - 1) / n ** (p - 1)
    np.testing.assert_allclose(g, w[:, None] * expect, rtol=1e-12)


def test_norm_subgradient_zero_at_zero():
    x = leaf(np.zeros((2, 3)))
    kiln.norm(x).backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((2, 3)))


def test_logsumexp_over_several_dims(rng):
    a = rng.uniform(-2, 2, (2, 3, 4))
    g, w = grad_of(lambda x: kiln.logsumexp(x, (0, 2)), a)
    e = np.exp(a - a.max(axis=(0, 2), keepdims=True))
    np.testing.assert_allclose(g, w[None, :, None] * e / e.sum(axis=(0, 2), keepdims=True), rtol=1e-10)


def test_topk_scatters_back():
    a = np.array([[3.0, 1.0, 4.0, 1.5], [9.0, 2.0, 6.0, 5.0]])
    g, w = grad_of(lambda x: kiln.topk(x, 2, 1).values, a)
    np.testing.assert_array_equal(g, [[w[0, 1], 0, w[0, 0], 0], [w[1, 0], 0, w[1, 1], 0]])

