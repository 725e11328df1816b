"""group_norm / instance_norm and the GroupNorm / InstanceNorm modules against
NumPy: forward from the definition, gradients in closed form, running stats;
torch's where it imports."""

import numpy as np
import pytest

import kiln
import kiln.nn as nn
import kiln.nn.functional as F

RNG = np.random.default_rng(37)


def leaf(a):
    t = kiln.tensor(np.ascontiguousarray(a))
    t.requires_grad_()
    return t


def gn_ref(x, G, w=None, b=None, eps=1e-5):
    """y, xhat, rstd [N, G, 1] of group norm over x [N, C, *] in float64."""
    N, C = x.shape[:2]
    xg = x.astype(np.float64).reshape(N, G, -1)
    mu = xg.mean(-1, keepdims=True)
    rstd = 1.0 / np.sqrt(xg.var(-1, keepdims=True) + eps)
    xhat = ((xg - mu) * rstd).reshape(x.shape)
    cs = (1, C) + (1,) * (x.ndim - 2)
    y = xhat * (w.reshape(cs) if w is not None else 1) + (b.reshape(cs) if b is not None else 0)
    return y, xhat, rstd


def gn_grads(x, G, w, g, eps=1e-5):
    """Closed-form (dx, dw, db) of sum(group_norm(x) * g):
    dx = rstd * (gh - mean(gh) - xhat * mean(gh * xhat)) per group, gh = g * w."""
    N, C = x.shape[:2]
    _, xhat, rstd = gn_ref(x, G, w, None, eps)
    cs = (1, C) + (1,) * (x.ndim - 2)
    gh = (g * w.reshape(cs)).reshape(N, G, -1)
    xh = xhat.reshape(N, G, -1)
    dx = rstd * (gh - gh.mean(-1, keepdims=True) - xh * (gh * xh).mean(-1, keepdims=True))
    red = (0,) + tuple(range(2, x.ndim))
    return dx.reshape(x.shape), (g * xhat).sum(red), g.sum(red)


@pytest.mark.parametrize("shape,G", [((3, 6, 5), 3), ((2, 4, 3, 5), 2), ((2, 4), 4), ((1, 6, 7), 1)])
def test_group_norm_forward(shape, G):
    x = RNG.standard_normal(shape) * 3 + 1
    w = RNG.standard_normal(shape[1])
    b = RNG.standard_normal(shape[1])
    for dt, tol in ((np.float64, 1e-12), (np.float32, 1e-5)):
        got = F.group_norm(kiln.tensor(x.astype(dt)), G, kiln.tensor(w.astype(dt)), kiln.tensor(b.astype(dt)))
        want, _, _ = gn_ref(x.astype(dt), G, w.astype(dt), b.astype(dt))
        np.testing.assert_allclose(np.asarray(got), want, rtol=tol, atol=tol)
    got = F.group_norm(kiln.tensor(x), G)
    np.testing.assert_allclose(np.asarray(got), gn_ref(x, G)[0], rtol=1e-12, atol=1e-12)


def test_group_norm_half_inputs_compute_in_float32():
    x = (RNG.standard_normal((2, 4, 9)) * 2).astype(np.float32)
    xb = kiln.tensor(x).to(kiln.bfloat16)
    got = F.group_norm(xb, 2)
    assert got.dtype == kiln.bfloat16
    want, _, _ = gn_ref(np.asarray(xb.to(kiln.float32)), 2)
    np.testing.assert_allclose(np.asarray(got.to(kiln.float32)), want, rtol=1e-2, atol=1e-2)


def test_native_group_norm_returns_mean_and_rstd():
    x = RNG.standard_normal((3, 4, 5))
    y, mean, rstd = kiln.nn.native_group_norm(kiln.tensor(x), None, None, 2, 1e-5)
    xg = x.reshape(3, 2, -1)
    np.testing.assert_allclose(np.asarray(mean), xg.mean(-1), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(rstd), 1 / np.sqrt(xg.var(-1) + 1e-5), rtol=1e-12)


