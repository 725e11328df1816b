"""The C++ kernels of nansum, nanmean, logcumsumexp, cummax, cummin and
searchsorted against NumPy and, when installed, torch: dtypes, dims,
non-contiguous and empty inputs, NaN and inf, ties, and their gradients."""
import warnings

import numpy as np
import pytest

import kiln

RNG = np.random.default_rng(11)


def t(a, **kw):
    return kiln.tensor(a, **kw)


def with_nans(shape, frac=0.2):
    x = RNG.standard_normal(shape)
    x[RNG.random(shape) < frac] = np.nan
    return x


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1)])
@pytest.mark.parametrize("dtype", [kiln.float32, kiln.float64])
def test_nansum_nanmean_match_numpy(dim, dtype):
    x = with_nans((37, 129))
    x[3] = np.nan  # a row with no numbers: nanmean NaN, nansum 0
    npdt = np.float32 if dtype == kiln.float32 else np.float64
    xd = x.astype(npdt)
    tol = 1e-5 if dtype == kiln.float32 else 1e-12
    with warnings.catch_warnings():  # NumPy warns about the all-NaN row
        warnings.simplefilter("ignore", RuntimeWarning)
        want_mean = np.nanmean(xd.astype(np.float64), axis=dim)
    np.testing.assert_allclose(kiln.nansum(t(xd), dim).numpy(), np.nansum(xd.astype(np.float64), axis=dim),
                               rtol=tol, atol=tol)
    np.testing.assert_allclose(kiln.nanmean(t(xd), dim).numpy(), want_mean, rtol=tol, atol=tol)
    # non-contiguous: the transpose
    np.testing.assert_allclose(t(xd).transpose(0, 1).nansum(0).numpy(), np.nansum(xd.T.astype(np.float64), 0),
                               rtol=tol, atol=tol)


def test_nansum_integers_empty_and_errors():
    i = RNG.integers(-5, 5, (4, 6))
    assert kiln.nansum(t(i)).item() == i.sum()
    assert kiln.nansum(t(i)).dtype == kiln.int64
    assert kiln.nansum(kiln.zeros([0, 3]), 0).numpy().tolist() == [0, 0, 0]
    assert np.isnan(kiln.nanmean(kiln.zeros([0])).item())
    with pytest.raises(TypeError, match="nanmean"):
        kiln.nanmean(t(i))
    assert kiln.nanmean(t(i), dtype=kiln.float64).item() == pytest.approx(i.mean())
    x = with_nans((5, 7))
    np.testing.assert_allclose(kiln.nansum(t(x), 1, keepdim=True).numpy(), np.nansum(x, 1, keepdims=True))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_logcumsumexp_matches_numpy(dim):
    x = RNG.standard_normal((9, 33)) * 30  # large: a naive exp would overflow in float32
    np.testing.assert_allclose(kiln.logcumsumexp(t(x), dim).numpy(), np.logaddexp.accumulate(x, dim), rtol=1e-12)
    xf = x.astype(np.float32)
    np.testing.assert_allclose(kiln.logcumsumexp(t(xf), dim).numpy(),
                               np.logaddexp.accumulate(xf.astype(np.float64), dim), rtol=1e-5)
    special = np.array([-np.inf, -np.inf, 0.0, np.inf, 1.0, np.nan, 2.0])
    got = kiln.logcumsumexp(t(special), 0).numpy()
    np.testing.assert_array_equal(got[:2], [-np.inf, -np.inf])
    assert got[2] == 0.0 and got[3] == np.inf and got[4] == np.inf and np.isnan(got[5]) and np.isnan(got[6])
    with pytest.raises(TypeError, match="floating"):
        kiln.logcumsumexp(t([1, 2, 3]), 0)


def test_cummax_cummin_nan_ties_noncontiguous():
    x = np.array([[1.0, 3.0, 3.0, np.nan, 5.0, np.nan, 0.0], [2.0, 2.0, 1.0, 1.0, 4.0, 4.0, -1.0]])
    v, i = kiln.cummax(t(x), 1)
    assert np.isnan(v.numpy()[0, 3:]).all()
    assert i.numpy()[0].tolist() == [0, 1, 2, 3, 3, 5, 5]  # ties: latest; a NaN sticks, its index moves on
    assert i.numpy()[1].tolist() == [0, 1, 1, 1, 4, 5, 5]
    v, i = kiln.cummin(t(x), 1)
    assert i.numpy()[1].tolist() == [0, 1, 2, 3, 3, 3, 6]
    y = RNG.integers(0, 5, (6, 8))
    v, i = kiln.cummax(t(y).transpose(0, 1), 1)
    np.testing.assert_array_equal(v.numpy(), np.maximum.accumulate(y.T, 1))
    assert kiln.cummax(kiln.zeros([0, 4]), 0).values.shape == kiln.zeros([0, 4]).shape
    with pytest.raises(TypeError, match="complex"):
        kiln.cummax(kiln.zeros([3], dtype=kiln.complex64), 0)


