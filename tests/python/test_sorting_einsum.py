"""unique, searchsorted, bucketize, kthvalue, median, nanmedian, mode, cummax,
cummin (kiln/_sorting.py) and einsum (kiln/_einsum.py) against NumPy (and torch
when installed)."""

import numpy as np
import pytest

import kiln

RNG = np.random.default_rng(5)


def t(a):
    return kiln.tensor(a)


@pytest.mark.parametrize("x", [RNG.integers(0, 6, 40), RNG.integers(-3, 3, (4, 5)), np.array([2.5, -1.0, 2.5, 0.0]),
                               np.zeros(0, dtype=np.int64)])
def test_unique_matches_numpy(x):
    u, inv, cnt = kiln.unique(t(x), return_inverse=True, return_counts=True)
    nu, ninv, ncnt = np.unique(x, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(u.numpy(), nu)
    np.testing.assert_array_equal(inv.numpy(), ninv.reshape(x.shape))
    np.testing.assert_array_equal(cnt.numpy(), ncnt)
    np.testing.assert_array_equal(t(x).unique().numpy(), nu)


def test_unique_dim_and_consecutive():
    m = RNG.integers(0, 2, (9, 3))
    u, inv, cnt = kiln.unique(t(m), dim=0, return_inverse=True, return_counts=True)
    nu, ninv, ncnt = np.unique(m, axis=0, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(u.numpy(), nu)
    np.testing.assert_array_equal(inv.numpy(), ninv.reshape(-1))
    np.testing.assert_array_equal(cnt.numpy(), ncnt)
    np.testing.assert_array_equal(kiln.unique(t(m.T.copy()), dim=1).numpy(), np.unique(m.T, axis=1))
    v = np.array([1, 1, 2, 2, 3, 1, 1, 2])
    u, inv, cnt = kiln.unique_consecutive(t(v), return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(u.numpy(), [1, 2, 3, 1, 2])
    np.testing.assert_array_equal(inv.numpy(), [0, 0, 1, 1, 2, 3, 3, 4])
    np.testing.assert_array_equal(cnt.numpy(), [2, 2, 1, 2, 1])


def _slices_reference(a, dim, consecutive):
    """unique / unique_consecutive along dim in plain Python: slices as tuples,
    a stable sort with NaN after every number of its position (NaNs tied), and
    runs where a slice differs from the one before (NaN equals nothing)."""
    rows = [tuple(float(v) for v in np.moveaxis(a, dim, 0)[i].reshape(-1)) for i in range(a.shape[dim])]
    order = list(range(len(rows)))
    if not consecutive:
        order.sort(key=lambda i: tuple((np.isnan(v), 0.0 if np.isnan(v) else v) for v in rows[i]))
    first, inverse, counts = [], [0] * len(rows), []
    for j, i in enumerate(order):
        if j == 0 or not all(u == v for u, v in zip(rows[i], rows[order[j - 1]])):
            first.append(i)
            counts.append(0)
        counts[-1] += 1
        inverse[i] = len(counts) - 1
    values = np.moveaxis(np.moveaxis(a, dim, 0)[first], 0, dim) if first else np.moveaxis(a, dim, 0)[:0]
    return values, np.array(inverse, dtype=np.int64), np.array(counts, dtype=np.int64)


@pytest.mark.parametrize("consecutive", [False, True])
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_unique_dim_matches_reference(dim, consecutive):
    a = RNG.integers(0, 2, (6, 5, 3)).astype(np.float32)
    a[3, :, 1] = a[1, :, 1]  # repeated slices along every dim
    a[2, 1, 0] = np.nan
    a[4, 1, 0] = np.nan
    fn = kiln.unique_consecutive if consecutive else kiln.unique
    u, inv, cnt = fn(t(a), dim=dim, return_inverse=True, return_counts=True)
    ru, rinv, rcnt = _slices_reference(a, dim % 3, consecutive)
    np.testing.assert_array_equal(u.numpy(), ru)
    np.testing.assert_array_equal(inv.numpy(), rinv)
    np.testing.assert_array_equal(cnt.numpy(), rcnt)
    assert inv.dtype == kiln.int64 and cnt.dtype == kiln.int64


@pytest.mark.parametrize("dtype", [np.int64, np.int8, np.float64, np.bool_])
def test_unique_dim_many_rows_matches_numpy(dtype):
    # 3000 rows of 4 elements from {0, 1, 2}: at most 81 distinct rows.
    m = RNG.integers(0, 3, (3000, 4)).astype(dtype)
    u, inv, cnt = kiln.unique(t(m), dim=0, return_inverse=True, return_counts=True)
    nu, ninv, ncnt = np.unique(m, axis=0, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(u.numpy(), nu)
    np.testing.assert_array_equal(inv.numpy(), ninv.reshape(-1))
    np.testing.assert_array_equal(cnt.numpy(), ncnt)
    # a non-contiguous input: the transpose, unique along dim 1
    np.testing.assert_array_equal(kiln.unique(t(m).t(), dim=1).numpy(), nu.T)


def test_unique_dim_edges():
    u, inv, cnt = kiln.unique(t(np.zeros((0, 3), np.float32)), dim=0, return_inverse=True, return_counts=True)
    assert u.shape == (0, 3) and inv.shape == (0,) and cnt.shape == (0,)
    # rows with no elements are all equal
    u, inv, cnt = kiln.unique(t(np.zeros((3, 0), np.float32)), dim=0, return_inverse=True, return_counts=True)
    assert u.shape == (1, 0)
    np.testing.assert_array_equal(inv.numpy(), [0, 0, 0])
    np.testing.assert_array_equal(cnt.numpy(), [3])
    # -0.0 equals 0.0; NaN slices never merge
    u, cnt = kiln.unique(t(np.array([[0.0], [-0.0], [np.nan], [np.nan]])), dim=0, return_counts=True)
    assert u.shape == (3, 1)
    np.testing.assert_array_equal(cnt.numpy(), [2, 1, 1])
    with pytest.raises(IndexError, match="no dimensions"):
        kiln.unique(t(np.float32(1.0)), dim=0)
    with pytest.raises(IndexError):
        kiln.unique(t(np.zeros((2, 2))), dim=2)
    with pytest.raises(TypeError):
        kiln.unique(t(np.zeros((2, 2), np.complex64)), dim=0)


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_and_bucketize(right):
    seq = np.sort(RNG.integers(0, 20, 15)).astype(np.float64)
    vals = RNG.integers(-2, 22, (3, 7)).astype(np.float64)
    side = "right" if right else "left"
    np.testing.assert_array_equal(kiln.searchsorted(t(seq), t(vals), right=right).numpy(),
                                  np.searchsorted(seq, vals, side=side))
    np.testing.assert_array_equal(kiln.searchsorted(t(seq), t(vals), side=side).numpy(),
                                  np.searchsorted(seq, vals, side=side))
    batch = np.sort(RNG.uniform(0, 1, (3, 6)), 1)
    q = RNG.uniform(0, 1, (3, 4))
    got = kiln.searchsorted(t(batch), t(q), right=right).numpy()
    np.testing.assert_array_equal(got, np.stack([np.searchsorted(b, r, side=side) for b, r in zip(batch, q)]))
    assert kiln.searchsorted(t(seq), t(vals), out_int32=True).dtype == kiln.int32
    # bucketize(x, b, right) is searchsorted(b, x, right)
    np.testing.assert_array_equal(kiln.bucketize(t(vals), t(seq), right=right).numpy(),
                                  np.searchsorted(seq, vals, side=side))
    perm = RNG.permutation(15)
    np.testing.assert_array_equal(kiln.searchsorted(t(seq[perm]), t(vals), sorter=t(np.argsort(seq[perm]))).numpy(),
                                  np.searchsorted(seq, vals))


def test_order_statistics():
    a = RNG.uniform(-1, 1, (4, 7))
    v, i = kiln.kthvalue(t(a), 3, 1)
    np.testing.assert_array_equal(v.numpy(), np.sort(a, 1)[:, 2])
    np.testing.assert_array_equal(a[np.arange(4), i.numpy()], v.numpy())
    v, i = kiln.median(t(a), 0, keepdim=True)
    np.testing.assert_array_equal(v.numpy(), np.sort(a, 0)[1:2])  # the lower median of 4
    assert float(kiln.median(t(a)).item()) == np.sort(a.ravel())[(a.size - 1) // 2]
    n = a.copy()
    n[1, 3] = np.nan
    assert np.isnan(kiln.median(t(n), 1).values.numpy()[1])
    np.testing.assert_array_equal(kiln.nanmedian(t(n), 1).values.numpy()[1],
                                  np.sort(n[1][~np.isnan(n[1])])[(6 - 1) // 2])
    m = np.array([[1, 2, 2, 3, 3, 1, 7], [4, 4, 4, 0, 0, 0, 9]])
    mv, mi = kiln.mode(t(m), 1)
    np.testing.assert_array_equal(mv.numpy(), [1, 0])  # ties: the smallest value
    np.testing.assert_array_equal(m[np.arange(2), mi.numpy()], mv.numpy())


def test_cumulative_extremes():
    x = np.array([1.0, 3.0, 2.0, 3.0, 0.5, 5.0])
    v, i = kiln.cummax(t(x), 0)
    np.testing.assert_array_equal(v.numpy(), np.maximum.accumulate(x))
    np.testing.assert_array_equal(i.numpy(), [0, 1, 1, 3, 3, 5])  # ties: the latest
    v, i = kiln.cummin(t(x), 0)
    np.testing.assert_array_equal(v.numpy(), np.minimum.accumulate(x))
    y = RNG.integers(0, 9, (3, 5))
    np.testing.assert_array_equal(kiln.cummax(t(y), 1).values.numpy(), np.maximum.accumulate(y, 1))
    np.testing.assert_array_equal(t(y).cummin(0).values.numpy(), np.minimum.accumulate(y, 0))


EINSUM = [("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk", [(3, 4), (4, 5)]), ("ii->i", [(4, 4)]), ("ii", [(4, 4)]),
          ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("i,i->", [(5,), (5,)]), ("i,j->ij", [(3,), (4,)]),
          ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]), ("ijk->kji", [(2, 3, 4)]),
          ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]), ("iij->j", [(3, 3, 2)]),
          ("bhqd,bhkd->bhqk", [(2, 3, 5, 4), (2, 3, 6, 4)]), ("ij->", [(3, 4)]), ("i,i,i->i", [(3,), (3,), (3,)]),
          ("ab,cd->", [(2, 3), (4, 5)]), ("b i d, b j d -> b i j", [(2, 3, 4), (2, 5, 4)]), ("i...->...", [(3, 2, 2)])]


@pytest.mark.parametrize("eq,shapes", EINSUM, ids=[e[0] for e in EINSUM])
def test_einsum_matches_numpy(eq, shapes):
    ops = [RNG.standard_normal(s) for s in shapes]
    got = kiln.einsum(eq, *[t(o) for o in ops]).numpy()
    np.testing.assert_allclose(got, np.einsum(eq.replace(" ", ""), *ops), rtol=1e-12, atol=1e-12)
    assert kiln.einsum(eq, [t(o) for o in ops]).shape == got.shape  # operands as one list


def test_einsum_gradient_and_errors():
    a = kiln.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    b = kiln.tensor(RNG.standard_normal((4, 5)), requires_grad=True)
    kiln.einsum("ij,jk->", a, b).backward()
    np.testing.assert_allclose(a.grad.numpy(), np.tile(b.detach().numpy().sum(1), (3, 1)), rtol=1e-12)
    with pytest.raises(ValueError, match="number of subscripts"):
        kiln.einsum("ij,jk->ik", t(np.ones(3)), t(np.ones((3, 3))))
    with pytest.raises(ValueError, match="does not appear"):
        kiln.einsum("ij->iz", t(np.ones((2, 2))))
    with pytest.raises(ValueError, match="operands"):
        kiln.einsum("ij,jk->ik", t(np.ones((2, 2))))


def test_matches_torch_when_installed():
    torch = pytest.importorskip("torch")
    m = RNG.integers(0, 4, (3, 9))
    for name, kf, tf in [
        ("mode", lambda v: kiln.mode(t(v), 1), lambda v: torch.mode(torch.tensor(v), 1)),
        ("median", lambda v: kiln.median(t(v), 1), lambda v: torch.median(torch.tensor(v), 1)),
        ("cummax", lambda v: kiln.cummax(t(v), 1), lambda v: torch.cummax(torch.tensor(v), 1)),
        ("cummin", lambda v: kiln.cummin(t(v), 1), lambda v: torch.cummin(torch.tensor(v), 1)),
    ]:
        kv, ki = kf(m)
        tv, ti = tf(m)
        np.testing.assert_array_equal(kv.numpy(), tv.numpy(), err_msg=name)
        np.testing.assert_array_equal(ki.numpy(), ti.numpy(), err_msg=name)
