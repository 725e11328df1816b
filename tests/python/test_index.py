# Indexing ops and Tensor.__getitem__/__setitem__ against NumPy (np.take,
# np.take_along_axis, np.add.at, fancy indexing and assignment).
import ml_dtypes
import numpy as np
import pytest

import kiln

# Data-movement ops must work for every dtype; values are small integers so
# that every dtype holds them exactly.
DTYPES = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn,
          np.int64, np.int32, np.int8, np.uint8, np.uint16, np.bool_, np.complex64, np.complex128]


def arr(shape, dtype, rng):
    a = rng.integers(0, 8, size=shape)
    return a.astype(dtype)


def same(t, ref):
    got = np.asarray(t.numpy() if isinstance(t, kiln.Tensor) else t)
    ref = np.asarray(ref)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    assert got.dtype == ref.dtype, (got.dtype, ref.dtype)
    np.testing.assert_array_equal(got.astype(np.complex128) if got.dtype.kind == "c" else got.astype(np.float64),
                                  ref.astype(np.complex128) if ref.dtype.kind == "c" else ref.astype(np.float64))


@pytest.mark.parametrize("dtype", DTYPES)
def test_take(dtype, rng):
    a = arr((4, 5), dtype, rng)
    x = kiln.tensor(a)
    idx = np.array([[0, -1, 7], [19, -20, 3]])
    same(kiln.take(x, kiln.tensor(idx)), np.take(a, idx))
    # Non-contiguous input: logical row-major order.
    same(kiln.take(x.t(), idx), np.take(a.T, idx))
    same(x.take(kiln.tensor([], dtype=kiln.int64)), np.take(a, np.array([], dtype=np.int64)))


def test_take_errors():
    x = kiln.tensor(np.arange(6.0))
    with pytest.raises(IndexError, match="6"):
        kiln.take(x, kiln.tensor([0, 6]))
    with pytest.raises(IndexError):
        kiln.take(x, kiln.tensor([-7]))
    with pytest.raises(TypeError):
        kiln.take(x, kiln.tensor([0.0]))


@pytest.mark.parametrize("accumulate", [False, True])
def test_put(accumulate):
    a = np.zeros((3, 4), np.float32)
    x = kiln.tensor(a)
    idx = np.array([1, 5, -1, 1])
    src = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    r = x.put_(kiln.tensor(idx), kiln.tensor(src), accumulate=accumulate)
    assert r is x
    ref = a.reshape(-1).copy()
    if accumulate:
        np.add.at(ref, idx, src)
    else:
        ref[idx] = src  # NumPy: last write wins too
    same(x, ref.reshape(3, 4))
    before = x.numpy().copy()
    with pytest.raises(IndexError):
        x.put_(kiln.tensor([0, 12]), kiln.tensor([9.0, 9.0], dtype=kiln.float32))
    same(x, before)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_gather(dtype, dim, rng):
    a = arr((3, 4, 5), dtype, rng)
    n = a.shape[dim]
    idx = rng.integers(0, n, size=(3, 4, 5))
    same(kiln.gather(kiln.tensor(a), dim, kiln.tensor(idx)), np.take_along_axis(a, idx, axis=dim))
    # A smaller index: compare with the matching slice of x.
    small = idx[:2, :3, :4]
    sl = [slice(0, 2), slice(0, 3), slice(0, 4)]
    sl[dim] = slice(None)
    same(kiln.tensor(a).gather(dim, kiln.tensor(small)), np.take_along_axis(a[tuple(sl)], small, axis=dim))