def test_searchsorted_nan_sorter_and_errors():
    seq = np.array([1.0, 2.0, 2.0, 3.0, np.nan])
    vals = np.array([2.0, np.nan, 0.0, 9.0])
    # torch's binary search moves right past an entry unless entry >= value
    # (right: entry > value): a NaN value goes to the end, and a NaN entry
    # draws the right-side search past the equal entries (torch 2.15 gives these).
    assert kiln.searchsorted(t(seq), t(vals)).numpy().tolist() == [1, 5, 0, 5]
    assert kiln.searchsorted(t(seq), t(vals), right=True).numpy().tolist() == [5, 5, 0, 5]
    with pytest.raises(ValueError, match="boundaries"):
        kiln.searchsorted(t(np.zeros((2, 3))), t(np.zeros((3, 2))))
    with pytest.raises(IndexError, match="sorter"):
        kiln.searchsorted(t([1.0, 2.0]), t([1.5]), sorter=t([0, 5]))
    assert kiln.searchsorted(t([1, 3, 5]), 4).item() == 2  # a scalar value
    # mixed dtypes compare in the promoted dtype
    assert kiln.searchsorted(t([1, 2, 3]), t([1.5, 2.5])).numpy().tolist() == [1, 2]


def test_against_torch_values_and_gradients():
    torch = pytest.importorskip("torch")
    x = with_nans((6, 10), 0.15)
    x[2, 4] = x[2, 5]  # a tie
    for dim in (0, 1):
        for name in ("cummax", "cummin"):
            kv, ki = getattr(kiln, name)(t(x), dim)
            tv, ti = getattr(torch, name)(torch.tensor(x), dim)
            np.testing.assert_array_equal(kv.numpy(), tv.numpy(), err_msg=name)
            np.testing.assert_array_equal(ki.numpy(), ti.numpy(), err_msg=name)
        np.testing.assert_allclose(kiln.nansum(t(x), dim).numpy(), torch.nansum(torch.tensor(x), dim).numpy())
        np.testing.assert_allclose(kiln.nanmean(t(x), dim).numpy(), torch.nanmean(torch.tensor(x), dim).numpy())
    seq = np.sort(RNG.integers(0, 20, (3, 15)), 1).astype(np.float64)
    q = RNG.integers(-2, 22, (3, 9)).astype(np.float64)
    q[0, 0] = np.nan
    for right in (False, True):
        np.testing.assert_array_equal(kiln.searchsorted(t(seq), t(q), right=right).numpy(),
                                      torch.searchsorted(torch.tensor(seq), torch.tensor(q), right=right).numpy())
    # gradients
    y = RNG.standard_normal((5, 8))
    g = RNG.standard_normal((5, 8))
    for kf, tf in [(lambda a: kiln.logcumsumexp(a, 1), lambda a: torch.logcumsumexp(a, 1)),
                   (lambda a: kiln.cummax(a, 0).values, lambda a: torch.cummax(a, 0).values),
                   (lambda a: kiln.cummin(a, 1).values, lambda a: torch.cummin(a, 1).values)]:
        ka = t(y).requires_grad_()
        kf(ka).backward(t(g))
        ta = torch.tensor(y, requires_grad=True)
        tf(ta).backward(torch.tensor(g))
        np.testing.assert_allclose(ka.grad.numpy(), ta.grad.numpy(), rtol=1e-10, atol=1e-12)
    yn = with_nans((5, 8))
    for kf, tf in [(lambda a: kiln.nansum(a, 1), lambda a: torch.nansum(a, 1)),
                   (lambda a: kiln.nanmean(a, 0), lambda a: torch.nanmean(a, 0))]:
        ka = t(yn).requires_grad_()
        kf(ka).sum().backward()
        ta = torch.tensor(yn, requires_grad=True)
        tf(ta).sum().backward()
        np.testing.assert_allclose(ka.grad.numpy(), ta.grad.numpy(), rtol=1e-12, equal_nan=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int64, np.int32, np.int8, np.uint8])
@pytest.mark.parametrize("descending", [False, True])
def test_long_rows_sort_stably_in_kilns_order(dtype, descending):
    """Rows of 64 or more run the radix sort: NaN above every number, -0.0 equal
    to 0.0, ties (and NaNs) in ascending position, in both directions."""
    x = (RNG.standard_normal((3, 700)) * 50).astype(dtype)
    if np.issubdtype(dtype, np.floating):
        x[:, ::13] = np.nan
        x[:, 5::29] = 0.0
        x[:, 7::31] = -0.0
        x[:, 9] = np.inf
        x[:, 11] = -np.inf
    x[:, 40:60] = x[:, 20:40]  # ties
    v, i = kiln.sort(t(x), 1, descending=descending)
    key = x.astype(np.float64)
    nan = np.isnan(key)
    key = np.where(nan, 0.0, key)
    pos = np.broadcast_to(np.arange(x.shape[1]), x.shape)
    for r in range(3):
        order = np.lexsort((pos[r], -key[r], ~nan[r])) if descending else np.lexsort((pos[r], key[r], nan[r]))
        np.testing.assert_array_equal(i.numpy()[r], order)
        np.testing.assert_array_equal(v.numpy()[r].view(np.uint8), x[r][order].view(np.uint8))  # exact bits


