# sort/argsort/topk against np.sort/np.argsort(kind="stable") and bincount
# against np.bincount.
import ml_dtypes
import numpy as np
import pytest

import kiln

DTYPES = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int64, np.int32, np.int8, np.uint8,
          np.uint64, np.bool_]


def stable_order(a, axis, descending):
    """Stable argsort along axis with NaN largest (first when descending), as torch."""
    a = np.moveaxis(np.asarray(a), axis, -1)
    out = np.empty(a.shape, np.int64)
    for pos in np.ndindex(a.shape[:-1]):
        row = [float(v) for v in a[pos]]
        if descending:
            key = lambda i: (0 if np.isnan(row[i]) else 1, -row[i] if not np.isnan(row[i]) else 0)
        else:
            key = lambda i: (1 if np.isnan(row[i]) else 0, row[i] if not np.isnan(row[i]) else 0)
        out[pos] = sorted(range(len(row)), key=key)
    return np.moveaxis(out, -1, axis)


def check(t, ref):
    got = t.numpy()
    assert got.shape == ref.shape and got.dtype == ref.dtype, (got.shape, got.dtype, ref.shape, ref.dtype)
    np.testing.assert_array_equal(got.astype(np.float64), ref.astype(np.float64))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_argsort(dtype, dim, descending, rng):
    a = rng.integers(0, 5, size=(4, 6, 7)).astype(dtype)  # many ties
    x = kiln.tensor(a)
    r = kiln.sort(x, dim, descending=descending, stable=True)
    order = stable_order(a, dim, descending)
    check(r.indices, order)
    check(r.values, np.take_along_axis(a, order, axis=dim))
    values, indices = x.sort(dim=dim, descending=descending)
    check(indices, order)
    check(kiln.argsort(x, dim, descending=descending), order)
    if not descending:
        check(r.values, np.sort(a, axis=dim, kind="stable"))
        check(r.indices, np.argsort(a, axis=dim, kind="stable"))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, ml_dtypes.bfloat16, np.float16])
def test_sort_nan_and_noncontiguous(dtype):
    a = np.array([[3, np.nan, -1, np.inf], [-0.0, np.nan, 0.0, -np.inf]], dtype)
    for descending in (False, True):
        r = kiln.sort(kiln.tensor(a), 1, descending=descending)
        order = stable_order(a, 1, descending)
        check(r.indices, order)
        np.testing.assert_array_equal(r.values.numpy().astype(np.float64),
                                      np.take_along_axis(a, order, axis=1).astype(np.float64))
    np.testing.assert_array_equal(kiln.sort(kiln.tensor(a)).values.numpy().astype(np.float64),
                                  np.sort(a.astype(np.float64), axis=-1))
    # Columns of the transpose.
    r = kiln.sort(kiln.tensor(a).t(), 0)
    check(r.indices, stable_order(a.T, 0, False))


def test_sort_edge_cases():
    assert kiln.sort(kiln.zeros(3, 0)).values.shape == (3, 0)
    r = kiln.sort(kiln.tensor(2.0))
    assert r.values.shape == () and r.indices.item() == 0
    with pytest.raises(TypeError):
        kiln.sort(kiln.zeros(2, dtype=kiln.complex64))
    with pytest.raises(IndexError):
        kiln.sort(kiln.zeros(2), 1)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, ml_dtypes.bfloat16, np.float64])
@pytest.mark.parametrize("largest", [True, False])
def test_topk(dtype, largest, rng):
    a = rng.integers(-3, 4, size=(5, 9)).astype(dtype)
    if np.dtype(dtype).kind == "f" or dtype is ml_dtypes.bfloat16:
        a[1, 4] = np.nan
    x = kiln.tensor(a)
    order = stable_order(a, 1, largest)
    for k in range(0, 10):
        r = kiln.topk(x, k, largest=largest)
        check(r.indices, order[:, :k])
        np.testing.assert_array_equal(r.values.numpy().astype(np.float64),
                                      np.take_along_axis(a, order[:, :k], axis=1).astype(np.float64))
        u = x.topk(k, dim=1, largest=largest, sorted=False)
        np.testing.assert_array_equal(np.sort(u.indices.numpy(), axis=1), np.sort(order[:, :k], axis=1))
    r = kiln.topk(x.t(), 2, dim=0)
    check(r.indices, stable_order(a.T, 0, True)[:2])
    with pytest.raises(ValueError):
        kiln.topk(x, 10)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, np.int16])
def test_bincount(dtype, rng):
    a = rng.integers(0, 40, size=2000).astype(dtype)
    check(kiln.bincount(kiln.tensor(a)), np.bincount(a).astype(np.int64))
    check(kiln.bincount(kiln.tensor(a), minlength=60), np.bincount(a, minlength=60).astype(np.int64))
    w = rng.random(2000)
    r32 = kiln.bincount(kiln.tensor(a), weights=kiln.tensor(w.astype(np.float32)))
    assert r32.dtype == kiln.float32
    np.testing.assert_allclose(r32.numpy(), np.bincount(a, weights=w.astype(np.float32)), rtol=1e-5)
    r64 = kiln.bincount(kiln.tensor(a), kiln.tensor(w))
    assert r64.dtype == kiln.float64
    np.testing.assert_allclose(r64.numpy(), np.bincount(a, weights=w), rtol=1e-12)
    ri = kiln.tensor(a).bincount(weights=kiln.tensor(np.ones(2000, np.int32)))
    assert ri.dtype == kiln.float64
    check(ri, np.bincount(a).astype(np.float64))


def test_bincount_skewed_and_errors():
    a = np.zeros(1 << 20, np.int64)
    a[[3, 99]] = [5, 2]
    check(kiln.bincount(kiln.tensor(a)), np.bincount(a))
    check(kiln.bincount(kiln.tensor(a[::2])), np.bincount(a[::2]))
    check(kiln.bincount(kiln.tensor(np.array([], np.int64))), np.zeros(0, np.int64))
    check(kiln.bincount(kiln.tensor(np.array([], np.int64)), minlength=3), np.zeros(3, np.int64))
    with pytest.raises(ValueError):
        kiln.bincount(kiln.tensor([1, -1]))
    with pytest.raises(ValueError):
        kiln.bincount(kiln.tensor([[1]]))
    with pytest.raises(TypeError):
        kiln.bincount(kiln.tensor([1.0]))
    with pytest.raises(ValueError):
        kiln.bincount(kiln.tensor([1, 2]), kiln.ones(3))
