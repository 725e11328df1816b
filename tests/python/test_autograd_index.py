"""Gradients of the shape and indexing ops against NumPy references written by
hand (np.add.at for repeated indices), and against torch when it imports."""

import numpy as np
import pytest

import kiln


@pytest.fixture
def rng():
    return np.random.default_rng(36)


def leaf(a):
    return kiln.tensor(np.asarray(a, dtype=np.float64)).requires_grad_()


def grad_of(x):
    return x.grad.numpy()


def backward(y, rng):
    """y.backward(G) with a random G; returns G."""
    g = rng.standard_normal(tuple(y.shape))
    y.backward(kiln.tensor(g))
    return g


# ---- advanced indexing -------------------------------------------------------


def test_index_repeated_rows_accumulate(rng):
    a = rng.standard_normal((4, 3))
    x = leaf(a)
    idx = np.array([0, 2, 0, 0, 3])
    g = backward(x[kiln.tensor(idx)], rng)
    ref = np.zeros_like(a)
    np.add.at(ref, idx, g)
    np.testing.assert_allclose(grad_of(x), ref, rtol=1e-12, atol=1e-12)


def test_index_two_tensors_and_slice(rng):
    a = rng.standard_normal((3, 4, 5))
    x = leaf(a)
    i = np.array([[0, 2], [0, 0]])
    j = np.array([[1, 1], [1, 3]])
    g = backward(x[kiln.tensor(i), :, kiln.tensor(j)], rng)  # non-adjacent: B dims first
    ref = np.zeros_like(a)
    np.add.at(ref, (i, slice(None), j), g)
    np.testing.assert_allclose(grad_of(x), ref, rtol=1e-12, atol=1e-12)


def test_index_bool_mask(rng):
    a = rng.standard_normal((3, 4))
    m = a > 0
    x = leaf(a)
    g = backward(x[kiln.tensor(m)], rng)
    ref = np.zeros_like(a)
    ref[m] = g
    np.testing.assert_allclose(grad_of(x), ref)


def test_index_grad_is_deterministic(rng):
    # Many repeats of few rows: the same bits whatever the thread count.
    a = rng.standard_normal((3, 64))
    idx = kiln.tensor(rng.integers(0, 3, 5000))
    g = kiln.tensor(rng.standard_normal((5000, 64)))
    grads = []
    prev = kiln.get_num_threads()
    try:
        for n in (1, 2, 4, 1):
            kiln.set_num_threads(n)
            x = leaf(a)
            x[idx].backward(g)
            grads.append(grad_of(x))
    finally:
        kiln.set_num_threads(prev)
    for other in grads[1:]:
        np.testing.assert_array_equal(grads[0], other)
    ref = np.zeros_like(a)
    np.add.at(ref, idx.numpy(), g.numpy())
    np.testing.assert_allclose(grads[0], ref, rtol=1e-12, atol=1e-10)


def test_basic_slicing_records_a_view(rng):
    a = rng.standard_normal((4, 6))
    x = leaf(a)
    g = backward(x[1:, ::2], rng)
    ref = np.zeros_like(a)
    ref[1:, ::2] = g
    np.testing.assert_allclose(grad_of(x), ref)


def test_setitem_follows_inplace_rules(rng):
    a = rng.standard_normal((4, 3))
    x = leaf(a)
    v = leaf(rng.standard_normal(3))
    y = x * 1.0
    idx = np.array([0, 2])
    y[kiln.tensor(idx)] = v
    assert y.grad_fn is not None
    g = backward(y, rng)
    ref_x = g.copy()
    ref_x[idx] = 0
    np.testing.assert_allclose(grad_of(x), ref_x)
    np.testing.assert_allclose(grad_of(v), g[idx].sum(0))
    with pytest.raises(RuntimeError, match="leaf"):
        x[0] = 1.0


def test_setitem_basic_slice_on_nonleaf(rng):
    a = rng.standard_normal((4, 3))
    x = leaf(a)
    y = x * 1.0
    y[1:3] = 5.0
    g = backward(y, rng)
    ref = g.copy()
    ref[1:3] = 0
    np.testing.assert_allclose(grad_of(x), ref)