@pytest.mark.parametrize("shape,G", [((3, 6, 5), 3), ((2, 4, 3, 2), 4), ((2, 6), 2)])
def test_group_norm_gradients_closed_form(shape, G):
    x = RNG.standard_normal(shape)
    w = RNG.standard_normal(shape[1])
    b = RNG.standard_normal(shape[1])
    g = RNG.standard_normal(shape)
    xt, wt, bt = leaf(x), leaf(w), leaf(b)
    (F.group_norm(xt, G, wt, bt) * kiln.tensor(g)).sum().backward()
    dx, dw, db = gn_grads(x, G, w, g)
    np.testing.assert_allclose(np.asarray(xt.grad), dx, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(np.asarray(wt.grad), dw, rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(np.asarray(bt.grad), db, rtol=1e-9, atol=1e-10)


def test_group_norm_double_backward_matches_differences():
    x = RNG.standard_normal((2, 4, 3))
    w = RNG.standard_normal(4)
    g = RNG.standard_normal((2, 4, 3))
    v = RNG.standard_normal((2, 4, 3))
    xt = leaf(x)
    (gx,) = kiln.autograd.grad((F.group_norm(xt, 2, kiln.tensor(w)) * kiln.tensor(g)).sum(), [xt],
                               create_graph=True)
    (gx * kiln.tensor(v)).sum().backward()
    # d/dx <dx(x), v> by central differences of the closed form.
    h, want = 1e-6, np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += h
        xm[i] -= h
        want[i] = ((gn_grads(xp, 2, w, g)[0] - gn_grads(xm, 2, w, g)[0]) * v).sum() / (2 * h)
    np.testing.assert_allclose(np.asarray(xt.grad), want, rtol=1e-5, atol=1e-6)


def test_group_norm_errors():
    x = kiln.zeros(2, 6, 3)
    with pytest.raises(ValueError, match=r"\[group_norm\].*divisible"):
        F.group_norm(x, 4)
    with pytest.raises(ValueError, match=r"\[group_norm\].*weight"):
        F.group_norm(x, 3, kiln.ones(5))
    with pytest.raises(ValueError, match="divisible"):
        nn.GroupNorm(4, 6)


def test_group_norm_module():
    m = nn.GroupNorm(2, 4)
    assert list(m.state_dict()) == ["weight", "bias"]
    np.testing.assert_array_equal(np.asarray(m.weight), np.ones(4, np.float32))
    np.testing.assert_array_equal(np.asarray(m.bias), np.zeros(4, np.float32))
    assert repr(m) == "GroupNorm(2, 4, eps=1e-05, affine=True, bias=True)"
    x = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(m(kiln.tensor(x))), gn_ref(x, 2)[0], rtol=1e-5, atol=1e-5)
    assert list(nn.GroupNorm(2, 4, affine=False).state_dict()) == []
    assert list(nn.GroupNorm(2, 4, bias=False).state_dict()) == ["weight"]


def test_instance_norm_running_stats():
    x = RNG.standard_normal((3, 4, 6)) * 2 + 0.5
    rm, rv = np.zeros(4), np.ones(4)
    rmt, rvt = kiln.tensor(rm), kiln.tensor(rv)
    y = F.instance_norm(kiln.tensor(x), rmt, rvt, momentum=0.25)
    np.testing.assert_allclose(np.asarray(y), gn_ref(x, 4)[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(rmt), 0.75 * rm + 0.25 * x.mean(-1).mean(0), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(rvt), 0.75 * rv + 0.25 * x.var(-1, ddof=1).mean(0), rtol=1e-12)
    # Evaluation with the running stats.
    y = F.instance_norm(kiln.tensor(x), rmt, rvt, use_input_stats=False, eps=0.1)
    want = (x - np.asarray(rmt)[:, None]) / np.sqrt(np.asarray(rvt)[:, None] + 0.1)
    np.testing.assert_allclose(np.asarray(y), want, rtol=1e-12)
    with pytest.raises(ValueError, match=r"\[instance_norm\].*spatial"):
        F.instance_norm(kiln.zeros(2, 3, 1))


def test_instance_norm_modules():
    m = nn.InstanceNorm2d(3)
    assert list(m.state_dict()) == []
    assert repr(m) == "InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=False, bias=False, track_running_stats=False)"
    t = nn.InstanceNorm1d(3, affine=True, track_running_stats=True)
    assert list(t.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    x = RNG.standard_normal((2, 3, 5)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(t(kiln.tensor(x))), gn_ref(x, 3)[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(t.running_mean), 0.1 * x.mean(-1).mean(0), rtol=1e-5, atol=1e-7)
    # Unbatched [C, L] and the eval path.
    t.eval()
    y = t(kiln.tensor(x[0]))
    want = (x[0] - np.asarray(t.running_mean)[:, None]) / np.sqrt(np.asarray(t.running_var)[:, None] + 1e-5)
    np.testing.assert_allclose(np.asarray(y), want, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="InstanceNorm3d"):
        nn.InstanceNorm3d(3)(kiln.zeros(2, 3, 4))
    w = RNG.standard_normal((2, 3, 4, 5, 2)).astype(np.float32)
    np.testing.assert_allclose(np.asarray(nn.InstanceNorm3d(3)(kiln.tensor(w))), gn_ref(w, 3)[0], rtol=1e-5,
                               atol=1e-5)


def test_against_torch():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((3, 6, 4, 5))
    w, b = RNG.standard_normal(6), RNG.standard_normal(6)
    g = RNG.standard_normal(x.shape)
    xt, wt, bt = leaf(x), leaf(w), leaf(b)
    (F.group_norm(xt, 3, wt, bt) * kiln.tensor(g)).sum().backward()
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    ty = torch.nn.functional.group_norm(tx, 3, tw, tb)
    (ty * torch.tensor(g)).sum().backward()
    for k, t in ((xt, tx), (wt, tw), (bt, tb)):
        np.testing.assert_allclose(np.asarray(k.grad), t.grad.numpy(), rtol=1e-9, atol=1e-10)
    rm, rv = torch.zeros(6, dtype=torch.float64), torch.ones(6, dtype=torch.float64)
    krm, krv = kiln.zeros(6, dtype=kiln.float64), kiln.ones(6, dtype=kiln.float64)
    torch.nn.functional.instance_norm(torch.tensor(x), rm, rv, use_input_stats=True, momentum=0.3)
    F.instance_norm(kiln.tensor(x), krm, krv, use_input_stats=True, momentum=0.3)
    np.testing.assert_allclose(np.asarray(krm), rm.numpy(), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(krv), rv.numpy(), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_large_groups_keep_float64_statistics_and_thread_independent_bits(dtype):
    # Groups of 3 * 4099 elements span several statistics chunks with a
    # remainder; a large offset with a small spread needs the deviations
    # taken about a mean, not E[x^2] - E[x]^2.
    x = (1000.0 + 1e-3 * RNG.standard_normal((2, 6, 4099))).astype(dtype)
    w, b = RNG.standard_normal(6), RNG.standard_normal(6)
    xg = x.astype(np.float64).reshape(2, 2, -1)
    results = []
    before = kiln.get_num_threads()
    try:
        for n in (1, 2, 3):
            kiln.set_num_threads(n)
            y, mean, rstd = kiln.nn.native_group_norm(kiln.tensor(x), kiln.tensor(w.astype(dtype)),
                                                      kiln.tensor(b.astype(dtype)), 2, 1e-12)
            results.append([np.asarray(t) for t in (y, mean, rstd)])
    finally:
        kiln.set_num_threads(before)
    for r in results[1:]:
        assert all(np.array_equal(a, c) for a, c in zip(results[0], r))
    y, mean, rstd = results[0]
    np.testing.assert_allclose(mean, xg.mean(-1), rtol=1e-7 if dtype == np.float32 else 1e-14)
    np.testing.assert_allclose(rstd, 1 / np.sqrt(xg.var(-1) + 1e-12), rtol=1e-6 if dtype == np.float32 else 1e-9)
    want, _, _ = gn_ref(x, 2, w, b, 1e-12)
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4 if dtype == np.float32 else 1e-8)