def test_unique_kernel_nan_zero_and_torch():
    x = np.array([2.0, np.nan, -0.0, 1.0, 0.0, np.nan, 2.0, -np.inf])
    u, inv, cnt = kiln.unique(t(x), return_inverse=True, return_counts=True)
    got = u.numpy()
    np.testing.assert_array_equal(got[:4], [-np.inf, 0.0, 1.0, 2.0])
    assert np.isnan(got[4:]).all() and len(got) == 6  # each NaN distinct, as torch
    assert cnt.numpy().tolist() == [1, 2, 1, 2, 1, 1]
    np.testing.assert_array_equal(u.numpy()[inv.numpy()][~np.isnan(x)], x[~np.isnan(x)])
    v, c = kiln.unique_consecutive(t([1, 1, 2, 2, 2, 1, 3]), return_counts=True)
    assert v.numpy().tolist() == [1, 2, 1, 3] and c.numpy().tolist() == [2, 3, 1, 1]
    torch = pytest.importorskip("torch")
    big = RNG.integers(-50, 50, (300, 41))
    for args in [dict(), dict(return_inverse=True), dict(return_counts=True),
                 dict(return_inverse=True, return_counts=True)]:
        k = kiln.unique(t(big), **args)
        w = torch.unique(torch.tensor(big), **args)
        for a, b in zip(k if isinstance(k, tuple) else (k,), w if isinstance(w, tuple) else (w,)):
            np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=str(args))
        k = kiln.unique_consecutive(t(np.sort(big, None)), **args)
        w = torch.unique_consecutive(torch.tensor(np.sort(big, None)), **args)
        for a, b in zip(k if isinstance(k, tuple) else (k,), w if isinstance(w, tuple) else (w,)):
            np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=str(args))


def _cum_extreme_ref(x, largest):
    """cummax / cummin along the last dim, one element at a time: a NaN sticks,
    later ties win (torch's rule)."""
    vals, idx = np.empty_like(x), np.empty(x.shape, np.int64)
    for r in np.ndindex(x.shape[:-1]):
        best, at = x[r][0], 0
        for i, v in enumerate(x[r]):
            if np.isnan(v) or (not np.isnan(best) and (v >= best if largest else v <= best)):
                best, at = v, i
            vals[r + (i,)], idx[r + (i,)] = best, at
    return vals, idx


@pytest.mark.parametrize("length", [1, 5, 111, 112, 113, 300])
@pytest.mark.parametrize("lines", [1, 7, 8, 13, 17])
def test_line_groups_scan_each_line_in_order(lines, length):
    """The scans run up to 8 lines at once, each lagging the last by 16 elements:
    group sizes, lengths inside and past the lag, and strided lines must still
    scan every line in order. cumsum and cumprod accumulate in float64 in
    sequence, so they equal NumPy's sequential float64 scan rounded once."""
    rng = np.random.default_rng(lines * 1000 + length)
    x = rng.standard_normal((lines, length)).astype(np.float32)
    x[x > 2.2] = np.nan  # a few NaNs for cummax / cummin
    near1 = (1 + rng.standard_normal((lines, length)) / 50).astype(np.float32)
    for src in (x, near1):
        for t, xs in ((kiln.tensor(src), src), (kiln.tensor(np.ascontiguousarray(src.T)).t(), src)):
            np.testing.assert_array_equal(kiln.cumsum(t, -1).numpy(),
                                          np.cumsum(xs.astype(np.float64), -1).astype(np.float32))
            np.testing.assert_array_equal(kiln.cumprod(t, -1).numpy(),
                                          np.cumprod(xs.astype(np.float64), -1).astype(np.float32))
    t = kiln.tensor(x)
    for largest, fn in ((True, kiln.cummax), (False, kiln.cummin)):
        v, i = fn(t, -1)
        rv, ri = _cum_extreme_ref(x, largest)
        np.testing.assert_array_equal(v.numpy(), rv)
        np.testing.assert_array_equal(i.numpy(), ri)
    xi = rng.integers(-50, 50, (lines, length), dtype=np.int64)
    np.testing.assert_array_equal(kiln.cumsum(kiln.tensor(xi), -1).numpy(), np.cumsum(xi, -1))
