"""Pooling (kiln.nn.functional.max_pool*/avg_pool*/adaptive_*_pool* and the
nn modules) against NumPy loop references written from torch's definitions,
their gradients, and torch itself when it imports."""

import itertools
import math

import numpy as np
import pytest

import kiln
import kiln.nn as nn
import kiln.nn.functional as F

RNG = np.random.default_rng(37)


def distinct(shape, dtype=np.float64):
    """Values without ties (a random permutation of a grid), so max indices are unique."""
    n = int(np.prod(shape))
    return (RNG.permutation(n).reshape(shape) * 0.25 - n / 8).astype(dtype)


def tup(v, nd):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * nd


def out_size(n, k, s, p, d, ceil):
    q = (n + 2 * p - d * (k - 1) - 1) / s
    o = (math.ceil(q) if ceil else math.floor(q)) + 1
    if ceil and (o - 1) * s >= n + p:
        o -= 1
    return o


def windows(in_sizes, k, s, p, d, ceil):
    """Per output cell (row-major): its in-range coordinates and the padded window size."""
    nd = len(in_sizes)
    outs = [out_size(in_sizes[i], k[i], s[i], p[i], d[i], ceil) for i in range(nd)]
    cells = []
    for o in itertools.product(*[range(n) for n in outs]):
        coords, padded = [], 1
        for i in range(nd):
            start = o[i] * s[i] - p[i]
            padded *= min(start + k[i], in_sizes[i] + p[i]) - start
            coords.append([start + j * d[i] for j in range(k[i]) if 0 <= start + j * d[i] < in_sizes[i]])
        cells.append((list(itertools.product(*coords)), padded))
    return outs, cells


def planes(x, nd):
    lead = x.shape[: x.ndim - nd]
    return lead, x.reshape((-1,) + x.shape[x.ndim - nd:])


def ref_max(x, k, s=None, p=0, d=1, ceil=False):
    nd = len(k)
    s = tup(k if s is None else s, nd)
    p, d = tup(p, nd), tup(d, nd)
    lead, xp = planes(x, nd)
    outs, cells = windows(x.shape[x.ndim - nd:], k, s, p, d, ceil)
    vals = np.empty((xp.shape[0], len(cells)), x.dtype)
    idx = np.empty((xp.shape[0], len(cells)), np.int64)
    for pl in range(xp.shape[0]):
        for c, (pos, _) in enumerate(cells):
            best, at = -np.inf, np.ravel_multi_index(pos[0], xp.shape[1:])
            for q in pos:
                v = xp[(pl,) + q]
                if np.isnan(v) or v > best:
                    best, at = v, np.ravel_multi_index(q, xp.shape[1:])
            vals[pl, c], idx[pl, c] = best, at
    return vals.reshape(lead + tuple(outs)), idx.reshape(lead + tuple(outs))


def ref_avg(x, k, s=None, p=0, ceil=False, count_include_pad=True, divisor_override=None):
    nd = len(k)
    s = tup(k if s is None else s, nd)
    p = tup(p, nd)
    lead, xp = planes(x, nd)
    outs, cells = windows(x.shape[x.ndim - nd:], k, s, p, (1,) * nd, ceil)
    y = np.empty((xp.shape[0], len(cells)), np.float64)
    for pl in range(xp.shape[0]):
        for c, (pos, padded) in enumerate(cells):
            total = sum(float(xp[(pl,) + q]) for q in pos)
            div = divisor_override or (padded if count_include_pad else len(pos))
            y[pl, c] = total / div
    return y.reshape(lead + tuple(outs))


