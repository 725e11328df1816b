"""kiln.nn.functional.conv{1,2,3}d / conv_transpose{1,2,3}d and the Conv /
ConvTranspose modules against a direct NumPy convolution (float64 loops over
the kernel offsets), its gradients of sum(out * g) written by hand, np.pad's
modes for padding_mode, and torch when it imports."""

import itertools
import math

import numpy as np
import pytest

import kiln
import kiln.nn as nn
import kiln.nn.functional as F

RNG = np.random.default_rng(37)


def _t(v, nd):
    return (v,) * nd if isinstance(v, int) else tuple(v)


def _slices(k, d, s, n):
    """The positions k * d + s * j, j < n, along each dim."""
    return tuple(slice(ki * di, ki * di + si * (ni - 1) + 1, si) for ki, di, si, ni in zip(k, d, s, n))


def np_conv(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """out[n, o, p] = b[o] + sum_{c, k} w[o, c, k] * xpad[n, g * Cg + c, p * s + k * d]."""
    nd = x.ndim - 2
    s, p, d = _t(stride, nd), _t(padding, nd), _t(dilation, nd)
    K = w.shape[2:]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pi, pi) for pi in p])
    O = [(xp.shape[2 + i] - d[i] * (K[i] - 1) - 1) // s[i] + 1 for i in range(nd)]
    N, C = x.shape[:2]
    G = groups
    wg = w.reshape(G, w.shape[0] // G, *w.shape[1:])  # [G, Og, Cg, *K]
    out = np.zeros((N, G, w.shape[0] // G, *O))
    for k in itertools.product(*[range(kk) for kk in K]):
        xs = xp[(slice(None), slice(None)) + _slices(k, d, s, O)].reshape(N, G, C // G, *O)
        out += np.einsum("ngc...,goc->ngo...", xs, wg[(Ellipsis,) + k])
    out = out.reshape(N, w.shape[0], *O)
    if b is not None:
        out += b.reshape(1, -1, *([1] * nd))
    return out


def np_conv_grads(x, w, g, stride=1, padding=0, dilation=1, groups=1):
    """d sum(conv(x, w, b) * g) / d(x, w, b)."""
    nd = x.ndim - 2
    s, p, d = _t(stride, nd), _t(padding, nd), _t(dilation, nd)
    K = w.shape[2:]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pi, pi) for pi in p])
    O = g.shape[2:]
    N, C = x.shape[:2]
    G = groups
    wg = w.reshape(G, w.shape[0] // G, *w.shape[1:])
    gg = g.reshape(N, G, w.shape[0] // G, *O)
    gxp = np.zeros((N, G, C // G, *xp.shape[2:]))
    gw = np.zeros_like(wg)
    for k in itertools.product(*[range(kk) for kk in K]):
        idx = (slice(None),) * 3 + _slices(k, d, s, O)
        xs = xp.reshape(N, G, C // G, *xp.shape[2:])[idx]
        gw[(Ellipsis,) + k] = np.einsum("ngop,ngcp->goc", gg.reshape(*gg.shape[:3], -1), xs.reshape(*xs.shape[:3], -1))
        gxp[idx] += np.einsum("ngo...,goc->ngc...", gg, wg[(Ellipsis,) + k])
    crop = (slice(None),) * 2 + tuple(slice(pi, pi + x.shape[2 + i]) for i, pi in enumerate(p))
    gx = gxp.reshape(N, C, *xp.shape[2:])[crop]
    return gx, gw.reshape(w.shape), g.sum(axis=(0, *range(2, g.ndim)))


def np_conv_transpose(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Each input element scatters x[n, c, i] * w[c, o, k] to full[n, o, i * s + k * d];
    the output is full cropped by padding (output_padding extends the end)."""
    nd = x.ndim - 2
    s, p, op, d = _t(stride, nd), _t(padding, nd), _t(output_padding, nd), _t(dilation, nd)
    K = w.shape[2:]
    N, C = x.shape[:2]
    S = x.shape[2:]
    G = groups
    Og = w.shape[1]
    full_size = [(S[i] - 1) * s[i] + d[i] * (K[i] - 1) + 1 + op[i] for i in range(nd)]
    full = np.zeros((N, G, Og, *full_size))
    xg = x.reshape(N, G, C // G, *S)
    wg = w.reshape(G, C // G, Og, *K)
    for k in itertools.product(*[range(kk) for kk in K]):
        full[(slice(None),) * 3 + _slices(k, d, s, S)] += np.einsum("ngc...,gco->ngo...", xg, wg[(Ellipsis,) + k])
    O = [full_size[i] - 2 * p[i] for i in range(nd)]
    out = full[(slice(None),) * 3 + tuple(slice(p[i], p[i] + O[i]) for i in range(nd))].reshape(N, G * Og, *O)
    if b is not None:
        out = out + b.reshape(1, -1, *([1] * nd))
    return out


def np_conv_transpose_grads(x, w, g, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    nd = x.ndim - 2
    s, p, op, d = _t(stride, nd), _t(padding, nd), _t(output_padding, nd), _t(dilation, nd)
    K = w.shape[2:]
    N, C = x.shape[:2]
    S = x.shape[2:]
    G = groups
    Og = w.shape[1]
    full_size = [(S[i] - 1) * s[i] + d[i] * (K[i] - 1) + 1 + op[i] for i in range(nd)]
    gfull = np.zeros((N, G, Og, *full_size))
    crop = (slice(None),) * 3 + tuple(slice(p[i], p[i] + g.shape[2 + i]) for i in range(nd))
    gfull[crop] = g.reshape(N, G, Og, *g.shape[2:])
    xg = x.reshape(N, G, C // G, *S)
    wg = w.reshape(G, C // G, Og, *K)
    gx = np.zeros_like(xg)
    gw = np.zeros_like(wg)
    for k in itertools.product(*[range(kk) for kk in K]):
        gs = gfull[(slice(None),) * 3 + _slices(k, d, s, S)]
        gx += np.einsum("ngo...,gco->ngc...", gs, wg[(Ellipsis,) + k])
        gw[(Ellipsis,) + k] = np.einsum("ngcp,ngop->gco", xg.reshape(*xg.shape[:3], -1), gs.reshape(*gs.shape[:3], -1))
    return gx.reshape(x.shape), gw.reshape(w.shape), g.sum(axis=(0, *range(2, g.ndim)))


def leaf(a, dtype=np.float64):
    t = kiln.tensor(np.ascontiguousarray(a.astype(dtype)))
    t.requires_grad_()
    return t


def npy(t):
    return np.asarray(t.detach() if t.requires_grad else t).astype(np.float64)


CONV_CASES = [
    # (input shape, weight shape, kwargs)
    ((2, 4, 11), (6, 2, 3), dict(stride=2, padding=1, dilation=2, groups=2)),
    ((1, 3, 7), (5, 3, 1), dict()),
    ((2, 3, 7, 6), (4, 3, 3, 2), dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2))),
    ((2, 3, 5, 5), (3, 1, 3, 3), dict(padding=1, groups=3)),  # depthwise
    ((1, 4, 6, 5), (8, 2, 2, 3), dict(stride=(1, 2), padding=2, groups=2)),
    ((2, 2, 4, 5, 5), (2, 1, 2, 3, 2), dict(stride=(1, 2, 1), padding=(1, 1, 0), dilation=(1, 1, 2), groups=2)),
    ((1, 2, 3, 4, 3), (3, 2, 1, 1, 1), dict()),
    # one input channel per group: the direct kernels (causal padding, strides, dilations, multipliers)
    ((2, 6, 13), (6, 1, 4), dict(padding=3, groups=6)),
    ((1, 3, 17), (6, 1, 3), dict(stride=2, padding=5, dilation=2, groups=3)),
    ((2, 1, 9), (8, 1, 2), dict(stride=3, padding=1)),
    ((1, 2, 7, 8), (4, 1, 3, 2), dict(stride=2, padding=(2, 1), dilation=(2, 1), groups=2)),
    ((1, 2, 4, 5, 6), (2, 1, 2, 3, 3), dict(stride=(1, 2, 2), padding=1, groups=2)),
    ((1, 2, 40), (18, 1, 3), dict(padding=1, groups=2)),  # 9 per group: the gemm path
]


def _conv_fn(nd):
    return getattr(F, f"conv{nd}d")


@pytest.mark.parametrize("xs,ws,kw", CONV_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv_forward_matches_numpy(xs, ws, kw, dtype):
    x, w, b = RNG.standard_normal(xs), RNG.standard_normal(ws), RNG.standard_normal(ws[0])
    out = _conv_fn(len(xs) - 2)(kiln.tensor(x.astype(dtype)), kiln.tensor(w.astype(dtype)), kiln.tensor(b.astype(dtype)), **kw)
    tol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(npy(out), np_conv(x, w, b, **kw), rtol=tol, atol=tol)


@pytest.mark.parametrize("xs,ws,kw", CONV_CASES)
def test_conv_gradients_match_numpy(xs, ws, kw):
    x, w, b = RNG.standard_normal(xs), RNG.standard_normal(ws), RNG.standard_normal(ws[0])
    xt, wt, bt = leaf(x), leaf(w), leaf(b)
    out = _conv_fn(len(xs) - 2)(xt, wt, bt, **kw)
    g = RNG.standard_normal(tuple(out.shape))
    (out * kiln.tensor(g)).sum().backward()
    gx, gw, gb = np_conv_grads(x, w, g, **kw)
    np.testing.assert_allclose(npy(xt.grad), gx, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(npy(wt.grad), gw, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(npy(bt.grad), gb, rtol=1e-10, atol=1e-10)


TRANSPOSE_CASES = [
    ((2, 4, 5), (4, 3, 3), dict(stride=3, padding=1, output_padding=2, groups=2)),
    ((1, 2, 4), (2, 2, 2), dict(stride=1, dilation=2, output_padding=1)),  # output_padding < dilation
    ((2, 2, 3, 4), (2, 3, 3, 2), dict(stride=(2, 1), padding=(1, 0), output_padding=(1, 0), dilation=(1, 2))),
    ((1, 3, 3, 3), (3, 1, 3, 3), dict(stride=2, padding=1, groups=3)),
    ((1, 2, 2, 3, 2), (2, 2, 2, 2, 3), dict(stride=2, output_padding=(1, 0, 1))),
    # one output channel per group: the direct kernels
    ((2, 4, 9), (4, 1, 3), dict(padding=3, dilation=2, groups=4)),
    ((1, 4, 6), (4, 1, 3), dict(stride=2, padding=1, output_padding=1, groups=2)),
    ((1, 3, 4, 5), (3, 1, 2, 3), dict(stride=(2, 3), padding=(0, 1), dilation=(2, 1), groups=3)),
]


@pytest.mark.parametrize("xs,ws,kw", TRANSPOSE_CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv_transpose_forward_matches_numpy(xs, ws, kw, dtype):
    groups = kw.get("groups", 1)
    x, w, b = RNG.standard_normal(xs), RNG.standard_normal(ws), RNG.standard_normal(ws[1] * groups)
    fn = getattr(F, f"conv_transpose{len(xs) - 2}d")
    out = fn(kiln.tensor(x.astype(dtype)), kiln.tensor(w.astype(dtype)), kiln.tensor(b.astype(dtype)), **kw)
    tol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(npy(out), np_conv_transpose(x, w, b, **kw), rtol=tol, atol=tol)


@pytest.mark.parametrize("xs,ws,kw", TRANSPOSE_CASES)
def test_conv_transpose_gradients_match_numpy(xs, ws, kw):
    groups = kw.get("groups", 1)
    x, w, b = RNG.standard_normal(xs), RNG.standard_normal(ws), RNG.standard_normal(ws[1] * groups)
    xt, wt, bt = leaf(x), leaf(w), leaf(b)
    out = getattr(F, f"conv_transpose{len(xs) - 2}d")(xt, wt, bt, **kw)
    g = RNG.standard_normal(tuple(out.shape))
    (out * kiln.tensor(g)).sum().backward()
    gx, gw, gb = np_conv_transpose_grads(x, w, g, **kw)
    np.testing.assert_allclose(npy(xt.grad), gx, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(npy(wt.grad), gw, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(npy(bt.grad), gb, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("transposed", [False, True], ids=["conv1d", "conv_transpose1d"])
@pytest.mark.parametrize("kw", [dict(stride=2, padding=2, dilation=2), dict(padding=1), dict(stride=3)])
def test_conv1d_float32_forward_and_gradients(transposed, kw):
    # float32 conv1d with groups = 1 runs as a conv2d over [N, C, 1, L] (the channels-last
    # packed-GEMM kernel): values and all three gradients against the float64 loops.
    C, O, L = (24, 40, 37) if not transposed else (40, 24, 19)
    x, b = RNG.standard_normal((2, C, L)), RNG.standard_normal(O)
    w = RNG.standard_normal((O, C, 3) if not transposed else (C, O, 3))
    if transposed and kw.get("stride", 1) > 1:
        kw = dict(kw, output_padding=1)
    xt, wt, bt = leaf(x, np.float32), leaf(w, np.float32), leaf(b, np.float32)
    fn = F.conv_transpose1d if transposed else F.conv1d
    out = fn(xt, wt, bt, **kw)
    assert out.dtype == kiln.float32 and out.is_contiguous()
    want = (np_conv_transpose if transposed else np_conv)(x, w, b, **kw)
    np.testing.assert_allclose(npy(out), want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
    g = RNG.standard_normal(tuple(out.shape))
    (out * kiln.tensor(g.astype(np.float32))).sum().backward()
    grads = (np_conv_transpose_grads if transposed else np_conv_grads)(x, w, g, **kw)
    for got, ref in zip((xt.grad, wt.grad, bt.grad), grads):
        assert list(got.shape) == list(ref.shape)
        np.testing.assert_allclose(npy(got), ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())


def test_conv_padding_same_pads_the_odd_one_on_the_right():
    x, w = RNG.standard_normal((2, 3, 7, 6)), RNG.standard_normal((2, 3, 4, 3))
    out = F.conv2d(kiln.tensor(x), kiln.tensor(w), padding="same", dilation=(1, 2))
    assert tuple(out.shape) == (2, 2, 7, 6)
    # d * (k - 1) = 3 and 4: (1, 2) rows and (2, 2) columns.
    xp = np.pad(x, [(0, 0), (0, 0), (1, 2), (2, 2)])
    np.testing.assert_allclose(npy(out), np_conv(xp, w, dilation=(1, 2)), rtol=1e-12, atol=1e-12)
    valid = F.conv1d(kiln.tensor(x[:, :, 0]), kiln.tensor(w[:, :, 0]), padding="valid")
    np.testing.assert_allclose(npy(valid), np_conv(x[:, :, 0], w[:, :, 0]), rtol=1e-12, atol=1e-12)


def test_conv_padding_same_gradient():
    x, w = RNG.standard_normal((1, 2, 6)), RNG.standard_normal((3, 2, 4))
    xt, wt = leaf(x), leaf(w)
    out = F.conv1d(xt, wt, padding="same")
    g = RNG.standard_normal(tuple(out.shape))
    (out * kiln.tensor(g)).sum().backward()
    xp = np.pad(x, [(0, 0), (0, 0), (1, 2)])
    gxp, gw, _ = np_conv_grads(xp, w, g)
    np.testing.assert_allclose(npy(xt.grad), gxp[:, :, 1:7], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(npy(wt.grad), gw, rtol=1e-10, atol=1e-10)


def test_conv_unbatched_input():
    x, w = RNG.standard_normal((3, 6, 5)), RNG.standard_normal((4, 3, 2, 2))
    out = F.conv2d(kiln.tensor(x), kiln.tensor(w), stride=2)
    np.testing.assert_allclose(npy(out), np_conv(x[None], w, stride=2)[0], rtol=1e-12)
    t = F.conv_transpose1d(kiln.tensor(x[:, :, 0]), kiln.tensor(w[:3, :, :, 0]))
    np.testing.assert_allclose(npy(t), np_conv_transpose(x[None, :, :, 0], w[:3, :, :, 0])[0], rtol=1e-12)


def test_conv_non_contiguous_input_and_empty_batch():
    x = RNG.standard_normal((5, 6, 3, 2))
    xt = kiln.tensor(x).permute(2, 3, 1, 0)  # [3, 2, 6, 5], not contiguous
    w = RNG.standard_normal((4, 2, 3, 2))
    out = F.conv2d(xt, kiln.tensor(w), padding=1)
    np.testing.assert_allclose(npy(out), np_conv(x.transpose(2, 3, 1, 0), w, padding=1), rtol=1e-12)
    empty = F.conv2d(kiln.zeros(0, 2, 6, 5, dtype=kiln.float64), kiln.tensor(w))
    assert tuple(empty.shape) == (0, 4, 4, 4)


@pytest.mark.parametrize("dtype", [kiln.bfloat16, kiln.float16])
def test_conv_narrow_floats_compute_in_float32(dtype):
    x, w = RNG.standard_normal((2, 3, 6)), RNG.standard_normal((4, 3, 3))
    xr, wr = kiln.tensor(x).to(dtype), kiln.tensor(w).to(dtype)
    out = F.conv1d(xr, wr, padding=1)
    assert out.dtype == dtype
    want = np_conv(npy(xr.to(kiln.float64)), npy(wr.to(kiln.float64)), padding=1)
    np.testing.assert_allclose(npy(out.to(kiln.float64)), want, rtol=2e-2, atol=2e-2)


def test_conv_errors_name_the_shapes():
    x = kiln.zeros(2, 3, 5, 5)
    with pytest.raises(ValueError, match=r"expected input\[2, 3, 5, 5\] to have 2 channels, but got 3"):
        F.conv2d(x, kiln.zeros(4, 2, 3, 3))
    with pytest.raises(ValueError, match=r"Kernel size: \(7 x 7\). Kernel size can't be greater"):
        F.conv2d(x, kiln.zeros(4, 3, 7, 7))
    with pytest.raises(ValueError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d"):
        F.conv2d(kiln.zeros(2, 3), kiln.zeros(4, 3, 3, 3))
    with pytest.raises(ValueError, match=r"expected bias to be 1-dimensional with 4 elements"):
        F.conv2d(x, kiln.zeros(4, 3, 3, 3), kiln.zeros(3))
    with pytest.raises(ValueError, match="divisible by 2 at dimension 0"):
        F.conv2d(x, kiln.zeros(3, 1, 3, 3), groups=2)
    with pytest.raises(ValueError, match="not supported for strided"):
        F.conv2d(x, kiln.zeros(4, 3, 3, 3), stride=2, padding="same")
    with pytest.raises(ValueError, match="Invalid padding string"):
        F.conv2d(x, kiln.zeros(4, 3, 3, 3), padding="foo")
    with pytest.raises(ValueError, match="output padding must be smaller than either stride or dilation"):
        F.conv_transpose2d(x, kiln.zeros(3, 2, 3, 3), stride=2, output_padding=2)
    with pytest.raises(ValueError, match="non-positive stride"):
        F.conv2d(x, kiln.zeros(4, 3, 3, 3), stride=0)
    with pytest.raises(ValueError, match="non-positive groups"):
        F.conv2d(x, kiln.zeros(4, 3, 3, 3), groups=0)
    with pytest.raises(ValueError, match=r"stride=\[1, 1, 1\]"):
        F.conv2d(x, kiln.zeros(4, 3, 3, 3), stride=(1, 1, 1))
    with pytest.raises(TypeError, match="should be the same"):
        F.conv2d(x, kiln.zeros(4, 3, 3, 3, dtype=kiln.float64))
    with pytest.raises(ValueError, match=r"Given transposed=1, weight of size \[4, 2, 3, 3\]"):
        F.conv_transpose2d(x, kiln.zeros(4, 2, 3, 3))


def test_conv_double_backward_matches_numpy():
    # grad_w = sum over windows of g * x is linear in x: d sum(grad_w * v) / dx is
    # the weight gradient formula read backwards, here checked by linearity
    # against NumPy with v as the weight (d/dx sum(conv_grad_w(x, g) * v) = conv's grad_x with w = v).
    x, w = RNG.standard_normal((2, 2, 6)), RNG.standard_normal((3, 2, 3))
    xt, wt = leaf(x), leaf(w)
    out = F.conv1d(xt, wt, stride=2, padding=1)
    g = RNG.standard_normal(tuple(out.shape))
    (gw,) = kiln.autograd.grad([(out * kiln.tensor(g)).sum()], [wt], create_graph=True)
    v = RNG.standard_normal(w.shape)
    (gx,) = kiln.autograd.grad([(gw * kiln.tensor(v)).sum()], [xt])
    want, _, _ = np_conv_grads(x, v, g, stride=2, padding=1)
    np.testing.assert_allclose(npy(gx), want, rtol=1e-10, atol=1e-10)


# ---- modules -------------------------------------------------------------------


@pytest.mark.parametrize("cls,nd", [(nn.Conv1d, 1), (nn.Conv2d, 2), (nn.Conv3d, 3)])
def test_conv_module_shapes_init_and_forward(cls, nd):
    m = cls(4, 6, 3, stride=1, padding=1, groups=2)
    assert tuple(m.weight.shape) == (6, 2) + (3,) * nd
    assert tuple(m.bias.shape) == (6,)
    assert sorted(m.state_dict().keys()) == ["bias", "weight"]
    bound = 1 / math.sqrt(2 * 3**nd)  # kaiming_uniform(a=sqrt(5)) and the bias: 1/sqrt(fan_in)
    wv, bv = npy(m.weight), npy(m.bias)
    assert np.abs(wv).max() <= bound and np.abs(bv).max() <= bound
    assert np.abs(wv).max() > 0.5 * bound
    x = RNG.standard_normal((2, 4) + (5,) * nd)
    out = m(kiln.tensor(x.astype(np.float32)))
    np.testing.assert_allclose(npy(out), np_conv(x, wv, bv, padding=1, groups=2), rtol=1e-4, atol=1e-4)
    assert cls(4, 6, 3, bias=False).bias is None
    assert "kernel_size=" in repr(m) and "groups=2" in repr(m)


@pytest.mark.parametrize("mode,np_mode", [("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")])
@pytest.mark.parametrize("padding", [2, (1, 2), "same"])
def test_conv_module_padding_modes_match_np_pad(mode, np_mode, padding):
    m = nn.Conv2d(2, 3, (3, 4), padding=padding, padding_mode=mode, dtype=kiln.float64)
    x = RNG.standard_normal((2, 2, 5, 6))
    xt = leaf(x)
    out = m(xt)
    if padding == "same":
        pads = [(1, 1), (1, 2)]
    else:
        p = _t(padding, 2)
        pads = [(p[0], p[0]), (p[1], p[1])]
    xp = np.pad(x, [(0, 0), (0, 0)] + pads, mode=np_mode)
    w, b = npy(m.weight), npy(m.bias)
    np.testing.assert_allclose(npy(out), np_conv(xp, w, b), rtol=1e-12, atol=1e-12)
    # The gradient flows back through the padding's gathers.
    g = RNG.standard_normal(tuple(out.shape))
    (out * kiln.tensor(g)).sum().backward()
    gxp, _, _ = np_conv_grads(xp, w, g)
    # Scatter the padded gradient back to x: np.pad of an index map.
    idx = np.pad(np.arange(x[0, 0].size).reshape(x.shape[2:]), pads, mode=np_mode)
    want = np.zeros(x.shape)
    flat = want.reshape(2, 2, -1)
    for pos, src in np.ndenumerate(idx):
        flat[:, :, src] += gxp[(slice(None), slice(None)) + pos]
    np.testing.assert_allclose(npy(xt.grad), want, rtol=1e-10, atol=1e-10)


def test_conv_module_rejects_bad_arguments():
    with pytest.raises(ValueError, match="padding_mode"):
        nn.Conv2d(2, 2, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv1d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="strided"):
        nn.Conv1d(2, 2, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="reflect"):
        nn.Conv1d(1, 1, 3, padding=4, padding_mode="reflect")(kiln.zeros(1, 1, 3))


@pytest.mark.parametrize("cls,nd", [(nn.ConvTranspose1d, 1), (nn.ConvTranspose2d, 2), (nn.ConvTranspose3d, 3)])
def test_conv_transpose_module(cls, nd):
    m = cls(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2, dtype=kiln.float64)
    assert tuple(m.weight.shape) == (4, 3) + (3,) * nd
    bound = 1 / math.sqrt(3 * 3**nd)  # fan_in = weight.shape[1] * receptive field, as torch
    assert np.abs(npy(m.weight)).max() <= bound and np.abs(npy(m.bias)).max() <= bound
    x = RNG.standard_normal((2, 4) + (3,) * nd)
    out = m(kiln.tensor(x))
    want = np_conv_transpose(x, npy(m.weight), npy(m.bias), stride=2, padding=1, output_padding=1, groups=2)
    np.testing.assert_allclose(npy(out), want, rtol=1e-12, atol=1e-12)
    # output_size picks the output_padding.
    small = m(kiln.tensor(x), output_size=(5,) * nd)
    assert tuple(small.shape) == (2, 6) + (5,) * nd
    with pytest.raises(ValueError, match="output size"):
        m(kiln.tensor(x), output_size=(9,) * nd)


# ---- torch ------------------------------------------------------------------------


def test_conv_matches_torch():
    torch = pytest.importorskip("torch")
    for xs, ws, kw in CONV_CASES:
        x, w, b = RNG.standard_normal(xs), RNG.standard_normal(ws), RNG.standard_normal(ws[0])
        fn = f"conv{len(xs) - 2}d"
        xt, wt, bt = leaf(x), leaf(w), leaf(b)
        out = getattr(F, fn)(xt, wt, bt, **kw)
        tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
        tout = getattr(torch.nn.functional, fn)(tx, tw, tb, **kw)
        np.testing.assert_allclose(npy(out), tout.detach().numpy(), rtol=1e-10, atol=1e-10)
        g = RNG.standard_normal(tuple(out.shape))
        (out * kiln.tensor(g)).sum().backward()
        (tout * torch.tensor(g)).sum().backward()
        for k, t in ((xt, tx), (wt, tw), (bt, tb)):
            np.testing.assert_allclose(npy(k.grad), t.grad.numpy(), rtol=1e-10, atol=1e-10)
    for xs, ws, kw in TRANSPOSE_CASES:
        x, w = RNG.standard_normal(xs), RNG.standard_normal(ws)
        fn = f"conv_transpose{len(xs) - 2}d"
        out = getattr(F, fn)(kiln.tensor(x), kiln.tensor(w), **kw)
        tout = getattr(torch.nn.functional, fn)(torch.tensor(x), torch.tensor(w), **kw)
        np.testing.assert_allclose(npy(out), tout.numpy(), rtol=1e-10, atol=1e-10)


def test_conv_module_state_dict_loads_into_torch():
    torch = pytest.importorskip("torch")
    m = nn.Conv2d(2, 4, 3, padding=1, padding_mode="circular", dtype=kiln.float64)
    tm = torch.nn.Conv2d(2, 4, 3, padding=1, padding_mode="circular", dtype=torch.float64)
    tm.load_state_dict({k: torch.tensor(npy(v)) for k, v in m.state_dict().items()})
    x = RNG.standard_normal((1, 2, 5, 4))
    np.testing.assert_allclose(npy(m(kiln.tensor(x))), tm(torch.tensor(x)).detach().numpy(), rtol=1e-12)


CHANNELS_LAST_CASES = [
    # (input shape, weight shape, kwargs, memory format)
    ((2, 3, 7, 6), (4, 3, 3, 2), dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2)), "channels_last"),
    ((1, 5, 5, 4), (6, 5, 1, 1), dict(), "channels_last"),  # 1x1: rows read in place
    ((1, 4, 6, 5), (8, 2, 2, 3), dict(stride=(1, 2), padding=2, groups=2), "channels_last"),
    ((2, 2, 4, 5, 3), (3, 2, 2, 3, 2), dict(stride=(1, 2, 1), padding=1), "channels_last_3d"),
]


@pytest.mark.parametrize("xs,ws,kw,fmt", CHANNELS_LAST_CASES)
def test_conv_channels_last_keeps_the_format(xs, ws, kw, fmt):
    # torch returns channels-last outputs and input gradients for channels-last inputs.
    mf = getattr(kiln, fmt)
    x, w, b = RNG.standard_normal(xs), RNG.standard_normal(ws), RNG.standard_normal(ws[0])
    xt = kiln.tensor(x).contiguous(memory_format=mf)
    xt.requires_grad_()
    wt, bt = leaf(w), leaf(b)
    out = _conv_fn(len(xs) - 2)(xt, wt, bt, **kw)
    assert out.is_contiguous(memory_format=mf)
    np.testing.assert_allclose(npy(out), np_conv(x, w, b, **kw), rtol=1e-10, atol=1e-10)
    g = RNG.standard_normal(tuple(out.shape))
    out.backward(kiln.tensor(g).contiguous(memory_format=mf))
    gx, gw, gb = np_conv_grads(x, w, g, **kw)
    assert xt.grad.is_contiguous(memory_format=mf)
    np.testing.assert_allclose(npy(xt.grad), gx, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(npy(wt.grad), gw, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(npy(bt.grad), gb, rtol=1e-10, atol=1e-10)


def test_conv_transpose_channels_last_keeps_the_format():
    x, w = RNG.standard_normal((2, 3, 4, 5)), RNG.standard_normal((3, 2, 3, 2))
    kw = dict(stride=2, padding=1, output_padding=1)
    xt = kiln.tensor(x).contiguous(memory_format=kiln.channels_last)
    out = F.conv_transpose2d(xt, kiln.tensor(w), **kw)
    assert out.is_contiguous(memory_format=kiln.channels_last)
    np.testing.assert_allclose(npy(out), np_conv_transpose(x, w, **kw), rtol=1e-10, atol=1e-10)
