"""F.fractional_max_pool2d/3d and nn.FractionalMaxPool2d/3d against a NumPy
reference written from Graham's interval rule as torch computes it (float32
arithmetic for float32 inputs), their gradient, and torch itself when it
imports."""

import itertools

import numpy as np
import pytest

import kiln
import kiln.nn as nn
import kiln.nn.functional as F

RNG = np.random.default_rng(2014)


def starts(u, n_in, n_out, k, ftype):
    """torch's generate_intervals in the sample's float type."""
    u = ftype(u)
    s = []
    if n_out > 1:
        alpha = ftype(n_in - k) / ftype(n_out - 1)
        s = [int(ftype(ftype(i) + u) * alpha) - int(u * alpha) for i in range(n_out - 1)]
    return s + [n_in - k]


def reference(x, k, out, samples):
    """x [N, C, *in] (float), samples [N, C, nd] in torch's order -> (values, flat indices)."""
    nd = len(k)
    ftype = np.float64 if x.dtype == np.float64 else np.float32
    spatial = x.shape[2:]
    vals = np.zeros(x.shape[:2] + tuple(out), x.dtype)
    idx = np.zeros(x.shape[:2] + tuple(out), np.int64)
    for n, c in np.ndindex(*x.shape[:2]):
        u = samples[n, c][::-1] if nd == 2 else samples[n, c]  # (W, H) -> (H, W)
        st = [starts(u[d], spatial[d], out[d], k[d], ftype) for d in range(nd)]
        plane = x[n, c]
        for o in np.ndindex(*out):
            best, at = -np.inf, None
            for w in np.ndindex(*k):
                pos = tuple(st[d][o[d]] + w[d] for d in range(nd))
                if at is None:
                    at = pos
                if np.isnan(plane[pos]) or plane[pos] > best:
                    best, at = plane[pos], pos
            vals[(n, c) + o] = best
            idx[(n, c) + o] = np.ravel_multi_index(at, spatial)
    return vals, idx


CASES = [
    ((2, 3, 10, 11), (2, 2), (4, 5)),
    ((1, 2, 9, 7), (3, 2), (5, 6)),
    ((2, 2, 6, 7, 8), (2, 2, 3), (3, 4, 4)),
    ((1, 1, 5, 5, 5), (1, 2, 2), (5, 3, 2)),
]