def adaptive_cells(in_sizes, outs):
    for o in itertools.product(*[range(n) for n in outs]):
        yield list(itertools.product(*[range((o[i] * in_sizes[i]) // outs[i],
                                             -(-((o[i] + 1) * in_sizes[i]) // outs[i])) for i in range(len(outs))]))


def ref_adaptive(x, outs, kind):
    nd = len(outs)
    lead, xp = planes(x, nd)
    vals, idx = [], []
    for pl in range(xp.shape[0]):
        for pos in adaptive_cells(x.shape[x.ndim - nd:], outs):
            v = np.array([xp[(pl,) + q] for q in pos], np.float64)
            if kind == "avg":
                vals.append(v.mean())
            else:
                nan = np.flatnonzero(np.isnan(v))
                j = nan[-1] if nan.size else int(np.argmax(v))
                vals.append(v[j])
                idx.append(np.ravel_multi_index(pos[j], xp.shape[1:]))
    shape = lead + tuple(outs)
    return np.array(vals).reshape(shape), (np.array(idx, np.int64).reshape(shape) if idx else None)


MAX_CASES = [
    ((2, 3, 7, 9), dict(kernel_size=3, stride=2, padding=1)),
    ((2, 3, 7, 9), dict(kernel_size=(3, 2), stride=(2, 1), padding=1, dilation=(1, 2), ceil_mode=True)),
    ((1, 2, 5, 5), dict(kernel_size=2, stride=2, ceil_mode=True)),
    ((1, 1, 5, 5), dict(kernel_size=2, stride=2, padding=1, ceil_mode=True)),
    ((3, 7, 9), dict(kernel_size=3, stride=2, dilation=2, padding=(0, 1))),  # unbatched
]


@pytest.mark.parametrize("shape,kw", MAX_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_pool2d_values_and_indices(shape, kw, dtype):
    x = distinct(shape, dtype)
    v, i = F.max_pool2d(kiln.tensor(x), return_indices=True, **kw)
    k = tup(kw["kernel_size"], 2)
    rv, ri = ref_max(x, k, kw.get("stride"), kw.get("padding", 0), kw.get("dilation", 1), kw.get("ceil_mode", False))
    assert v.dtype == kiln.tensor(x).dtype and i.dtype == kiln.int64
    np.testing.assert_array_equal(np.asarray(v), rv)
    np.testing.assert_array_equal(np.asarray(i), ri)
    np.testing.assert_array_equal(np.asarray(F.max_pool2d(kiln.tensor(x), **kw)), rv)


def test_max_pool1d_and_3d():
    x = distinct((2, 3, 11))
    v, i = F.max_pool1d(kiln.tensor(x), 4, 3, 2, ceil_mode=True, return_indices=True)
    rv, ri = ref_max(x, (4,), 3, 2, 1, True)
    np.testing.assert_array_equal(np.asarray(v), rv)
    np.testing.assert_array_equal(np.asarray(i), ri)
    x = distinct((2, 2, 5, 6, 7))
    v, i = F.max_pool3d_with_indices(kiln.tensor(x), (2, 3, 2), padding=(1, 1, 0))
    rv, ri = ref_max(x, (2, 3, 2), None, (1, 1, 0))
    np.testing.assert_array_equal(np.asarray(v), rv)
    np.testing.assert_array_equal(np.asarray(i), ri)


def test_max_pool_nan_wins_and_minus_inf_padding():
    x = np.array([[[1.0, np.nan, 3.0, np.nan, 2.0]]])
    v, i = F.max_pool1d(kiln.tensor(x), 5, return_indices=True)
    assert np.isnan(np.asarray(v)).all() and np.asarray(i).item() == 3  # the last NaN, as torch
    v, i = F.adaptive_max_pool1d(kiln.tensor(x), 1, return_indices=True)
    assert np.isnan(np.asarray(v)).all() and np.asarray(i).item() == 3
    neg = np.full((1, 1, 3, 3), -5.0)
    v = F.max_pool2d(kiln.tensor(neg), 2, padding=1)
    np.testing.assert_array_equal(np.asarray(v), np.full((1, 1, 2, 2), -5.0))  # padding never wins
    ninf = np.full((1, 1, 3, 3), -np.inf)
    v, i = F.max_pool2d(kiln.tensor(ninf), 2, padding=1, return_indices=True)
    np.testing.assert_array_equal(np.asarray(i), [[[[0, 1], [3, 4]]]])  # the first in-range position


AVG_CASES = [
    ((2, 3, 7, 9), dict(kernel_size=3, stride=2, padding=1)),
    ((2, 3, 7, 9), dict(kernel_size=(3, 2), stride=(2, 1), padding=1, ceil_mode=True, count_include_pad=False)),
    ((1, 1, 5, 5), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, divisor_override=2)),
    ((3, 7, 9), dict(kernel_size=(2, 4), padding=(1, 2), ceil_mode=True)),
]


@pytest.mark.parametrize("shape,kw", AVG_CASES)
def test_avg_pool2d(shape, kw):
    kw = dict(kw)
    x = RNG.standard_normal(shape)
    y = F.avg_pool2d(kiln.tensor(x), **kw)
    k = tup(kw.pop("kernel_size"), 2)
    np.testing.assert_allclose(np.asarray(y), ref_avg(x, k, **{("s" if a == "stride" else "p" if a == "padding"
                                                              else "ceil" if a == "ceil_mode" else a): b
                                                             for a, b in kw.items()}), rtol=1e-12, atol=1e-12)


def test_avg_pool1d_and_3d():
    x = RNG.standard_normal((2, 3, 5)).astype(np.float32)
    y = F.avg_pool1d(kiln.tensor(x), 2, stride=2, padding=1, ceil_mode=True)
    np.testing.assert_allclose(np.asarray(y), ref_avg(x, (2,), 2, 1, True), rtol=1e-6)
    x = RNG.standard_normal((2, 2, 5, 6, 7))
    y = F.avg_pool3d(kiln.tensor(x), (3, 2, 2), 2, (1, 0, 1), ceil_mode=True, count_include_pad=False,
                     divisor_override=5)
    np.testing.assert_allclose(np.asarray(y), ref_avg(x, (3, 2, 2), 2, (1, 0, 1), True, False, 5), rtol=1e-12)


@pytest.mark.parametrize("shape,outs", [((2, 3, 11), (4,)), ((2, 3, 7, 9), (3, 4)), ((3, 7, 9), (10, 4)),
                                        ((1, 2, 5, 6, 7), (2, 4, 3))])
def test_adaptive_pools(shape, outs):
    x = distinct(shape)
    nd = len(outs)
    avg = getattr(F, f"adaptive_avg_pool{nd}d")(kiln.tensor(x), outs)
    np.testing.assert_allclose(np.asarray(avg), ref_adaptive(x, outs, "avg")[0], rtol=1e-12)
    v, i = getattr(F, f"adaptive_max_pool{nd}d")(kiln.tensor(x), outs, return_indices=True)
    rv, ri = ref_adaptive(x, outs, "max")
    np.testing.assert_array_equal(np.asarray(v), rv)
    np.testing.assert_array_equal(np.asarray(i), ri)


def test_adaptive_none_keeps_input_size():
    x = RNG.standard_normal((1, 2, 5, 6))
    y = F.adaptive_avg_pool2d(kiln.tensor(x), (None, 2))
    assert tuple(y.shape) == (1, 2, 5, 2)
    np.testing.assert_allclose(np.asarray(y), ref_adaptive(x, (5, 2), "avg")[0], rtol=1e-12)


def test_half_dtypes_keep_their_dtype():
    x = kiln.tensor(RNG.standard_normal((2, 3, 6, 6)).astype(np.float32))
    for d in (kiln.bfloat16, kiln.float16):
        xd = x.to(d)
        y = F.avg_pool2d(xd, 2)
        assert y.dtype == d
        want = ref_avg(np.asarray(xd.to(kiln.float32)), (2, 2))
        np.testing.assert_allclose(np.asarray(y.to(kiln.float32)), want, rtol=1e-2, atol=1e-2)
        assert F.max_pool2d(xd, 3).dtype == d


def test_non_contiguous_and_empty_batch():
    x = distinct((9, 7, 3, 2)).transpose(3, 2, 1, 0)
    xt = kiln.tensor(np.ascontiguousarray(x.transpose(3, 2, 1, 0))).permute(3, 2, 1, 0)
    np.testing.assert_array_equal(np.asarray(F.max_pool2d(xt, 2)), ref_max(x, (2, 2))[0])
    e = F.max_pool2d(kiln.zeros(0, 3, 6, 6), 2)
    assert tuple(e.shape) == (0, 3, 3, 3)
    assert tuple(F.adaptive_avg_pool2d(kiln.zeros(0, 3, 6, 6), 2).shape) == (0, 3, 2, 2)


@pytest.mark.parametrize("call", [
    lambda x: F.max_pool2d(x, 2, padding=2),  # padding over half the kernel
    lambda x: F.avg_pool2d(x, 3, padding=2),
    lambda x: F.max_pool2d(x, 7),  # output size 0
    lambda x: F.max_pool2d(x[0, 0], 2),  # 2-d input
    lambda x: F.max_pool2d(kiln.zeros(2, 0, 4, 4), 2),  # zero channels
    lambda x: F.avg_pool2d(x, 2, divisor_override=0),
    lambda x: F.max_pool2d(x, (2, 2, 2)),
])
def test_errors(call):
    with pytest.raises(ValueError):
        call(kiln.zeros(1, 2, 4, 4))


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int16, np.int8, np.uint8])
def test_max_pool_integer_inputs(dtype):
    """Max pooling takes integer tensors, as torch's max_pool2d/3d, and stays
    exact: int64 values past 2^53 are compared as integers, not as floats."""
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max, (2, 3, 9, 11), dtype=dtype, endpoint=True)
    if dtype == np.int64:
        x[0, 0, 0, 0], x[0, 0, 0, 1] = 2**62 + 5, 2**62 + 3  # equal as float64
    t = kiln.tensor(x)
    for kw in ({"kernel_size": (3, 3), "stride": 2, "padding": 1}, {"kernel_size": (2, 3), "dilation": (2, 1)}):
        v, i = F.max_pool2d(t, **kw, return_indices=True)
        rv, ri = ref_max(x, kw["kernel_size"], kw.get("stride"), kw.get("padding", 0), kw.get("dilation", 1))
        assert v.dtype == t.dtype
        np.testing.assert_array_equal(v.numpy(), rv)
        np.testing.assert_array_equal(i.numpy(), ri)
    np.testing.assert_array_equal(F.max_pool1d(kiln.tensor(x[0]), 4).numpy(), ref_max(x[0], (4,))[0])
    np.testing.assert_array_equal(F.max_pool3d(kiln.tensor(x[None]), (1, 2, 2)).numpy(),
                                  ref_max(x[None], (1, 2, 2))[0])
    a, ai = F.adaptive_max_pool2d(t, (4, 5), return_indices=True)
    assert a.dtype == t.dtype
    flat = x.reshape(2, 3, -1)
    np.testing.assert_array_equal(np.take_along_axis(flat, ai.numpy().reshape(2, 3, -1), -1).reshape(a.shape),
                                  a.numpy())
    if dtype == np.int64:
        assert F.max_pool2d(t, 2).numpy()[0, 0, 0, 0] == 2**62 + 5
    with pytest.raises(TypeError):  # averages of integers are not defined, as in torch
        F.avg_pool2d(t, 2)
    with pytest.raises(TypeError):
        F.max_pool2d(kiln.zeros(1, 1, 4, 4, dtype=kiln.bool), 2)


def leaf(a):
    t = kiln.tensor(np.ascontiguousarray(a))
    t.requires_grad_()
    return t


def test_max_pool_gradient_scatters_to_indices():
    x = distinct((2, 3, 7, 9))
    xt = leaf(x)
    v, i = F.max_pool2d(xt, 3, stride=1, padding=1, return_indices=True)  # overlapping windows
    g = RNG.standard_normal(tuple(v.shape))
    v.backward(kiln.tensor(g))
    want = np.zeros((6, 63))
    np.add.at(want, (np.arange(6)[:, None], np.asarray(i).reshape(6, -1)), g.reshape(6, -1))
    np.testing.assert_allclose(np.asarray(xt.grad), want.reshape(x.shape), rtol=1e-12)
    assert v.grad_fn.name() == "MaxPool2DWithIndicesBackward0"


def test_avg_pool_gradient_is_the_transpose():
    x = RNG.standard_normal((2, 2, 6, 7))
    kw = dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)
    xt = leaf(x)
    y = F.avg_pool2d(xt, **kw)
    g = RNG.standard_normal(tuple(y.shape))
    y.backward(kiln.tensor(g))
    # <avg(x), g> is linear in x: its gradient is column e_j's <avg(e_j), g>
    grad = np.array([(ref_avg(np.eye(x.size)[j].reshape(x.shape), (3, 3), 2, 1, True, False) * g).sum()
                     for j in range(x.size)]).reshape(x.shape)
    np.testing.assert_allclose(np.asarray(xt.grad), grad, rtol=1e-10, atol=1e-12)


def test_adaptive_gradients_and_double_backward():
    x = distinct((1, 2, 5, 7))
    xt = leaf(x)
    y = F.adaptive_avg_pool2d(xt, (3, 4))
    gt = leaf(RNG.standard_normal((1, 2, 3, 4)))
    (gx,) = kiln.autograd.grad([y], [xt], [gt], create_graph=True)
    w = RNG.standard_normal(x.shape)
    # d<gx, w>/d gt = adaptive_avg_pool(w): the backward's own derivative
    (kiln.sum(gx * kiln.tensor(w))).backward()
    np.testing.assert_allclose(np.asarray(gt.grad), ref_adaptive(w, (3, 4), "avg")[0], rtol=1e-12)
    # the same through max pool: a gather of w by the indices
    xt = leaf(x)
    v, i = F.adaptive_max_pool2d(xt, (3, 4), return_indices=True)
    gt = leaf(RNG.standard_normal((1, 2, 3, 4)))
    (gx,) = kiln.autograd.grad([v], [xt], [gt], create_graph=True)
    kiln.sum(gx * kiln.tensor(w)).backward()
    want = np.take_along_axis(w.reshape(2, -1), np.asarray(i).reshape(2, -1), 1).reshape(1, 2, 3, 4)
    np.testing.assert_allclose(np.asarray(gt.grad), want, rtol=1e-12)


def test_modules():
    x = kiln.tensor(distinct((2, 3, 8, 8)))
    m = nn.MaxPool2d(3, stride=2, padding=1, return_indices=True)
    v, i = m(x)
    rv, ri = ref_max(np.asarray(x), (3, 3), 2, 1)
    np.testing.assert_array_equal(np.asarray(v), rv)
    assert repr(m) == "MaxPool2d(kernel_size=3, stride=2, padding=1, dilation=1, ceil_mode=False)"
    assert repr(nn.AvgPool2d(2)) == "AvgPool2d(kernel_size=2, stride=2, padding=0)"
    assert repr(nn.AdaptiveAvgPool2d((5, 7))) == "AdaptiveAvgPool2d(output_size=(5, 7))"
    np.testing.assert_allclose(np.asarray(nn.AvgPool2d(2, divisor_override=3)(x)),
                               ref_avg(np.asarray(x), (2, 2), divisor_override=3), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(nn.AdaptiveAvgPool1d(3)(x[0])),
                               ref_adaptive(np.asarray(x[0]), (3,), "avg")[0], rtol=1e-12)
    assert nn.AdaptiveMaxPool2d(2)(x).shape == (2, 3, 2, 2)
    assert nn.MaxPool1d(2)(x[0]).shape == (3, 8, 4)
    assert nn.MaxPool3d(2)(x).shape == (2, 1, 4, 4)  # unbatched 3-d: [C, D, H, W]
    assert nn.AvgPool1d(3, 2, 1)(x[0]).shape == (3, 8, 4)
    assert nn.AvgPool3d(2)(x).shape == (2, 1, 4, 4)
    assert nn.AdaptiveAvgPool3d(1)(x).shape == (2, 1, 1, 1)
    assert nn.AdaptiveMaxPool1d(3)(x[0]).shape == (3, 8, 3)


TORCH_CASES = [
    ("max_pool2d", (2, 3, 7, 9), dict(kernel_size=(3, 2), stride=(2, 1), padding=1, dilation=(1, 2), ceil_mode=True,
                                      return_indices=True)),
    ("max_pool1d", (2, 3, 11), dict(kernel_size=4, stride=3, padding=2, ceil_mode=True, return_indices=True)),
    ("max_pool3d", (1, 2, 5, 6, 7), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, return_indices=True)),
    ("avg_pool2d", (2, 3, 7, 9), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)),
    ("avg_pool2d", (2, 3, 7, 9), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, divisor_override=4)),
    ("avg_pool1d", (2, 3, 5), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ("avg_pool3d", (1, 2, 5, 6, 7), dict(kernel_size=(3, 2, 2), stride=2, padding=1, ceil_mode=True)),
    ("adaptive_avg_pool2d", (2, 3, 7, 9), dict(output_size=(3, 4))),
    ("adaptive_max_pool2d", (2, 3, 7, 9), dict(output_size=(3, 10), return_indices=True)),
    ("adaptive_avg_pool3d", (1, 2, 5, 6, 7), dict(output_size=(2, 4, 3))),
]


@pytest.mark.parametrize("name,shape,kw", TORCH_CASES)
def test_against_torch(name, shape, kw):
    torch = pytest.importorskip("torch")
    x = distinct(shape)
    xt = torch.tensor(x, requires_grad=True)
    want = getattr(torch.nn.functional, name)(xt, **kw)
    xk = leaf(x)
    got = getattr(F, name)(xk, **kw)
    if isinstance(want, tuple):
        np.testing.assert_array_equal(np.asarray(got[1]), want[1].numpy())
        want, got = want[0], got[0]
    np.testing.assert_allclose(np.asarray(got), want.detach().numpy(), rtol=1e-12)
    g = RNG.standard_normal(tuple(want.shape))
    want.backward(torch.tensor(g))
    got.backward(kiln.tensor(g))
    np.testing.assert_allclose(np.asarray(xk.grad), xt.grad.numpy(), rtol=1e-12, atol=1e-14)