def test_gather_noncontiguous_and_errors(rng):
    a = rng.standard_normal((5, 6)).astype(np.float32)
    x = kiln.tensor(a).t()  # [6, 5]
    idx = rng.integers(0, 6, size=(5, 4)).T  # non-contiguous NumPy index
    same(kiln.gather(x, 0, idx), np.take_along_axis(a.T, idx, axis=0))
    with pytest.raises(IndexError, match="out of bounds"):
        kiln.gather(x, 0, kiln.tensor([[6]]))
    with pytest.raises(IndexError):
        kiln.gather(x, 0, kiln.tensor([[-1]]))  # gather does not wrap
    with pytest.raises(ValueError):
        kiln.gather(x, 0, kiln.tensor([0]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32, ml_dtypes.bfloat16, np.complex64])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scatter_add_and_scatter(dtype, dim, rng):
    a = arr((4, 5), dtype, rng)
    idx = rng.integers(0, a.shape[dim], size=(3, 4))  # duplicates
    src = arr((5, 6), dtype, rng)
    # scatter_add reference with np.add.at over the index positions.
    ref = a.astype(np.complex128 if np.dtype(dtype).kind == "c" else np.float64)
    ii, jj = np.meshgrid(np.arange(3), np.arange(4), indexing="ij")
    tgt = (idx, jj) if dim == 0 else (ii, idx)
    np.add.at(ref, tgt, src[:3, :4])
    same(kiln.scatter_add(kiln.tensor(a), dim, kiln.tensor(idx), kiln.tensor(src)), ref.astype(dtype))
    # scatter without duplicates along dim (last write wins is then unambiguous).
    pidx = np.stack([rng.permutation(a.shape[dim])[:3] for _ in range(4)], axis=1 if dim == 0 else 0)
    pidx = pidx[:3, :4] if dim == 0 else pidx[:3, :3]
    ref2 = a.copy()
    ref3 = a.copy()
    for i, j in np.ndindex(pidx.shape):
        tgt = (pidx[i, j], j) if dim == 0 else (i, pidx[i, j])
        ref2[tgt] = src[i, j]
        ref3[tgt] = 3
    x = kiln.tensor(a)
    assert x.scatter_(dim, kiln.tensor(pidx), kiln.tensor(src)) is x
    same(x, ref2)
    same(kiln.scatter(kiln.tensor(a), dim, kiln.tensor(pidx), value=3), ref3)


def test_scatter_errors_write_nothing():
    x = kiln.zeros(3, 3)
    with pytest.raises(IndexError):
        x.scatter_(1, kiln.tensor([[0, 1, 3]]), kiln.ones(1, 3))
    with pytest.raises(IndexError):
        x.scatter_add_(1, kiln.tensor([[0, -1]]), kiln.ones(1, 2))
    same(x, np.zeros((3, 3), np.float32))
    with pytest.raises(TypeError):
        x.scatter_(1, kiln.tensor([[0]]), kiln.ones(1, 1, dtype=kiln.float64))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_select(dtype, dim, rng):
    a = arr((3, 4, 5), dtype, rng)
    idx = rng.integers(0, a.shape[dim], size=7)
    same(kiln.index_select(kiln.tensor(a), dim, kiln.tensor(idx)), np.take(a, idx, axis=dim))
    at = a.transpose(2, 0, 1)
    idx2 = rng.integers(0, at.shape[dim], size=4).astype(np.int32)
    same(kiln.tensor(a).permute(2, 0, 1).index_select(dim, idx2), np.take(at, idx2, axis=dim))
    with pytest.raises(IndexError):
        kiln.index_select(kiln.tensor(a), dim, kiln.tensor([a.shape[dim]]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int16, np.complex128])
@pytest.mark.parametrize("dim", [0, 1])
def test_index_add(dtype, dim, rng):
    a = arr((4, 5), dtype, rng)
    idx = rng.integers(0, a.shape[dim], size=6)
    shape = list(a.shape)
    shape[dim] = 6
    src = arr(shape, dtype, rng)
    alpha = 2 if np.dtype(dtype).kind in "iu" else 0.5
    ref = a.copy()
    moved = np.moveaxis(ref, dim, 0)
    np.add.at(moved, idx, (np.moveaxis(src, dim, 0) * alpha).astype(dtype))
    same(kiln.index_add(kiln.tensor(a), dim, kiln.tensor(idx), kiln.tensor(src), alpha=alpha), ref)
    x = kiln.tensor(a)
    assert x.index_add_(dim, idx, kiln.tensor(src), alpha=alpha) is x
    same(x, ref)