@pytest.mark.parametrize("shape,k,out", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_forward_and_gradient_match_reference(shape, k, out, dtype):
    nd = len(k)
    fn = F.fractional_max_pool2d if nd == 2 else F.fractional_max_pool3d
    x = RNG.permutation(int(np.prod(shape))).reshape(shape).astype(dtype)  # no ties
    u = RNG.uniform(0, 1, shape[:2] + (nd,)).astype(dtype)
    kx = kiln.tensor(x, requires_grad=True)
    vals, idx = fn(kx, k, output_size=out, return_indices=True, _random_samples=kiln.tensor(u))
    want_vals, want_idx = reference(x, k, out, u)
    assert np.array_equal(vals.detach().numpy(), want_vals)
    assert np.array_equal(idx.numpy(), want_idx)
    g = RNG.standard_normal(vals.shape).astype(dtype)
    (vals * kiln.tensor(g)).sum().backward()
    want = np.zeros(x.size, dtype).reshape(shape[:2] + (-1,))
    for n, c in np.ndindex(*shape[:2]):
        np.add.at(want[n, c], want_idx[n, c].ravel(), g[n, c].ravel())
    assert np.array_equal(kx.grad.numpy(), want.reshape(shape))


def test_nan_wins_and_unbatched_input():
    x = np.arange(2 * 8 * 8, dtype=np.float32).reshape(2, 8, 8)
    x[0, 1, 1] = np.nan
    u = np.full((1, 2, 2), 0.5, np.float32)
    vals, idx = F.fractional_max_pool2d(kiln.tensor(x), 2, output_size=(3, 3), return_indices=True,
                                        _random_samples=kiln.tensor(u))
    assert tuple(vals.shape) == (2, 3, 3)
    want_vals, want_idx = reference(x[None], (2, 2), (3, 3), u)
    np.testing.assert_array_equal(vals.numpy(), want_vals[0])
    np.testing.assert_array_equal(idx.numpy(), want_idx[0])
    assert np.isnan(vals.numpy()[0, 0, 0]) and idx.numpy()[0, 0, 0] == 9


def test_output_ratio_and_default_samples_follow_the_seed():
    x = kiln.tensor(RNG.standard_normal((2, 3, 12, 10)).astype(np.float32))
    kiln.manual_seed(7)
    a = F.fractional_max_pool2d(x, 3, output_ratio=0.5)
    kiln.manual_seed(7)
    b = F.fractional_max_pool2d(x, 3, output_ratio=(0.5, 0.5))
    assert tuple(a.shape) == (2, 3, 6, 5)
    assert np.array_equal(a.numpy(), b.numpy())
    pool = nn.FractionalMaxPool2d(3, output_ratio=0.5, return_indices=True)
    vals, idx = pool(x)
    assert tuple(vals.shape) == tuple(idx.shape) == (2, 3, 6, 5)
    # every value is the input at its index
    flat = x.numpy().reshape(2, 3, -1)
    assert np.array_equal(np.take_along_axis(flat, idx.numpy().reshape(2, 3, -1), 2).reshape(2, 3, 6, 5), vals.numpy())


def test_module_with_fixed_samples_matches_functional():
    x = kiln.tensor(RNG.standard_normal((1, 2, 7, 7, 7)))
    u = kiln.tensor(RNG.uniform(0, 1, (1, 2, 3)))
    m = nn.FractionalMaxPool3d(2, output_size=4, _random_samples=u)
    assert np.array_equal(m(x).numpy(), F.fractional_max_pool3d(x, 2, output_size=4, _random_samples=u).numpy())


@pytest.mark.parametrize(
    "kw,match",
    [
        ({}, "either an output_size or an output_ratio"),
        ({"output_size": (8, 3)}, "does not fit input"),
        ({"output_ratio": 1.5}, "output_ratio must be between 0 and 1"),
        ({"output_size": 3, "_random_samples": kiln.full([1, 2, 2], 1.0)}, r"must lie in \[0, 1\)"),
        ({"output_size": 3, "_random_samples": kiln.full([1, 2, 2], float("nan"))}, r"must lie in \[0, 1\)"),
        ({"output_size": 3, "_random_samples": kiln.zeros(1, 2, 3)}, "expected _random_samples of shape"),
    ],
)
def test_errors(kw, match):
    with pytest.raises(ValueError, match=match):
        F.fractional_max_pool2d(kiln.zeros(1, 2, 8, 8), 2, **kw)


def test_module_errors():
    with pytest.raises(ValueError, match="requires specifying either"):
        nn.FractionalMaxPool2d(2)
    with pytest.raises(ValueError, match="only one of"):
        nn.FractionalMaxPool2d(2, output_size=3, output_ratio=0.5)
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.FractionalMaxPool3d(2, output_ratio=(0.5, 1.0, 0.5))


# CASES[3] has output + kernel - 1 == input along T, which torch's 3-d check
# refuses (its 2-d check allows it; the windows fit either way).
@pytest.mark.parametrize("shape,k,out", CASES[:3])
def test_matches_torch(shape, k, out):
    torch = pytest.importorskip("torch")
    nd = len(k)
    x = RNG.standard_normal(shape).astype(np.float32)
    u = RNG.uniform(0, 1, shape[:2] + (nd,)).astype(np.float32)
    name = f"fractional_max_pool{nd}d"
    tx = torch.tensor(x, requires_grad=True)
    tv, ti = getattr(torch.nn.functional, name)(tx, k, output_size=out, return_indices=True,
                                               _random_samples=torch.tensor(u))
    g = RNG.standard_normal(tv.shape).astype(np.float32)
    (tv * torch.tensor(g)).sum().backward()
    kx = kiln.tensor(x, requires_grad=True)
    kv, ki = getattr(F, name)(kx, k, output_size=out, return_indices=True, _random_samples=kiln.tensor(u))
    (kv * kiln.tensor(g)).sum().backward()
    assert np.array_equal(kv.detach().numpy(), tv.detach().numpy())
    assert np.array_equal(ki.numpy(), ti.numpy())
    assert np.array_equal(kx.grad.numpy(), tx.grad.numpy())