@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put(rng, accumulate):
    a = rng.standard_normal((5, 2))
    x = leaf(a)
    v = leaf(rng.standard_normal((3, 2)))
    idx = np.array([4, 1, 0])
    g = backward(kiln.index_put(x, (kiln.tensor(idx),), v, accumulate), rng)
    ref_x = g.copy()
    if not accumulate:
        ref_x[idx] = 0
    np.testing.assert_allclose(grad_of(x), ref_x)
    np.testing.assert_allclose(grad_of(v), g[idx])


# ---- gather / scatter ---------------------------------------------------------


def test_gather(rng):
    a = rng.standard_normal((3, 4))
    idx = np.array([[0, 0, 3], [1, 1, 1], [2, 0, 2]])
    x = leaf(a)
    g = backward(kiln.gather(x, 1, kiln.tensor(idx)), rng)
    ref = np.zeros_like(a)
    rows = np.broadcast_to(np.arange(3)[:, None], idx.shape)
    np.add.at(ref, (rows, idx), g)
    np.testing.assert_allclose(grad_of(x), ref, rtol=1e-12, atol=1e-12)


def test_scatter_src_and_self(rng):
    a = rng.standard_normal((3, 5))
    src_a = rng.standard_normal((3, 4))  # larger than index: the rest gets 0
    idx = np.array([[4, 0], [1, 2], [3, 3 - 3]])
    x, src = leaf(a), leaf(src_a)
    g = backward(kiln.scatter(x, 1, kiln.tensor(idx), src), rng)
    rows = np.broadcast_to(np.arange(3)[:, None], idx.shape)
    ref_x = g.copy()
    ref_x[rows, idx] = 0
    ref_src = np.zeros_like(src_a)
    ref_src[:, :2] = np.take_along_axis(g, idx, 1)
    np.testing.assert_allclose(grad_of(x), ref_x)
    np.testing.assert_allclose(grad_of(src), ref_src)


def test_scatter_add(rng):
    a = rng.standard_normal((4, 2))
    idx = np.array([[0, 1], [0, 1], [3, 0]])
    x, src = leaf(a), leaf(rng.standard_normal((3, 2)))
    g = backward(kiln.scatter_add(x, 0, kiln.tensor(idx), src), rng)
    np.testing.assert_allclose(grad_of(x), g)
    np.testing.assert_allclose(grad_of(src), np.take_along_axis(g, idx, 0))


def test_scatter_inplace_on_nonleaf(rng):
    a = rng.standard_normal((2, 3))
    idx = np.array([[2], [0]])
    x, src = leaf(a), leaf(rng.standard_normal((2, 1)))
    y = x * 1.0
    y.scatter_(1, kiln.tensor(idx), src)
    g = backward(y, rng)
    ref = g.copy()
    ref[[0, 1], [2, 0]] = 0
    np.testing.assert_allclose(grad_of(x), ref)
    np.testing.assert_allclose(grad_of(src), np.take_along_axis(g, idx, 1))


# ---- index_select / index_add ---------------------------------------------------


def test_index_select_repeated(rng):
    a = rng.standard_normal((2, 4))
    idx = np.array([3, 3, 0, 3])
    x = leaf(a)
    g = backward(kiln.index_select(x, 1, kiln.tensor(idx)), rng)
    ref = np.zeros_like(a)
    np.add.at(ref.T, idx, g.T)
    np.testing.assert_allclose(grad_of(x), ref, rtol=1e-12, atol=1e-12)


def test_index_add_alpha_and_inplace(rng):
    a = rng.standard_normal((5, 2))
    idx = np.array([1, 1, 4])
    x, s = leaf(a), leaf(rng.standard_normal((3, 2)))
    y = x * 1.0
    y.index_add_(0, kiln.tensor(idx), s, alpha=2.5)
    g = backward(y, rng)
    np.testing.assert_allclose(grad_of(x), g)
    np.testing.assert_allclose(grad_of(s), 2.5 * g[idx])


# ---- take / put -----------------------------------------------------------------