@pytest.mark.parametrize("dtype", DTYPES)
def test_masked_fill_select(dtype, rng):
    a = arr((3, 4), dtype, rng)
    m = rng.random(4) < 0.5
    same(kiln.masked_fill(kiln.tensor(a), kiln.tensor(m), 1), np.where(m, np.asarray(1).astype(dtype), a))
    x = kiln.tensor(a)
    assert x.masked_fill_(kiln.tensor(m), kiln.tensor(0)) is x
    same(x, np.where(m, np.asarray(0).astype(dtype), a))
    same(kiln.masked_select(kiln.tensor(a), kiln.tensor(m)), a[np.broadcast_to(m, a.shape)])
    same(kiln.tensor(a).t().masked_select(kiln.tensor(m[:3])), a.T[np.broadcast_to(m[:3], (4, 3))])


def test_mask_errors():
    x = kiln.zeros(3)
    with pytest.raises(TypeError):
        x.masked_fill_(kiln.ones(3), 1.0)
    with pytest.raises(ValueError):
        x.masked_fill_(kiln.tensor([True, False]), 1.0)
    with pytest.raises(ValueError):
        x.masked_fill_(kiln.tensor([True, False, True]), kiln.ones(1))


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4), (0, 3), ()])
def test_nonzero(shape, rng):
    a = (rng.random(shape) < 0.4).astype(np.float32) * rng.integers(1, 5, size=shape)
    a = np.asarray(a, np.float32)
    same(kiln.nonzero(kiln.from_numpy(a)), np.argwhere(a).astype(np.int64))
    if len(shape) > 0:
        for got, ref in zip(kiln.tensor(a).nonzero(as_tuple=True), np.nonzero(a)):
            same(got, ref.astype(np.int64))


# ---- __getitem__ ------------------------------------------------------------------

KEYS = [
    1, -1, (1, 2), (slice(None), 1), (Ellipsis, 1), (None, 1), (1, None, slice(None, None, 2)),
    slice(1, None), (slice(None), slice(-3, -1)), (slice(10, 20),), (Ellipsis,), (),
    [1, 0, 1], (slice(None), [2, 0]), ([1, 0], slice(None), [3, -4]), ([[0], [1]], [0, 2, 1]),
    (slice(None), [[0, 1], [2, 2]], slice(1, 3)), ([1, 0], None, [2, 1]), (Ellipsis, [0, 3]),
    (np.array([True, False]),), (slice(None), np.array([True, False, True])),
    (np.arange(24).reshape(2, 3, 4) % 3 == 0,), (np.array([[True, False, True], [False, True, True]]), [0, 3, 1, 2]),
    (True,), (False,), (slice(None), True, 0), (np.int64(1), np.int32(-1)), ([],), (np.array([1, 0], np.int32),),
]


@pytest.mark.parametrize("key", KEYS, ids=[repr(k)[:40] for k in KEYS])
def test_getitem_matches_numpy(key):
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    same(kiln.tensor(a)[key], a[key])


def test_getitem_noncontiguous_and_views():
    a = np.arange(60, dtype=np.int64).reshape(3, 4, 5)
    x = kiln.tensor(a).permute(2, 0, 1)  # [5, 3, 4]
    same(x[[4, 0], :, kiln.tensor([1, 3])], a.transpose(2, 0, 1)[[4, 0], :, [1, 3]])
    same(x[1:, ::2, 1], a.transpose(2, 0, 1)[1:, ::2, 1])
    # Basic indexing returns a view: writing through it changes x.
    y = kiln.tensor(a.copy())
    v = y[1, 1:3]
    v[...] = -1
    ref = a.copy()
    ref[1, 1:3] = -1
    same(y, ref)


def test_getitem_torch_int_is_select():
    # An integer next to a tensor index is a select (torch), not an advanced index (NumPy).
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    assert kiln.tensor(a)[0, :, [1, 2]].shape == (3, 2)
    same(kiln.tensor(a)[0, :, [1, 2]], a[0][:, [1, 2]])


def test_getitem_errors():
    x = kiln.tensor(np.arange(24.0).reshape(2, 3, 4))
    with pytest.raises(IndexError):
        x[2]
    with pytest.raises(IndexError):
        x[0, 0, 0, 0]
    with pytest.raises(IndexError):
        x[:, [0, 3]]
    with pytest.raises(IndexError):
        x[kiln.tensor([0.0])]
    with pytest.raises(IndexError):
        x[[0, 1], [0, 1, 2]]
    with pytest.raises(IndexError):
        x[np.array([True, False, True])]
    with pytest.raises(IndexError):
        x[..., ...]
    with pytest.raises(ValueError):
        x[::-1]
    with pytest.raises(IndexError):
        x["a"]
    assert [t.shape for t in x] == [(3, 4), (3, 4)]  # iteration stops at IndexError


# ---- __setitem__ ------------------------------------------------------------------

SET_CASES = [
    (1, 7.0), ((slice(None), 1), np.arange(4, dtype=np.float32)), ((Ellipsis, [0, 2]), -1.0),
    (([1, 0], slice(None), [3, 2]), np.arange(3, dtype=np.float32)),
    (([1, 1], [2, 2]), np.array([[5.0], [6.0]], np.float32)),
    ((np.arange(24).reshape(2, 3, 4) % 5 == 0,), 0.5), ((slice(None), np.array([True, False, True])), 9),
    ((slice(1, None), slice(None, None, 2)), np.float32(3)),
]


@pytest.mark.parametrize("dtype", [np.float32, np.int64, ml_dtypes.bfloat16, np.complex64, np.uint8])
@pytest.mark.parametrize("key,value", SET_CASES, ids=[repr(k)[:40] for k, _ in SET_CASES])
def test_setitem_matches_numpy(dtype, key, value):
    a = np.arange(24).reshape(2, 3, 4).astype(dtype)
    x = kiln.tensor(a)
    v = kiln.tensor(value) if isinstance(value, np.ndarray) else value
    if dtype is np.uint8 and isinstance(value, float) and value < 0:
        # A Python float stored into a dtype it does not fit is refused, as torch does.
        with pytest.raises(OverflowError, match="cannot be converted to uint8"):
            x[key] = v
        return
    x[key] = v
    ref = a.copy()
    ref[key] = np.asarray(value).astype(dtype)
    same(x, ref)


def test_index_put_accumulate():
    a = np.zeros((4, 3), np.float32)
    rows = np.array([0, 2, 0, 0])
    vals = np.arange(12, dtype=np.float32).reshape(4, 3)
    x = kiln.tensor(a)
    x.index_put_((kiln.tensor(rows),), kiln.tensor(vals), accumulate=True)
    ref = a.copy()
    np.add.at(ref, rows, vals)
    same(x, ref)
    out = kiln.index_put(kiln.tensor(a), (kiln.tensor(rows), kiln.tensor([1, 1, 1, 1])),
                         kiln.tensor([1.0], dtype=kiln.float32), accumulate=True)
    ref = a.copy()
    np.add.at(ref, (rows, 1), 1.0)
    same(out, ref)


def test_setitem_errors_write_nothing():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = kiln.tensor(a)
    with pytest.raises(IndexError):
        x[[0, 3]] = 0.0
    with pytest.raises(IndexError):
        x[:, kiln.tensor([-5])] = 0.0
    with pytest.raises(ValueError):
        x[[0, 1]] = kiln.tensor([1.0, 2.0, 3.0])
    with pytest.raises(TypeError):
        x[0] = 1j
    same(x, a)