def test_take_repeated_negative(rng):
    a = rng.standard_normal((3, 4))
    idx = np.array([[0, -1], [11, 5]])
    x = leaf(a)
    g = backward(kiln.take(x, kiln.tensor(idx)), rng)
    ref = np.zeros(a.size)
    np.add.at(ref, idx.ravel() % a.size, g.ravel())
    np.testing.assert_allclose(grad_of(x), ref.reshape(a.shape), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("accumulate", [False, True])
def test_put(rng, accumulate):
    a = rng.standard_normal((2, 3))
    idx = np.array([5, 0, 2])
    x, s = leaf(a), leaf(rng.standard_normal(3))
    g = backward(kiln.put(x, kiln.tensor(idx), s, accumulate), rng)
    ref_x = g.copy().ravel()
    if not accumulate:
        ref_x[idx] = 0
    np.testing.assert_allclose(grad_of(x), ref_x.reshape(a.shape))
    np.testing.assert_allclose(grad_of(s), g.ravel()[idx])


# ---- masks ------------------------------------------------------------------------


def test_masked_fill_scalar_and_tensor_value(rng):
    a = rng.standard_normal((3, 4))
    m = rng.random((3, 4)) > 0.5
    x = leaf(a)
    v = leaf(2.0)
    g = backward(kiln.masked_fill(x, kiln.tensor(m), v), rng)
    np.testing.assert_allclose(grad_of(x), np.where(m, 0.0, g))
    np.testing.assert_allclose(grad_of(v), g[m].sum())
    x2 = leaf(a)
    g2 = backward(kiln.masked_fill(x2, kiln.tensor(m), 7.0), rng)
    np.testing.assert_allclose(grad_of(x2), np.where(m, 0.0, g2))


def test_masked_fill_inplace_and_broadcast_select(rng):
    a = rng.standard_normal((1, 4))
    m = np.array([[True, False, True, True], [False, False, True, False], [True, True, True, True]])
    x = leaf(a)
    g = backward(kiln.masked_select(x, kiln.tensor(m)), rng)
    full = np.zeros(m.shape)
    full[m] = g
    np.testing.assert_allclose(grad_of(x), full.sum(0, keepdims=True))
    x2 = leaf(rng.standard_normal((3, 4)))
    y = x2 * 1.0
    y.masked_fill_(kiln.tensor(m), 0.0)
    g2 = backward(y, rng)
    np.testing.assert_allclose(grad_of(x2), np.where(m, 0.0, g2))


# ---- shape ops ----------------------------------------------------------------------


def test_cat_and_stack(rng):
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((2, 1))
    x, y = leaf(a), leaf(b)
    g = backward(kiln.cat([x, y], -1), rng)
    np.testing.assert_allclose(grad_of(x), g[:, :3])
    np.testing.assert_allclose(grad_of(y), g[:, 3:])
    x, y = leaf(a), leaf(a + 1)
    g = backward(kiln.stack([x, y], 1), rng)
    np.testing.assert_allclose(grad_of(x), g[:, 0])
    np.testing.assert_allclose(grad_of(y), g[:, 1])


def test_flip_roll_repeat(rng):
    a = rng.standard_normal((2, 3))
    x = leaf(a)
    g = backward(kiln.flip(x, (0, 1)), rng)
    np.testing.assert_allclose(grad_of(x), g[::-1, ::-1])
    x = leaf(a)
    g = backward(kiln.roll(x, (1, -4), (0, 1)), rng)
    np.testing.assert_allclose(grad_of(x), np.roll(g, (-1, 4), (0, 1)))
    x = leaf(a)
    g = backward(kiln.roll(x, 2), rng)  # flattened
    np.testing.assert_allclose(grad_of(x), np.roll(g.ravel(), -2).reshape(a.shape))
    x = leaf(a)
    g = backward(x.repeat(2, 1, 3), rng)  # [2, 2, 9]
    np.testing.assert_allclose(grad_of(x), g.reshape(2, 2, 1, 3, 3).sum((0, 3)).reshape(a.shape), rtol=1e-12)


@pytest.mark.parametrize("diagonal", [-1, 0, 2])
def test_tril_triu_and_inplace(rng, diagonal):
    a = rng.standard_normal((3, 4))
    x = leaf(a)
    g = backward(kiln.tril(x, diagonal), rng)
    np.testing.assert_allclose(grad_of(x), np.tril(g, diagonal))
    x = leaf(a)
    y = x * 1.0
    y.triu_(diagonal)
    g = backward(y, rng)
    np.testing.assert_allclose(grad_of(x), np.triu(g, diagonal))


def test_diag_of_vector_records(rng):
    a = rng.standard_normal(3)
    x = leaf(a)
    y = kiln.diag(x, 1)
    assert y.grad_fn is not None
    g = backward(y, rng)
    np.testing.assert_allclose(grad_of(x), np.diagonal(g, 1))
    x = leaf(rng.standard_normal((2, 3)))
    g = backward(kiln.diag_embed(x), rng)
    np.testing.assert_allclose(grad_of(x), np.diagonal(g, 0, -2, -1))


def test_split_family_records(rng):
    a = rng.standard_normal((5, 2))
    x = leaf(a)
    parts = kiln.split(x, 2)
    g = backward(parts[1], rng)
    ref = np.zeros_like(a)
    ref[2:4] = g
    np.testing.assert_allclose(grad_of(x), ref)


def test_against_torch(rng):
    torch = pytest.importorskip("torch")
    a = rng.standard_normal((4, 3))
    idx = np.array([0, 3, 0])
    g = rng.standard_normal((3, 3))
    x = leaf(a)
    x[kiln.tensor(idx)].backward(kiln.tensor(g))
    t = torch.tensor(a, requires_grad=True)
    t[torch.tensor(idx)].backward(torch.tensor(g))
    np.testing.assert_allclose(grad_of(x), t.grad.numpy())


@pytest.mark.parametrize("offset", [-1, 0, 2])
def test_diagonal_and_diag_of_matrix(rng, offset):
    a = rng.standard_normal((2, 3, 4))
    x = leaf(a)
    y = kiln.diagonal(x, offset, 2, 1)  # non-square, reversed dims
    g = backward(y, rng)
    ref = np.zeros_like(a)
    idx = np.arange(g.shape[-1])
    r, c = (idx, idx + offset) if offset >= 0 else (idx - offset, idx)
    ref[:, c, r] = g  # dim1 = 2 indexes r, dim2 = 1 indexes c
    np.testing.assert_allclose(grad_of(x), ref)
    m = leaf(a[0])
    g = backward(kiln.diag(m, offset), rng)
    ref = np.zeros_like(a[0])
    n = g.shape[0]
    r, c = (np.arange(n), np.arange(n) + offset) if offset >= 0 else (np.arange(n) - offset, np.arange(n))
    ref[r, c] = g
    np.testing.assert_allclose(grad_of(m), ref)


@pytest.mark.parametrize("op", ["gather", "index_select", "take"])
def test_repeated_index_grads_same_bits_any_thread_count(rng, op):
    a = rng.standard_normal((4, 64))
    idx_np = rng.integers(0, 4, (2000, 64)) if op == "gather" else rng.integers(0, 4, 4000)
    idx = kiln.tensor(idx_np)
    calls = {
        "gather": lambda x: kiln.gather(x, 0, idx),
        "index_select": lambda x: kiln.index_select(x, 0, idx),
        "take": lambda x: kiln.take(x, idx),
    }
    shape = {"gather": (2000, 64), "index_select": (4000, 64), "take": (4000,)}[op]
    g_np = rng.standard_normal(shape)
    grads = []
    prev = kiln.get_num_threads()
    try:
        for n in (1, 3, 4):
            kiln.set_num_threads(n)
            x = leaf(a)
            calls[op](x).backward(kiln.tensor(g_np))
            grads.append(grad_of(x))
    finally:
        kiln.set_num_threads(prev)
    for other in grads[1:]:
        np.testing.assert_array_equal(grads[0], other)
    ref = np.zeros_like(a)
    if op == "gather":
        np.add.at(ref, (idx_np, np.broadcast_to(np.arange(64), idx_np.shape)), g_np)
    elif op == "index_select":
        np.add.at(ref, idx_np, g_np)
    else:
        np.add.at(ref.reshape(-1), idx_np, g_np)
    np.testing.assert_allclose(grads[0], ref, rtol=1e-10, atol=1e-10)
